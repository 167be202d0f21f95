"""Campaign verdicts against the naive truth, one fixture project per execution model.

For every mutant of every fixture, the naive truth is what a user gets by hand: copy the
project, apply the mutant's change, run the guard afresh (pytest in collection order, or the
guard command). A campaign's outcome must agree with it on `--jobs 1` and `--jobs 2`:
killed or timeout where the naive run fails or hangs, survived or no_coverage where it passes
(no_coverage only where no guard test runs the mutated line). The project, and the file a
symlinked source points to, are byte-identical afterwards, and no process is left behind.

The fixtures (tests/injector/differential/): DDP ranks started with fork, with
`mp.spawn`, and under torchrun from a test; a test that runs `python train.py`; a smoke-training
command guard run as `python -m`; tests that share module-level state (fastest-first order fails
on the unmutated code); a step function built by a factory with branches the CPU never takes;
a source file that is a symlink to a file outside the project. Each has several mutants per file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from injector import config
from injector.cli import main
from injector.generate import mutants_for_source
from injector.operators import select

FIXTURES = Path(__file__).parent / "differential"
CASES = [
    "fork_ddp",
    "spawn_ddp",
    "torchrun_test",
    "subprocess_script",
    "command_guard",
    "shared_state",
    "nested_factory",
    "symlinked",
]
NAIVE_TIMEOUT = 90
CAUGHT, PASSED = "caught", "passed"
_naive_cache: dict[str, dict[str, str]] = {}


def digest(*roots: Path) -> dict[str, str]:
    found = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in paths:
            # the outcome cache is the one folder a campaign writes in the project
            if path.is_file() and "__pycache__" not in path.parts and ".trainwreck-cache" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def lay_out(case: str, base: Path) -> tuple[Path, list[Path]]:
    """The fixture as a user has it; for `symlinked`, trainer/loop.py links outside the project."""
    project = base / case
    shutil.copytree(FIXTURES / case, project, ignore=shutil.ignore_patterns("__pycache__"))
    watched = [project]
    if case == "symlinked":
        outside = base / "elsewhere"
        outside.mkdir()
        (project / "shared_loop.py").rename(outside / "shared_loop.py")
        (project / "trainer" / "loop.py").symlink_to(os.path.relpath(outside / "shared_loop.py", project / "trainer"))
        watched.append(outside)
    return project, watched


def fixture_mutants(project: Path):
    settings = config.load(project)
    operators = select(list(settings.operators), [])
    found = []
    for path in settings.paths:
        target = project / path
        files = [target] if target.is_file() else sorted(p for p in target.rglob("*.py"))
        for file in files:
            relative = file.relative_to(project).as_posix()
            found.extend(mutants_for_source(file.read_text(), relative, operators))
    return found, settings.guard or "python -m pytest"


def naive_outcome(project: Path, mutant, guard: str) -> str:
    """Apply the mutant by hand to a fresh copy and run the guard afresh."""
    with tempfile.TemporaryDirectory(prefix="naive-") as folder:
        copy = Path(folder) / "project"
        shutil.copytree(project, copy, symlinks=False)  # a linked source becomes the user's own edit
        target = copy / mutant.file
        target.write_text(mutant.apply(target.read_text()))
        argv = shlex.split(guard)
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        if argv[1:3] == ["-m", "pytest"]:
            argv += ["-q", "-p", "no:cacheprovider"]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            run = subprocess.run(
                argv, cwd=copy, capture_output=True, timeout=NAIVE_TIMEOUT, env=env, start_new_session=True
            )
        except subprocess.TimeoutExpired:
            return CAUGHT
        return CAUGHT if run.returncode != 0 else PASSED


def naive_truth(case: str, project: Path) -> dict[str, str]:
    if case not in _naive_cache:
        mutants, guard = fixture_mutants(project)
        with ThreadPoolExecutor(2) as pool:
            verdicts = pool.map(lambda m: naive_outcome(project, m, guard), mutants)
            _naive_cache[case] = {m.id: verdict for m, verdict in zip(mutants, verdicts, strict=False)}
    return _naive_cache[case]


def leftovers() -> list[int]:
    """Processes still working in this test process's scratch copies."""
    prefix = os.path.join(os.path.realpath(tempfile.gettempdir()), f"trainwreck-{os.getpid()}-")
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(entry / "cwd").startswith(prefix):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_every_outcome_equals_applying_the_mutant_by_hand(case, jobs, tmp_path, capsys):
    project, watched = lay_out(case, tmp_path)
    truth = naive_truth(case, project)
    before = digest(*watched)
    report_path = tmp_path / "report.json"
    code = main(["run", str(project), "--jobs", str(jobs), "--json", str(report_path)])
    assert code == 0, capsys.readouterr().err[-2000:]
    report = json.loads(report_path.read_text())
    outcomes = {o["mutant_id"]: o for o in report["outcomes"]}

    assert set(outcomes) == set(truth), "the campaign and the naive run saw different mutants"
    disagreements = []
    for mutant_id, expected in truth.items():
        outcome = outcomes[mutant_id]
        got = {"killed": CAUGHT, "timeout": CAUGHT, "survived": PASSED, "no_coverage": PASSED}.get(outcome["status"])
        if got != expected:
            disagreements.append(
                f"{outcome['file']}:{outcome['line']} {outcome['operator']}: campaign "
                f"{outcome['status']} ({outcome['message']}), by hand {expected}"
            )
    assert not disagreements, "\n".join(disagreements)
    assert len(truth) >= 2 and CAUGHT in truth.values()
    assert digest(*watched) == before
    assert leftovers() == []
    assert not [d for d in Path(tempfile.gettempdir()).glob(f"trainwreck-{os.getpid()}-*")]


