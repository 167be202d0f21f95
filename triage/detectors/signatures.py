"""PyTorch's error and warning messages, matched tolerantly across versions.

The table is ordered data: a symptom name, a pattern and a one-line summary. Patterns avoid
version-specific details (`SoftmaxBackward` and `SoftmaxBackward0`, `RuntimeError: CUDA out of
memory` and `torch.OutOfMemoryError`, NCCL and gloo timeouts). Each symptom is reported once,
at its first line, with its other occurrences' count; where one failure masks another (a
device-side assert blames whichever kernel runs next), the earlier, more specific line wins.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from triage.detectors import Context, quoted
from triage.reader import Reading
from triage.records import Evidence, Symptom

HELPERS = ("quoted",)


@dataclass(frozen=True)
class Signature:
    symptom: str
    pattern: re.Pattern[str]
    summary: str


def _sig(symptom: str, pattern: str, summary: str) -> Signature:
    return Signature(symptom, re.compile(pattern, re.I), summary)


# The calls a report may say the code missed: (symptom prefix, the call as a pattern, as shown,
# the words every match holds). The receiver is not matched: a run of name characters before the
# dot would be tried from every start on a long line.
MISSED_CALLS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("eval-mode", r"\b(?:model|net|self\.model)?\.?eval\(\)", "model.eval()", ("eval()",)),
    ("train-mode", r"(?:\.|\b)train(?:_[a-z]+)?\(\)", "model.train()", ("train(", "train_")),
    # (as people type it too: `zero_gard()`, `zero_grads`, `zerograd`)
    ("zero-grad", r"\bzero_?g(?:ra|ar)ds?\b(?:\(\))?", "zero_grad()", ("zero_grad", "zero_gard", "zerograd")),
    ("no-grad", r"\b(?:torch\.)?no_grad\b(?:\(\))?", "torch.no_grad()", ("no_grad",)),
    ("optimizer-step", r"\boptimi[sz]er\.step\(\)", "optimizer.step()", (".step()",)),
    ("set-epoch", r"\bset_epoch\b(?:\(\))?", "sampler.set_epoch()", ("set_epoch",)),
)
SIGNATURES: tuple[Signature, ...] = (
    # Each pattern holds the stable words of one message family across PyTorch versions and
    # wrappers: quote characters are left open (`'`, `` ` ``, typographic quotes, none), and a
    # prefix (`RuntimeError:`, `[rank1]:`, `E   `, a `torch._dynamo` "Explanation:") may precede.
    _sig(
        "inplace-modified",
        # (a message cut short keeps its opening words: `one of the variables needed for gradient
        # computation has bee`)
        r"modified by an inplace operation|one of the variables needed for gradient computation",
        "autograd found a saved tensor overwritten by an in-place operation",
    ),
    _sig(
        "leaf-inplace",
        r"leaf Variable that requires grad (?:is being|has been) used in an in-place operation",
        "an in-place operation on a leaf tensor that requires grad",
    ),
    _sig(
        "backward-twice",
        r"backward through the graph a second time",
        "backward ran through a graph whose saved values were already freed",
    ),
    _sig(
        "unscale-without-scale",
        # GradScaler.unscale_ (or step) in an iteration whose backward did not go through
        # scaler.scale(loss): the scaled backward is gone, or the loss went through .backward() bare
        r"unscale_? but _scale is None|did not use scaler\.scale\(",
        "the GradScaler unscaled gradients that no scaler.scale(loss).backward() produced",
    ),
    _sig(
        "no-grad-fn",
        # 0.4 said "variables", 0.1-0.3 "there are no graph nodes that require computing gradients"
        r"element \d+ of (?:tensors|variables) does not require grad|"
        r"does not require grad and does not have a grad_fn|"
        r"there are no graph nodes that require computing gradients",
        "the loss has no autograd history (no grad_fn)",
    ),
    _sig(
        "non-scalar-backward",
        r"grad can be implicitly created only for scal[ae]r outputs",  # "scaler" as people type it
        "backward() was called on a tensor that is not a scalar",
    ),
    _sig(
        "device-mismatch",
        r"Expected all tensors to be on the same device|"
        # (the weight's or, since 1.x, the bias's; 2.x names types `CUDABFloat16Type`)
        r"Input type \([^)]*cuda[^)]*\) and (?:weight|bias) type \((?![^)]*cuda)[^)]+\) should be the same|"
        r"Input type \((?![^)]*cuda)[^)]+\) and (?:weight|bias) type \([^)]*cuda[^)]*\) should be the same|"
        r"tensor for argument #\d+ \W?\w+\W? to have the same device|"
        r"is on (?:CPU|GPU), but expected (?:it|them) to be on (?:CPU|GPU)|"
        r"arguments are located on different GPUs|"
        r"Input and parameter tensors are not at the same device|"
        r"indices should be either on cpu or on the same device|"
        # before 1.6: "Expected object of device type cuda but got device type cpu", and
        # before 1.2 "... of backend CUDA but got backend CPU"
        r"Expected object of (?:device type|backend) \w+ but got (?:device type|backend) \w+|"
        # an index or copy kernel's own spelling (1.x): "expected device cpu but got device cuda:0"
        r"expected device \w+(?::\d+)? but got device \w+|"
        # 0.4-1.0 named the tensor type: a device mismatch when exactly one side is cuda
        r"expected (?:object of )?type \S*?torch\.cuda\.\w+\]? but (?:found|got) (?:type )?\S*?torch\.(?!cuda)|"
        r"expected (?:object of )?type \S*?torch\.(?!cuda)\w+\]? but (?:found|got) (?:type )?\S*?torch\.cuda\.",
        "tensors on different devices met in one operation",
    ),
    _sig(
        "out-of-memory",
        # every backend and version says "out of memory" somewhere (`CUDA out of memory.` with
        # no exception prefix before 1.x's OutOfMemoryError, `cuda runtime error (2) : out of
        # memory`, HIP, MPS, XPU); people who paste a title say OOM (but `oom=0` is a counter)
        # (not a setting made to prevent one: "I set the batch size to 6 for preventing out of memory")
        r"(?<!preventing )(?<!prevent )(?<!avoiding )(?<!avoid )\bout of memory\b|OutOfMemoryError|DefaultCPUAllocator: (?:can't allocate|not enough) memory|"
        r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|(?-i:\bOOM\b)(?!\s*[=:])",
        "an allocation failed: the device ran out of memory",
    ),
    _sig(
        "collective-timeout",
        r"Watchdog caught collective operation timeout|collective operation timeout|"
        r"Timed out waiting \d+ ?ms for (?:recv|send)|ProcessGroupNCCL.{0,80}tim(?:ed|e) ?out|"
        r"NCCL communicator was aborted|Some NCCL operations have failed or timed out|"
        r"monitoredBarrier|Rank \d+ failed to pass monitoredBarrier|"
        r"Socket Timeout|gloo.{0,60}Connection closed by peer",
        "a collective operation timed out: the ranks stopped meeting in the same collective",
    ),
    _sig(
        "anomaly-nan",
        r"Function \W?(?P<fn>\w+?)(?:Backward\d*)?\W? returned nan values in its \d+(?:st|nd|rd|th) output",
        "anomaly detection caught a backward function producing NaN",
    ),
    _sig(
        "label-out-of-range",
        # the THNN/THCUNN/ATen assertion closes its quote with ' or ` depending on the version;
        # an index past an embedding table is the same fault one layer earlier
        r"Target -?\d+ is out of bounds|"
        r"(?:cur_target|\bt)\s*>=\s*0\s*&&\s*(?:cur_target|t)\s*<\s*n_classes|"
        r"index out of range in self|IndexError: Target|"
        r"srcIndex\s*\W\s*srcSelectDimSize|Tried to access index -?\d+ out of table|"
        # a gather, scatter or index with the class count itself, or a negative label (a label
        # smoothing loss's `logprobs.gather(-1, target)`): `index 8 ... with size 8`
        r"index (?P<oob>\d+) is out of bounds for dimension \d+ with size (?P=oob)\b|"
        r"index -\d+ is out of bounds for dimension \d+ with size \d+",
        "a class index is outside the valid range",
    ),
    _sig(
        "device-side-assert",
        r"device-side assert(?:ion)? triggered",
        "a CUDA kernel assertion failed (reported at a later, unrelated call)",
    ),
    _sig(
        "shape-mismatch",
        # (a torch.compile guard's "size mismatch at index 1" is a recompilation reason, not an error)
        r"shapes cannot be multiplied|\bsize mismatch\b(?!\s*at index)|"
        r"The size of tensor a \(\d+\) must match the size of tensor b|"
        r"shape \W?\[[^\]]*\]\W? is invalid for input of size|"
        r"Expected input batch_size \(\d+\) to match target batch_size|"
        r"to have \d+ channels, but got \d+ channels|Sizes of tensors must match|"
        r"expected input with shape|mat1 dim 1 must match mat2 dim 0|"
        r"multi-target not supported|Expected \d+-dimensional input for \d+-dimensional weight|"
        r"Expected \dD \(unbatched\) or \dD \(batched\) input|"
        r"Kernel size can't be greater than actual input size|Output size is too small|"
        r"input\.size\(-1\) must be equal to input_size|Expected hidden(?:\[\d\])? size|"
        r"Expected target size|only batches of spatial targets supported|"
        r"The expanded size of the tensor \(\d+\) must match|inconsistent tensor size|"
        r"matrices expected, got \dD, \dD tensors|Target size \(torch\.Size\(\[[\d, ]*\]\)\) must be the same|"
        # a batch whose samples differ in shape fails in the loader's collate; other families
        # name the two sizes in their own words
        r"must have same reduction dim|stack expects each tensor to be equal size|Tensors must have same number of dimensions|"
        r"doesn't match the broadcast shape|running_(?:mean|var) should contain \d+ elements|"
        r"must have the same number of elements|should be defined either for all \d+ classes",
        "tensor shapes do not fit the operation",
    ),
    _sig(
        "dtype-mismatch",
        r"expected scalar type \w+ but found \w+|must have the same dtype|"
        r"expected m1 and m2 to have the same dtype|Expected object of scalar type|"
        r"not implemented for \W?(?:Long|Int|Half|BFloat16|Bool|Byte|Short|Char|Float|Double)\b|"
        r"Found dtype \w+ but expected \w+|can't be cast to the desired output type|"
        r"Input type \(torch\.\w*(?:Double|Half|Long)\w*\) and weight type|"
        # both on one device, so the types differ in dtype: `(c10::Half) and bias type (float)`
        r"Input type \((?=[^)]*cuda)[^)]+\) and (?:weight|bias) type \((?=[^)]*cuda)[^)]+\) should be the same|"
        r"Input type \((?![^)]*cuda)[^)]+\) and (?:weight|bias) type \((?![^)]*cuda)[^)]+\) should be the same|"
        r"Expected floating point type for target|expected scalar type \w+ but got|"
        r"expected target dtype to be \w+|expected \w+ tensor \(got \w+ tensor\)|"
        r"to have (?:one of the following )?scalar types?:? \w+|"
        r"source and destination dtypes match|only Tensors of floating point (?:and complex )?dtype can require|"
        # 0.4-1.0 named the tensor type: a dtype mismatch when both sides are on one device
        r"expected (?:object of )?type \S*?torch\.(?P<dev>cuda\.|)\w+\]? but (?:found|got) (?:type )?"
        r"\S*?torch\.(?P=dev)(?!cuda)\w",
        "tensors of different dtypes met in one operation",
    ),
    _sig(
        "ddp-unused-parameters",
        r"Expected to have finished reduction in the prior iteration|"
        r"Parameter indices which did not receive grad|Parameters which did not receive grad for rank|"
        r"parameters that were not used in producing (?:the )?loss",
        "DDP waited for gradients of parameters that took no part in the loss",
    ),
    _sig(
        "broadcast-warning",
        # the sizes may wrap onto the next line when the warning is pasted
        r"Using a target size \(torch\.Size",
        "a loss broadcast a target of a different shape than its input",
    ),
    _sig(
        "recompiling",
        r"Recompiling function|hit config\.(?:recompile|cache_size)_limit|"
        r"cache_size_limit reached|recompile_limit reached|Graph break(?:s)? ?(?:in|:|due)|"
        # dynamo's warning that it could not compile a frame and ran it eagerly (logged from its
        # exc.py or convert_frame.py, 2.x): the graph broke there
        r"torch/_dynamo/(?:exc|convert_frame)\.py:\d+\]|"
        r"cache_size_limit \(\d+\)|CacheLimitExceeded",
        "torch.compile recompiled or broke the graph repeatedly",
    ),
    _sig(
        "tensor-to-scalar-warning",
        r"Converting a tensor with requires_grad=True to a scalar",
        "a loss tensor with its graph was converted to a number late: it was kept as a tensor",
    ),
    _sig(
        "dataloader-timeout",
        r"DataLoader timed out after \d+ seconds",
        "a data-loader worker took longer than the loader's timeout to deliver a batch",
    ),
    _sig(
        "scheduler-before-optimizer",
        r"Detected call of \W?lr_scheduler\.step\(\)\W? before \W?optimizer\.step\(\)",
        "PyTorch warned that the learning-rate scheduler stepped before the optimizer did",
    ),
    _sig(
        "collective-got-none",
        # c10d's argument check: 2.x "Expected parameter `tensor` of type torch.Tensor / but got
        # <class 'NoneType'> instead" (the type on a line of its own), 1.x "... to be of type
        # torch.Tensor.", 1.0 "Expecting parameter: tensor to be a torch.Tensor type"; only a
        # None (a gradient no backward reached), not a float passed by mistake, is this symptom
        r"Invalid function argument\.? Expect(?:ed|ing) parameter:? \W?tensor\W? .{0,40}?torch\.Tensor"
        r".{0,80}?NoneType",
        "a collective (all_reduce, broadcast) was given None instead of a tensor",
    ),
    # what people write when they paste a description instead of the log itself
    _sig(
        "loss-non-finite-reported",
        # "the loss became nan", "all the losses in this model become nan", a named term
        # ("the loss_rcnn_bbox values are Nan"), and "I got nan values" / "NaN losses"
        # (never across a `key: number` field: mmocr's `loss: 1.9091, grad_norm: nan` is a finite loss)
        # (a named loss may also lead its name: ChangeFormer's "a G_loss of nan")
        r"(?:\b|(?<=_))loss(?:es|_\w+)?\b(?:(?![:=]\s*[-+.\d])[^\n]){0,30}?\b(?:became|becomes|become|(?:will|would|can|could)\s+be|is|are|was|were|got|goes|went|turns?|turned|"
        r"into|to|of|=|:)\s*['\"‘“`]?(?:nan|inf(?:inite|inity)?)\b|['\"‘“`]?\bnan['\"’”`]?\s+loss(?:es)?\b|"
        r"\b(?:got|get|gets|getting) (?:a )?['\"‘“`]?nan['\"’”`]?(?:s|\s+values?|\s+grad(?:ient)?s?)?\b|"
        # whatever the subject, a run said to go to NaN ("the last loras in the queue sometimes goes to
        # nan", "then it suddenly crashes to nan")
        r"\b(?:goes|go|went|going|crash(?:es|ed)?|jumps?|jumped|drops?|dropped|collapses?|collapsed)\s+to\s+['\"‘“`]?nan\b|"
        # "There is an nan during training"
        r"\bthere(?:'s| is| are| was| were)\s+(?:an?\s+)?nans?\s+(?:during|in|while|when)\s+(?:the\s+)?training\b|"
        # the loss taken up again by a pronoun in the same sentence ("the loss display correctly,
        # but about 1 hour later it turned into nan")
        r"\bloss(?:es)?\b[^\n.;]{0,60}?\b(?:it|they)\s+(?:turned|turns|became|becomes|went|goes|got)\s+"
        r"(?:into\s+|to\s+)?['\"‘“]?(?:nan|inf)\b|"
        # the subject left out after a conjunction ("the loss was about 1200 at first, and turned
        # into INF in the third epoch")
        r"\bloss(?:es)?\b[^\n.;]{0,80}?,?\s+(?:and|but|then)\s+(?:then\s+|finally\s+|later\s+|suddenly\s+|eventually\s+)?"
        r"(?:turned|turns|became|becomes|went|goes|got)\s+(?:into\s+|to\s+)?['\"‘“]?(?:nan|inf(?:inity)?)\b|"
        # what the run puts out said to be NaN ("the results indicates NAN in all following cases")
        r"\b(?:results?|outputs?|predictions?)\b[^\n.]{0,20}?\b(?:indicates?|are|is|was|were|became|become|becomes|"
        r"turn(?:s|ed)?\s+(?:into|to))\s+(?:all\s+|always\s+)?nan\b|"
        # in Chinese: "loss 变为 nan", "loss 会突变为 nan", "loss出现nan" (becomes, turns into, shows)
        r"(?:(?<![a-z_])loss(?![a-z_])|损失)[^\n]{0,12}?(?:变为|变成|成了|出现了?|为|是)\s*(?:nan|inf)(?![a-z])",
        "the log says the loss became NaN or inf",
    ),
    _sig(
        "loss-exploded-reported",
        # what people write about a loss that blew up without going non-finite
        r"\bloss(?:es)?\b[^\n]{0,30}?\b(?:becomes?|became|is|are|was|were|goes|went|gets?|got|grows?|grew)\s+"
        r"(?:very\s+|really\s+|extremely\s+|so\s+)?(?:huge|enormous|explod\w*|skyrocket\w*)\b|"
        r"\bloss(?:es)?\s+(?:explod\w*|blows? up|blew up|skyrocket\w*)|"
        # a loss said to diverge ("the *loss_cls* diverges before the iteration 2999", "the loss
        # started to diverge"): the run's, not two runs' logs diverging from each other
        r"\bloss(?:es|_\w+)?\b[^\n.]{0,24}?\b(?:diverg(?:es|ed|ing)|(?:starts?|started|began|begins)\s+to\s+diverge)\b|"
        # a sudden rise said in words ("the loss suddenly burst from about 0.05 or lower to 1")
        r"\bloss(?:es)?\b[^\n.]{0,30}?\b(?:suddenly|abruptly)\s+(?:burst|bursts|jump(?:s|ed)?|spike(?:s|d)?|"
        r"shot up|shoots up|rose|rises|went up|goes up)\b|"
        # in Chinese: "LOSS还是发散了" (the loss still diverged), "loss 爆炸" (blew up)
        r"(?<![a-z_])loss(?![a-z_])[^\n]{0,12}?(?:发散|爆炸)|"
        # ... and a sudden rise: "训练到一半突然loss增大" (half way, the loss suddenly grows), "loss突然变大"
        r"突然[^\n]{0,6}?(?:(?<![a-z_])loss(?![a-z_])|损失)[^\n]{0,4}?(?:增大|变大|上升|升高|飙升|暴涨|猛增)|"
        r"(?:(?<![a-z_])loss(?![a-z_])|损失)[^\n]{0,6}?突然[^\n]{0,4}?(?:增大|变大|上升|升高|飙升|暴涨|猛增)",
        "the log says the loss blew up",
    ),
    _sig(
        "loss-sudden-rise-reported",
        # a rise said to come at once, not over many steps: "Loss suddenly increases during
        # fine-tuning", "a strange sudden increase of loss", "a sudden spike in the loss"
        r"\bloss(?:es)?\b[^\n.]{0,30}?\b(?:suddenly|abruptly)\s+(?:increase[sd]?|increasing|soar(?:s|ed)?)\b|"
        r"\b(?:sudden|abrupt)\s+(?:increase|rise|jump|spike|surge|explosion)\s+(?:of|in)\s+(?:the\s+)?"
        r"(?:training\s+|train\s+)?loss(?:es)?\b",
        "the report says the loss rose all at once",
    ),
    _sig(
        "memory-growth-reported",
        r"\b(?:memory|ram)\s+(?:usage\s+)?(?:keeps?\s+|kept\s+|is\s+|was\s+)?(?:increas|grow|climb|ris)\w*|"
        # the other word order: "continuous rising of gpu memory", "increasing GPU memory usage"
        r"\b(?:increas|grow|climb|ris)(?:e|es|ed|ing)\s+(?:of\s+)?(?:the\s+)?(?:gpu\s+|cpu\s+|cuda\s+)?memory\b|"
        # growth over time said in other words: "the GPU memory consumption: a slow and steady increase"
        r"\bmemory\b[^\n.]{0,40}?\b(?:slow(?:ly)?|steady|steadily|continuous(?:ly)?|constant(?:ly)?|gradual(?:ly)?)\b"
        r"[^\n.]{0,15}?\b(?:increas|grow|climb|ris)\w*|"
        r"\bmemory\W{0,3}leak|"
        # "when I run DLA for 10k steps, the CPU memory will be used up"
        r"\bmemory\b[^\n.]{0,20}?\b(?:(?:will|would|is|was|gets?|got)\s+(?:be\s+)?)?used up\b|"
        # in Chinese: "内存占用一直增加" (memory use keeps increasing), "显存不断上涨"
        r"(?:内存|显存)[^\n]{0,8}?(?:一直|不断|持续|逐渐|慢慢)\s*(?:增加|增长|上涨|上升|变大|升高|飙升)|"
        # "its related memory is not freed"
        r"\bmemory\b[^\n.]{0,20}?\b(?:(?:is|was|are|were)\s+(?:not|never)|isn't|wasn't|aren't|weren't)\s+(?:freed|released)\b|"
        # taken up again by a pronoun, across the quoted code that printed it ("I print the RAM usage
        # after every optimization step by this command `...`. And I find it keeps growing")
        r"\b(?:memory|ram)\b[^\n]{0,200}?\b(?:it|which)\s+(?:keeps?|kept)\s+(?:on\s+)?(?:increas|grow|climb|ris)\w*",
        "the log says memory kept growing",
    ),
    _sig(
        "gpu-idle-reported",
        # what people write about a starved GPU ("GPU utilization is very low", "Volatile GPU-util
        # indicates 0%" or "is always zero", "... waiting for data"), and Lightning's warning about
        # a loader's workers
        r"\bgpu[- ]?util\w*\b[^\n]{0,60}?(?:\blow\b|\b0\s?%|\bzero\b|\bfluctuat|\bnot stable|\bunstable|waiting for data)|"
        r"\b(?:low|poor|(?:almost |nearly |near )?zero)\s+(?:volatile\s+)?gpu[- ]?util|"
        # the other word order: "the utilization rate of the GPU is 0%"
        r"\butili[sz]ation(?:\s+rate)?\s+of\s+(?:the\s+)?gpus?\s+(?:is|was|are|were|stays?|remains?)\s+"
        r"(?:only\s+|always\s+|almost\s+|nearly\s+)?(?:0\s?%|zero\b|(?:very\s+)?low\b)|"
        # "the gpu usage rate is very low", "the GPU is idle 70-92% of the time, waiting for data"
        r"\bgpus?\s+(?:usage|load)(?:\s+rate)?\s+(?:is|was|are|were|stays?|remains?)\s+"
        r"(?:very\s+|really\s+|extremely\s+|quite\s+|so\s+)?low\b|"
        # "I think I meet a data loading problem as the gpu usage is not high"
        r"\bgpus?\s+(?:usage|load|utili[sz]ation)(?:\s+rate)?\s+(?:is|was|are|were)\s+not\s+(?:very\s+)?high\b|"
        # "resulting in a GPU utilization rate of 0 all the time"; "A problem of slow data loading"
        r"\bgpus?\s+utili[sz]ation(?:\s+rate)?\s+(?:of|is|was|at)\s+0\b(?![.\d])|"
        r"\bslow\s+(?:data[ -]?load(?:ing|er)|loading\s+of\s+(?:the\s+)?(?:data|images))\b|"
        r"\bgpus?\s+(?:is|are|was|were|sits?|stays?|sat|stayed)\s+(?:mostly\s+|often\s+)?idle\b|"
        r"\b(?:data ?loader|data loading|load(?:ing)? (?:the )?data)\b[^\n]{0,30}\bbottleneck|"
        # "the processing in the data loader is too slow", and with the subject left out after a
        # contrast ("Dataloader is blazingly fast for ACT training but VERY slow for SmolVLA")
        r"\b(?:data[ -]?loader|data[ -]?loading)\b[^\n.]{0,30}?\b(?:is|are|was|were)\s+"
        r"(?:too\s+|very\s+|really\s+|extremely\s+|so\s+|quite\s+|pretty\s+|rather\s+|painfully\s+)?slow\b|"
        # its share of each batch's time ("data-loading takes about 80% of the time"), and a long
        # time said to go on loading ("the script takes a long time to load data into memory")
        r"\bdata[ -]?load(?:er|ing)\b[^\n.]{0,20}?\btakes?\s+(?:about\s+|around\s+|nearly\s+|over\s+)?[5-9]\d\s?%|"
        r"\btakes?\s+(?:a\s+)?(?:very\s+|really\s+)?long\s+time\s+to\s+load\s+(?:the\s+)?data\b|"
        r"\b(?:data ?loader|data ?loading)\s+(?:is|are|was|were)\b[^\n.]{0,60}?\bbut\s+(?:too\s+|very\s+|really\s+|extremely\s+|so\s+)?slow\b|"
        # "every few training steps, there is a delay of several tens of seconds in data loading"
        r"\b(?:delay|stall|wait)\w*\b[^\n.]{0,40}?\b(?:in|during|for|on)\s+(?:the\s+)?(?:data ?loading|data ?loader)\b|"
        r"many workers which may be a bottleneck|"
        # the loader's time per batch said to be large ("data_time>2. Too slow.")
        r"\bdata\W{0,3}_?time\s*>\s*\d|"
        # the loader's time said to be close to a whole batch's ("the data loading time is similar to
        # the batch time"), or too much ("why data loading needs so much time")
        r"\bdata[ -]?load(?:ing|er)\b[^\n]{0,60}?\b(?:close|similar|equal|comparable)\s+to\s+(?:the\s+)?"
        r"(?:batch|step|iter\w*)\s+time\b|"
        r"\bdata[ -]?load(?:ing|er)\s+(?:needs|takes|costs|spends|uses)\s+(?:so|too|very)\s+(?:much|long)\s+time\b|"
        # in Chinese: "dataloader时快时慢" (now fast, now slow), "dataloader 加载缓慢" (loads slowly);
        # the number of workers said to weigh on "数据读取速度" (the speed data is read at)
        r"(?:data ?loader|data_time|数据加载|数据读取)[^\n]{0,12}?(?:时快时慢|缓慢|很慢|太慢|变慢|慢)|"
        r"(?:影响|决定|限制)[^\n。]{0,4}?数据(?:读取|加载)(?:的)?速度",
        "the log says the GPU sits idle waiting for data",
    ),
    # a report that names the call the code missed ("`model.eval()` was not called", "I forgot
    # optimizer.zero_grad()", "validation without torch.no_grad()")
    *(
        _sig(
            f"{fault}-call-missing-reported",
            rf"(?:{call})\W{{0,3}}\s+(?:was|is|were|has|had)(?:\s+been)?\s*(?:not|never|n't)\s+(?:being\s+)?"
            rf"(?:called|used|invoked|set|added|applied)|"
            rf"(?:{call})\W{{0,3}}\s+(?:(?:was|is|were)(?:\s+been)?\s+)?(?:forgotten|missing|omitted|left out|absent)\b|"
            # in Chinese: "为什么不使用model.eval()" (why is it not used), "不开" (not switched on),
            # "忘了" (forgot), "缺少" (lacks)
            rf"(?:不使用|没有使用|没使用|未使用|不用|没用|不开|没开|没有开|不加|没加|没有加|忘了|忘记|缺少|缺了)\s*\W{{0,2}}"
            rf"(?:[a-z_]+\.){{0,3}}(?:{call})|"
            # a switch never made again ("it is never put in `train()` again")
            rf"\b(?:never|not)\s+(?:been\s+)?(?:put|set|switched|turned)\s+(?:back\s+)?(?:in|into|to)\s+\W{{0,2}}"
            rf"(?:[a-z_]+\.){{0,3}}(?:{call})|"
            # advice to wrap code in the call ("you can wrap the code in with torch.no_grad():")
            rf"\b(?:can|could|should|need to|must|have to)\s+(?:also\s+)?wrap\b[^\n]{{0,60}}?\b(?:in|with|under|inside)\s+"
            rf"(?:a\s+)?(?:with\s+)?\W{{0,2}}(?:[a-z_]+\.){{0,3}}(?:{call})|"
            rf"\b(?:forgot|forget|forgets|forgotten|forgetting|without|missing|missed|didn't|did not|never|"
            rf"(?:will|would|does|did|do) not|won't|doesn't|don't|there(?:'s| is| are) no|please|should)\s+"
            rf"(?:(?:we|you|they|i|it)\s+)?(?:find\s+|call\s+|calls\s+|to\s+)?"
            rf"(?:call(?:ing)?\s+|(?:use|using)\s+(?:with\s+)?|add(?:ing)?\s+|put(?:ting)?\s+|do(?:ing)?\s+|the\s+)?\W{{0,2}}"
            rf"(?:[a-z_]+\.){{0,3}}(?:{call})",
            f"the report says the code missed `{shown}`",
        )
        for fault, call, shown, _ in MISSED_CALLS
    ),
    # reports that say in words what the code does wrong (fresh batch 6: reviews of a project's own
    # code, the fault named before any fix)
    _sig(
        "graph-kept-reported",
        r"\bhold(?:s|ing)? (?:on )?(?:on)?to the (?:computation(?:al)? )?graph|\bnon-detached tensors?\b|"
        r"\bkeeps? (?:the |every |each )?(?:computation(?:al)? )?graphs?\b|\bleak in the training loop\b|"
        # "store the complete compution graph", "a computational graph that gets bigger every time"
        r"\b(?:stor|sav)(?:e|es|ed|ing) (?:the |every |each )?(?:complete |whole |entire |full )?comput\w* graphs?\b|"
        r"\bgraph\b[^\n.]{0,20}?\b(?:gets?|grows?|getting|growing|becomes?)\s+(?:bigger|larger)\b|"
        # the fix named as a read-out of the loss: "a simple fixation is to modify it as `self.loss.item()`"
        r"\b(?:modify|change|replace|fix|use|call)\w*\b[^\n.]{0,30}?\b(?:as|to|with|using)\s+\W?[\w.]*loss\w*\.item\(\)|"
        # ... and in Chinese: "要改为 += loss.item()" (should be changed to)
        r"(?:改为|改成|换成|改用)\s*[^\n]{0,6}?[\w.]*loss\w*\.item\(\)|"
        # the loss's accumulation said to run out of memory: "accumulating the loss this way leaks
        # memory", "loss累积写法 可能会导致显存溢出" (the way the loss is accumulated may overflow memory)
        r"\b(?:accumulat\w*|summ\w*)\s+(?:up\s+)?(?:the\s+)?loss(?:es)?\b[^\n.]{0,40}?\b(?:memory|oom)\b|"
        r"(?<![a-z_])loss(?![a-z_])\s*(?:累积|累加)[^\n]{0,20}?(?:显存|内存)",
        "the report says the loop keeps every step's graph alive",
    ),
    _sig(
        "double-softmax-reported",
        r"\bsoftmax\w*\b[^\n]{0,80}?\bbefore\b[^\n]{0,40}?\b(?:cross.?entropy|nll)|\bsoftmax(?:ed)? twice\b|"
        # the other order: "you apply CrossEntropy function after softmax activation"
        r"\b(?:cross.?entropy|nll)\w*\b[^\n.]{0,40}?\bafter\b[^\n.]{0,30}?\bsoftmax|"
        r"\bsoftmax(?:es|ed)? (?:it |them )?again\b|\bdouble softmax\b|"
        # the loss said to be computed on activated outputs ("in validation it is calculated with
        # sigmoid", "the loss is computed after the softmax")
        # (the loss, or "it" taking it up: an accuracy computed from the softmax is no fault)
        r"(?:\bloss(?:es)?\b[^\n.]{0,60}?|\bit\s+is\s+|\bit's\s+)(?:calculated|computed)\s+(?:with|after|on|from)\s+"
        r"(?:the\s+|a\s+)?(?:final\s+|output\s+)?(?:sigmoid|softmax)\b|"
        # the loss said to apply its own ("when you use nn.CrossEntropyLoss() it automatically
        # applies softmax function, so you should input just raw outputs")
        r"\bcross.?entropy\w*\b(?:\(\))?[^\n.]{0,40}?\b(?:automatically|already|internally|itself)\s+"
        r"(?:applies|apply|applied|does|includes?|contains?|computes?|uses?)\s+(?:a\s+|the\s+)?(?:log.?)?softmax|"
        # "the CrossEntropyLoss criterion do not need the model output parsed by Softmax"
        r"\bcross.?entropy\w*\b[^\n.]{0,40}?\b(?:do|does|did|should)\s*(?:not|n't)\s+(?:need|require|expect|take)\b"
        r"[^\n.]{0,50}?\bsoftmax|"
        # advice to take the model's last softmax out ("try to remove the last softmax layer in
        # Classifier"), and a softmax layer said to make the model hard to train
        r"\bremov\w*\s+(?:the\s+)?(?:last|final|output|extra)\s+softmax\b|"
        r"\bsoftmax\s+layers?\s+(?:makes?|made)\s+(?:the\s+)?models?\s+hard\s+to\s+train\b|"
        # in Chinese: "去掉最后的softmax" (take out the last softmax)
        r"(?:去掉|去除|删掉|删除)\s*(?:最后(?:一层)?的?|输出层?的?)?\s*softmax",
        "the report says the outputs go through a softmax before a loss that applies its own",
    ),
    _sig(
        "shuffle-off-reported",
        r"\b(?:not|never|doesn't|does not|didn't|did not|without)\b[^\n.]{0,30}?\bshuffle\s*=\s*True\b|"
        r"\b(?:data|dataset|samples|batches) (?:is |are |was |were )?not shuffled\b|"
        # the other order: "whether the argument `shuffle=True` is missing for the train_dataloader"
        r"\bshuffle\s*=\s*True\W{0,2}\s+(?:is|was)\s+(?:missing|absent|not (?:set|passed|given))\b|"
        # the run that fails once the flag is off: "it cannot be convergent when setting `shuffle=False`"
        r"\b(?:when|after|if|once)\s+(?:i\s+|we\s+)?(?:set(?:ting)?|us(?:e|ing)|turn(?:ing)?)\s+\W?shuffle\s*=\s*False\b|"
        # in Chinese: "可见训练数据没有shuffle" (evidently the data is not shuffled), "未shuffle", not
        # "有没有shuffle" (whether it shuffles)
        r"(?:(?<!有)没有|(?<![有没])没|未|不)\s*(?:进行\s*|做\s*)?shuffle",
        "the report says the training data is not shuffled",
    ),
    _sig(
        "scheduler-without-step-reported",
        r"\bschedul\w*\b[^\n.]{0,80}?\b(?:even when|even if|although|when)\b[^\n.]{0,40}?\b(?:optimi[sz]er\W*step|step)\b"
        r"[^\n.]{0,20}?\b(?:was|is|were|has)?\s*(?:not|never)\b",
        "the report says the scheduler steps when the optimizer does not",
    ),
    _sig(
        "scheduler-per-batch-reported",
        # "Scheduler was incorrectly stepped in the batch loop instead of in the epoch loop", "the
        # scheduler was wrongly updating for batches instead of epochs"
        r"\bschedul\w*\b[^\n]{0,80}?\b(?:batch(?:es)?|iterations?|steps?)\b[^\n]{0,30}?\binstead of\b[^\n]{0,30}?\bepochs?\b",
        "the report says the schedule stepped once a batch where it was meant to step once an epoch",
    ),
    _sig(
        "scheduler-misplaced-reported",
        # "the position of "scheduler.step()" is error in main.py, which leads to the learning-rate
        # decrese too fast": the step said to sit in the wrong place, the rate said to fall too soon
        r"\b(?:position|place|placement|location)\s+of\s+\W?(?:the\s+)?[\w.]*schedul\w*(?:\.step\(\))?\W?\s+"
        r"(?:is|was)\s+(?:an?\s+)?(?:wrong|error|incorrect|mistaken|misplaced)\b|"
        r"\bschedul\w*\b[^\n]{0,80}?\b(?:learning[ -]?rate|lr)\b[^\n.]{0,20}?\b(?:decay|decre|drop|fall|fell|shrink)\w*"
        r"\s+(?:too|very|so)\s+(?:fast|quickly|rapidly|early|soon)\b",
        "the report says the scheduler steps in the wrong place, the rate falling too soon",
    ),
    _sig(
        "params-cannot-train-reported",
        # "Model parameters cannot be trainable once they become requires_grad=False"
        r"\bparam(?:eter)?s?\b[^\n.]{0,40}?\b(?:cannot|can't|can not|never|won't|will not|are not|aren't)\s+"
        r"(?:be\s+|get\s+)?(?:trainable|trained|updated)\b|"
        # a review of the project's code: "It looks like you freeze all the conv layer parameters?"
        # (the reporter's own "I freeze the backbone" is a choice, not a report)
        r"\b(?:you|they|the code|this code|the script)\s+(?:\w+\s+)?(?:freeze|freezes|froze)\s+(?:all\s+)?(?:of\s+)?"
        r"(?:the\s+)?[\w ]{0,30}?\b(?:param(?:eter)?s|layers|weights|backbone)\b",
        "the report says parameters meant to train cannot be trained",
    ),
    _sig(
        "no-grad-advice-reported",
        # a fix named as adding the call to evaluation: "Add torch.no_grad() in evaluation" (a pull
        # request's title), "use no_grad during validation"
        r"\b(?:add(?:ed|s|ing)?|use[sd]?|using|wrap(?:ped|s|ping)?(?:\s+\w+){0,3}\s+(?:in|with))\s+\W?(?:torch\.)?no_grad\b(?:\(\))?\W?\s+"
        r"(?:in|to|for|during|around|at)\s+(?:the\s+)?(?:evaluation|validation|eval|inference|test(?:ing)?)\b",
        "the report says the evaluation needs no_grad",
    ),
    _sig(
        "softmax-dim-0-reported",
        # a softmax said to run over dim 0 ("we apply `softmax` function with `dim=0`, but `y_logit`
        # has the shape `[32, 10]`", "Why use softmax in dim 0?"): over the batch, not the classes
        r"\bsoftmax\b[^\n]{0,40}?\bdim\W{0,3}\s*(?:=|:|is|of)?\s*\W?0\b(?![.\d])|"
        r"\bdim\s*=\s*0\b[^\n.]{0,30}?\bsoftmax\b",
        "the report says a softmax runs over dim 0 (the batch), not the classes",
    ),
    _sig(
        "nondeterminism-reported",
        # "Non-deterministic results", "different runs ... different results", a cuDNN setting said to
        # make the results repeat
        r"\bnon-?deterministic\b|\bnot\s+deterministic\b|"
        r"\bdifferent\s+runs\b[^\n.]{0,30}?\bdifferent\s+results\b|\bdifferent\s+results\s+(?:in|on|across|between|for)\s+(?:different|each|every|two|multiple)\s+runs\b",
        "the report says the same run gives different results each time",
    ),
    _sig(
        "not-back-in-train-mode-reported",
        # "the model will not be put back into train mode" after an evaluation during training
        r"\b(?:not|never)\s+(?:be\s+|been\s+|get\s+|gets\s+)?(?:put|set|switched|turned)\s+back\s+(?:in|into|to)\s+"
        r"(?:the\s+)?train(?:ing)?\s+mode\b",
        "the report says the model is not switched back to training mode after an evaluation",
    ),
    _sig(
        "zero-grad-per-epoch-reported",
        # the gradients cleared once an epoch where each step needs it: "zero_grad() is called only
        # once per epoch", "epoch 당 zero_grad()를 한 번 사용하시던데요" (Korean: once per epoch), and
        # advice to clear before each backward ("loss.backward()를 사용할 때마다 그 전에 zero_grad()를")
        r"\bzero_grad\b(?:\(\))?[^\n.]{0,40}?\b(?:only\s+)?once\s+(?:per|an?|each|every|in each|in every)\s+epoch\b|"
        r"\bonce\s+(?:per|an?|each|every)\s+epoch\b[^\n.]{0,40}?\bzero_grad\b|"
        r"(?:epoch|에폭|에포크)\s*(?:당|마다)[^\n]{0,20}?zero_grad[^\n]{0,20}?한\s*번|"
        r"\bzero_grad\b[^\n.]{0,60}?\b(?:before|prior to)\s+(?:each|every)\s+(?:call\s+(?:of|to)\s+)?[\w.]*backward\b|"
        r"backward\b[^\n]{0,30}?(?:할\s*때마다|마다)[^\n]{0,20}?zero_grad",
        "the report says the gradients are cleared once an epoch, not before each backward",
    ),
    _sig(
        "profiler-data-wait",
        # Lightning's profiler: the training loop's wait for the next batch takes over half the time
        # (`[_TrainingEpochLoop].train_dataloader_next | 5.29 | 16 | 84.689 | 84.915`)
        r"train_dataloader_next\W+[\d.]+\W+\d+\W+[\d.]+\W+(?:[5-9]\d|100)(?:\.\d+)?\b",
        "the profiler says the training loop spent over half its time waiting for batches",
    ),
    _sig(
        "not-in-eval-mode-reported",
        r"\b(?:not|never|isn't|wasn't|aren't)\b[^\n.]{0,40}?\b(?:in|to|into) eval(?:uation)? (?:mode|state)\b|"
        # "the network is not set to evaluation through resnet.eval()"
        r"\b(?:not|never|isn't|wasn't|aren't)\b[^\n.]{0,40}?\b(?:in|to|into) eval(?:uation)?\s+(?:through|via|with|by)\s+[\w.]*eval\(\)",
        "the report says the model is not in eval mode where it should be",
    ),
    _sig(
        "mixed-precision-on",
        # the run trains in half precision, as a setting (`fp16=True`, `amp: true`, accelerate's
        # `Mixed precision type: fp16`) or in words ("using AMP", "fp16 training", "将 AMP 加入");
        # alone no failure and no cause: beside a NaN, the missing grad scaler is as likely as the rate
        r"\b(?:use_)?(?:fp16|amp|mixed_precision|autocast)\s*[=:]\s*['\"]?(?:true|1|fp16|bf16|o[12])\b|"
        r"\bmixed precision type:\s*(?:fp16|bf16)\b|"
        # fastai's `learner.to_fp16()`, Lightning's `Trainer(precision=16)` ("16-mixed", "bf16-mixed")
        r"\.to_fp16\(|\bprecision\s*=\s*['\"]?(?:16|bf16)\b|"
        # every tensor in half precision by default (`torch.set_default_tensor_type(torch.HalfTensor)`,
        # `torch.set_default_dtype(torch.float16)`), with no autocast and so no scaler's place
        r"set_default_tensor_type\(\s*(?:torch\.)?(?:cuda\.)?HalfTensor|set_default_dtype\(\s*(?:torch\.)?(?:float16|half)\b|"
        r"\b(?:using|use|with|enabled?|enabling|added?|adding)\s+(?:the\s+)?(?:fp16|amp|apex|autocast|"
        r"mixed[- ]precision|half[- ]precision)\b|\b(?:fp16|amp|mixed[- ]precision|half[- ]precision)\s+training\b|"
        r"(?-i:\bAMP\b)(?!\s*(?:not\b|is not\b|disabled|off\b|[=:]\s*False))",
        "the run trains in mixed precision (fp16 or AMP)",
    ),
    _sig(
        "requires-grad-fix-reported",
        # the fix a report names: gradients switched back on for parameters ("I fixed it by
        # changing trainer.py line 37 into `p.requires_grad = True`")
        r"\b(?:fix(?:ed)?|solved?|changing|changed|change|set(?:ting)?)\b[^\n]{0,80}?\brequires_grad\W{0,2}\s*=\s*True\b|"
        # the other order, the fix's line quoted first ("p.requires_grad = True", ... I changed it)
        r"\brequires_grad\s*=\s*True\b[^\n]{0,80}?\b(?:fixed|solved|changed)\b",
        "the report says setting requires_grad = True fixed it: parameters were frozen",
    ),
    _sig(
        "not-in-optimizer-reported",
        # "the parameters for crf and fc are not added to the optimizer", "missing from the optimizer"
        r"\b(?:param(?:eter)?s?|weights?|layers?)\b[^\n.]{0,60}?\b(?:not|never)\s+(?:being\s+|been\s+)?"
        r"(?:added|passed|given|included|registered|put)\s+(?:to|in|into)\s+(?:the\s+)?\w*optimi[sz]er\b|"
        r"\b(?:missing|left out|excluded)\s+from\s+the\s+optimi[sz]er\b|"
        # "Adam cannot get head_params, and cannot update head params!"
        r"\b(?:optimi[sz]er|adam\w*|sgd|rmsprop)\s+(?:cannot|can't|can not|does not|doesn't|did not|didn't|won't|"
        r"will not)\s+(?:get|see|update|include|receive|reach)\b[^\n.]{0,30}?param|"
        # in Chinese: "添加优化器的优化参数时并没有把这一块加进去" (the optimizer's parameters were added
        # without this block), "没有加入优化器" (not put into the optimizer)
        r"优化器[^\n。]{0,30}?(?:没有|没|未)[^\n。]{0,12}?(?:加进去|加入|添加|包含|放进去)|"
        r"(?:没有|没|未)(?:被)?(?:加入|添加|加进|放进|放入)(?:到)?\s*优化器",
        "the report says parameters meant to train are not in the optimizer",
    ),
    _sig(
        "eval-oom-reported",
        # "training is fine, but the validation would meet out of memory": memory that runs out only
        # once evaluation starts
        # (also a method named so, `_validate()`, and across a dotted name within the sentence:
        # "when _validate() is called, I get a "torch.cuda.OutOfMemoryError: CUDA out of memory"")
        r"(?:\b|_)(?:validation|validate|validating|evaluation|evaluate|evaluating|inference)\b(?:(?!\.\s)[^\n]){0,80}?"
        r"\bout of memory\b|\bout of memory\b[^\n.]{0,40}?\b(?:in|during|when|while)\s+(?:the\s+)?"
        r"(?:validation|validating|evaluation|evaluating|inference)\b|"
        # a no_grad said to be needed in the validation loop so that it does not run out of memory
        r"\bno_grad\b[^\n]{0,80}?\b(?:validation|evaluation)\b[^\n]{0,60}?\b(?:oom|out of memory)\b|"
        # in Chinese: "将训练好的模型拿来做inference,发现显存被占满" (the trained model run for inference
        # filled the GPU's memory); 推理, 测试, 验证, 评估: inference, testing, validation, evaluation
        r"(?:inference|推理|测试|验证|评估)[^\n]{0,30}?(?:显存|内存)[^\n]{0,6}?(?:被)?(?:占满|不足|不够|爆|溢出|用完|耗尽)",
        "the report says memory runs out once evaluation starts",
    ),
    _sig(
        "zero-division-reported",
        # "split_train_loss0 =nan because torch.sum(on_weight) =0", "the denominator becomes zero": a
        # division with nothing to keep it finite (Python's own ZeroDivisionError is a count, not this)
        r"\bnan\b[^\n]{0,60}?\bbecause\b[^\n]{0,80}?(?:=\s*0(?![.\d])|\b(?:is|was|becomes?|equals?)\s+(?:zero|0)(?![.\d]))|"
        r"(?<!error: )\bdivi(?:de|ded|ding|sion)\s+by\s+(?:zero|0)(?![.\d])|"
        r"\bdenominator\b[^\n.]{0,30}?\b(?:is|was|becomes?|be|equals?|=)\s*(?:zero|0)(?![.\d])|"
        # a logarithm that met a zero: "torch.log(input) = nan", "log(0)", "does not equal to 0 for
        # 'torch.log(input)'"
        r"\b(?:torch\.)?log\w*\([^)\n]{0,40}\)\s*=\s*-?(?:nan|inf)\b|\blog\s*\(\s*0\s*\)|\blog\s+of\s+(?:zero|0)(?![.\d])|"
        r"\b(?:not\s+)?equals?\s+(?:to\s+)?(?:zero|0)\s+for\s+['\"`‘“]?(?:torch\.)?log\b",
        "the report says a division met a zero",
    ),
    _sig(
        "lr-to-zero-reported",
        # "the learning rate is quickly becoming zero": a schedule run far ahead sits at its floor
        r"\b(?:learning rate|lr)\b[^\n.]{0,30}?\b(?:becom(?:es|ing)|became|goes|going|went|drops?|dropp(?:ed|ing)|"
        r"decay(?:s|ed|ing)?|fall(?:s|ing)?|fell|reach(?:es|ed|ing)?)\s+(?:to\s+)?(?:zero|0(?:\.0+)?)(?![.\d])",
        "the report says the learning rate fell to zero early",
    ),
    _sig(
        "lower-lr-works-reported",
        # the reporter's own experiment: "when I set smaller lr such as 0.0002, it worked", "it trains
        # fine with a lower learning rate"
        r"\b(?:smaller|lower|reduc\w*|decreas\w*)\s+(?:the\s+)?(?:learning[ _]rate|lr)\b[^\n]{0,60}?"
        r"\b(?:it\s+|training\s+|the\s+loss\s+)?(?:works?|worked|is fine|was fine|converge[sd]?|trains? (?:well|fine|normally))\b|"
        r"\b(?:works?|worked|converge[sd]?|trains? (?:well|fine|normally))\b[^\n.]{0,30}?\bwith\s+(?:a\s+)?(?:smaller|lower)\s+"
        r"(?:learning[ _]rate|lr)\b|"
        # the reporter's own conclusion: "I think the learning rate should be reduced to 0.0001"
        r"\b(?:learning[ _]rate|lr)\b[^\n.]{0,30}?\b(?:should|must|needs?\s+to|has\s+to|ought\s+to)\s+be\s+"
        r"(?:reduced|lowered|decreased|smaller|lower)\b",
        "the report says a smaller learning rate makes the run work",
    ),
    _sig(
        "late-oom-reported",
        # memory that ran out only after the run had gone on a while ("the error always rises after 5
        # epochs of training"): the catalog's out-of-memory late in a run, which a kept graph causes
        r"\b(?:out of memory|oom)\b[^\n]{0,200}?\bafter\s+(?:\d+|several|a few|some)\s+(?:epochs?|iterations?)\b|"
        r"\bafter\s+(?:\d+|several|a few|some)\s+(?:epochs?|iterations?)\b[^\n]{0,100}?\b(?:out of memory|oom)\b",
        "the report says memory ran out only late in the run",
    ),
    _sig(
        "job-cancelled",
        r"DUE TO TIME LIMIT|The operation was cancell?ed|exceeded the maximum execution time|"
        r"received signal SIGTERM|Signal 15 \(SIGTERM\)|Terminated\s*$|Signal 9 \(SIGKILL\)|(?:received|by) (?:signal )?SIGKILL",
        "the job was stopped from outside (time limit, cancellation or a kill signal)",
    ),
    _sig(
        "training-slow-reported",
        # training said to be slow, a first epoch far slower than the next ("my first epoch is
        # extremely slow ... from the second epoch and forth much better speeds"), or slower than
        # a paper reported: a run that waits (most often for data), not one that computes wrong
        r"\b(?:first|1st)\s+epoch\b[^\n.]{0,30}?\b(?:is|was|are|were|seems?|runs?)\s+(?:extremely\s+|very\s+|really\s+|so\s+|"
        r"much\s+|too\s+|super\s+|painfully\s+)?slow(?:er)?\b|"
        r"\b(?:training|train|epochs?|iterations?|steps?)\b[^\n.]{0,20}?\b(?:is|are|was|were|seems?|runs?|running)\s+"
        r"(?:extremely|very|really|so|much|too|super|painfully)\s+slow(?:er)?\b|"
        r"\b(?:training\s+is\s+)?(?:much\s+|far\s+)?slower\s+than\s+(?:expected|reported|(?:in\s+)?(?:the|your)\s+paper)\b|"
        # "it is so slow, and one epoch consumed ~2h", an epoch's time in hours, and the hours a paper
        # reported set against the run's ("should take 30h as your paper. But in practice ... 100h")
        r"\bit\s+(?:is|was|runs?|seems)\s+(?:so|very|extremely|really|too|super|painfully)\s+slow\b|"
        r"\b(?:one|an|each|every|per)\s+epoch\s+(?:consumed|consumes|takes?|took|costs?|needs?|lasts?)\s+(?:about\s+|around\s+|~\s*)?"
        r"\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|days?)\b|"
        r"\b(?:paper|reported)\b[^\n]{0,40}?\b\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|days?)\b[^\n]{0,60}?\b(?:take|takes|took|taking)\s+\d+\s*(?:h|hrs?|hours?|days?)\b|"
        r"\b(?:paper|reported)\b[^\n]{0,30}?\b(?:only\s+)?(?:about\s+|around\s+|~\s*)?\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|days?)\s+(?:for|of)\s+(?:the\s+)?training\b|"
        r"\b\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|days?)\b[^\n]{0,30}?\bpaper\b[^\n]{0,60}?\b(?:take|takes|took|taking)\s+\d+\s*(?:h|hrs?|hours?|days?)\b",
        "the report says training runs slow",
    ),
    _sig(
        "grad-exploding-reported",
        # "the exploding gradient during training", "gradients explode", 梯度爆炸: steps too large for
        # the loss surface, which clipping bounds and a smaller rate avoids
        r"\bexploding\s+gradients?\b|\bgradients?\s+(?:explode[sd]?|exploding|blows?\s+up|blew\s+up)\b|\bgradient\s+explosion\b|梯度爆炸",
        "the report says the gradients explode",
    ),
    _sig(
        "schedule-end-missed-reported",
        # "the learning rate should approach zero when the training ends" (and does not): a schedule
        # stepped a different number of times than it was built for
        r"\b(?:learning rate|lr)\b[^\n.]{0,30}?\bshould\s+(?:approach|reach|go\s+to|decay\s+to|end\s+(?:at|near)|be)\s+(?:zero|0)(?![.\d])"
        r"[^\n.]{0,30}?\b(?:when|at|by)\s+(?:the\s+)?(?:training\s+ends|end)\b|"
        r"\b(?:learning rate|lr)\b[^\n.]{0,30}?\b(?:does\s+not|doesn't|never|did\s+not|didn't)\s+(?:reach(?:es)?|approach(?:es)?|go(?:es)?\s+to|decays?\s+to|gets?\s+to)\s+"
        r"(?:zero|0)(?![.\d])",
        "the report says the schedule did not end where it should",
    ),
    _sig(
        "batch-size-dependent-eval-reported",
        # "the test accuracy depends on the batch size", "different batch sizes give different
        # results at inference": batch norm normalising each test batch by its own statistics
        r"\b(?:accuracy|acc|results?|predictions?|outputs?|performance|metrics?|scores?)\b[^\n.]{0,40}?\b(?:depends?|depending|"
        r"changes?|changing|varies|vary|varying|differs?|differ(?:ent|ing))\b[^\n.]{0,20}?\b(?:on|with)\s+(?:the\s+)?"
        r"(?:test(?:ing)?\s+|eval(?:uation)?\s+|inference\s+|validation\s+)?batch[\s_-]?sizes?\b|"
        r"\bdifferent\s+(?:test(?:ing)?\s+|eval(?:uation)?\s+|inference\s+)?batch[\s_-]?sizes?\s+(?:gives?|gave|yields?|produces?|leads? to)\s+"
        r"different\s+(?:results?|accurac(?:y|ies)|predictions?|outputs?)\b",
        "the report says evaluation results change with the batch size",
    ),
    _sig(
        "loss-stalls-with-scheduler-reported",
        # "the loss doesn't come down if I use the scheduler": a scheduler's step() taken for the
        # optimizer's, or a schedule stepped so often that the rate fell to nothing
        r"\bloss(?:es)?\b[^\n.]{0,40}?\b(?:doesn't|does not|didn't|did not|won't|will not|isn't|is not|not)\s+"
        r"(?:come down|go down|going down|coming down|decrease|decreasing|drop|dropping|converge|converging|improve|improving|fall|falling)\b"
        r"[^\n.]{0,40}?\b(?:if|when|once|after|with)\b[^\n.]{0,30}?\bschedul|"
        r"\b(?:if|when|once|after)\b[^\n.]{0,20}?\b(?:use|add|used|added|using|adding)\b[^\n.]{0,20}?\bschedul\w*\b[^\n.]{0,40}?"
        r"\bloss(?:es)?\b[^\n.]{0,20}?\b(?:doesn't|does not|didn't|did not|won't|will not|stops?|stopped|no longer)\s+"
        r"(?:come down|go down|decrease|decreasing|drop|dropping|converge|improve|fall|falling)\b",
        "the report says the loss stops falling once a scheduler is used",
    ),
    _sig(
        "loss-zero-reported",
        # a loss said to fall all at once to exactly zero and stay there: the numbers collapsed (an
        # overflow in half precision, a step too large), not a model that learned; in Chinese
        # "loss ... 然后突然变成0" (then suddenly became 0). (A loss that falls smoothly towards zero
        # says nothing of this.)
        r"\bloss(?:es)?\b[^\n.]{0,40}?\b(?:suddenly|abruptly)\s+(?:becomes?|became|drops?|dropped|goes|went|falls?|fell|"
        r"turns?|turned|collapses?|collapsed)\s+(?:to\s+|into\s+)?(?:0|zero)(?:\.0+)?(?![.\d])|"
        r"(?:(?<![a-z_])loss(?![a-z_])|损失)[^\n]{0,30}?突然(?:变成|变为|降到|降为|掉到|成了|为)\s*0(?![.\d])",
        "the report says the loss suddenly fell to zero and stayed",
    ),
    _sig(
        "non-finite-tensor-error",
        # an error whose message is a tensor of NaN/inf (an `assert` on computed boxes printing
        # them: SparseR-CNN's `AssertionError: tensor([[nan, nan, nan, nan], ...`): the values the
        # model computed went non-finite, as a NaN loss says of the loss
        r"(?:Error|Exception):\s*tensor\(\[+\s*[-+]?(?:nan|inf)\b",
        "the run stopped on an error showing a tensor of NaN or inf values",
    ),
    _sig(
        "process-killed",
        # the shell's `Killed` for a process the kernel's out-of-memory killer ended, a data-loader
        # worker "killed by signal: Killed", and a report that the run "gets killed" (in Chinese,
        # "出现killed"): host memory ran out with no Python error to say so
        # (bash, run as a script, names the line and pid: `bash: line 1:  9442 Killed   python3 train.py`;
        # as a shell job: `[1]+  Killed   python train.py`)
        r"^\s*(?:\S+: line \d+:\s+)?(?:\[\d+\]\+?\s+)?(?:\d+\s+)?Killed(?::\s*9)?"
        r"(?:\s{2,}\S[^\n]*|\s+(?:python|torchrun|accelerate|deepspeed)[^\n]*)?\s*$|\bkilled by signal: Killed\b|"
        r"\b(?:gets?|got|was|is being|being)\s+killed\b|(?:出现|被)\s*killed(?![a-z])|"
        # the word the run printed, quoted: '"killed" will appear in second epoch'
        r"['\"‘“]killed['\"’”]",
        "the process was killed without an error of its own: the host most likely ran out of memory",
    ),
)

# Where several signatures hit, an earlier line normally wins (the first real cause); these
# are reported-late symptoms whose own line never beats a more specific one.
_LATE = {"device-side-assert"}
# Warnings and reports: they never mask a later error, nor are they masked by an earlier one.
# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {sig.symptom for sig in SIGNATURES}
    | {
        "anomaly-nan-log",
        "crashed",
        "few-trainable-parameters",
        "oom-in-evaluation",
        "oom-at-round-step",
    }
)

_NOT_ERRORS = {
    "crashed",
    "quoted-no-grad",
    "quoted-detach",
    "quoted-requires-grad-false",
    "quoted-eval-without-eval-mode",
    "few-trainable-parameters",
    "oom-in-evaluation",
    "oom-at-round-step",
    "job-cancelled",
    "broadcast-warning",
    "recompiling",
    "tensor-to-scalar-warning",
    "scheduler-before-optimizer",
    "loss-non-finite-reported",
    "loss-exploded-reported",
    "loss-sudden-rise-reported",
    "dataloader-timeout",
    "memory-growth-reported",
    "gpu-idle-reported",
    *(f"{fault}-call-missing-reported" for fault, *_ in MISSED_CALLS),
    "graph-kept-reported",
    "double-softmax-reported",
    "shuffle-off-reported",
    "scheduler-without-step-reported",
    "scheduler-misplaced-reported",
    "not-in-eval-mode-reported",
    "not-in-optimizer-reported",
    "requires-grad-fix-reported",
    "lr-to-zero-reported",
    "loss-zero-reported",
    "batch-size-dependent-eval-reported",
    "loss-stalls-with-scheduler-reported",
    "training-slow-reported",
    "grad-exploding-reported",
    "schedule-end-missed-reported",
    "lower-lr-works-reported",
    "mixed-precision-on",
    "zero-division-reported",
    "eval-oom-reported",
    "late-oom-reported",
}
# Warnings of a fault the run lives on with: where an error stopped the run, that error is
# the first thing to fix and the warning comes second.
WARNINGS = frozenset({"broadcast-warning", "scheduler-before-optimizer", "recompiling", "tensor-to-scalar-warning"})
# Reports a metric series says better: the series' own symptom wins where it exists.
_SERIES_SAYS = {"loss-non-finite-reported": "loss", "memory-growth-reported": "memory"}
_GUARDED_OPS = re.compile(r"Log|Sqrt|Div|Pow|Reciprocal|Norm|Atan2|Acos|Asin", re.I)
# the exception line, after a pytest `E   ` or a quoted `> ` prefix
_EXCEPTION = re.compile(r"^(?:[E>]\s+)?(?:[\w.]+\.)?(\w*(?:Error|Exception))(?::|$)\s*(.*)")
# Words (lower case) at least one of which every match of a signature holds. One search of a
# line's lower-cased text for all of them at once says which signatures can match it at all:
# most event lines hold none, and the full patterns (slow to try at every position) run only
# on the few that do. tests/triage/test_triage_detectors.py checks each pattern's matches on
# every corpus line hold one of its words.
ANCHORS: dict[str, tuple[str, ...]] = {
    "inplace-modified": ("inplace operation", "gradient computation"),
    "leaf-inplace": ("leaf variable",),
    "backward-twice": ("a second time",),
    "unscale-without-scale": ("_scale is none", "scaler.scale("),
    "no-grad-fn": ("does not require grad", "require computing gradients"),
    "non-scalar-backward": ("implicitly created",),
    "device-mismatch": (
        "same device",
        "should be the same",
        "but expected it to be on",
        "but expected them to be on",
        "different gpus",
        "indexed tensor",
        "device type",
        "backend",
        "expected object of type",
        "expected type",
        "expected device",
    ),
    "out-of-memory": ("out of memory", "outofmemoryerror", "defaultcpuallocator", "alloc_failed", "oom"),
    "collective-timeout": (
        "timeout",
        "timed out",
        "time out",
        "aborted",
        "monitoredbarrier",
        "closed by peer",
        "watchdog",
    ),
    "anomaly-nan": ("returned nan values",),
    "label-out-of-range": (
        "out of bounds",
        "n_classes",
        "index out of range",
        "indexerror: target",
        "srcselectdimsize",
        "out of table",
    ),
    "device-side-assert": ("device-side assert",),
    "shape-mismatch": (
        "shapes cannot be multiplied",
        "size mismatch",
        "size of tensor a",
        "invalid for input of size",
        "target batch_size",
        "channels, but got",
        "sizes of tensors must match",
        "expected input with shape",
        "must match mat2",
        "multi-target",
        "-dimensional input for",
        "(unbatched)",
        "kernel size can't",
        "output size is too small",
        "equal to input_size",
        "expected hidden",
        "expected target size",
        "spatial targets",
        "the expanded size",
        "inconsistent tensor size",
        "matrices expected",
        "target size (torch",
        "equal size",
        "same reduction dim",
        "same number of dimensions",
        "broadcast shape",
        "should contain",
        "same number of elements",
        "defined either for all",
    ),
    "dtype-mismatch": (
        "scalar type",
        "same dtype",
        "not implemented for",
        "found dtype",
        "desired output type",
        "input type (",
        "floating point type for target",
        "target dtype",
        "tensor (got",
        "dtypes match",
        "floating point and complex dtype",
        "floating point dtype",
        "expected object of type",
        "expected type",
    ),
    "ddp-unused-parameters": ("finished reduction", "did not receive grad", "not used in producing"),
    "broadcast-warning": ("using a target size",),
    "recompiling": (
        "recompil",
        "cache_size",
        "graph break",
        "cachelimitexceeded",
        "_dynamo/exc.py",
        "_dynamo/convert_frame.py",
    ),
    "tensor-to-scalar-warning": ("converting a tensor with requires_grad",),
    "dataloader-timeout": ("dataloader timed out",),
    "scheduler-before-optimizer": ("lr_scheduler.step()",),
    "collective-got-none": ("invalid function argument",),
    "loss-non-finite-reported": (
        "loss",
        "损失",
        "to nan",
        "to 'nan",
        'to "nan',
        "to `nan",
        "got `nan",
        "got 'nan",
        'got "nan',
        "got nan",
        "get nan",
        "gets nan",
        "getting nan",
        "got a nan",
        "get a nan",
        "nan during",
        "nans during",
        "nan in",
        "nans in",
        "nan while",
        "nan when",
    ),
    "loss-exploded-reported": ("loss", "损失"),
    "loss-sudden-rise-reported": ("loss",),
    "memory-growth-reported": ("memory", " ram ", "ram usage", "内存", "显存"),
    "gpu-idle-reported": (
        "gpu util",
        "gpu-util",
        "gpuutil",
        "bottleneck",
        "gpu usage",
        "gpus usage",
        "gpu load",
        "idle",
        "slow",
        "delay",
        "time>",
        "慢",
        "tilization",
        "to load data",
        "data-load",
        "data load",
        "数据读取",
        "数据加载",
    ),
    **{f"{fault}-call-missing-reported": words for fault, _, _, words in MISSED_CALLS},
    "graph-kept-reported": (
        "graph",
        "non-detached",
        "leak in the training loop",
        ".item()",
        "accumulat",
        "summ",
        "累积",
        "累加",
    ),
    "double-softmax-reported": ("softmax", "sigmoid"),
    "shuffle-off-reported": ("shuffle",),
    "scheduler-without-step-reported": ("schedul",),
    "not-in-eval-mode-reported": ("eval mode", "evaluation mode", "eval state", "evaluation state", "eval()"),
    "scheduler-per-batch-reported": ("schedul",),
    "scheduler-misplaced-reported": ("schedul",),
    "params-cannot-train-reported": ("param", "freez", "froze"),
    "zero-grad-per-epoch-reported": ("zero_grad",),
    "no-grad-advice-reported": ("no_grad",),
    "softmax-dim-0-reported": ("softmax", "dim"),
    "nondeterminism-reported": ("deterministic", "different results"),
    "not-back-in-train-mode-reported": ("train mode", "training mode"),
    "profiler-data-wait": ("train_dataloader_next",),
    "mixed-precision-on": (
        "fp16",
        "amp=",
        "amp:",
        "amp ",
        "apex",
        "autocast",
        "mixed precision",
        "mixed_precision",
        "mixed-precision",
        "half precision",
        "half-precision",
        "precision=",
        "halftensor",
        "set_default_dtype",
    ),
    "not-in-optimizer-reported": ("optimizer", "optimiser", "adam", "sgd", "rmsprop", "优化器"),
    "requires-grad-fix-reported": ("requires_grad",),
    "lr-to-zero-reported": ("learning rate", "lr"),
    "lower-lr-works-reported": ("learning rate", "learning_rate", "lr"),
    "zero-division-reported": ("because", "by zero", "by 0", "denominator", "log"),
    "eval-oom-reported": ("out of memory", "oom", "显存", "内存"),
    "late-oom-reported": ("out of memory", "oom"),
    "job-cancelled": ("time limit", "cancel", "maximum execution time", "sigterm", "sigkill", "terminated"),
    "process-killed": ("killed",),
    "non-finite-tensor-error": ("nan", "inf"),
    "loss-zero-reported": ("loss", "损失"),
    "batch-size-dependent-eval-reported": ("batch",),
    "training-slow-reported": ("slow", "epoch", "paper", "reported"),
    "grad-exploding-reported": ("explod", "explosion", "blow", "blew", "梯度爆炸"),
    "schedule-end-missed-reported": ("learning rate", "lr"),
    "loss-stalls-with-scheduler-reported": ("schedul",),
}


def _trie(words: list[str]) -> str:
    """One regex for a set of literal words, factored by shared prefixes: Python's `re` tries
    a flat alternation of a hundred words one by one at every position, a trie in one step."""
    root: dict[str, dict] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(root)


_WORDS: dict[str, list[int]] = {}
for _i, _sig_ in enumerate(SIGNATURES):
    for _w in ANCHORS[_sig_.symptom]:
        _WORDS.setdefault(_w, []).append(_i)
_ANY = re.compile(_trie(list(_WORDS)))  # does the line hold any signature's words?
_EVERY = re.compile(f"(?=({_trie(list(_WORDS))}))")  # every word it holds, at each position


def _candidates(text: str) -> list[Signature]:
    """The signatures whose words `text` holds: the only ones that can match it."""
    low = text.lower()
    if not _ANY.search(low):
        return []
    hit = {i for m in _EVERY.finditer(low) for i in _WORDS.get(m.group(1), ())}
    return [SIGNATURES[i] for i in sorted(hit)]


# counts as PEFT, Lightning's summary ("21.5 K") and hand-written prints ("1,234 trainable") give them
_COUNT = r"(\d[\d,_]*(?:\.\d+)?\s?[KMBT]?)\b"
_TRAINABLE = re.compile(
    r"(?<!non-)(?<!non )trainable(?: param(?:eter)?s?)?:?\s*" + _COUNT + r"|" + _COUNT + r" (?:are )?trainable\b", re.I
)
_OF_TOTAL = re.compile(r"^\s*(?:of|/)\s*" + _COUNT)  # "trainable: 64 of 37,127 parameters"
_NON_TRAINABLE = re.compile(r"non-?\s?trainable param(?:eter)?s?:?\s*" + _COUNT, re.I)
_PERCENT = re.compile(r"trainable%:?\s*([\d.]+)|\(\s*([\d.]+)\s*%\s*\)", re.I)
_TOTAL = re.compile(r"all params:?\s*" + _COUNT + r"|" + _COUNT + r" (?:total )?param(?:eter)?s\b", re.I)


def detect(ctx: Context) -> list[Symptom]:
    """Name every known error signature, the final exception and the trainable-parameter share."""
    found: dict[str, list[Reading]] = {}
    groups: dict[str, re.Match[str]] = {}
    exceptions: list[Reading] = []
    counts: list[Reading] = []
    unmatched: list[Reading] = []
    out: list[Symptom] = []
    matched: dict[str, list[tuple[str, re.Match[str]]]] = {}  # a big log repeats its event lines
    for rd in ctx.events:
        text = rd.text
        # one combined search per distinct line; only a line holding some signature's words is tried
        sigs = matched.get(text)
        if sigs is None:
            sigs = matched[text] = _matches(text)
        _record(rd, sigs, found, groups)
        if not sigs and _EXCEPTION.match(text.strip()):
            unmatched.append(rd)
        if _EXCEPTION.match(text.strip()):
            exceptions.append(rd)
        if "rainable" in text:
            counts.append(rd)
    # lines read again with a neighbour: an exception line continued on the next line (a message
    # pasted or printed wrapped), and a sentence a report wraps mid-line ("stepped in the batch loop
    # instead of in the" / "epoch loop")
    continued = unmatched + [
        rd
        for rd in ctx.events
        if rd.line is not None
        and not matched.get(rd.text)
        and rd.text.rstrip()[-1:].isalpha()
        and len(rd.text) < 400
        and _candidates(rd.text)
        and rd not in unmatched
    ]
    _read_joined(ctx, continued, 1, found, groups)
    # advice written around a quoted line of code ("you can wrap the code in" / "with
    # torch.no_grad():"): the sentence before it, read with it
    quoted_calls = [
        rd for rd in ctx.events if rd.line is not None and not matched.get(rd.text) and _CALL_LINE.match(rd.text)
    ]
    _read_joined(ctx, quoted_calls, -1, found, groups, accept=_OPEN_SENTENCE.search)
    if any(name in found for name in _SERIES_SAYS):
        # a docstring a pytest traceback quotes ("... can cause a memory leak") reports nothing
        source = quoted.source_lines(ctx.readings)
        for name in _SERIES_SAYS:
            if name in found:
                found[name] = [rd for rd in found[name] if rd.line not in source]
    for sig in SIGNATURES:
        hits = found.get(sig.symptom)
        if not hits or _series_says(ctx, sig.symptom):
            continue
        first = hits[0]
        summary = sig.summary
        if sig.symptom == "anomaly-nan":
            summary += f" ({groups['anomaly-nan'].group('fn')})"
        more = f" (seen {len(hits)} times)" if len(hits) > 1 else ""
        ev = [_ev(first)]
        ranks = sorted({h.rank for h in hits if h.rank is not None})
        if len(ranks) > 1:
            summary += f" on ranks {', '.join(map(str, ranks))}"
        out.append(
            Symptom(
                sig.symptom,
                summary + more,
                tuple(ev),
                rank=first.rank,
                value=float(len(hits)),
                detail=groups[sig.symptom].group("fn") if sig.symptom == "anomaly-nan" else None,
            )
        )
    out.extend(_trainable(counts))
    out.extend(_eval_by_batch_size(ctx.readings))
    no_grad = found.get("no-grad-fn")
    if no_grad and no_grad[0].line is not None:
        # one message, three causes: the code quoted on the way to backward() tells them apart
        out.extend(quoted.detect(ctx.readings, quoted.source_lines(ctx.readings), no_grad[0].line))
    # a pasted evaluation script that never switches the model to eval mode
    out.extend(quoted.eval_without_eval_mode(ctx.readings))
    oom = found.get("out-of-memory")
    if oom and oom[0].line is not None:
        out.extend(_oom_in_evaluation(ctx.readings, oom[0]))
        if "eval-oom-reported" not in found:
            out.extend(_oom_said_in_evaluation(ctx.readings, oom[0]))
        out.extend(_oom_at_round_step(ctx, oom[-1]))
    fn = groups.get("anomaly-nan")
    # Log/Sqrt/Div backward NaNs come from unguarded inputs; a (log-)softmax guards itself
    if fn is not None and _GUARDED_OPS.search(fn.group("fn")) and "softmax" not in fn.group("fn").lower():
        first = found["anomaly-nan"][0]
        out.append(
            Symptom(
                "anomaly-nan-log",
                f"the NaN came from {fn.group('fn')}, an operation that needs its input kept away from zero",
                (_ev(first),),
                rank=first.rank,
            )
        )
    if exceptions:
        first = exceptions[0]
        m = _EXCEPTION.match(first.text.strip())
        assert m is not None
        out.append(Symptom("crashed", f"the run stopped with {m.group(1)}", (_ev(first),), rank=first.rank))
    return _order(out)


_EVALUATION = re.compile(
    r"^(?:_*(?:val|valid|validate|validation|eval|evaluate|evaluation|test|testing)(?:_\w+)?|\w*_(?:val|eval|evaluate|validate|validation)(?:_\w+)?)$",
    re.I,
)


# "test is error.", "but the evaluation throws an error": a report's line placing the failure
# in the test or evaluation phase
_EVAL_FAILS = re.compile(
    r"^\W*(?:but\s+|and\s+)?(?:the\s+|my\s+)?(?:test|testing|evaluation|eval|validation|inference)\s+"
    r"(?:is|was|gives?|gave|throws?|threw|raises?|raised|has|had|returns?|returned)\s+(?:an?\s+|the\s+)?errors?\b",
    re.I,
)


def _oom_said_in_evaluation(readings: list[Reading], oom: Reading) -> list[Symptom]:
    """A report that places the failure in testing ("train is ok. test is error.") where the
    error is an allocation that failed: the evaluation ran out where training steps fit."""
    said = next((rd for rd in readings if rd.line is not None and _EVAL_FAILS.match(rd.text)), None)
    if said is None:
        return []
    return [
        Symptom(
            "eval-oom-reported",
            "the report says the error comes in testing, and memory ran out",
            (_ev(said), _ev(oom)),
            rank=oom.rank,
        )
    ]


def _oom_at_round_step(ctx: Context, oom: Reading) -> list[Symptom]:
    """Memory that ran out right after a round step (the 1000th) of a run logged at a finer
    interval that had stepped fine until then: the work a loop does every N steps (evaluating,
    sampling images) ran out where the training steps fit, the sign of its forward building
    graphs without `no_grad`."""
    assert oom.line is not None
    logged = sorted(
        {(p.line, p.step) for series in ctx.series.values() if series.explicit_steps for p in series.points if p.line}
    )
    # the metric lines before the allocation; all of them where the message comes first (a report's
    # title) and the run's own last lines were cut
    before = [(line, step) for line, step in logged if line < oom.line]
    steps = before or logged
    if len(steps) < 4:
        return []
    line, step = steps[-1]
    earlier = [s for _, s in steps[:-1]]
    if step < 100 or step % 100 or all(s % 100 == 0 for s in earlier) or max(earlier) >= step:
        return []
    text = next((rd.text for rd in ctx.readings if rd.line == line), f"step {step}")
    return [
        Symptom(
            "oom-at-round-step",
            f"memory ran out right after step {step}, a round step, where the steps before it fit: "
            "the work a loop does every so many steps (evaluating, sampling) ran out",
            (Evidence(line, text.strip()[:300], rank=oom.rank), _ev(oom)),
            rank=oom.rank,
        )
    ]


def _oom_in_evaluation(readings: list[Reading], oom: Reading) -> list[Symptom]:
    """An allocation that failed in an evaluation function: where training steps fit, the
    evaluation's own forward ran out, the sign of graphs built and kept without `no_grad`."""
    assert oom.line is not None
    frames = [
        (rd, m.group(1) or "")
        for rd in readings
        if rd.line is not None and oom.line - 60 < rd.line < oom.line and (m := quoted.PY_FRAME.match(rd.text))
    ]
    # the frames of the project's own code: a library's (torch/nn/modules/...) come after them
    own = [(rd, fn) for rd, fn in frames if "site-packages" not in rd.text and "dist-packages" not in rd.text]
    if not own or not _EVALUATION.match(own[-1][1]):
        return []
    rd, fn = own[-1]
    return [
        Symptom(
            "oom-in-evaluation",
            f"memory ran out in `{fn}`, an evaluation function, not in a training step",
            (_ev(rd), _ev(oom)),
            rank=oom.rank,
        )
    ]


