"""What a failing guard says about training: a test's assertion, or a smoke check's verdict.

A guard that fails with `assert 5.0 < 5.0` says more than that it failed. pytest quotes the
failing line (`>       assert losses[-1] < losses[0]`) and rewrites the assertion with the values
it compared (`E       assert 5.0 < 5.0`); a smoke script exits with its own verdict (`loss 1.57 ->
1.51 did not fall`). This detector reads them where what they say is general, not one project's
own check:

* a loss compared with its own earlier value: unchanged (nothing reached the weights), risen, or
  blown up; one that started huge (a sum where a mean was meant); one that started exactly at
  the uniform guess ln(C) and fell, but short of the guard's bar (a second softmax);
* loss values that do not compare as numbers (a loss kept as an object, not its `.item()`);
* parameters reported unchanged after training; gradients reported None, or still set where
  the test expected them cleared;
* probabilities that do not sum to one;
* a model asserted out of (or into) training mode, and one evaluation repeated with a
  different answer.

A bare `assert 2.2 < 0.05` (a loss against a constant target) says only that training fell
short: no symptom. Gradients a failing line uses while they are None (`all_reduce(p.grad)`,
`p.grad.data`) are read from the quoted line above the exception.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from triage.detectors import Context
from triage.reader import Reading
from triage.records import Evidence, Symptom

EMITS: frozenset[str] = frozenset(
    {
        "loss-unchanged",
        "loss-rose",
        "loss-exploded",
        "loss-barely-moved",
        "loss-huge-initial",
        "loss-slow-from-uniform",
        "loss-not-a-number",
        "tensor-not-serializable",
        "output-non-finite",
        "params-unchanged",
        "part-unchanged-reported",
        "grad-none",
        "grads-not-cleared",
        "probs-not-normalised",
        "model-still-training",
        "model-not-training",
        "repeat-differs",
    }
)

EXPLODED = 100.0  # a loss this many times its start has blown up, not merely risen
BARELY = 0.05  # a loss that fell by less than this share of its start over a whole run barely moved
# the same value to the digits a log prints: a loss that did not move at all
SAME = 1e-9
HUGE = 20.0  # a first loss above this is far above any classifier's start (numeric.py's bar)
# A first loss within this share of the spacing between ln(C) and ln(C+1) sits on a uniform
# guess over C classes. A second softmax squeezes the first outputs so close to uniform that it
# starts there: of tests/triage/calibration/programs/slow_learners.py's runs (C = 3, 4, 10, 28;
# 3 seeds), all 12 with it started within 0.12 of the spacing; of the 24 slow runs without it (a
# frozen layer, a 30 times smaller step) 10 also started within 0.15 of some ln(k): all of C = 3,
# whose spacing is widest, and at C = 28, where the ln(k) lie close: evidence of about 2.4 to 1.
UNIFORM_SHARE = 0.15
MAX_CLASSES = 100  # beyond this the spacing is finer than the digits a log prints
# a verdict line says the guard failed: not a training log's own "loss 2.3 -> 1.2"
_VERDICT = re.compile(r"\b(?:fail\w*|did not|didn't|does not|not enough|too (?:slow|little|small)|expected)\b", re.I)
# an error saying two values do not compare, or one is no number: what a stored object gives
_NOT_A_NUMBER = re.compile(
    r"^TypeError: (?:'[<>]=?' not supported between instances of|"
    r"Object of type \w+ is not JSON serializable|can't convert type '\w+' to numerator)"
)

_FAILING = re.compile(r"^>\s+(.*\S)")  # pytest's marked failing line
_ASSERT = re.compile(r"^assert\b")
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
# "loss 1.567 -> 1.513", "loss went from 2.3 to 2.9", "loss did not drop enough: 1.415 -> 1.123"
_PROSE_PAIR = re.compile(
    rf"\bloss(?:es)?\b[^\n]{{0,40}}?(?:from\s+)?(?P<a>{_NUMBER})\s*(?:->|→|=>|\bto\b)\s*(?P<b>{_NUMBER})\b", re.I
)
_PROSE_PARAMS = re.compile(
    r"\b(?:param(?:eter)?s?|weights?)\b[^\n]{0,60}?\b(?:did not|didn't|do not|does not|never|were not|was not|"
    r"are not|is not|not)\s+(?:change|update|move)d?\b|"
    r"\bunchanged\s+(?:param|weight)|\b(?:param(?:eter)?s?|weights?)\s+(?:are\s+|were\s+|stay(?:ed)?\s+)?unchanged",
    re.I,
)
# One named part's weights said not to change ("the adapter weight in the first layer in encoder
# ... didn't change during training"): a part frozen or left out of the optimizer is as likely as
# a missing backward or step, which would leave every part unchanged.
_PART_UNCHANGED = re.compile(
    r"\b(?:adapter|lora|head|classifier|embedding|layer|encoder|decoder)\w*\b[^\n.]{0,40}?\bweights?\b[^\n.]{0,60}?"
    r"\b(?:didn'?t|did not|doesn'?t|does not|never|not)\s+(?:change|update|move)",
    re.I,
)
# settings a report kept as they were ("I set IMS_PER_BATCH = 1 ... and keep other parameters
# unchanged"): hyperparameters, not weights
_KEPT_SETTINGS = re.compile(
    r"\b(?:keep|keeps|kept|keeping|leave|leaves|left|leaving)\s+(?:the\s+|all\s+)?(?:other\s+|rest\s+of\s+the\s+)?"
    r"(?:hyper-?)?param(?:eter)?s?\s+(?:as\s+they\s+(?:are|were)|unchanged|the\s+same|as\s+default)",
    re.I,
)
_TO = re.compile(r"\bto\b")
_PROSE_PROBS = re.compile(
    r"\b(?:probabilit\w*|probs?|softmax\w*|distributions?)\b[^\n]{0,50}?\b(?:do not|does not|don't|doesn't|"
    r"did not|not|never)\s+sum\s+to\s+(?:one|1)\b",
    re.I,
)
_PARAM_NAME = re.compile(r"'[\w.]*\b(?:weight|bias)'")
_LAST = re.compile(r"\[\s*-1\s*\]\s*$|\b(?:last|final|after|end)\w*\s*$", re.I)
_FIRST = re.compile(r"\[\s*0\s*\]\s*$|\b(?:first|initial|before|start)\w*\s*$", re.I)
_LOSSY = re.compile(r"loss|hist|cost", re.I)
_GRAD_USE = re.compile(r"\.grad\b(?!_)")
_GRAD_NOT_NONE = re.compile(r"\.grad\s+is\s+not\s+None\b")
_GRAD_CLEARED = re.compile(r"\.grad\s+is\s+None\b|\.grad\b[^\n]*(?:==\s*0\b|zeros|count_nonzero)")
# a traceback's frame header (Python's, pytest's short one) and the quoted line after it
_FRAME = re.compile(r'^File "[^"]+", line \d+|^\S+\.py:\d+: in \S+$')
_TRACEBACK_START = re.compile(r"^Traceback \(most recent call last\)|^_{3,} .* _{3,}$")
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception):")
_TRAINING = re.compile(
    r"^assert\s+(?P<not>not\s+)?[\w.\[\]()]*\.training\b(?:\s+(?:is|==)\s+(?P<value>True|False))?\s*$"
)


@dataclass(frozen=True)
class Failure:
    """One failing pytest assertion: its quoted line, the rewritten values and the code before it."""

    code: str  # the failing line without its `>` marker
    line: int | None
    rank: int | None
    message: list[str]  # the `E` lines that follow (pytest's marker already stripped)
    listing: list[str]  # the quoted lines of the same frame before it


def detect(ctx: Context) -> list[Symptom]:
    """Symptoms from failing assertions and guard verdicts (see the module docstring)."""
    readings = [rd for rd in ctx.readings if rd.index == 0]
    found: dict[str, Symptom] = {}

    def add(symptom: Symptom | None) -> None:
        if symptom is not None and symptom.name not in found:
            found[symptom.name] = symptom

    loss = ctx.series.get("loss")
    # a loss series of its own says how the run started (numeric.py reads it)
    has_series = loss is not None and len(loss.finite()) >= 8
    for failure in _failures(readings):
        for symptom in _from_assertion(failure):
            if not (has_series and symptom.name == "loss-huge-initial"):
                add(symptom)
    for rd in readings:
        text = rd.text
        if not _may_be_prose(text):
            continue
        m = _PROSE_PAIR.search(text)
        if m:
            a, b = float(m.group("a")), float(m.group("b"))
            add(_loss_pair(a, b, rd, "the run reported"))
            if _VERDICT.search(text):
                add(_slow_from_uniform(a, b, (_ev(rd),), rd.rank))
        if _PROSE_PARAMS.search(text) and not _KEPT_SETTINGS.search(text):
            add(Symptom("params-unchanged", "the guard says parameters did not change", (_ev(rd),), rank=rd.rank))
            if _PART_UNCHANGED.search(text):
                summary = "the report says one part's weights did not change"
                add(Symptom("part-unchanged-reported", summary, (_ev(rd),), rank=rd.rank))
        if _PROSE_PROBS.search(text):
            add(Symptom("probs-not-normalised", "the guard says probabilities do not sum to one", (_ev(rd),)))
    for failure in _failures(readings):
        add(_printed_series(failure))
    add(_none_grad_in_traceback(readings))
    add(_kept_loss_in_traceback(readings))
    return list(found.values())


# a list of four or more numbers in pytest's rewrite (`[[4.67, 3.15, 1.15, 0.04, ...]]`): its repr
# of a sequence, cut with `...` where long
_PRINTED_LIST = re.compile(r"\[\s*(-?\d[\d.eE+-]*(?:\s*,\s*-?\d[\d.eE+-]*){3,})(?:\s*,\s*\.\.\.)?\s*\]")


def _printed_series(failure: Failure) -> Symptom | None:
    """A per-step series pytest printed in its rewrite of an assertion that takes the sequence's
    last value (`xs[-1]`) as where training ended: read as a series. One that fell to a low and
    then climbed back above half of where it started learnt and then came undone (summed
    gradients growing the step, or a rate too high), which is `loss-rose`."""
    if "[-1]" not in failure.code:
        return None
    for text in failure.message:
        m = _PRINTED_LIST.search(text)
        if not m:
            continue
        try:
            values = [float(v) for v in m.group(1).split(",")]
        except ValueError:
            continue
        if not all(math.isfinite(v) for v in values) or values[0] <= 0:
            continue
        low = min(range(len(values)), key=values.__getitem__)
        after = max(values[low:])
        if values[low] < 0.5 * values[0] and after > 0.5 * values[0] and after > 4 * values[low]:
            said = ", ".join(f"{v:.4g}" for v in values)
            return Symptom(
                "loss-rose",
                f"the test printed a series ({said}, ...) that fell to {values[low]:.4g} and climbed back to {after:.4g}",
                (Evidence(failure.line, "> " + failure.code, rank=failure.rank),),
                value=after,
                rank=failure.rank,
            )
    return None


def _may_be_prose(text: str) -> bool:
    """Whether `text` holds a word every prose verdict needs: substring tests skip the metric
    lines (most of a log) before the three caseless patterns run."""
    t = text.lower()
    return (
        "->" in t
        or "=>" in t
        or "→" in t
        or "param" in t
        or "weight" in t
        or "unchanged" in t
        or "sum" in t
        or ("to" in t and _TO.search(t) is not None)
    )


def _failures(readings: list[Reading]) -> list[Failure]:
    """Every `>`-marked failing assert with its `E` lines and the frame's quoted lines above it."""
    out = []
    for i, rd in enumerate(readings):
        m = _FAILING.match(rd.text) if rd.text.startswith(">") else None
        if not m or not _ASSERT.match(m.group(1)) and "assert" not in m.group(1):
            continue
        message: list[str] = []
        for following in readings[i + 1 : i + 40]:
            if not following.text.strip():
                break
            if following.text.startswith(" ") and not message:
                continue  # the caret line Python 3.11 prints under the failing expression
            if following.text.startswith(("tests/", "/")) or re.match(r"^\S+\.py:\d+", following.text):
                break
            message.append(following.text.strip())
        listing: list[str] = []
        for before in reversed(readings[max(0, i - 60) : i]):
            if re.match(r"^_{3,} .* _{3,}$|^(?:_ ){8,}", before.text):
                break
            listing.append(before.text)
        out.append(Failure(m.group(1).strip(), rd.line, rd.rank, message, listing[::-1]))
    return out


