"""Triage on failing-run excerpts quoted from public bug reports (tests/triage/world/).

Every excerpt is what a thread showed (one pasted line, a traceback cut short, a long log),
labelled with the cause the thread confirmed; the manifest keeps its source URL. The corpus is
split by source repository into `dev`, `test` and later `fresh`, `fresh2`, ... batches, each
collected after the rules froze (world/README.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from injector import catalog
from triage.explain import explain

WORLD = Path(__file__).resolve().parent / "world"
MANIFEST = json.loads((WORLD / "manifest.json").read_text(encoding="utf-8"))
FAULTY = [m for m in MANIFEST if m["cause"] is not None]
HEALTHY = [m for m in MANIFEST if m["cause"] is None]
# the later batches in the order they were collected: `fresh`, `fresh2`, `fresh3`, ...
FRESH = sorted({m["split"] for m in MANIFEST if m["split"].startswith("fresh")}, key=lambda s: int(s[5:] or 1))
SPLITS = ("dev", "test", *FRESH)
GITHUB = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/\d+$")
# a forum thread (fresh batch 14 on): `repo` is "forum:<host>/<thread id>"; a Q&A site's question or
# a blog's article (fresh batch 22 on) likewise
FORUMS = (
    re.compile(r"https://(discuss\.pytorch\.org)/t/[^/]+/(\d+)"),
    re.compile(r"https://(stackoverflow\.com)/questions/(\d+)"),
    re.compile(r"https://(blog\.csdn\.net)/[^/]+/article/details/(\d+)"),
)


def ids(entry: dict) -> list[str]:
    return list(_ids_of(entry["file"]))


@functools.cache
def _ids_of(name: str) -> tuple[str, ...]:
    """The causes named for one excerpt: each is read once per run (several tests ask)."""
    return tuple(c.id for c in explain(WORLD / "excerpts" / name).causes)


def test_manifest_has_provenance_for_every_excerpt():
    assert len(FAULTY) >= 80
    for m in MANIFEST:
        assert (WORLD / "excerpts" / m["file"]).is_file(), m["file"]
        github = GITHUB.match(m["url"])
        forum = next((found for f in FORUMS if (found := f.match(m["url"]))), None)
        source = github.group(1) if github else f"forum:{forum.group(1)}/{forum.group(2)}" if forum else None
        assert source == m["repo"], m["url"]
        if m["cause"] is not None:
            assert catalog.get(m["cause"]).id == m["cause"]
        # the split is by source, never by excerpt: one repository's threads stay together;
        # each `fresh` batch comes from repositories in no earlier split (collected last, each
        # after the rules froze, see README.md)
        assert m["split"] in SPLITS, m["file"]
        if m["split"] in ("dev", "test"):
            want = "dev" if int(hashlib.sha1(m["repo"].lower().encode()).hexdigest(), 16) % 2 == 0 else "test"
            assert m["split"] == want, m["file"]
    halves = {s: {m["repo"] for m in MANIFEST if m["split"] == s} for s in SPLITS}
    assert not halves["dev"] & halves["test"]
    for i, split in enumerate(FRESH):
        earlier = set().union(*(halves[s] for s in SPLITS[: i + 2]))
        assert not halves[split] & earlier, split
    versions = " ".join(m["torch"] or "" for m in MANIFEST)
    assert re.search(r"\b0\.\d|\b1\.\d", versions) and re.search(r"\b2\.\d", versions)
    kinds = {m["kind"] for m in MANIFEST}
    assert {"one-line", "partial-traceback", "long-log"} <= kinds


# Excerpts that hold nothing but PyTorch's scheduler-order warning. In five threads the call
# order was the fault; in one (ims-toucan-18, a custom scheduler) the maintainer called it
# meaningless. The log cannot tell them apart, and a warning alone is not a failure (PyTorch
# prints it on runs that train well), so triage names no cause on any of them: the five are
# misses the bench counts, the healthy one is no longer a false alarm (issue 9, round 4).
WARNING_ONLY = {
    "pytorch-transformers-classif-21.log",
    "fast-reid-501.log",
    "deformable-protopnet-6.log",
    "reid-strong-baseline-190.log",
    "basicsr-206.log",
    "ims-toucan-18-healthy.log",
    # fresh batch 24: the warning and "Is it ok?"; the reporter moved the scheduler's step after the loop
    "pct_pytorch-21.log",
}


# Excerpts that do not hold their cause in any form a reader could take it from: the bench counts
# them as misses, the per-split goal below does not (fresh batch 6, world/README.md).
UNTELLABLE = {
    # "the loss falls very slowly" in Chinese, no number: a double softmax, as the thread found
    "bertclassifier-2.log": None,
    # "the loss is not always decreasing, even at lr 1e-6": a missing zero_grad, as the thread found
    "pytorch-learning-1.log": None,
    # fresh batch 7: "the gradscale keeps getting zero and the loss keeps unchanged": labels left as
    # floats (a dtype fault), as the thread found
    "insightface-1437.log": None,
    # fresh batch 8: "the train and test loss shows nan around 6th epoch": the sigmas' initial values,
    # as the maintainer found (a NaN alone reads as a rate too high: silence is the better answer)
    "pytorch-ard-2.log": None,
    # "the model always predicts class 3" after ten epochs: a collapse many faults make; the
    # maintainer found model.train() never called
    "hyrax-101.log": None,
    # "the loss is abnormal" and a screenshot: the rate, as the maintainer found
    "llamatuner-63.log": None,
    # "loss is big, and flows up and down" with the optimizer's code: the model was built twice,
    # the optimizer holding the first copy's parameters, as the maintainer found
    "practical-pytorch-9.log": None,
    # "the result is so strange", two screenshots and a command with `--lr 5e-2`: a rate SGD can
    # take elsewhere; the maintainer said it was too high for this model
    "yet-another-efficientdet-pyt-677.log": None,
    # fresh batch 25: "during validate, loss is always some value, prec1 also keep zero" while training
    # improves: a train/validation split of data never shuffled, as another user found
    "pt.darts-24.log": None,
}
# Excerpts that hold their cause but in a form triage does not read yet: the bench counts them as
# misses, the per-split goal does not; each keeps the answer it gets now, so a change shows.
NOT_READ_YET = {}
# Excerpts triage answers wrongly now, each with the answer it gives (the bench counts them; the
# per-split goal does not): the log reads as another fault as much as the confirmed one.
WRONG_YET = {
    # "the adapter weight didn't change during training" and a high loss: parameters that never move
    # read as a missing backward or step; the thread found the adapter's weights left out of the
    # optimizer. Since session 30 one named part's weights reported unchanged puts frozen-parameters third.
    "adapters-260.log": "missing-backward",
    # "Cuda running out of memory ... when it trying to validate (after 5 epochs)": the memory the
    # training kept (its loss summed as a tensor) ran out in validation; the log says only the error.
    # Since session 30 an out-of-memory reported after epochs of training puts the leak second.
    "ffdnet-pytorch-4.log": "cuda-oom",
    # fresh batch 15: "after running a while the loss becomes nan" (in Chinese), read as any such
    # report is, a rate too high first; the maintainer found a sum that can be zero (a missing
    # epsilon), which since session 38 is named second, as a NaN report's other common cause
    "east-2.log": "lr-too-high",
    # fresh batch 24 (first measured in session 38): kornia's NaN gradients at a saturated sigmoid
    # read as any NaN report, the rate first and a missing epsilon second; cog's loss under
    # inference_mode, whose reporter then set requires_grad by hand, reads as frozen parameters
    # first, no-grad-training second; ChangeFormer's NaN in a run set to HalfTensor ties the rate
    # and the grad scaler, the rate listed first
    "kornia-918.log": "lr-too-high",
    "cog-1681.log": "frozen-parameters",
    "changeformer-91.log": "lr-too-high",
    # fresh batch 25: an LSTM's "nan" loss with "the exploding gradient" named, which tighter clipping
    # fixed: the rate first, missing clipping second; non-local's out-of-memory in testing under
    # 0.4's `volatile` (no_grad fixed it) reads as the OOM, the missing no_grad third
    "lstmp.pytorch-2.log": "lr-too-high",
    "non-local_pytorch-9.log": "cuda-oom",
}
# Splits below the goal after their fixes, with the top-1 share each holds now (the bench reports
# them; this keeps them from falling further). fresh9 (world/README.md): three NaN runs where the
# rate was the cause read first as a missing epsilon or a tie with the grad scaler, all in the top 3.
BELOW_GOAL = {"fresh9": 0.82}


@pytest.mark.parametrize("name", sorted(UNTELLABLE))
def test_an_excerpt_that_does_not_hold_its_cause_gets_only_what_it_says(name):
    said = UNTELLABLE[name]
    assert ids({"file": name})[:1] == ([said] if said else [])


@pytest.mark.parametrize("name", sorted(NOT_READ_YET | WRONG_YET))
def test_an_excerpt_not_read_yet_keeps_its_answer(name):
    said = (NOT_READ_YET | WRONG_YET)[name]
    assert ids({"file": name})[:1] == ([said] if said else [])


@pytest.mark.parametrize("entry", FAULTY, ids=lambda m: m["file"])
def test_confirmed_cause_is_among_the_first_three(entry):
    if entry["file"] in WARNING_ONLY | set(UNTELLABLE) | set(NOT_READ_YET) | set(WRONG_YET):
        return  # test_a_warning_alone_names_nothing, test_an_excerpt_that_does_not_hold_its_cause_...
    assert entry["cause"] in ids(entry)[:3]


@pytest.mark.parametrize("name", sorted(WARNING_ONLY))
def test_a_warning_alone_names_nothing(name):
    d = explain(WORLD / "excerpts" / name)
    assert "scheduler-before-optimizer" in {s.name for s in d.symptoms}
    assert d.causes == () and d.status == "healthy"


@pytest.mark.parametrize("entry", HEALTHY, ids=lambda m: m["file"])
def test_healthy_excerpt_names_no_cause(entry):
    assert ids(entry) == []


@pytest.mark.parametrize("split", SPLITS)
def test_accuracy_goal_holds_on_each_half(split):
    # the warning-only, untellable and not-yet-read excerpts are counted by the bench, not held to the goal here
    runs = [
        m
        for m in FAULTY
        if m["split"] == split and m["file"] not in WARNING_ONLY | set(UNTELLABLE) | set(NOT_READ_YET) | set(WRONG_YET)
    ]
    named = [ids(m) for m in runs]
    top1 = sum(n[:1] == [m["cause"]] for m, n in zip(runs, named, strict=False)) / len(runs)
    top3 = sum(m["cause"] in n[:3] for m, n in zip(runs, named, strict=False)) / len(runs)
    assert top1 >= BELOW_GOAL.get(split, 0.9) and top3 >= 0.97, (split, top1, top3)


def test_where_the_log_cannot_tell_detached_from_no_grad_the_field_sets_the_order():
    # The missing-grad_fn error reads the same after a `.detach()` as under `torch.no_grad()`
    # when no quoted code says which. Both are then in the top three, in the order the dev split
    # shows them most often (there, confirmed no-grad runs outnumber detached graphs).
    dev = Counter(m["cause"] for m in MANIFEST if m["split"] == "dev")
    assert dev["no-grad-training"] > dev["detached-graph"]
    log = WORLD.parent / "programs" / "logs" / "lm_accelerate__detached-graph__s2.log"
    named = [c.id for c in explain(log).causes]
    assert named[:2] == ["no-grad-training", "detached-graph"]


def test_a_library_stop_message_in_the_past_tense_reports_a_non_finite_loss():
    # https://github.com/neuralhydrology/neuralhydrology/issues/101 (fresh batch 4's one miss)
    d = explain(WORLD / "excerpts" / "neuralhydrology-101.log")
    assert "loss-non-finite-reported" in {s.name for s in d.symptoms}
    assert [c.id for c in d.causes][:1] == ["lr-too-high"]


def test_a_loss_climbing_to_nan_ranks_the_step_size_first_as_the_field_does():
    # Summed gradients (no zero_grad, SGD with momentum) and a step too large both make the loss
    # climb tenfold per epoch to NaN; where the log cannot tell them apart, both are in the top
    # three, in the order the dev split confirms them (a step too large more often).
    dev = Counter(m["cause"] for m in MANIFEST if m["split"] == "dev")
    assert dev["lr-too-high"] > dev["missing-zero-grad"]
    log = WORLD.parent / "programs" / "logs" / "vit_print__missing-zero-grad__s3.log"
    assert [c.id for c in explain(log).causes][:2] == ["lr-too-high", "missing-zero-grad"]


# Fresh batch 5's first misses, each a kind fixed after its one measurement (world/README.md):
# prose and traceback spellings of symptoms triage already knew, and a report naming the call
# the code missed.
FRESH5_READ = [
    ("maskrcnn-benchmark-33.log", "loss-non-finite-reported", "lr-too-high"),  # losses become nan
    ("detectron-pytorch-29.log", "loss-non-finite-reported", "lr-too-high"),  # loss_rcnn_bbox values are Nan
    ("vovnet-detectron2-3.log", "loss-non-finite-reported", "lr-too-high"),  # I got nan values
    ("edsr-pytorch-171.log", "gpu-idle-reported", "dataloader-bottleneck"),  # GPU-util is always zero
    ("sparenet-12.log", "memory-growth-reported", "loss-tensor-leak"),  # a slow and steady increase
    ("robustdg-30.log", "eval-mode-call-missing-reported", "missing-eval-mode"),  # model.eval() was not called
    ("a-pytorch-tutorial-to-image--57.log", "oom-in-evaluation", "missing-no-grad-eval"),  # OOM in validate()
]


def test_a_loss_reported_blown_up_names_the_step_size_then_summed_gradients():
    # "loss since 2nd epoch becomes huge and unchanged" (CenterNet#928, a missing zero_grad):
    # a loss that blew up reads the same for both; the field confirms a step too large more often
    d = explain(WORLD / "excerpts" / "centernet-928.log")
    assert "loss-exploded-reported" in {s.name for s in d.symptoms}
    assert [c.id for c in d.causes][:2] == ["lr-too-high", "missing-zero-grad"]


# Fresh batch 6's first misses that held their cause in words, each a kind fixed after its one
# measurement (world/README.md): reports that name the fault in words, and a typo in an error.
FRESH6_READ = [
    ("labelmodels-4.log", "graph-kept-reported", "loss-tensor-leak"),  # the sum of non-detached tensors
    ("scico-2.log", "double-softmax-reported", "double-softmax"),  # softmaxed before the CrossEntropyLoss
    ("super-gradients-416.log", "shuffle-off-reported", "no-shuffle"),  # does not pass shuffle=True
    ("accelerate-963.log", "scheduler-without-step-reported", "scheduler-step-misaligned"),
    ("vsepp-4.log", "train-mode-call-missing-reported", "missing-train-mode"),  # will not call train_start()
    ("vaal-2.log", "not-in-eval-mode-reported", "missing-eval-mode"),  # not ... in eval mode
    ("fixmatch-pytorch-34.log", "set-epoch-call-missing-reported", "missing-set-epoch"),  # did not find set_epoch
    ("cenet-8.log", "non-scalar-backward", "non-scalar-backward"),  # "only for scaler outputs"
]


# Fresh batch 7's first misses that held their cause in words, each a kind fixed after its one
# measurement (world/README.md): other spellings of a call not made, of an idle GPU, a rate that
# fell to zero, parameters left out of the optimizer, and a loss that diverged, written in Chinese.
FRESH7_READ = [
    ("tenniscourtdetector-7.log", "zero-grad-call-missing-reported", "missing-zero-grad"),  # there is no "..."
    ("deep-learning-v2-pytorch-3.log", "eval-mode-call-missing-reported", "missing-eval-mode"),  # don't we use
    ("lion-115.log", "no-grad-call-missing-reported", "missing-no-grad-eval"),  # please use with `...`
    ("deit-81.log", "gpu-idle-reported", "dataloader-bottleneck"),  # the gpu usage rate is very low
    ("geti-5958.log", "gpu-idle-reported", "dataloader-bottleneck"),  # the GPU is idle 70-92% of the time
    ("srgan-pytorch-1.log", "lr-to-zero-reported", "scheduler-step-misaligned"),  # quickly becoming zero
    ("hvpnet-5.log", "not-in-optimizer-reported", "frozen-parameters"),  # not added to the optimizer
    ("pytorch-yolov2-1.log", "loss-exploded-reported", "lr-too-high"),  # LOSS还是发散了
]


# Fresh batch 8's first misses that held their cause in words, each a kind fixed after its one
# measurement (world/README.md).
FRESH8_READ = [
    ("mpd-public-6.log", "shuffle-off-reported", "no-shuffle"),  # `shuffle=True` is missing
    ("examples-387.log", "gpu-idle-reported", "dataloader-bottleneck"),  # almost zero gpu utilization
    ("atmorep-20.log", "gpu-idle-reported", "dataloader-bottleneck"),  # the data loader is too slow
    ("course-v3-598.log", "not-in-optimizer-reported", "frozen-parameters"),  # Adam cannot update head params
    ("ctc-ce-for-ast-3.log", "zero-division-reported", "missing-epsilon"),  # =nan because torch.sum(w) =0
]


# Fresh batch 9's first misses read after one round of fixes (world/README.md).
FRESH9_READ = [
    ("multibench-26.log", "not-in-eval-mode-reported", "missing-eval-mode"),  # not switched to eval state
    ("dab-detr-58.log", "zero-grad-call-missing-reported", "missing-zero-grad"),  # zero_grad() is forgotten
    ("dgl-745.log", "eval-oom-reported", "missing-no-grad-eval"),  # the validation would meet out of memory
    ("paac-pytorch-1.log", "memory-growth-reported", "loss-tensor-leak"),  # its memory is not freed
    ("open-animateanyone-101.log", "gpu-idle-reported", "dataloader-bottleneck"),  # a delay in data loading
]


# Fresh batch 10's first misses, all written reports, read after one round of fixes (world/README.md).
FRESH10_READ = [
    (
        "idinvert-pytorch-reproduced-1.log",
        "zero-grad-call-missing-reported",
        "missing-zero-grad",
    ),  # zero_grad() missing?
    (
        "hyperspectral-classification-21.log",
        "eval-mode-call-missing-reported",
        "missing-eval-mode",
    ),  # 不使用model.eval()
    (
        "fcgf-15.log",
        "no-grad-call-missing-reported",
        "missing-no-grad-eval",
    ),  # wrap the code in / with torch.no_grad():
    ("ml2021-2.log", "graph-kept-reported", "loss-tensor-leak"),  # store the complete compution graph
    ("nakedattention-1.log", "graph-kept-reported", "loss-tensor-leak"),  # a graph that gets bigger every time
    ("deep-semantic-similarity-mod-2.log", "double-softmax-reported", "double-softmax"),  # CE does not need Softmax
    ("shufflenet-series-24.log", "shuffle-off-reported", "no-shuffle"),  # not convergent when setting shuffle=False
    ("mmocr-698.log", "gpu-idle-reported", "dataloader-bottleneck"),  # dataloader时快时慢
    ("mmcv-1315.log", "gpu-idle-reported", "dataloader-bottleneck"),  # data_time>2. Too slow.
    ("fast-stable-diffusion-2608.log", "loss-non-finite-reported", "lr-too-high"),  # or I will get a nan
]


# Fresh batch 11's first misses read after one round of fixes (world/README.md).
FRESH11_READ = [
    ("lag-llama-51.log", "profiler-data-wait", "dataloader-bottleneck"),  # train_dataloader_next 84.9%
    ("ultra-pytorch-6.log", "graph-kept-reported", "loss-tensor-leak"),  # modify it as `self.loss.item()`
    ("diffusiontrack-2.log", "memory-growth-reported", "loss-tensor-leak"),  # 内存占用一直增加
    ("pfedme-11.log", "loss-non-finite-reported", "lr-too-high"),  # why train loss will be nan?
    ("ncsn-2.log", "train-mode-call-missing-reported", "missing-train-mode"),  # never put in `train()` again
    ("byol-a-7.log", "params-cannot-train-reported", "frozen-parameters"),  # cannot be trainable
    ("tt-blacksmith-711.log", "zero-grad-call-missing-reported", "missing-zero-grad"),  # forgot to do `zero_grad`
    ("ivadomed-55.log", "scheduler-per-batch-reported", "scheduler-step-misaligned"),  # batch loop instead of / epoch
    ("auto-pytorch-210.log", "scheduler-per-batch-reported", "scheduler-step-misaligned"),  # batches instead of epochs
]
FRESH12_READ = [
    ("pytorch-dann-7.log", "double-softmax-reported", "double-softmax"),  # remove the last softmax layer
    ("modelscope-121.log", "shuffle-off-reported", "no-shuffle"),  # 训练数据没有shuffle
    ("siamcar-18.log", "not-in-optimizer-reported", "frozen-parameters"),  # 优化器 ... 没有把这一块加进去
    # "Why the loss goes to inf and nan?" over an excerpt cut at 72% of epoch 1, the loss at 3e31
    # and creeping up: no start shown, so no saturated start; a creep is no plateau
    ("deep-object-pose-74.log", "loss-non-finite-reported", "lr-too-high"),
]
FRESH13_READ = [
    ("facerecognition-pytorch-2.log", "loss-non-finite-reported", "lr-too-high"),  # loss is ‘nan’ (curly quotes)
    ("wetectron-12.log", "loss-non-finite-reported", "lr-too-high"),  # There is an nan during training
    ("stanford-cars-model-1.log", "shape-mismatch", "shape-mismatch"),  # size mismatch, m1: ... (no exception name)
    ("lipfd-18.log", "requires-grad-fix-reported", "frozen-parameters"),  # fixed it by ... `p.requires_grad = True`
    # fresh batch 9's "set fc_obj's requires_grad = True" and then the loss no longer falls: the layer
    # was left out of the optimizer, as the reporter found (untellable until fresh13's kind)
    ("vrd-dsr-8.log", "requires-grad-fix-reported", "frozen-parameters"),
]
FRESH14_READ = [
    ("federated-learning-9.log", "double-softmax-reported", "double-softmax"),  # CrossEntropy ... after softmax
    ("sentence-transformers-2872.log", "not-in-optimizer-reported", "frozen-parameters"),  # not given to AdamOptimizer
]
FRESH15_READ = [
    ("detr-285.log", "lower-lr-works-reported", "lr-too-high"),  # when I set smaller lr such as 0.0002, it worked
    (
        "yolo3-pytorch-3.log",
        "graph-kept-reported",
        "loss-tensor-leak",
    ),  # loss累积写法 ... 显存溢出; 改为 += loss.item()
    ("tts-1187.log", "lr-to-zero-reported", "scheduler-step-misaligned"),  # the learning rate to reach 0.000
]
FRESH16_READ = [
    # detectron2's NaN message, its loss dict wrapped over lines: one reading, no NaN-first series
    ("meshrcnn-36.log", "loss-non-finite", "lr-too-high"),
    ("ddpm-pytorch-17.log", "loss-exploded-reported", "lr-too-high"),  # 训练到一半突然loss增大
    # lerobot's `data_s:13.330` beside `updt_s:0.302`, stalling again eight steps later; its flat
    # loss in a warm-up (lr 1.8e-06 to 3.4e-06) is no missing backward
    ("lerobot-1488.log", "data-wait", "dataloader-bottleneck"),
    # fresh batch 9's `Time/step` swinging between 4 s and 45 s under a rate printed as zero: steps
    # stalling, and a flat loss the zero rate explains (a wrong answer before fresh16's kinds)
    ("clip4clip-58.log", "step-time-stalls", "dataloader-bottleneck"),
]
FRESH17_READ = [
    ("nvflare-2443.log", "eval-oom-reported", "missing-no-grad-eval"),  # _validate() is called ... out of memory
    ("particleflow-290.log", "eval-oom-reported", "missing-no-grad-eval"),  # no_grad ... in the validation loop ... OOM
    # nn.CrossEntropyLoss() "automatically applies softmax function"
    ("deep-learning-activity-recog-10.log", "double-softmax-reported", "double-softmax"),
    ("stylegan2-pytorch-11.log", "graph-kept-reported", "loss-tensor-leak"),  # saving the computation graph
    ("standalone-deeplearning-11.log", "zero-grad-per-epoch-reported", "missing-zero-grad"),  # epoch 당 ... 한 번
    ("deep-fashion-retrieval-1.log", "params-cannot-train-reported", "frozen-parameters"),  # you freeze all the ...
    ("vqa-pytorch-2.log", "gpu-idle-reported", "dataloader-bottleneck"),  # data loading is quite slow
    ("fastintercu-vvc-2.log", "gpu-idle-reported", "dataloader-bottleneck"),  # utilization rate of the GPU is 0%
    ("action-detection-41.log", "gpu-idle-reported", "dataloader-bottleneck"),  # a long time to load data
]
FRESH18_READ = [
    # "the network is not set to evaluation through resnet.eval()"
    ("pytorch-tutorial-62.log", "not-in-eval-mode-reported", "missing-eval-mode"),
    ("parallelwavegan-26.log", "no-grad-advice-reported", "missing-no-grad-eval"),  # Add torch.no_grad() in evaluation
    ("xmem-90.log", "gpu-idle-reported", "dataloader-bottleneck"),  # the gpu usage is not high
]
FRESH19_READ = [
    ("pytorch-deep-learning-163.log", "softmax-dim-0-reported", "wrong-softmax-dim"),  # softmax ... `dim=0`
    ("dpn-1.log", "softmax-dim-0-reported", "wrong-softmax-dim"),  # Why use softmax in dim 0?
    ("castor-45.log", "nondeterminism-reported", "nondeterminism"),  # Non-deterministic results
    ("miccai19-medvqa-14.log", "nondeterminism-reported", "nondeterminism"),  # different runs, different results
    ("pytorch-dr-1.log", "gpu-idle-reported", "dataloader-bottleneck"),  # a GPU utilization rate of 0
    # "the model will not be put back into train mode" after evaluate_during_training
    ("simpletransformers-739.log", "not-back-in-train-mode-reported", "missing-train-mode"),
]
FRESH20_READ = [
    ("usad-6.log", "eval-oom-reported", "missing-no-grad-eval"),  # "train is ok. test is error." then OOM
    # `[ 1000/1000000]` after steps 997, 998, 999, then out of memory in the sampling forward
    ("ugatit-pytorch-23.log", "oom-at-round-step", "missing-no-grad-eval"),
    ("faceboxes-pytorch-10.log", "gpu-idle-reported", "dataloader-bottleneck"),  # 影响着数据读取速度
    # "why data loading needs so much time ? it seems to be close to the batch time"
    ("two-stream-action-recognitio-20.log", "gpu-idle-reported", "dataloader-bottleneck"),
    # "the position of "scheduler.step()" is error ... the learning-rate decrese too fast"
    ("stgcn-18.log", "scheduler-misplaced-reported", "scheduler-step-misaligned"),
]
FRESH21_READ = [
    ("llava-1301.log", "loss-sudden-rise-reported", "lr-too-high"),  # "Loss suddenly increases during fine-tuning"
]
FRESH22_READ = [
    # "将训练好的模型拿来做inference,发现显存被占满" (the trained model run for inference filled the GPU's memory)
    ("csdn-120814456.log", "eval-oom-reported", "missing-no-grad-eval"),
    # "不加optimizer.zero_gard()会导致正确率越训越低" (without zero_grad, typed as people type it)
    ("dive-into-deep-learning-6.log", "zero-grad-call-missing-reported", "missing-zero-grad"),
    # "CustomModel forgets to zero_grad"
    ("deep-learning-with-python-no-293.log", "zero-grad-call-missing-reported", "missing-zero-grad"),
]


@pytest.mark.parametrize(
    ("name", "symptom", "first"),
    FRESH5_READ
    + FRESH6_READ
    + FRESH7_READ
    + FRESH8_READ
    + FRESH9_READ
    + FRESH10_READ
    + FRESH11_READ
    + FRESH12_READ
    + FRESH13_READ
    + FRESH14_READ
    + FRESH15_READ
    + FRESH16_READ
    + FRESH17_READ
    + FRESH18_READ
    + FRESH19_READ
    + FRESH20_READ
    + FRESH21_READ
    + FRESH22_READ,
)
def test_a_later_batchs_first_miss_is_read_after_its_fix(name, symptom, first):
    d = explain(WORLD / "excerpts" / name)
    assert symptom in {s.name for s in d.symptoms}
    assert [c.id for c in d.causes][:1] == [first]


@pytest.mark.parametrize(
    "name",
    [
        # a pose estimator printing its four loss terms one a line (132, 49, 128, 48, then 5.5, 2.1, ...)
        "lightweight-human-pose-estim-100-healthy.log",
        # mmocr under mixed precision: `loss: 1.9091, grad_norm: nan` at the scaler's first steps
        "tablemaster-mmocr-32-healthy.log",
    ],
)
def test_fresh9_healthy_runs_that_first_read_as_failures_name_nothing(name):
    assert ids({"file": name}) == []


def test_a_nan_in_a_mixed_precision_run_is_said_to_be_the_rate_or_the_scaler():
    # "after a while the loss turns nan" (in Chinese) in runs with AMP added, not in the fp32 run:
    # the thread found the grad scaler bypassed; a NaN alone reads as a rate too high, so beside
    # a run in mixed precision the answer is a stated tie of the two
    d = explain(WORLD / "excerpts" / "imageclassification-1.log")
    assert {"loss-non-finite-reported", "mixed-precision-on"} <= {s.name for s in d.symptoms}
    assert {c.id for c in d.tied} == {"lr-too-high", "missing-grad-scaler"}


@pytest.mark.parametrize(
    "log",
    [
        "asr_fairseq__healthy__s0.log",  # fp16=False
        "cls_ultralog__healthy__s0.log",  # amp=False
        "ddpm_diffusers__healthy__s0.log",  # Mixed precision type: no
        "imgcls_timmlog__healthy__s0.log",  # AMP not enabled. Training in float32.
        "ncf_deepspeed__healthy__s0.log",  # fp16_enabled ....... False
    ],
)
def test_mixed_precision_turned_off_is_not_read_as_on(log):
    d = explain(WORLD.parent / "programs" / "logs" / log)
    assert "mixed-precision-on" not in {s.name for s in d.symptoms}
    assert d.causes == ()


def test_pythons_own_division_error_is_no_report_of_a_missing_epsilon(tmp_path):
    # "ZeroDivisionError: division by zero" is a count that was zero (an empty loader), not a
    # tensor division that lost its epsilon: the report of a zero denominator is not read there
    log = tmp_path / "run.log"
    run = subprocess.run(
        [sys.executable, "-c", "n = 0\nprint('epoch 1 loss 0.5', flush=True)\nprint('mean', 3 / n)"],
        capture_output=True,
        text=True,
    )
    log.write_text(run.stdout + run.stderr)
    d = explain(log)
    assert "ZeroDivisionError: division by zero" in log.read_text()
    assert "zero-division-reported" not in {s.name for s in d.symptoms}
    assert [c.id for c in d.causes][:1] != ["missing-epsilon"]


def test_a_setting_made_to_prevent_running_out_of_memory_is_no_out_of_memory(tmp_path):
    # "I set the training batch size to 6 for preventing out of memory" says no allocation failed;
    # the same log with torch's own allocation failure appended does
    log = tmp_path / "run.log"
    log.write_text("the results indicates NAN. I set the training batch size to 6 for preventing out of memory.\n")
    assert "out-of-memory" not in {s.name for s in explain(log).symptoms}
    run = subprocess.run(
        [sys.executable, "-c", "import torch\ntorch.empty(2**62, dtype=torch.uint8)"],
        capture_output=True,
        text=True,
    )
    log.write_text(log.read_text() + run.stderr)
    assert "out-of-memory" in {s.name for s in explain(log).symptoms}


@pytest.mark.parametrize(
    ("name", "runner_up"),
    [("adapters-260.log", "frozen-parameters"), ("ffdnet-pytorch-4.log", "loss-tensor-leak")],
)
def test_a_part_left_unchanged_or_a_late_oom_keeps_the_confirmed_cause_in_the_first_three(name, runner_up):
    # One named part's weights reported unchanged (an adapter) reads as a missing backward or step
    # first, but a frozen part is as likely; an out-of-memory reported after epochs of training is
    # an OOM first, and the catalog's late OOM is a leak
    named = ids({"file": name})
    assert named[:1] == [WRONG_YET[name]] and runner_up in named[:3], named


def test_a_pasted_evaluation_script_without_eval_mode_names_it(tmp_path):
    # pytorch-cifar10-18: "the accuracy is 81.24%, but the reported acc is over 93.07%", and the
    # test script pasted whole: it runs the model over CIFAR10(train=False) and never calls .eval()
    name = "pytorch-cifar10-18.log"
    assert ids({"file": name})[:1] == ["missing-eval-mode"]
    text = (WORLD / "excerpts" / name).read_text(encoding="utf-8")
    fixed = tmp_path / "fixed.log"
    fixed.write_text(text.replace("    acc = 0.\n", "    net.eval()\n    acc = 0.\n"), encoding="utf-8")
    assert "net.eval()" in fixed.read_text(encoding="utf-8")
    assert "quoted-eval-without-eval-mode" not in {s.name for s in explain(fixed).symptoms}
    # the same loop stepping an optimizer is a training loop, whose mode is set elsewhere
    trains = tmp_path / "trains.log"
    trains.write_text(text.replace("    acc = 0.\n", "    acc = 0.\n    opt.step()\n"), encoding="utf-8")
    assert "quoted-eval-without-eval-mode" not in {s.name for s in explain(trains).symptoms}


@pytest.mark.parametrize(
    ("text", "symptom", "said"),
    [
        # fewx-6's spelling, and its negatives: two runs' logs diverging from each other, a reward
        (
            "the *loss_cls* diverges before the iteration 2999 which can be seen as bellows:",
            "loss-exploded-reported",
            True,
        ),
        ("after 3 epochs the training loss started to diverge", "loss-exploded-reported", True),
        ("the logs of the 2-GPU and 4-GPU runs diverge after iteration 3000", "loss-exploded-reported", False),
        # pytorch-3dunet-45's, and an accuracy computed from the softmax (no fault)
        ("In validation it is calculated with sigmoid (eval mode).", "double-softmax-reported", True),
        ("the loss is computed after the softmax layer", "double-softmax-reported", True),
        ("the accuracy is computed from the softmax outputs", "double-softmax-reported", False),
        # faster-rcnn-pytorch-27's "出现killed", the shell's lines, and a kill the reporter made
        ("运行解冻后的epoch会出现killed的现象", "process-killed", True),
        ("[1]+  Killed                  python train.py --epochs 100", "process-killed", True),
        ("my training process gets killed after 3 epochs", "process-killed", True),
        ("I killed the job myself because it was slow", "process-killed", False),
        # chatglm-efficient-tuning-267's "then suddenly became 0", in English too; a loss that fell to
        # zero over the run says nothing of a collapse
        ("loss先在2左右上下波动，然后突然变成0，后面一直保持为0", "loss-zero-reported", True),
        ("after 300 steps the loss suddenly dropped to 0 and stayed there", "loss-zero-reported", True),
        ("the training loss goes to 0 after 20 epochs", "loss-zero-reported", False),
        # sfmlearner-pytorch-5's, both orders
        ("However, the loss doesn't come down if I use the scheduler.", "loss-stalls-with-scheduler-reported", True),
        ("when I add a StepLR scheduler the loss stops decreasing", "loss-stalls-with-scheduler-reported", True),
        ("the loss doesn't come down, even with lr 1e-6", "loss-stalls-with-scheduler-reported", False),
        # results said to depend on the batch size, and a batch size said to fit in memory
        ("the test accuracy depends on the batch size I use", "batch-size-dependent-eval-reported", True),
        ("different batch sizes give different results at inference", "batch-size-dependent-eval-reported", True),
        ("the model runs out of memory with a bigger batch size", "batch-size-dependent-eval-reported", False),
        # fresh batch 24's spellings, and their negatives
        ("I can observe that the lr goes up, then it suddenly crashes to nan.", "loss-non-finite-reported", True),
        ("the model has a G_loss of nan and doesn't converge", "loss-non-finite-reported", True),
        ("I got `nan` gradients on backward pass", "loss-non-finite-reported", True),
        ("I set the padding value to nan before the mask", "loss-non-finite-reported", False),
        ("Add `torch.set_default_tensor_type(torch.HalfTensor)` to main_cd.py.", "mixed-precision-on", True),
        ("torch.set_default_tensor_type(torch.FloatTensor)", "mixed-precision-on", False),
        ('"killed"   will appear in second epoch of code training.', "process-killed", True),
        ("RuntimeError: expected device cpu but got device cuda:0", "device-mismatch", True),
        ("> Parameters which did not receive grad for rank 14: norm_mid_cond.bias", "ddp-unused-parameters", True),
        (
            "[rank1]:W0923 22:43:08.375000 183294 torch/_dynamo/exc.py:525] [5/0_2] While executing %item",
            "recompiling",
            True,
        ),
        ("[rank1]:I0923 22:43:08.375000 183294 torch/_dynamo/utils.py:525] compile time 3.2s", "recompiling", False),
        (
            "my first epoch is extremely slow, i am doing an imagenet epoch in 20-30 minutes",
            "training-slow-reported",
            True,
        ),
        ("training is much slower than reported in the paper", "training-slow-reported", True),
        ("the loss falls slowly but steadily", "training-slow-reported", False),
        # fresh batch 25's spellings, and their negatives
        (
            'after a given number of iterations we start having a "nan" loss of the cross-entropy',
            "loss-non-finite-reported",
            True,
        ),
        ("One issue that might cause that is the exploding gradient during training.", "grad-exploding-reported", True),
        ("gradient clipping keeps the update bounded", "grad-exploding-reported", False),
        ("Then this will result into torch.log(input) = nan.", "zero-division-reported", True),
        ("we take the log of the softmax output", "zero-division-reported", False),
        ("随着训练，内存一直升高，直到程序崩溃", "memory-growth-reported", True),
        ("it is so slow, and one epoch consumed ~2h. I used the Tesla V100 server.", "training-slow-reported", True),
        (
            "should take 30h as your paper. But in practice, I will take 100h just for s0",
            "training-slow-reported",
            True,
        ),
        ("the paper reports 76.1% top-1 after 90 epochs", "training-slow-reported", False),
        (
            "For cosine learning rate schedules, the learning rate should approach zero when the training ends.",
            "schedule-end-missed-reported",
            True,
        ),
        ("the learning rate never reaches zero with the cosine schedule", "schedule-end-missed-reported", True),
        ("the learning rate is 0.1 at the start", "schedule-end-missed-reported", False),
    ],
)
def test_reports_in_words_read_by_their_kind(text, symptom, said):
    from triage.detectors.signatures import SIGNATURES

    assert any(sig.symptom == symptom and sig.pattern.search(text) for sig in SIGNATURES) == said