def _matches(text: str) -> list[tuple[str, re.Match[str]]]:
    """Every signature `text` holds, with its match."""
    return [(sig.symptom, m) for sig in _candidates(text) if (m := sig.pattern.search(text))]


def _record(
    rd: Reading,
    sigs: list[tuple[str, re.Match[str]]],
    found: dict[str, list[Reading]],
    groups: dict[str, re.Match[str]],
) -> None:
    """Count `rd` as an occurrence of each signature it matched; keep each first match."""
    for symptom, m in sigs:
        found.setdefault(symptom, []).append(rd)
        groups.setdefault(symptom, m)


# A line that is one quoted statement holding a call a report may say is missing, and a sentence
# left open before it (it ends on a preposition or a verb that takes the code as its object).
_CALL_LINE = re.compile(r"\s*(?:with\s+)?[\w.]*(?:no_grad|eval|train|zero_grad|set_epoch|step)\(\)\s*:?\s*$")
_OPEN_SENTENCE = re.compile(r"\b(?:in|with|into|inside|under|using|use|call|add|wrap)\s*:?\s*$", re.I)


def _read_joined(
    ctx: Context,
    readings: list[Reading],
    offset: int,
    found: dict[str, list[Reading]],
    groups: dict[str, re.Match[str]],
    accept=lambda text: True,
) -> None:
    """Match each reading again joined with the line `offset` away (1: the next, -1: the one
    before; taken where `accept` holds for its text), in reading order, and record what matches."""
    if not readings:
        return
    want = {rd.line + offset: rd.line for rd in readings if rd.line is not None}
    near: dict[int, str] = {}
    for rd in ctx.readings:
        if rd.line in want and rd.index == 0:
            near[want[rd.line]] = rd.text
    for rd in readings:
        other = near.get(rd.line) if rd.line is not None else None
        if other is None or not accept(other):
            continue
        joined = rd.text.rstrip() + " " + other.strip() if offset > 0 else other.rstrip() + " " + rd.text.strip()
        _record(rd, _matches(joined), found, groups)