def _from_assertion(failure: Failure) -> list[Symptom]:
    code = failure.code
    ev = (Evidence(failure.line, f"> {code}"[:300], rank=failure.rank),) + tuple(
        Evidence(None, f"E {line}"[:300]) for line in failure.message[:1]
    )
    out: list[Symptom | None] = []
    rewrite = next((line for line in failure.message if line.startswith("assert ")), None)
    if rewrite is not None and _ASSERT.match(code):
        pair = _compared_losses(code, rewrite, failure.listing)
        if pair is not None:
            first, last = pair
            symptom = _loss_pair(first, last, None, "the test compared")
            if symptom is not None:
                out.append(Symptom(symptom.name, symptom.summary, ev, value=symptom.value))
            if first is not None:
                out.append(_slow_from_uniform(first, last, ev, failure.rank))
                if math.isfinite(first) and first > HUGE:
                    out.append(
                        Symptom(
                            "loss-huge-initial",
                            f"the test compared a first loss of {first:.6g}, far above a classifier's starting loss",
                            ev,
                            value=first,
                        )
                    )
    joined = " ".join(failure.message)
    if _ASSERT.match(code) and re.search(r"\bassert\s+not\s+\[", joined) and _PARAM_NAME.search(joined):
        listed = " ".join(failure.listing)
        if re.search(r"\b(?:unchanged|same|static|not_updated|stale)\b|torch\.equal\(", code + " " + listed):
            out.append(Symptom("params-unchanged", "the test lists parameters that training left unchanged", ev))
    if re.match(r"assert\s+not\s+torch\.(?:equal|allclose)\(", code) and re.search(
        r"\b(?:before|initial|start|old|snapshot|original)\w*", code
    ):
        out.append(Symptom("params-unchanged", "the test found a parameter equal to its copy from before training", ev))
    if _PROSE_PARAMS.search(joined):
        out.append(Symptom("params-unchanged", "the test says parameters did not change", ev))
    if _GRAD_NOT_NONE.search(code):
        out.append(Symptom("grad-none", "the test found a gradient that is None after training", ev))
    elif _GRAD_CLEARED.search(code):
        out.append(
            Symptom("grads-not-cleared", "the test found gradients still set where it expected them cleared", ev)
        )
    if (
        ".sum(" in code
        and re.search(r"\bones\b|,\s*1(?:\.0*)?\s*[,)]|==\s*1(?:\.0*)?\b", code)
        and re.search(r"prob|softmax|dist", code, re.I)
    ):
        out.append(Symptom("probs-not-normalised", "the test found probabilities that do not sum to one", ev))
    if re.search(r"\bisfinite\(|\bisnan\(|\bisinf\(", code) and re.search(r"\b(?:nan|inf)\b", joined):
        if _LOSSY.search(code):
            out.append(Symptom("loss-exploded", "the test found a loss that is NaN or inf", ev))
        else:
            # an output or a metric, not the loss: a NaN where no training step need have run
            out.append(Symptom("output-non-finite", "the test found NaN or inf in a computed tensor", ev))
    m = _TRAINING.match(code)
    if m:
        expects_training = (m.group("not") is None) == (m.group("value") != "False")
        if expects_training:
            out.append(Symptom("model-not-training", "the test found the model out of training mode", ev))
        else:
            out.append(Symptom("model-still-training", "the test found the model still in training mode", ev))
    if _same_call_twice(code, failure.listing):
        out.append(Symptom("repeat-differs", "the same call, made twice, gave two different answers", ev))
    return [x for x in out if x is not None]


