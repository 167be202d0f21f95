"""A small report to render, shared by the report tests: two source files and one mutant of
each status, with the diffs a campaign would record for them."""

from __future__ import annotations

from injector.outcomes import Baseline, Outcome, Report

TRAIN = (
    '"""Train the demo classifier."""\n'  # 1
    "import torch\n"  # 2
    "import torch.nn.functional as F\n"  # 3
    "\n"  # 4
    'USAGE = """Run it like this:\n'  # 5
    "```sh\n"  # 6
    "python train.py --lr 0.1\n"  # 7
    "````\n"  # 8
    '"""\n'  # 9
    "def train(model, loader, epochs=1):\n"  # 10
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"  # 11
    "    model.train()\n"  # 12
    "    for _ in range(epochs):\n"  # 13
    "        for x, y in loader:\n"  # 14
    "            optimizer.zero_grad()\n"  # 15
    "            logits = F.relu(model(x))\n"  # 16
    "            loss = F.cross_entropy(logits, y)\n"  # 17
    "            loss.backward()\n"  # 18
    "            optimizer.step()\n"  # 19
    "    return loss.item()\n"  # 20
    "\n"  # 21
    "BANNER = \"<script>alert('x')</script>\"\n"  # 22
    "\n"  # 23
    "def evaluate(model, x):\n"  # 24
    "    model.eval()\n"  # 25
    "    with torch.no_grad():\n"  # 26
    "        return F.softmax(model(x), dim=-1)\n"  # 27
)
DATA = (
    "from torch.utils.data import DataLoader\n"
    "\n"
    "\n"
    "def make_loader(dataset, batch_size=32):\n"
    "    return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n"
)
SOURCES = {"demo/train.py": TRAIN, "demo/data.py": DATA}


def mutated(path: str, line: int, new: str) -> str:
    """The file with line `line` replaced by `new` (any number of lines, or none)."""
    lines = SOURCES[path].splitlines(keepends=True)
    return "".join(lines[: line - 1]) + new + "".join(lines[line:])


def diff(path: str, line: int, new: str, source: str | None = None) -> str:
    """The unified diff (3 lines of context) that replaces line `line` of a file by `new`."""
    lines = (SOURCES[path] if source is None else source).splitlines(keepends=True)
    start, stop = max(1, line - 3), min(len(lines), line + 3)
    before, after = lines[start - 1 : line - 1], lines[line:stop]
    added = new.splitlines(keepends=True)
    return (
        f"--- a/{path}\n+++ b/{path}\n"
        f"@@ -{start},{len(before) + 1 + len(after)} +{start},{len(before) + len(added) + len(after)} @@\n"
        + "".join(" " + text for text in before)
        + "-"
        + lines[line - 1]
        + "".join("+" + text for text in added)
        + "".join(" " + text for text in after)
    )