def _series_says(ctx: Context, symptom: str) -> bool:
    """True where a metric series already measures what a prose report of `symptom` claims."""
    name = _SERIES_SAYS.get(symptom)
    if name is None:
        return False
    series = ctx.series.get(name) or (ctx.series.get("val_loss") if name == "loss" else None)
    if series is None:
        return False
    if name == "loss":
        return any(not math.isfinite(p.value) for p in series.points)
    return len(series.points) >= 8


def _order(symptoms: list[Symptom]) -> list[Symptom]:
    """Mark which error came first: later errors are often consequences of the first; a warning
    the run survived ranks below the error that stopped it."""
    errors = [s for s in symptoms if s.name not in _NOT_ERRORS and s.name not in _LATE]
    if not errors:
        return symptoms
    first = min(errors, key=lambda s: s.first_line)
    out = []
    for s in symptoms:
        if s.name in WARNINGS:
            out.append(Symptom(s.name, s.summary, s.evidence, s.step, s.value, s.rank, s.strength * 0.7, s.detail))
        elif s in errors and s is not first:
            # a later error still counts, but less: it may be a consequence of the first
            out.append(
                Symptom(
                    s.name,
                    s.summary + " (after an earlier error)",
                    s.evidence,
                    s.step,
                    s.value,
                    s.rank,
                    s.strength * 0.5,
                    s.detail,
                )
            )
        elif s.name in _LATE:
            out.append(Symptom(s.name, s.summary, s.evidence, s.step, s.value, s.rank, s.strength * 0.5, s.detail))
        else:
            out.append(s)
    return out