def _compared_losses(code: str, rewrite: str, listing: list[str]) -> tuple[float | None, float] | None:
    """(first, last) where an assertion compares a loss with its own earlier value and pytest's
    rewrite gives the numbers: `losses[-1] < losses[0] / 4` with `3.5 < (3.5 / 4)`; first is
    None where the last loss met a constant (`losses[-1] < 0.05`). A score that rose (`after >
    before`) is no loss: where the compared names do not say loss, the lines that set them must."""
    try:
        code_tree = ast.parse(code, mode="exec").body[0]
        values_tree = ast.parse(_plain_values(rewrite), mode="exec").body[0]
    except (SyntaxError, IndexError, ValueError, RecursionError):
        return None
    if not isinstance(code_tree, ast.Assert) or not isinstance(values_tree, ast.Assert):
        return None
    leaves: list[tuple[str, float]] = []
    _pair_leaves(code_tree.test, values_tree.test, leaves)
    first = [v for text, v in leaves if _LOSSY.search(text) and _FIRST.search(text)]
    last = [v for text, v in leaves if _LOSSY.search(text) and _LAST.search(text)]
    if last and not first:
        return None, last[0]
    if not first or not last:
        # `first, last = sum(history["loss"][:3]) / 3, ...` then `assert last < 0.5 * first`
        first = [v for text, v in leaves if re.fullmatch(r"\w*first\w*|\w*initial\w*|\w*before\w*", text)]
        last = [v for text, v in leaves if re.fullmatch(r"\w*last\w*|\w*final\w*|\w*after\w*", text)]
        if not first or not last or not _set_from_a_loss(listing):
            return None
    return first[0], last[0]


