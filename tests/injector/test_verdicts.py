"""Verdicts a user can trust: each test here pins one way a campaign used to get them wrong.

They use the dependency-free campaign project (tests/injector/campaign_project), so each runs
in seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from background import start_campaign

from injector import campaign
from injector.cli import main
from injector.mutants import Edit, Mutant
from trainwreck import processes

PROJECT = Path(__file__).parent / "campaign_project"


def run(project: Path, tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "report.json"
    assert main(["run", str(project), "--json", str(report), *args]) == 0
    return json.loads(report.read_text())


def by_hand(project: Path, tmp_path: Path, report: dict, guard: list[str]) -> dict[str, str]:
    """Each mutant applied to a fresh copy, the guard run afresh: 'caught' or 'passed'."""
    verdicts = {}
    for outcome in report["outcomes"]:
        copy = tmp_path / f"hand-{outcome['mutant_id']}"
        shutil.copytree(project, copy)
        patch = subprocess.run(["patch", "-p1", "-s"], input=outcome["diff"], text=True, cwd=copy)
        assert patch.returncode == 0
        result = subprocess.run(
            guard, cwd=copy, capture_output=True, timeout=60, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        )
        verdicts[outcome["mutant_id"]] = "caught" if result.returncode else "passed"
    return verdicts


def caught(status: str) -> str:
    return "caught" if status in ("killed", "timeout") else "passed"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_command_guard_never_sees_an_earlier_mutant(project, tmp_path, jobs):
    """Several mutants of one file, a command guard: each mutant runs on the original plus
    its own change only (before, later mutants landed on top of earlier ones and died of
    SyntaxError: 18 of 20 'kills' were artifacts)."""
    guard = f"env {sys.executable} -m pytest -x -q -p no:cacheprovider tests"
    report = run(
        project,
        tmp_path,
        "--guard",
        guard,
        "--jobs",
        jobs,
        "--operators",
        "missing-zero-grad,missing-backward,lr-too-high,missing-eval-mode,missing-train-mode,loss-tensor-leak",
    )
    assert len({o["file"] for o in report["outcomes"]}) == 1 and len(report["outcomes"]) >= 6
    for outcome in report["outcomes"]:
        assert "SyntaxError" not in (outcome["message"] or "")
        assert "IndentationError" not in (outcome["message"] or "")
    hand = by_hand(
        project, tmp_path, report, [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "tests"]
    )
    assert {o["mutant_id"]: caught(o["status"]) for o in report["outcomes"]} == hand
    assert "passed" in hand.values() and "caught" in hand.values()


def test_a_mutant_that_does_not_compile_is_an_error_not_a_kill(project, tmp_path):
    source = (project / "trainer" / "loop.py").read_text()
    start = source.index("optimizer.zero_grad()")
    broken = Mutant(
        "0badc0de0001",
        "missing-zero-grad",
        "trainer/loop.py",
        source[:start].count("\n") + 1,
        "broken on purpose",
        "",
        (Edit(start, start, "(("),),
        None,
    )
    settings = campaign.Settings(project, campaign.Guard.parse("python -m pytest -q tests", project))
    with campaign.Campaign(settings) as running:
        report = running.run([broken], {"trainer/loop.py": source})
    [outcome] = report.outcomes
    assert outcome.status == "error"
    assert "does not compile" in outcome.message


def test_a_mutant_written_through_a_linked_source_never_reaches_the_link_target(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    real = outside / "loop.py"
    (project / "trainer" / "loop.py").rename(real)
    (project / "trainer" / "loop.py").symlink_to(real)
    before = real.read_bytes()
    for guard in ("python -m pytest -q tests", f"{sys.executable} -m pytest -q -x tests"):
        report = run(project, tmp_path, "--guard", guard, "--operators", "missing-zero-grad,missing-backward")
        assert {o["status"] for o in report["outcomes"]} <= {"killed", "survived"}
        assert real.read_bytes() == before
        assert (project / "trainer" / "loop.py").is_symlink()


def test_a_subprocess_the_guard_starts_imports_the_mutant(project, tmp_path):
    """Before, a pytest-mode mutant lived only in the worker's memory."""
    (project / "tests" / "test_loop.py").write_text(
        "import subprocess, sys\n"
        "from pathlib import Path\n"
        "from trainer.loop import train  # loaded here too: the worker can swap it in memory\n"
        "ROOT = Path(__file__).resolve().parent.parent\n"
        "CODE = 'from trainer.loop import Model, train; h = train(Model(), steps=20); assert h[-1] < h[0]'\n"
        "def test_training_in_a_fresh_interpreter():\n"
        "    run = subprocess.run([sys.executable, '-c', CODE], cwd=ROOT)\n"
        "    assert run.returncode == 0\n"
    )
    report = run(project, tmp_path, "--operators", "missing-backward,missing-optimizer-step")
    ran = [o["status"] for o in report["outcomes"] if o["status"] != "no_coverage"]
    assert ran == ["killed", "killed"]