# one evaluation per batch size, a line each: `bs8: 0.412`, `batch_size=128 acc 0.726`
_BY_BATCH_SIZE = re.compile(
    r"^\s*(?:bs|batch[\s_-]?size)\s*[=:]?\s*(\d+)\s*[:=,|]?\s*(?:(?:test\s+|val\s+)?acc(?:uracy)?\s*[:=]?\s*)?(\d*\.?\d+)\s*%?\s*$",
    re.I,
)
BATCH_SIZE_SPREAD = 0.1  # a tenth apart: far beyond the rounding of one deterministic evaluation


def _eval_by_batch_size(readings: list[Reading]) -> list[Symptom]:
    """The same evaluation printed for several batch sizes whose results differ by a tenth or
    more of the best: a model in eval mode gives every sample the same output whatever it is
    batched with; one in training mode normalises each batch by its own statistics."""
    seen: dict[int, tuple[float, Reading]] = {}
    for rd in readings:
        text = rd.text
        if len(text) < 80 and ("bs" in text or "atch" in text) and rd.index == 0 and (m := _BY_BATCH_SIZE.match(text)):
            seen.setdefault(int(m.group(1)), (float(m.group(2)), rd))
    if len(seen) < 2:
        return []
    values = [v for v, _ in seen.values()]
    if max(values) <= 0 or (max(values) - min(values)) < BATCH_SIZE_SPREAD * max(values):
        return []
    lines = [rd for _, rd in sorted(seen.values(), key=lambda x: x[1].line or 0)]
    summary = (
        f"one evaluation printed for {len(seen)} batch sizes gives {min(values):.4g} to {max(values):.4g}: "
        "results that depend on the batch size"
    )
    return [
        Symptom("batch-size-dependent-eval-reported", summary, tuple(_ev(rd) for rd in lines[:3]), rank=lines[0].rank)
    ]