def _set_from_a_loss(listing: list[str]) -> bool:
    """Whether the quoted lines assign the compared first/last names from a loss."""
    names = re.compile(r"\b\w*(?:first|initial|before|last|final|after)\w*\b")
    for line in listing:
        m = re.match(r"^[>\s]*([\w\s,]+?)\s*=(?!=)\s*(.+)$", line)
        if m and names.search(m.group(1)) and _LOSSY.search(m.group(2)):
            return True
    return False


def _plain_values(rewrite: str) -> str:
    """pytest's rewritten assertion as Python: tensors as their numbers, nan and inf as names."""
    text = re.sub(r",\s*grad_fn=<\w+>", "", rewrite)
    text = re.sub(r",\s*(?:requires_grad=True|dtype=torch\.\w+|device='[^']*')", "", text)
    return re.sub(r"\btensor\((" + _NUMBER + r")\)", r"\1", text)


def _pair_leaves(code: ast.expr, values: ast.expr, out: list[tuple[str, float]]) -> None:
    """Walk the code and its rewrite side by side; record each code leaf with its number."""
    number = _number(values)
    if number is not None and not isinstance(code, ast.Constant):
        out.append((ast.unparse(code), number))
        return
    if isinstance(code, ast.Compare) and isinstance(values, ast.Compare):
        pairs = list(zip([code.left, *code.comparators], [values.left, *values.comparators], strict=False))
    elif isinstance(code, ast.BinOp) and isinstance(values, ast.BinOp):
        pairs = [(code.left, values.left), (code.right, values.right)]
    elif isinstance(code, ast.UnaryOp) and isinstance(values, ast.UnaryOp):
        pairs = [(code.operand, values.operand)]
    else:
        return
    for c, v in pairs:
        _pair_leaves(c, v, out)


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    return None


