"""Source code a traceback quotes, read as evidence.

Python's tracebacks quote the failing line of each frame; pytest's long tracebacks quote each
frame's whole function body, the failing line marked `>`. Two uses:

* where one error message has several causes (`element 0 of tensors does not require grad` after
  a `with torch.no_grad():` forward, a `.detach()`ed output, or a model with every parameter
  frozen), the code quoted on the way to the failing `backward()` says which;
* prose in quoted source (a library docstring that mentions "a memory leak") is not the run
  reporting anything, so the prose-report signatures skip those lines;
* a report's own evaluation script, pasted in a fenced block beside a disappointing accuracy,
  that runs a model over held-out data and never switches it to eval mode (batch norm then
  normalises with each test batch's statistics, dropout stays on).
"""

from __future__ import annotations

import re

from triage.reader import Reading
from triage.records import Evidence, Symptom

EMITS: frozenset[str] = frozenset(
    {"quoted-no-grad", "quoted-detach", "quoted-requires-grad-false", "quoted-eval-without-eval-mode"}
)

# pytest: a frame's section starts after a `____ test_name ____` header or a `_ _ _ _` separator
# and ends at its `path.py:NN: ` location line; its body lines are indented or marked `>`
_PYTEST_START = re.compile(r"^_{3,} \S.* _{3,}$|^(?:_ ){8,}_?$")
_PYTEST_END = re.compile(r"^\S+\.py:\d+:")
_PYTEST_CODE = re.compile(r"^(?:>|    )")
# Python: `  File "x.py", line 12, in f` then the quoted line, indented deeper (group 1: the function)
PY_FRAME = re.compile(r'^\s*File "[^"]+", line \d+(?:, in (\w+))?')
# IPython/Jupyter: `---> 35         loss.backward()` and its numbered context lines
_IPY_CODE = re.compile(r"^(?:-*> ?|\s+)\d+\s{2,}\S")

_BACKWARD = re.compile(r"\.backward\(|\bbackward\(\s*\w")
_CODE = (
    (
        "quoted-no-grad",
        re.compile(r"\btorch\.no_grad\(\)|\bset_grad_enabled\(\s*False|\binference_mode\(\s*(?:True)?\s*\)"),
        "the code quoted before the failing backward() runs under no_grad/inference_mode",
    ),
    (
        "quoted-detach",
        # a detached value that is logged or moved off the graph on purpose says nothing, nor
        # does a detached copy (a test's snapshot of the weights: `p.detach().clone()`)
        re.compile(r"\.detach\(\)(?!\s*\.\s*(?:item|cpu|numpy|tolist|clone)\b)"),
        "the code quoted before the failing backward() detaches a tensor from the graph",
    ),
    (
        "quoted-requires-grad-false",
        re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*False\s*\)"),
        "the code quoted before the failing backward() turns requires_grad off",
    ),
)
_LOGGING = re.compile(r"\bprint\(|\blog(?:ger|ging)?\.|\.log\w*\(|\.append\(|\.extend\(|\bwriter\.|\bwandb\.")


def source_lines(readings: list[Reading]) -> set[int]:
    """The line numbers of `readings` that are source code quoted by a traceback."""
    out: set[int] = set()
    in_pytest = after_frame = False
    for rd in readings:
        if rd.line is None or rd.index != 0:
            continue
        text = rd.text.rstrip("\r\n")
        if after_frame:
            after_frame = False
            if text.startswith("    "):
                out.add(rd.line)
                continue
        if PY_FRAME.match(text):
            after_frame = True
            continue
        if _PYTEST_START.match(text):
            in_pytest = True
            continue
        if in_pytest:
            if _PYTEST_END.match(text):
                in_pytest = False
            elif _PYTEST_CODE.match(text):
                out.add(rd.line)
            continue
        if _IPY_CODE.match(text):
            out.add(rd.line)
    return out


def detect(readings: list[Reading], quoted: set[int], error_line: int) -> list[Symptom]:
    """The fault sites quoted on the way to the backward() call that raised at `error_line`."""
    code = [rd for rd in readings if rd.line in quoted and rd.index == 0 and rd.line < error_line]
    # the first quoted backward() is where the error surfaced: only code before it built the loss
    stop = next((i for i, rd in enumerate(code) if _BACKWARD.search(rd.text)), None)
    if stop is None:
        return []
    out: list[Symptom] = []
    for name, pattern, summary in _CODE:
        for rd in code[:stop]:
            body = rd.text.lstrip("> -0123456789\t")
            if body.startswith("#") or _LOGGING.search(body):
                continue
            if pattern.search(body):
                out.append(Symptom(name, summary, (Evidence(rd.line, rd.text.strip()[:300], rank=rd.rank),)))
                break
    return out


_FENCE = re.compile(r"^\s*```")
# held-out data: a dataset built with train=False, a split or loader named for testing
_HELD_OUT = re.compile(
    r"\btrain\s*=\s*False\b|\bsplit\s*=\s*['\"](?:test|val\w*)|\b(?:test|val|valid|eval)\w*_?(?:loader|set|dataset)\b",
    re.I,
)
_LOOP = re.compile(r"^\s*for\b.*\bin\b.*(?:loader|dataset|batches)\b.*:\s*$", re.I)
_EVAL_MODE = re.compile(r"\.eval\(\)|\.train\(\s*(?:mode\s*=\s*)?False\s*\)|\.training\s*=\s*False|\.requires_grad_\(")
_TRAINS = re.compile(r"\.backward\(|\.step\(\)|\boptim\.|\bTrainer\(")
# the model applied to a batch: `net(img)`, `model(x.cuda())`, `self.model(inputs)`
_FORWARD = re.compile(r"\b(?:\w*net\w*|\w*model\w*|classifier|encoder)\s*\(\s*\w", re.I)


def eval_without_eval_mode(readings: list[Reading]) -> list[Symptom]:
    """A fenced code block (a report's pasted script) that loops over held-out data, applies a
    model to each batch and never calls `.eval()` (nor trains: a training loop's validation may
    switch modes in a function not quoted)."""
    fenced = [i for i, rd in enumerate(readings) if "```" in rd.text]  # (a C-speed test a line)
    if len(fenced) < 2:
        return []
    block: list[Reading] = []
    inside = False
    for rd in readings[fenced[0] : fenced[-1] + 1]:
        if rd.index != 0:
            continue
        if not _FENCE.match(rd.text):
            if inside:
                block.append(rd)
            continue
        loop = _loop_in_train_mode(block) if inside else None
        if loop is not None:
            summary = "the quoted script evaluates a model on held-out data without switching it to eval mode"
            evidence = (Evidence(loop.line, loop.text.strip()[:300], rank=loop.rank),)
            return [Symptom("quoted-eval-without-eval-mode", summary, evidence)]
        inside, block = not inside, []
    return []


def _loop_in_train_mode(block: list[Reading]) -> Reading | None:
    """The loop of a quoted block that evaluates on held-out data in training mode, or None."""
    code = [rd for rd in block if not rd.text.lstrip().startswith("#")]
    text = "\n".join(rd.text for rd in code)
    loop = next((rd for rd in code if _LOOP.match(rd.text)), None)
    if (
        loop is None
        or _HELD_OUT.search(text) is None
        or _FORWARD.search(text) is None
        or _EVAL_MODE.search(text) is not None
        or _TRAINS.search(text) is not None
    ):
        return None
    return loop