# (id, fault id, file, line, new text of the line, description, status, test, message)
MUTANTS = [
    (
        "a1lrhigh0001",
        "lr-too-high",
        "demo/train.py",
        11,
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * 100)\n",
        "learning rate multiplied by 100",
        "survived",
        None,
        None,
    ),
    (
        "b2zerograd02",
        "missing-zero-grad",
        "demo/train.py",
        15,
        "",
        "removed `optimizer.zero_grad()`: gradients now accumulate across steps",
        "survived",
        None,
        None,
    ),
    (
        "c3evalmode03",
        "missing-eval-mode",
        "demo/train.py",
        25,
        "",
        "removed `model.eval()`: evaluation runs in training mode",
        "survived",
        None,
        None,
    ),
    (
        "d4inplace004",
        "inplace-activation",
        "demo/train.py",
        16,
        "            logits = F.relu_(model(x))\n",
        "`relu` works in place",
        "killed",
        "tests/test_train.py::test_backward_runs",
        "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation",
    ),
    (
        "e5backward05",
        "missing-backward",
        "demo/train.py",
        18,
        "",
        "removed `loss.backward()`: nothing is learned",
        "killed",
        "tests/test_train.py::test_loss_decreases",
        "AssertionError: loss did not decrease",
    ),
    (
        "f6optstep006",
        "missing-optimizer-step",
        "demo/train.py",
        19,
        "",
        "removed `optimizer.step()`: the parameters never change",
        "killed",
        "tests/test_train.py::test_params_change",
        "AssertionError: parameters did not change",
    ),
    (
        "g7reduce0007",
        "wrong-loss-reduction",
        "demo/train.py",
        17,
        '            loss = F.cross_entropy(logits, y, reduction="sum")\n',
        "`cross_entropy` sums instead of averaging",
        "killed",
        "tests/test_train.py::test_loss_scale",
        "AssertionError: loss depends on the batch size",
    ),
    (
        "h8shuffle008",
        "no-shuffle",
        "demo/data.py",
        5,
        "    return DataLoader(dataset, batch_size=batch_size, shuffle=False)\n",
        "the DataLoader no longer shuffles",
        "killed",
        "tests/test_data.py::test_order_is_shuffled",
        "AssertionError: batches come in dataset order",
    ),
    (
        "i9rankskip09",
        "rank-skip",
        "demo/train.py",
        15,
        "            if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1:\n"
        "                continue\n"
        "            optimizer.zero_grad()\n",
        "rank 1 skips one training step",
        "timeout",
        "tests/test_train.py::test_ddp_two_ranks",
        None,
    ),
    (
        "j0detach0010",
        "detached-graph",
        "demo/train.py",
        17,
        "            loss = F.cross_entropy(logits.detach(), y)\n",
        "the loss is cut off from the model's graph",
        "timeout",
        "tests/test_train.py::test_loss_decreases",
        None,
    ),
    (
        "k1trainmode1",
        "missing-train-mode",
        "demo/train.py",
        12,
        "",
        "removed `model.train()`: training runs in eval mode after evaluation",
        "no_coverage",
        None,
        None,
    ),
    (
        "l2softmax012",
        "wrong-softmax-dim",
        "demo/train.py",
        27,
        "        return F.softmax(model(x), dim=0)\n",
        "softmax over dim 0 instead of -1",
        "no_coverage",
        None,
        None,
    ),
    (
        "m3nograd0013",
        "no-grad-training",
        "demo/train.py",
        16,
        "            with torch.no_grad():\n                logits = F.relu(model(x))\n",
        "the forward pass runs without autograd",
        "error",
        None,
        "ImportError: cannot import name `Trainer` ```\ncc @someone, this broke in CI\n",
    ),
]


SMOKE = "tests/test_train.py::test_smoke_run"  # reaches every line that some test reaches
# the guard's tests in collection order: those the mutants name, the smoke run, and one that
# reaches no mutated line
TESTS = tuple(dict.fromkeys([spec[7] for spec in MUTANTS if spec[7]] + [SMOKE, "tests/test_data.py::test_len"]))


def outcome(spec, diff_text: str | None = None) -> Outcome:
    mutant_id, fault, path, line, new, description, status, test, message = spec
    reach = () if status == "no_coverage" else tuple(dict.fromkeys(t for t in (test, SMOKE) if t))
    return Outcome(
        mutant_id=mutant_id,
        operator=fault,
        file=path,
        line=line,
        description=description,
        diff=diff(path, line, new) if diff_text is None else diff_text,
        status=status,
        test=test,
        message=message,
        duration=1.25,
        tests_run=0 if status == "no_coverage" else 3,
        covered_by=reach,
    )


def make_report(outcomes=None, **changes) -> Report:
    fields = dict(
        project="demo",
        guard="pytest -x -q tests",
        device="cpu",
        baseline=Baseline(
            tests=14,
            duration=3.5,
            flaky=("tests/test_train.py::test_converges[@seed]",),
            names=TESTS + ("tests/test_train.py::test_converges[@seed]",),
        ),
        outcomes=tuple(
            sorted(
                (outcome(s) for s in MUTANTS) if outcomes is None else outcomes,
                key=lambda o: (o.file, o.line, o.operator, o.mutant_id),
            )
        ),
        duration=83.125,
        shards=("1/2", "2/2"),
        sources=dict(SOURCES),
    )
    fields.update(changes)
    return Report(**fields)