def _loss_pair(first: float | None, last: float, rd: Reading | None, who: str) -> Symptom | None:
    """The symptom a loss's first and last values show: unchanged, risen, blown up (or none).
    Without the first value only a non-finite last one says something."""
    ev = (_ev(rd),) if rd is not None else ()
    rank = rd.rank if rd is not None else None
    if first is None:
        if math.isfinite(last):
            return None
        return Symptom("loss-exploded", f"{who} a loss of {last} at the end: it blew up", ev, value=last, rank=rank)
    said = f"{who} a loss of {first:.6g} at the start and {last:.6g} at the end"
    if not math.isfinite(first):
        return None
    if not math.isfinite(last) or (first > 0 and last >= EXPLODED * first):
        return Symptom("loss-exploded", f"{said}: it blew up", ev, value=last, rank=rank)
    if abs(last - first) <= SAME * max(1.0, abs(first)):
        return Symptom("loss-unchanged", f"{said}: it did not move at all", ev, value=last, rank=rank)
    if last > first:
        return Symptom("loss-rose", f"{said}: it rose", ev, value=last, rank=rank)
    if first > 0 and first - last < BARELY * first:
        return Symptom("loss-barely-moved", f"{said}: it barely moved", ev, value=last, rank=rank)
    return None


def _slow_from_uniform(first: float, last: float, ev: tuple[Evidence, ...], rank: int | None) -> Symptom | None:
    """A loss that started on a uniform guess over C classes, to the digits printed, and fell, but
    short of what the guard asked: the first outputs squeezed flat and the steps small, as after
    a second softmax (a part frozen, or a small learning rate, fall as slowly but start from
    wherever the initial outputs put them)."""
    if not (math.isfinite(first) and math.isfinite(last)) or not SAME * max(1.0, first) < first - last:
        return None
    if not 0 < first < math.log(MAX_CLASSES + 1):
        return None
    c = round(math.exp(first))
    if not 2 <= c <= MAX_CLASSES:
        return None
    near = min((c - 1, c, c + 1), key=lambda k: abs(first - math.log(k)) if k >= 2 else math.inf)
    spacing = math.log(near + 1) - math.log(near)
    if not 2 <= near <= MAX_CLASSES or abs(first - math.log(near)) > UNIFORM_SHARE * spacing:
        return None
    return Symptom(
        "loss-slow-from-uniform",
        f"the loss started at {first:.6g}, ln({near}) = {math.log(near):.4g} (a uniform guess over {near} "
        f"classes), and fell only to {last:.6g}: outputs flattened, steps small",
        ev,
        value=last,
        rank=rank,
    )