def test_tests_that_share_state_are_judged_as_the_guard_runs_them(tmp_path):
    """shared_state: a fast test relies on a file a slower, earlier test writes; another test
    only reads what the training code left in a module-level list."""
    project, _ = lay_out("shared_state", tmp_path)
    report_path, markdown = tmp_path / "report.json", tmp_path / "report.md"
    assert main(["run", str(project), "--json", str(report_path), "--markdown", str(markdown)]) == 0
    report = json.loads(report_path.read_text())
    assert "kills re-judged in collection order" in markdown.read_text()
    session = [o for o in report["outcomes"] if o["file"] == "trainer/session.py"]
    assert session and all(o["status"] == "killed" and "collection order" in o["note"] for o in session)
    [zero_grad] = [
        o for o in report["outcomes"] if o["file"] == "trainer/history.py" and o["operator"] == "missing-zero-grad"
    ]
    assert zero_grad["status"] == "killed"
    assert zero_grad["test"] == "tests/test_history.py::test_the_logged_run_converged"
    assert not (project / "session.json").exists()


def test_code_no_test_runs_is_no_coverage_even_inside_a_covered_function(tmp_path):
    """nested_factory: the AMP branch and the clipping line never run on CPU; the step
    built at import (a closure made before any mutant) still runs each mutant."""
    project, _ = lay_out("nested_factory", tmp_path)
    report_path = tmp_path / "report.json"
    assert main(["run", str(project), "--json", str(report_path)]) == 0
    source = (project / "trainer" / "steps.py").read_text().splitlines()
    by_status: dict[str, set[str]] = {}
    for outcome in json.loads(report_path.read_text())["outcomes"]:
        by_status.setdefault(outcome["status"], set()).add(source[outcome["line"] - 1].strip())
    assert {
        "scaler.scale(loss).backward()",
        "scaler.step(optimizer)",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), clip)",
    } <= by_status["no_coverage"]
    assert {"optimizer.zero_grad()", "loss.backward()", "optimizer.step()"} <= by_status["killed"]