def test_each_slot_keeps_its_share_of_threads_and_the_baseline_the_same(project, tmp_path):
    threads = tmp_path / "threads"
    threads.mkdir()
    (project / "tests" / "test_threads.py").write_text(
        "import os, pathlib\n"
        "from trainer.loop import Model, train\n"
        "def test_record_threads():\n"
        "    train(Model(), steps=2)\n"
        f"    pathlib.Path({str(threads)!r}, str(os.getpid())).write_text(os.environ['OMP_NUM_THREADS'])\n"
    )
    run(project, tmp_path, "--jobs", "2", "--operators", "missing-zero-grad,missing-backward")
    cores = len(os.sched_getaffinity(0))
    assert {p.read_text() for p in threads.iterdir()} == {str(max(1, cores // 2))}


def test_a_timeout_beside_another_mutant_is_confirmed_alone(project, tmp_path):
    """A mutant that is only slow while another mutant runs is not reported as a timeout."""
    busy = tmp_path / "busy"
    (project / "tests" / "test_loop.py").write_text(
        "import time, pathlib\n"
        "from trainer.loop import Model, train, evaluate\n"
        f"BUSY = pathlib.Path({str(busy)!r})\n"
        "def test_train():\n"
        "    BUSY.touch()\n"
        "    try:\n"
        "        h = train(Model(), steps=10)\n"
        "        time.sleep(7.0)\n"
        "    finally:\n"
        "        BUSY.unlink(missing_ok=True)\n"
        "    assert h\n"
        "def test_evaluate_waits_while_the_machine_is_busy():\n"
        "    time.sleep(0.3)\n"
        "    while BUSY.exists():\n"
        "        time.sleep(0.05)\n"
        "    evaluate(Model())\n"
    )
    report = run(
        project, tmp_path, "--jobs", "2", "--timeout-factor", "1", "--operators", "missing-zero-grad,missing-eval-mode"
    )
    statuses = {o["operator"]: o for o in report["outcomes"]}
    assert statuses["missing-eval-mode"]["status"] == "survived"
    assert statuses["missing-zero-grad"]["status"] == "survived"
    assert any("alone" in (o["note"] or "") for o in report["outcomes"])


@pytest.mark.parametrize("where", ["cli", "config"])
def test_a_timeout_factor_that_is_not_a_positive_finite_number_is_refused(project, tmp_path, capsys, where):
    for value in ("nan", "inf", "-1", "0"):
        if where == "cli":
            with pytest.raises(SystemExit) as leaving:
                main(["run", str(project), "--timeout-factor", value])
            assert leaving.value.code == 2
        else:
            pyproject = project / "pyproject.toml"
            text = pyproject.read_text()
            pyproject.write_text(text + f"timeout-factor = {value}\n")
            assert main(["run", str(project), "--json", str(tmp_path / "r.json")]) == 2
            pyproject.write_text(text)
        assert "Traceback" not in capsys.readouterr().err


def test_scratch_folders_of_a_killed_campaign_are_removed_at_the_next_start(tmp_path):
    from injector import scratch

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"trainwreck-{dead.pid}-test"
    stale.mkdir()
    (stale / "owner").write_text(f"{dead.pid} 1")
    alive = Path(tempfile.gettempdir()) / f"trainwreck-{os.getpid()}-test"
    alive.mkdir()
    (alive / "owner").write_text(processes.identity(os.getpid()))
    # an owner file another trainwreck version wrote (pid and clock ticks) for a live campaign
    older = Path(tempfile.gettempdir()) / f"trainwreck-{os.getpid()}-older"
    older.mkdir()
    (older / "owner").write_text(f"{os.getpid()} 123456")
    # the pid of a dead campaign, since reused by a younger process
    young = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    reused = Path(tempfile.gettempdir()) / f"trainwreck-{young.pid}-reused"
    reused.mkdir()
    (reused / "owner").write_text(f"{young.pid} 1")
    os.utime(reused / "owner", (time.time() - 3600, time.time() - 3600))
    try:
        removed = scratch.remove_stale()
        assert stale in removed and not stale.exists()
        assert reused in removed and not reused.exists()
        assert alive.exists() and older.exists()
    finally:
        young.kill()
        young.wait()
        for folder in (stale, alive, older, reused):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_terminated_campaign_removes_its_scratch_copies(project, tmp_path, sig):
    (project / "tests" / "test_slow.py").write_text("import time\ndef test_slow():\n    time.sleep(0.5)\n")
    process = start_campaign(project, tmp_path)
    time.sleep(0.5)
    process.send_signal(sig)
    assert process.wait(timeout=30) == 130
    deadline = time.monotonic() + 10
    mine = lambda: list(Path(tempfile.gettempdir()).glob(f"trainwreck-{process.pid}-*"))  # noqa: E731
    while mine() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mine() == []


def test_a_sigkilled_campaign_leaves_nothing_once_its_workers_notice(project, tmp_path):
    (project / "tests" / "test_slow.py").write_text("import time\ndef test_slow():\n    time.sleep(0.5)\n")
    process = start_campaign(project, tmp_path)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 15
    mine = lambda: list(Path(tempfile.gettempdir()).glob(f"trainwreck-{process.pid}-*"))  # noqa: E731
    while mine() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mine() == []