def _same_call_twice(code: str, listing: list[str]) -> bool:
    """`assert f(x) == f(x)`, or `a == b` with `a = f(x)` and `b = f(x)` quoted above: one call
    made twice, its two answers differing. The comparison may be any of the usual spellings of
    "these two are equal": `==`, `torch.equal`, `torch.allclose`, `np.array_equal`,
    `np.allclose`, `(a == b).all()`, `torch.all(a == b)`, `torch.testing.assert_close(a, b)`."""
    pair = _compared(code)
    if pair is None:
        return False
    left, right = pair
    if left == right:
        return "(" in left
    assigned: dict[str, str] = {}
    for line in listing:
        a = re.match(r"^\s*(\w+)\s*=\s*(.+?)\s*$", line.lstrip(">"))
        if a:
            assigned[a.group(1)] = a.group(2)
    left_call, right_call = assigned.get(left), assigned.get(right)
    return left_call is not None and left_call == right_call and "(" in left_call


_EQUAL_CALL = re.compile(
    r"^(?:assert\s+)?(?:torch\.testing\.assert_close|(?:torch|np|numpy)\.(?:equal|allclose|array_equal)|"
    r"torch\.all)\((?P<args>.+)\)\s*(?:,.*)?$"
)


def _compared(code: str) -> tuple[str, str] | None:
    """The two things an equality assertion compares, as written; None for other assertions."""
    code = code.strip()
    m = _EQUAL_CALL.match(code)
    if m:
        inside = _top_level_split(m.group("args"))
        if code.startswith(("torch.all(", "assert torch.all(")):
            return _compared("assert " + inside[0]) if len(inside) == 1 else None
        return (inside[0].strip(), inside[1].strip()) if len(inside) >= 2 else None
    m = re.fullmatch(r"assert\s+\((.+)\)\.all\(\)", code)
    if m:
        return _compared("assert " + m.group(1))
    m = re.fullmatch(r"assert\s+(.+?)\s*==\s*(.+)", code)
    return (m.group(1).strip(), m.group(2).strip()) if m else None


