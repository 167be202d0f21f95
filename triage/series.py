"""Metric series: per-step numbers pulled out of whatever format a training loop prints.

One tolerant pass per reading: `key=value`, `key: value`, JSON and Python-dict prints all reduce
to "a known metric name, then a number"; a box of `| name | value |` lines (one report of
Stable-Baselines3's logger) is one reading of all its lines; the step comes from an explicit `step`/`iter`/`global_step`
field, a `epoch E/N | batch B/M` pair or a progress bar's `B/M`, and otherwise from the order of
the readings. A table (a header line of column names, then rows of bare numbers, whatever prefix a
logger puts before both) gives the same series, its columns read by their header's names. Names map onto a small canonical set; anything unknown is ignored, so an unfamiliar
format yields fewer series, never an error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# canonical name -> the spellings people log (compared after lower-casing, '/', '-', ' ' -> '_')
ALIASES: dict[str, tuple[str, ...]] = {
    "loss": (
        "loss",
        "train_loss",
        "training_loss",
        "train_loss_step",
        "loss_step",
        "trn_loss",
        "avg_loss",
        "running_loss",
        "train_loss_epoch",
        "lm_loss",
        "total_loss",
        "objective",
        "xent",  # OpenNMT-py's per-token cross-entropy
        "cost",  # the older tutorials' word (`Epoch: 0010 cost = 15.205759`); not a time cost, see _parse
        "train_cost",
    ),
    "val_loss": ("val_loss", "valid_loss", "validation_loss", "eval_loss", "test_loss", "dev_loss", "val_loss_epoch"),
    "accuracy": ("acc", "accuracy", "train_acc", "train_accuracy", "top1", "acc1"),
    "val_accuracy": (
        "val_acc",
        "val_accuracy",
        "eval_accuracy",
        "eval_acc",
        "valid_acc",
        "test_acc",
        "test_accuracy",
        "validation_accuracy",
        "val_top1",
    ),
    "grad_norm": (
        "grad_norm",
        "gnorm",
        "gradient_norm",
        "grad_norm_total",
        "total_norm",
        "gradnorm",
        "grad_l2",
        "global_grad_norm",
        "grdn",
    ),
    # (MONAI's LrScheduleHandler prints `Current learning rate: ...` once per epoch)
    "lr": ("lr", "learning_rate", "lr_0", "lr_adam", "lr_sgd", "lr_adamw", "current_lr", "current_learning_rate"),
    "loss_scale": ("loss_scale", "scale", "grad_scale", "scaler_scale", "amp_scale"),
    "memory": (
        "mem",
        "mem_mb",
        "mem_gb",
        "memory",
        "max_mem",
        "gpu_mem",
        "memory_allocated",
        "mem_allocated",
        "allocated",
        "max_memory_allocated",
        "rss",
        "rss_mb",
        "cuda_mem",
        "mem_used",
        "memory_mb",
        "memory_gb",
        "peak_mem",
    ),
    "throughput": (
        "it_s",
        "samples_per_second",
        "train_samples_per_second",
        "samples_s",
        "tokens_per_sec",
        "tok_s",
        "throughput",
        "ips",
        "img_s",
        "tokens_s",
    ),
    # a KL term logged beside the loss: a variational objective (an ELBO), whose reconstruction
    # part is summed over pixels or tokens by convention
    "kl": ("kl", "kld", "kl_loss", "loss_kl", "kl_div", "kl_divergence", "kl_term"),
    # a policy-gradient update's own estimate of how far it moved the policy (PPO's KL between
    # the policy before and after the update: Stable-Baselines3 and CleanRL's `approx_kl`,
    # OpenAI baselines' `approxkl`)
    "policy_kl": ("approx_kl", "approxkl"),
    "data_time": ("data_time", "time_data", "data", "dataload_time", "data_wait", "data_s"),
    # a step's time without the loader's wait (lerobot's `updt_s` beside its `data_s`)
    "update_time": ("updt_s", "update_s", "update_time"),
    "batch_time": ("batch_time", "step_time", "iter_time", "time_step", "time"),
}
_CANON = {spelling: name for name, spellings in ALIASES.items() for spelling in spellings}
# A perplexity is exp(loss): read as the loss it stands for (OpenNMT-py prints `ppl:` beside its
# `xent:`, and `Validation perplexity: 12.3` alone for its validation).
PERPLEXITIES = {
    "ppl": "loss",
    "perplexity": "loss",
    "train_ppl": "loss",
    "train_perplexity": "loss",
    "val_ppl": "val_loss",
    "valid_ppl": "val_loss",
    "val_perplexity": "val_loss",
    "validation_perplexity": "val_loss",
    "eval_ppl": "val_loss",
    "eval_perplexity": "val_loss",
    "test_ppl": "val_loss",
}
MAX_READING = 8192
MAX_WRAP = 12  # the most lines a dict wrapped over lines is joined from
_VAL_CONTEXT = re.compile(r"\b(?:val|valid|validation|eval|evaluation|test)\b", re.I)


def _val_context(text: str) -> bool:
    """True if `text` names an evaluation phase (a substring test first: most lines name none)."""
    low = text.lower()
    return ("val" in low or "test" in low) and _VAL_CONTEXT.search(text) is not None


_PHASE_LAST = re.compile(r"\b(train|training|val|valid|validation|eval|test)\W*$", re.I)


def _phase(gap: str) -> bool | None:
    """Whether the words right before a metric's name put it in evaluation (True), in training
    (False), or say nothing (None): `val loss: 1.06`, `train acc: 0.97`."""
    if not gap or not ("val" in gap or "test" in gap or "rain" in gap or "Val" in gap or "Test" in gap):
        return None
    m = _PHASE_LAST.search(gap)
    if m is None:
        return None
    return not m.group(1).lower().startswith("train")


_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|NAN|inf|Inf|INF|Infinity)"
# key, separator (= or :), optional quotes and `tensor(`, number (HF Trainer quotes its values:
# `'loss': '2.456e+26'`); a full stop may end the number where a sentence ends (`val acc 0.718.`);
# a list's first number stands for it (DeepSpeed's `lr=[0.0001]`, one rate per parameter group)
_TIME_COST = re.compile(r"\b(?:time|elapsed|data|batch|iter|epoch|step)\W*$", re.I)
_PAIR = re.compile(
    r"""(?<![\w./\-])['"]?([A-Za-z][\w./\-]{0,63})['"]?\s*[=:]\s*(?:tensor\(|\[)?['"]?("""
    + _NUM
    + r""")(?:\s?(?:[KMGT]i?B|ms|s|%)|[KMGT](?=[\s,;|]|$))?(?!\w|\.\w)"""
)  # a unit after the number is the logger's scale (detectron2's `max_mem: 1234M` too)
# "loss 0.53" (no separator) only for the names that habitually appear that way; "Loss error: 0.5"
_SPACED = re.compile(
    r"\b(loss|lr|learning_?rate|acc|accuracy|grad_norm|gnorm|val_loss)(?:\s+(?:error|value))?:?\s+("
    + _NUM
    + r")(?!\w|\.\w)",
    re.I,
)  # (insightface's `Loss 42.1234   LearningRate 0.100000`)
# a loss printed as its named terms, then their sum (pytorch-yolo2's region loss: `loss: x 0.51,
# y 0.48, w 1.2, h 0.9, conf 3.1, cls 2.2, total 8.4`): the total is the loss
_TERMS_TOTAL = re.compile(
    r"\bloss:\s*(?:[A-Za-z]\w{0,15}\s+" + _NUM + r",\s*){1,12}total\s+(" + _NUM + r")(?!\w|\.\w)", re.I
)
# one or two words right before a name, a space apart (`learning` of `learning rate: 0.001`)
_WORDS_BEFORE = re.compile(r"([A-Za-z]+(?: [A-Za-z]+)?) $")
# `| learning rate: 3.000000E-04 | grad norm: 1.234 | lm loss: 5.9E+00 |`: a field of a line split
# by bars whose name is words apart (Megatron-LM's, NeMo's and GPT-NeoX's iteration lines)
_FIELD = re.compile(r"(?:^|\|)\s*([A-Za-z]+(?: [A-Za-z]+){1,3})\s*:\s*(" + _NUM + r")\s*(?=\||$)")
# a line that holds one named loss term and nothing else (markdown bold around the number too)
_ONE_TERM = re.compile(r"([A-Za-z][\w.]{0,63}loss[\w.]{0,63})\s*[:=]\s*\**(?:" + _NUM + r")\**$", re.I)
_PLAIN_LOSSES = frozenset({"loss", "train_loss", "val_loss", "valid_loss", "test_loss", "training_loss"})
# names of the scaled-cosine (margin) softmax losses of face and speaker recognition, as
# configs and class names spell them: `margin_list (1.0, 0.5, 0.0)`, `ArcMarginProduct`,
# `loss: cosface`, `AAM-Softmax` (not "image face": no letter before the name)
_SCALED_COSINE = re.compile(
    r"(?<![a-z])(?:arc|cos|sphere|curricular|ada|mag|elastic)[_ -]?face|(?<![a-z])(?:arc|add|combined|angular)[_ ]?margin"
    r"|margin[_ ]?list|\ba+m[_-]?softmax",
    re.IGNORECASE,
)
# RecBole's epoch line, whose training loss is the sum of the epoch's batch losses
_EPOCH_SUM = re.compile(r"\bepoch \d+ training \[time: [\d.]+s, train loss: ")
# a loss under a name of its own (`loss_train`, `train/loss_avg`): "loss" is one of its words and no
# other word names a known metric or another model's loss (a GAN's d_loss and g_loss are two losses)
_LOSS_WORD = re.compile(r"(?:^|_)loss(?:_|$)")
_NOT_THE_LOSS = re.compile(
    r"(?:^|_)(?:d|g|disc|gen|aux|kl|reg|nll|scale|seg|cls|bbox|rpn|ctc|mask)(?:_|$)|"
    r"^loss_[dg]$|^err[dg]$"
)
_VAL_WORD = re.compile(r"(?:^|_)(?:val|valid|validation|eval|test|dev)(?:_|$)")
_STEP = re.compile(r"""\b(?:global_step|step|iter|iteration|it)['"]?\s*[=: ]\s*(\d+)(?:\s*/\s*(\d+))?""", re.I)
# "epoch 2/10 | batch 5/50", "Epoch[2] Batch [5/50]", "Training Epoch: 1/3, step 10/36"
_EPOCH_BATCH = re.compile(
    r"\bepoch\s*[\[=: ]?\s*(\d+)\]?(?:\s*/\s*(\d+))?.*?\b(?:batch|iter|step)\s*[\[=: ]?\s*(\d+)"
    r"\s*/\s*(\d+)",
    re.I,
)
# pytorch/examples' MNIST print, copied into many projects: "Train Epoch: 1 [4320/6000 (72%)]"
# (samples seen of the epoch's samples)
_EPOCH_SAMPLES = re.compile(r"\bepoch\s*:?\s*(\d+)\s*\[\s*(\d+)\s*/\s*(\d+)\s*(?:\(|\])", re.I)
# a line opening with its step of the run's steps: UGATIT's "[  997/1000000] time: ..."
_COUNTER = re.compile(r"\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_BAR = re.compile(r"(?:\bEpoch\s+(\d+)\b.*?)?\|\s*(\d+)/(\d+)\s*\[")
# a table: a header of column names closing the line, then rows of as many numbers
_CELLS = re.compile(r"[^\s|]+")
_HEADER_NAME = re.compile(r"[A-Za-z][\w./\-]*$")
_CELL_NUMBER = re.compile(r"(" + _NUM + r")(?:/\d+)?(?:[KMGT]i?B?|%)?$")
_STEP_COLUMNS = {"step", "global_step", "iter", "iteration", "it", "batch", "steps", "iters"}
_CLOCK = re.compile(r"\d{1,3}(?::\d{2}){1,2}$")
# a boxed record of one name and one value per line, sections as `| train/ |   |` (Stable-Baselines3's
# logger and its kin print one such box per report, between lines of dashes)
_BOX_ROW = re.compile(r"\|\s*([A-Za-z_][\w.\-]*)\s*\|\s*(" + _NUM + r")\s*\|$")
_BOX_SECTION = re.compile(r"\|\s*([A-Za-z_][\w.\-]*)/\s*\|\s*\|$")
_BOX_EDGE = re.compile(r"-{8,}$")
# the box's own step counter, in the order they are preferred
_BOX_STEPS = ("total_timesteps", "timesteps", "global_step", "step", "n_updates", "iterations", "iteration")
# what a reinforcement learner's box holds beside its loss: that loss sums a policy-gradient term,
# a value regression towards returns that grow as the policy improves, and an entropy bonus, so
# its level and its shape say nothing of how the training goes
_RL_NAMES = frozenset({"ep_rew_mean", "mean_reward", "policy_gradient_loss", "value_loss", "approx_kl", "entropy_loss"})
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:it|samples|tok|img)/s\b")


@dataclass(frozen=True)
class Point:
    """One value of one metric: the step it belongs to, the log line it came from, its rank."""

    step: int
    value: float
    line: int | None
    rank: int | None = None


@dataclass
class Series:
    """All points of one canonical metric, in log order."""

    name: str
    points: list[Point] = field(default_factory=list)
    explicit_steps: bool = False
    from_bar: set[int] = field(default_factory=set, repr=False)  # ids of points read off a progress bar
    templates: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)  # point id -> line shape
    numbered: set[int] = field(default_factory=set, repr=False)  # ids of points whose line gave no step
    strays: list[Point] = field(default_factory=list, repr=False)  # points of one-off lines (see _drop_strays)
    # the logger prints the sum of an epoch's batch losses (RecBole's `epoch 3 training [time:
    # 0.81s, train loss: 15.2213]`): its size says nothing of a reduction or an initialisation
    epoch_sum: bool = False
    # each point summarises an epoch (a table with an epoch column and no step column, fastai's):
    # a NaN in the first row says the first epoch went wrong, not that its first steps did
    per_epoch: bool = False
    # the log names a scaled-cosine softmax (ArcFace, CosFace, SphereFace and their kin): its
    # logits are cosines times a scale s (30 to 64), so a start of up to 2s + ln C is a mean's
    scaled_cosine: bool = False

    @property
    def huge_above(self) -> float:
        """The first value above which this loss is not a mean cross-entropy: ln C for any
        vocabulary up to 10^8 is under 20; a scaled-cosine softmax's is under 2 * 64 + 20."""
        return 150.0 if self.scaled_cosine else 20.0

    def values(self) -> list[float]:
        return [p.value for p in self.points]

    @property
    def signed(self) -> bool:
        """Whether it goes below zero: for a loss, an objective (a policy gradient's, a
        generator's, a negative ELBO), not an error minimised towards zero, so its shape says
        nothing of divergence, plateaus or a fall; only a NaN does."""
        return any(p.value < 0 for p in self.finite())

    @property
    def starts_mid_run(self) -> bool:
        """Whether the log (an excerpt pasted from the middle of a run) shows no start: its first
        counted step lies many logging intervals past zero ("Train Epoch: 1 [4320/6000 (72%)]"
        after a report's cut), so its first value is not what the run started from."""
        pts = self.points
        if not self.explicit_steps or len(pts) < 3 or pts[0].step <= 0:
            return False
        gaps = sorted(b.step - a.step for a, b in zip(pts, pts[1:], strict=False) if b.step > a.step)
        return bool(gaps) and pts[0].step >= 20 * gaps[len(gaps) // 2]

    def finite(self) -> list[Point]:
        return [p for p in self.points if math.isfinite(p.value)]

    def summary(self) -> dict[str, object]:
        fin = [p.value for p in self.finite()]
        out: dict[str, object] = {"name": self.name, "points": len(self.points)}
        if self.points:
            out.update(first_step=self.points[0].step, last_step=self.points[-1].step)
        if fin:
            out.update(first=_r(fin[0]), last=_r(fin[-1]), min=_r(min(fin)), max=_r(max(fin)))
        bad = next((p for p in self.points if not math.isfinite(p.value)), None)
        if bad is not None:
            out["first_non_finite_step"] = bad.step
        return out


def _r(x: float) -> float:
    return float(f"{x:.6g}")


_KEY_SEPARATORS = str.maketrans({c: "_" for c in "/-. "})


def as_fraction(accuracy: float) -> float:
    """An accuracy as a fraction, whether it was logged as one (0.87) or as a percentage (87.0)."""
    return accuracy / 100 if accuracy > 1 else accuracy


_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def _key(raw: str) -> str:
    # a key written in CamelCase has its words apart (insightface's `LearningRate 0.1`, DeepSpeed's
    # `MemAllocated=0.32GB`): `learning_rate`, `mem_allocated`
    return _CAMEL_HUMP.sub("_", raw).lower().translate(_KEY_SEPARATORS)


def parse_reading(text: str) -> tuple[int | None, dict[str, float]]:
    """Return (explicit step or None, {canonical metric: value}) for one reading."""
    step, metrics, _, _ = _parse(text)
    return step, metrics


def _parse(text: str) -> tuple[int | None, dict[str, float], bool, bool]:
    """As parse_reading, whether the step is a progress bar's position within an epoch, and
    whether the reading is a progress bar at all (a bar repeats its last metrics every update)."""
    text = text[:MAX_READING]  # a metrics print is short; a megabyte-long line is not one
    metrics: dict[str, float] = {}
    val_context = None
    last_end = 0
    if "|" in text and " " in text:
        for m in _FIELD.finditer(text):
            key = _key(m.group(1))
            name = _CANON.get(key)
            if name is None and _LOSS_WORD.search(key) and not _NOT_THE_LOSS.search(key):
                name = "loss"  # `lm loss value:` of a validation block
            if name == "loss" and (_VAL_WORD.search(key) or _val_context(text[: m.start()])):
                name = "val_loss"
            if name is not None:
                metrics.setdefault(name, _float(m.group(2)))
    for m in _PAIR.finditer(text):
        gap, last_end = text[last_end : m.start()], m.end()
        key = _key(m.group(1))
        name = _CANON.get(key)
        if key == "cost" and (_TIME_COST.search(gap) or m.group(0).rstrip().endswith("s")):
            continue  # `time cost: 0.52s`, `data cost 3.1s`: seconds, not a loss
        if name is None and key in PERPLEXITIES:
            name = PERPLEXITIES[key]
            if name == "loss" and key in ("ppl", "perplexity"):
                phase = _phase(gap)
                if phase if phase is not None else _val_context(text[: m.start()]):
                    name = "val_loss"
            ppl = _float(m.group(2))
            metrics.setdefault(name, math.log(ppl) if ppl > 0 else math.nan)
            continue
        if name is None:
            # a name of words apart, the pattern taking only its last (MONAI's `Current learning
            # rate: 0.00098`): the words just before it, joined
            words = _WORDS_BEFORE.search(gap)
            if words is not None:
                name = _CANON.get(_key(f"{words.group(1)} {m.group(1)}"))
        if name is None:
            # "train/loss", "metrics.val_loss": judge by the last component
            name = _CANON.get(key.rsplit("_", 1)[-1] if key.startswith(("train_", "metrics_")) else "")
            if name is None and _LOSS_WORD.search(key) and not _NOT_THE_LOSS.search(key):
                name = "val_loss" if _VAL_WORD.search(key) else "loss"
                if name in metrics:
                    continue
            if name is None:
                continue
        if name in ("loss", "accuracy") and key in ("loss", "acc", "accuracy"):
            # a phase word between the last metric and this name decides its phase
            # (`train acc: 0.97, val loss: 1.06`); without one, the line's opening words do
            phase = _phase(gap)
            if phase is not None:
                val_context = phase
            elif val_context is None:
                val_context = _val_context(text[: m.start()])
            if val_context:
                name = "val_" + name
        metrics.setdefault(name, _float(m.group(2)))
    if len(metrics) < 3:
        for m in _SPACED.finditer(text):
            name = _CANON.get(_key(m.group(1)))
            if name in ("loss", "accuracy"):
                phase = _phase(text[max(0, m.start() - 12) : m.start()])
                if phase if phase is not None else name == "loss" and _val_context(text[: m.start()]):
                    name = "val_" + name
            if name and name not in metrics:
                metrics[name] = _float(m.group(2))
    if "loss" not in metrics and "total" in text and (terms := _TERMS_TOTAL.search(text)) is not None:
        metrics["loss"] = _float(terms.group(1))
    if "loss" in metrics and "_runtime" in text:
        del metrics["loss"]  # HF Trainer's closing summary: the mean over the run, not a step's loss
    if not metrics:
        return None, metrics, False, False
    step = None
    in_epoch = False
    is_bar = False
    # the patterns below are costly where they fail: a substring test first (most lines fail it)
    low = text.lower()
    eb = _EPOCH_BATCH.search(text) if "poch" in text and ("batch" in low or "iter" in low or "step" in low) else None
    es = _EPOCH_SAMPLES.search(text) if eb is None and "poch" in text and "[" in text else None
    if eb:
        epoch, batch, per = int(eb.group(1)), int(eb.group(3)), int(eb.group(4))
        step = (epoch - 1) * per + batch if epoch >= 1 and eb.group(2) else epoch * per + batch
    elif es:
        epoch, seen, per = int(es.group(1)), int(es.group(2)), int(es.group(3))
        step = max(epoch - 1, 0) * per + seen
    else:
        sm = _STEP.search(text) if "it" in low or "step" in low else None
        if sm:
            step = int(sm.group(1))
        else:
            bar = _BAR.search(text) if "|" in text else None
            counter = _COUNTER.match(text) if bar is None and "[" in text else None
            if bar:
                is_bar = True
                epoch = int(bar.group(1) or 0)
                step = epoch * int(bar.group(3)) + int(bar.group(2))
                in_epoch = bar.group(1) is None
            elif counter and int(counter.group(1)) <= int(counter.group(2)):
                step = int(counter.group(1))
    if "throughput" not in metrics:
        rate = _RATE.search(text) if "/s" in text else None
        if rate:
            metrics["throughput"] = float(rate.group(1))
    return step, metrics, in_epoch, is_bar


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # "Infinity" spelled oddly, "-nan"
        return math.nan


def _echo(a: str, b: str, metrics: dict[str, float]) -> bool:
    """True where `b` repeats the record `a` under another prefix: a second log handler (a
    console and a file handler, `[time INFO file line] msg` then `INFO:logger:msg`) prints every
    record twice on neighbouring lines, which would count each point twice. The shared tail
    must hold every metric, and the two prefixes must differ in shape, not only in digits (a
    timestamp that moved on is a new record of a loss that did not)."""
    if a == b:
        return False  # the same text again is a new record (a loss that does not move)
    n = 0
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y:
            break
        n += 1
    if n == 0 or _DIGITS.sub("", a[:-n]) == _DIGITS.sub("", b[:-n]):
        return False
    return _parse(a[-n:])[1] == metrics


_DIGITS = re.compile(r"\d+")


_PHASE_WORDS = frozenset({"train", "training", "valid", "val", "validation", "eval", "test"})


def _header(text: str) -> tuple[tuple[str | None, ...], tuple[tuple[int, int], ...]] | None:
    """The canonical metric (or None) of each column, where `text` ends in a table's header: at
    least three names, one a step counter (`epoch`, `step`, `iter`) and one a known metric; and
    each column name's place on the line."""
    cells = list(_CELLS.finditer(text[:MAX_READING]))
    named: list[tuple[str, tuple[int, int]]] = []
    for cell in reversed(cells):
        if not _HEADER_NAME.match(cell.group()):
            break
        named.append((_key(cell.group()), cell.span()))
    named.reverse()
    # a header pasted with its names' underscores lost (fastai's `epoch train loss valid loss
    # accuracy_thresh`): a phase word and the metric after it are one column
    joined: list[tuple[str, tuple[int, int]]] = []
    for name, span in named:
        if joined and joined[-1][0] in _PHASE_WORDS and _CANON.get(f"{joined[-1][0]}_{name}") is not None:
            joined[-1] = (f"{joined[-1][0]}_{name}", (joined[-1][1][0], span[1]))
        else:
            joined.append((name, span))
    # a logger's prefix ends in words too (`| INFO | trainer |`): the table starts at its first
    # column of a known name
    while joined and joined[0][0] not in _STEP_COLUMNS and joined[0][0] != "epoch" and joined[0][0] not in _CANON:
        joined.pop(0)
    names = [name for name, _ in joined]
    if len(names) < 3 or not ({"epoch", *_STEP_COLUMNS} & set(names)):
        return None
    columns = tuple("step" if n in _STEP_COLUMNS else "epoch" if n == "epoch" else _CANON.get(n) for n in names)
    if not any(c not in (None, "step", "epoch") for c in columns):
        return None
    return columns, tuple(span for _, span in joined)


# a progress bar a row ends in (Ultralytics/YOLO: `1/12  0G  1.792  16  24: 100%|###| 38/38 [...]`)
_BAR_TAIL = re.compile(r":?\s+\d{1,3}%\|.*$")


def _row(
    text: str, columns: tuple[str | None, ...], spans: tuple[tuple[int, int], ...] = ()
) -> tuple[int | None, dict[str, float]] | None:
    """(step, metrics) of a table row: the line ends in as many numbers as the header has names
    (before the progress bar it may end in); or, where a column holds a mark or nothing on some
    rows (skorch's `cp` column: `+` on a row whose validation loss is the best so far, blank
    otherwise), each number under the header name it stands beneath."""
    body = _BAR_TAIL.sub("", text[:MAX_READING])
    cells = _CELLS.findall(body)
    if len(cells) < len(columns):
        return _placed_row(body, columns, spans)
    values = []
    for cell in cells[-len(columns) :]:
        value = _cell_value(cell)
        if value is None:
            return _placed_row(body, columns, spans)
        values.append(value)
    return _row_reading(zip(columns, values, strict=True))


def _cell_value(cell: str) -> float | None:
    m = _CELL_NUMBER.match(cell)
    if m is not None:
        return _float(m.group(1))
    if _CLOCK.match(cell):
        # a duration as a clock (fastai's `time` column, `00:03`): seconds
        return float(sum(int(part) * 60**k for k, part in enumerate(reversed(cell.split(":")))))
    return None


# what a table prints in a column of marks: skorch's `+` for a new best, a star, a tick
_MARK = re.compile(r"[+*✓✔x]$")


def _placed_row(
    body: str, columns: tuple[str | None, ...], spans: tuple[tuple[int, int], ...]
) -> tuple[int | None, dict[str, float]] | None:
    """A row read by place: every cell from the first column's start on stands beneath exactly one
    header name (they share characters), numbers in every column but those holding a mark or
    nothing, and the step column filled."""
    if not spans or len(spans) != len(columns):
        return None
    taken: dict[int, float] = {}
    for cell in _CELLS.finditer(body):
        start, end = cell.span()
        if end <= spans[0][0]:
            continue  # the logger's prefix
        under = [k for k, (low, high) in enumerate(spans) if start < high and low < end]
        if len(under) != 1 or under[0] in taken:
            return None
        value = _cell_value(cell.group())
        if value is None:
            if _MARK.match(cell.group()):
                continue
            return None
        taken[under[0]] = value
    counters = [k for k, name in enumerate(columns) if name in ("step", "epoch")]
    if not counters or any(k not in taken for k in counters) or len(taken) < len(columns) - 2:
        return None
    return _row_reading((columns[k], value) for k, value in sorted(taken.items()))


def _row_reading(pairs) -> tuple[int | None, dict[str, float]] | None:
    step = None
    metrics: dict[str, float] = {}
    for name, value in pairs:
        if name == "step" and math.isfinite(value):
            step = int(value)
        elif name is not None and name != "epoch":
            metrics.setdefault(name, value)
    return (step, metrics) if metrics else None


class SeriesBuilder:
    """Accumulates readings into per-metric series, numbering steps where the log does not."""

    def __init__(self) -> None:
        self._columns: tuple[str | None, ...] | None = None  # the last table header's columns
        self._spans: tuple[tuple[int, int], ...] = ()  # and where on its line each name stands
        self.series: dict[str, Series] = {}
        self._ordinal = 0
        self._last_step: int | None = None
        self._bar_last: int | None = None
        self._bar_offset = 0
        # (rank, line shape) -> (last logged step, offset)
        self._last: dict[tuple[int | None, tuple[str, ...]], tuple[int, int]] = {}
        # the last metric line: (line, text, its metrics)
        self._prev: tuple[int | None, str, dict[str, float]] = (None, "", {})
        # the box being read: its section, (section, name) -> value, its first line and rank
        self._box: dict[tuple[str, str], float] = {}
        self._box_section = ""
        self._box_at: tuple[int | None, int | None] = (None, None)
        self._block_depth = 0  # the open brackets of a multi-line JSON block being skipped
        # a loss printed term by term, one named term a line (`stage1_pafs_loss:     5.46`, then
        # `stage1_heatmaps_loss: 2.05`, ...): the first term's name is the series, the others
        # are other quantities, not more points of it
        self._term: str | None = None
        # a dict wrapped over lines (detectron2's `loss_dict = {'loss_cls': tensor(nan, ...),` and
        # its terms on the lines after): its first line, rank, its lines so far and open braces
        self._wrap: tuple[int | None, int | None, list[str], int] | None = None
        self._scaled_cosine = False  # a line before the first loss named a scaled-cosine softmax

    def add(self, text: str, line: int | None, rank: int | None = None) -> None:
        """Take one reading: a dict wrapped over lines is read as one reading, at its first line
        (its terms are values of one moment, not a point each)."""
        if self._wrap is not None:
            at, wrap_rank, parts, depth = self._wrap
            if (
                rank != wrap_rank
                or (line is not None and at is not None and line != at + len(parts))
                or text.lstrip().startswith("{")
            ):
                # cut, or a record of its own next: what was read of it stands, this line is read alone
                self._flush_wrap()
            else:
                parts.append(text.strip())
                depth += text.count("{") - text.count("}")
                self._wrap = (at, wrap_rank, parts, depth)
                if depth <= 0 or len(parts) >= MAX_WRAP:
                    self._flush_wrap()
                return
        if "{" in text:
            depth = text.count("{") - text.count("}")
            if depth > 0 and not text.rstrip().endswith(("{", "[")):
                self._wrap = (line, rank, [text.rstrip()], depth)
                return
        self._add(text, line, rank)

    def _flush_wrap(self) -> None:
        if self._wrap is not None:
            at, rank, parts, _ = self._wrap
            self._wrap = None
            self._add(" ".join(parts), at, rank)

    def _add(self, text: str, line: int | None, rank: int | None) -> None:
        stripped = text.strip()
        if not self._scaled_cosine and "loss" not in self.series and _SCALED_COSINE.search(stripped):
            self._scaled_cosine = True  # (looked for in the settings a run prints before it trains)
        if self._in_block(text, stripped):
            return
        if self._boxed(stripped, line, rank):
            return
        # (the substring test first: this runs on every line, and most hold no loss)
        term = _ONE_TERM.match(stripped) if "oss" in stripped or "OSS" in stripped else None
        if term is not None and term.group(1).lower() not in _PLAIN_LOSSES:
            self._term = self._term or term.group(1)
            if term.group(1) != self._term:
                return
        step, metrics, in_epoch, is_bar = _parse(text)
        if not metrics:
            row = self._table(text)
            if row is None:
                return
            step, metrics = row
            if self._columns is not None and "epoch" in self._columns and "step" not in self._columns:
                for name in metrics:
                    self.series.setdefault(name, Series(name)).per_epoch = True
        elif is_bar and self._columns is not None and (row := _row(text, self._columns, self._spans)) is not None:
            # a table's row printed as a progress bar's description: the row's columns, not the
            # bar's rate, are the reading (a rate the bar gives stays beside them)
            step = row[0] if row[0] is not None else step
            metrics = {**metrics, **row[1]}
        self._record(text, line, rank, step, metrics, in_epoch, is_bar)

    def _in_block(self, text: str, stripped: str) -> bool:
        """Whether `text` is a line of a multi-line JSON object or config dump (timm's `--result`
        summary, a `GPT2Config {` printout): its numbers are a summary or settings, no reading.
        The block opens with a line ending in `{` or `[` and closes when its brackets balance; a
        line that is neither indented nor a bracket ends it in any case (a cut block)."""
        if not self._block_depth:
            if not stripped.endswith(("{", "[")) or "=" in stripped or stripped.count(":") > 1:
                return False
        elif text[:1] not in ' \t"}]':
            self._block_depth = 0
            return False
        depth = self._block_depth + stripped.count("{") + stripped.count("[")
        self._block_depth = max(depth - stripped.count("}") - stripped.count("]"), 0)
        return True

    def _boxed(self, text: str, line: int | None, rank: int | None) -> bool:
        """Whether `text` is a line of a box (taken in); a line that is not ends the box."""
        if text[:1] == "|" and text[-1:] == "|":
            row = _BOX_ROW.match(text)
            if row is not None:
                key = (self._box_section, _key(row.group(1)))
                if key in self._box:  # the next report's box, with no edge between
                    self._end_box()
                if not self._box:
                    self._box_at = (line, rank)
                self._box[key] = _float(row.group(2))
                return True
            section = _BOX_SECTION.match(text)
            if section is not None:
                self._box_section = _key(section.group(1))
                return True
        self._end_box()
        return _BOX_EDGE.match(text) is not None

    def _end_box(self) -> None:
        """The box read so far as one record: its known metrics, at its own step counter."""
        box, (line, rank) = self._box, self._box_at
        self._box, self._box_section = {}, ""
        if not box:
            return
        metrics: dict[str, float] = {}
        counters: dict[str, float] = {}
        reinforcement = any(name in _RL_NAMES for _, name in box)
        for (section, name), value in box.items():
            counters.setdefault(name, value)
            canonical = _CANON.get(name)
            if canonical is None or (reinforcement and canonical in ("loss", "val_loss")):
                continue
            if canonical in ("loss", "accuracy") and _VAL_WORD.search(section):
                canonical = "val_" + canonical
            metrics.setdefault(canonical, value)
        step = next((int(counters[c]) for c in _BOX_STEPS if c in counters and math.isfinite(counters[c])), None)
        if metrics:
            text = " ".join(f"{s}/{n}={v}" for (s, n), v in box.items())
            self._record(text, line, rank, step, metrics, False, False)

    def _record(
        self,
        text: str,
        line: int | None,
        rank: int | None,
        step: int | None,
        metrics: dict[str, float],
        in_epoch: bool,
        is_bar: bool,
    ) -> None:
        """One reading's metrics as points of their series, at its step (or the next ordinal)."""
        prev_line, prev_text, prev_metrics = self._prev
        self._prev = (line, text, metrics)
        if line is not None and prev_line == line - 1 and prev_metrics == metrics and _echo(prev_text, text, metrics):
            self._prev = (None, "", {})  # an echo comes in pairs: the next line is a new record
            return
        template = _template(text)
        if in_epoch and step is not None:
            # a bar with no epoch number restarts every epoch: carry the steps on
            if self._bar_last is not None and step < self._bar_last:
                self._bar_offset += self._bar_last
            self._bar_last = step
            step += self._bar_offset
        elif step is not None:
            # a counter that restarts every epoch (`batch 10/50`, `iter 10`): carry the steps on.
            # Each kind of line keeps its own count: DeepSpeed's `step=100` (optimizer steps)
            # beside a script's `epoch 1 step 200` (batches) are two counters, neither restarting
            last, offset = self._last.get((rank, template), (None, 0))
            if last is not None and step + offset < last:
                offset = last
            self._last[(rank, template)] = (step + offset, offset)
            step += offset
        self._ordinal += 1
        explicit = step is not None
        if step is None:
            step = self._ordinal
        for name, value in metrics.items():
            series = self.series.get(name)
            if series is None:
                series = self.series[name] = Series(name)
            if name == "loss" and "training [time:" in text and _EPOCH_SUM.search(text):
                series.epoch_sum = True
            series.explicit_steps |= explicit
            point = Point(step, value, line, rank)
            series.points.append(point)
            if not explicit:
                series.numbered.add(id(point))
            if is_bar:
                series.from_bar.add(id(point))
            series.templates[id(point)] = template

    def _table(self, text: str) -> tuple[int | None, dict[str, float]] | None:
        """A row of the table whose header was read last; or, reading a header, None."""
        low = text.lower()
        if "poch" in low or "step" in low or "iter" in low:
            header = _header(text)
            if header is not None:
                self._columns, self._spans = header
                return None
        return _row(text, self._columns, self._spans) if self._columns is not None else None

    def build(self) -> dict[str, Series]:
        """The series in log order; one rank's points where several ranks logged."""
        self._flush_wrap()
        self._end_box()
        out: dict[str, Series] = {}
        for name, series in self.series.items():
            ranks = {p.rank for p in series.points if p.rank is not None}
            if len(ranks) > 1:
                keep = min(ranks)
                series.points = [p for p in series.points if p.rank in (keep, None)]
            series.points.sort(key=lambda p: p.line if p.line is not None else 1 << 62)
            if series.explicit_steps:
                series.points = _drop_echoes(series.points)
            kept = _drop_strays(series.points, series.templates)
            if len(kept) < len(series.points):
                ids = {id(p) for p in kept}
                series.strays = [p for p in series.points if id(p) not in ids]
            series.points = kept
            series.points = _drop_summaries(series)
            if name.startswith("val_") and series.from_bar:
                series.points = _drop_repeats(series.points, series.from_bar)
            series.scaled_cosine = self._scaled_cosine and name in ("loss", "val_loss")
            out[name] = series
        return out


def _drop_echoes(points: list[Point]) -> list[Point]:
    """Drop a point whose step was just logged: unprefixed ranks printing the same step."""
    out: list[Point] = []
    for p in points:
        if any(q.step == p.step for q in out[-4:]):
            continue
        out.append(p)
    return out


_WORD = re.compile(r"[A-Za-z_]{2,}")
_NOT_SHAPE = {"nan", "inf", "infinity", "tensor"}


def _template(text: str) -> tuple[str, ...]:
    """The shape of a printed line: its words, without the numbers (nor NaN, which is a value)."""
    return tuple(w for w in _WORD.findall(text[:MAX_READING].lower()) if w not in _NOT_SHAPE)


def _drop_strays(points: list[Point], templates: dict[int, tuple[str, ...]]) -> list[Point]:
    """Drop a value printed once by a line of another shape than the run's own log lines.

    Scripts print losses of other phases (`pretraining loss 0.012`, a summary at the end); a
    single line of a shape seen nowhere else in a long series is not a step of this run.
    """
    if len(points) < 6:
        return points
    counts: dict[tuple[str, ...], int] = {}
    for p in points:
        t = templates.get(id(p), ())
        counts[t] = counts.get(t, 0) + 1
    if max(counts.values()) < 3:
        return points
    return [p for p in points if counts[templates.get(id(p), ())] > 1]


def _drop_summaries(series: Series) -> list[Point]:
    """Drop the points of lines that give no step from a series that other lines log with one.

    A loop that logs `epoch 3 | iter 25/100 | loss 0.71` every few batches and `epoch 3 done:
    mean loss 0.70` at the end of each epoch prints one metric at two granularities: the
    epoch's mean is no step of the batch series (it has no step of its own and averages the
    batches around it). Kept only where the stepped lines are most of the series and the lines
    without a step are of other shapes than theirs.
    """
    points = series.points
    if not series.numbered or len(series.numbered) == len(points):
        return points
    stepped = [p for p in points if id(p) not in series.numbered]
    shapes = {series.templates.get(id(p), ()) for p in stepped}
    if len(stepped) < 2 * (len(points) - len(stepped)) or any(
        series.templates.get(id(p), ()) in shapes for p in points if id(p) in series.numbered
    ):
        return points
    return stepped


def _drop_repeats(points: list[Point], from_bar: set[int]) -> list[Point]:
    """Drop a validation value a progress bar shows again unchanged: a bar repeats the last
    evaluation on every update until the next one."""
    out: list[Point] = []
    for p in points:
        if out and p.value == out[-1].value and id(p) in from_bar and id(out[-1]) in from_bar:
            continue
        out.append(p)
    return out