def _trainable(lines: list[Reading]) -> list[Symptom]:
    """The share of trainable parameters, from PEFT-style, summary-table or hand-written counts.

    A line may give the share itself, or trainable and total counts; a summary table gives
    trainable and non-trainable counts on lines of their own.
    """
    trainable = frozen = None
    where: Reading | None = None
    for rd in lines:
        m = _TRAINABLE.search(rd.text)
        n = _NON_TRAINABLE.search(rd.text)
        if n:
            frozen = parse_count(n.group(1))
        if not m:
            continue
        where = rd
        trainable = parse_count(m.group(1) or m.group(2))
        pct_m = _PERCENT.search(rd.text, m.end())
        of_m = _OF_TOTAL.match(rd.text[m.end() :])
        total_m = _TOTAL.search(rd.text.replace(m.group(0), " ")) if not pct_m else None
        pct = None
        if pct_m:
            pct = float(pct_m.group(1) or pct_m.group(2))
        elif of_m and trainable is not None:
            total = parse_count(of_m.group(1))
            pct = 100.0 * trainable / total if total else None
        elif total_m and trainable is not None:
            total = parse_count(total_m.group(1) or total_m.group(2))
            pct = 100.0 * trainable / total if total else None
        if pct is not None:
            return _few(pct, rd)
    if where is not None and trainable is not None and frozen is not None and trainable + frozen > 0:
        return _few(100.0 * trainable / (trainable + frozen), where)
    return []


def _few(pct: float, rd: Reading) -> list[Symptom]:
    if pct >= 1.0:
        return []
    return [
        Symptom("few-trainable-parameters", f"only {pct:.3g}% of the parameters are trainable", (_ev(rd),), value=pct)
    ]


_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_count(text: str | None) -> float | None:
    """A printed count as a number: `1,234`, `1_234`, `21.5 K`, `21.5k`, `1.2M`; None if it is none."""
    raw = (text or "").replace(",", "").replace("_", "").replace(" ", "")
    scale = _SCALE.get(raw[-1:].upper(), 1.0) if raw[-1:].isalpha() else 1.0
    try:
        return float(raw.rstrip("KMBTkmbt")) * scale
    except ValueError:
        return None


def _ev(rd: Reading) -> Evidence:
    return Evidence(rd.line, rd.text.strip()[:300], rank=rd.rank)