def _top_level_split(args: str) -> list[str]:
    """A call's arguments split on the commas outside brackets (`f(a, b), g(c)` -> two)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i])
            start = i + 1
    parts.append(args[start:])
    return [p for p in parts if "=" not in p.split("(")[0] or "==" in p]


def _none_grad_in_traceback(readings: list[Reading]) -> Symptom | None:
    """A gradient used while None: an exception about NoneType (or a collective's `Invalid
    function argument`) in a traceback whose quoted lines use `.grad`."""
    found = _error_where_code_uses(
        readings, lambda text: _names_none(text) and _EXCEPTION.match(text) is not None, _GRAD_USE
    )
    if found is None:
        return None
    use, error = found
    return Symptom(
        "grad-none",
        "a gradient was None where the code used it (no backward reached it)",
        (_ev(use), _ev(error)),
        rank=error.rank,
    )


def _kept_loss_in_traceback(readings: list[Reading]) -> Symptom | None:
    """Loss values that are no numbers: a TypeError saying two values do not compare, or one does
    not serialise or average, in a traceback whose quoted lines handle a loss or its history.
    A loss kept whole (its tensor, its graph) instead of its `.item()` fails there first."""
    found = _error_where_code_uses(
        readings, lambda text: text.startswith("TypeError") and _NOT_A_NUMBER.match(text) is not None, _LOSSY
    )
    if found is None:
        return _tensor_in_json(readings)
    use, error = found
    return Symptom(
        "loss-not-a-number",
        "the loss values the code used are objects, not numbers: the loss was kept, not its value",
        (_ev(use), _ev(error)),
        rank=error.rank,
    )


_TENSOR_IN_JSON = re.compile(r"^TypeError: Object of type (?:Tensor|Parameter) is not JSON serializable")


def _tensor_in_json(readings: list[Reading]) -> Symptom | None:
    """A tensor where a results dict wanted a number, though the quoted code names no loss (a
    whole dict of metrics written at the end, timm's `--result`): a figure kept as its tensor
    instead of its `.item()`, the loss's most often. Weaker than a traceback through a loss."""
    for rd in readings:
        text = rd.text.strip()
        if text.startswith("TypeError") and _TENSOR_IN_JSON.match(text):
            return Symptom(
                "tensor-not-serializable",
                "a tensor was written where a results dict needed a plain number: a figure kept as "
                "its tensor, not its value",
                (_ev(rd),),
                rank=rd.rank,
            )
    return None


def _error_where_code_uses(
    readings: list[Reading], is_error: Callable[[str], bool], use: re.Pattern[str]
) -> tuple[Reading, Reading] | None:
    """The first error line IS_ERROR accepts whose traceback quotes a line USE matches (a
    Python frame's source line, or pytest's `>` line), with the last such quoted line."""
    quoted: list[Reading] = []
    after_frame = False
    for rd in readings:
        text = rd.text.strip()
        if after_frame:
            after_frame = False
            quoted.append(rd)
            continue
        if text.startswith(("Traceback", "___")) and _TRACEBACK_START.match(text):
            quoted = []
        elif (text.startswith('File "') or ".py:" in text) and _FRAME.match(text):
            after_frame = True
        elif rd.text.startswith(">") and _FAILING.match(rd.text):
            quoted.append(rd)
        elif is_error(text):
            uses = [q for q in quoted if use.search(q.text)]
            if uses:
                return uses[-1], rd
    return None


def _names_none(text: str) -> bool:
    """An error about a None value: `NoneType`, or a collective's `Invalid function argument`."""
    low = text.lower()
    return "nonetype" in low or "invalid function argument" in low


def _ev(rd: Reading) -> Evidence:
    return Evidence(rd.line, rd.text.strip()[:300], rank=rd.rank)
