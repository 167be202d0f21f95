"""`injector run`: outcomes, isolation, timeouts, interrupts, shards and bad input.

Most tests use a small dependency-free project (tests/injector/campaign_project), so a
whole campaign takes seconds; one test runs the bundled torch demo.
"""

from __future__ import annotations

import hashlib
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

from injector.cli import main
from injector.generate import mutants_for_source

PROJECT = Path(__file__).parent / "campaign_project"
MARKER = "trainwreck-leftover-marker"
# Operators whose mutants finish fast here (no deliberate hang).
QUICK = [
    "--operators",
    "missing-zero-grad,missing-backward,lr-too-high,missing-eval-mode,missing-train-mode,loss-tensor-leak",
]


def digest(root: Path) -> dict[str, str]:
    """Every file of the project but the outcome cache (the one folder a campaign writes there)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".trainwreck-cache" not in p.parts
    }


def campaign(project: Path, tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "report.json"
    code = main(["run", str(project), "--json", str(report), *args])
    assert code == 0
    return json.loads(report.read_text())


def statuses(report: dict) -> dict[tuple[str, int, str], str]:
    return {(o["file"], o["line"], o["operator"]): o["status"] for o in report["outcomes"]}


def leftovers() -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if MARKER.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_outcomes_match_applying_each_mutant_by_hand(project, tmp_path):
    report = campaign(project, tmp_path, "--jobs", "2")
    source = (project / "trainer" / "loop.py").read_text()
    expected = {}
    for mutant in mutants_for_source(source, "trainer/loop.py"):
        if mutant.operator not in {o["operator"] for o in report["outcomes"]}:
            continue
        copy = tmp_path / f"by-hand-{mutant.id}"
        shutil.copytree(project, copy)
        (copy / "trainer" / "loop.py").write_text(mutant.apply(source))
        try:
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "tests", "-p", "no:cacheprovider"],
                cwd=copy,
                capture_output=True,
                timeout=8,
            )
            expected[(mutant.file, mutant.line, mutant.operator)] = "killed" if run.returncode else "survived"
        except subprocess.TimeoutExpired:
            expected[(mutant.file, mutant.line, mutant.operator)] = "timeout"
    assert statuses(report) == expected
    assert set(expected.values()) == {"killed", "survived", "timeout"}


def test_a_file_saved_with_a_byte_order_mark_gets_the_same_verdicts(project, tmp_path):
    """Windows editors may write a byte-order mark: the campaign reads the file as Python does
    (the mark is no code), its mutants land on the same code and get the same verdicts as
    without it, and the file keeps its mark."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "marked").mkdir()
    plain = statuses(campaign(project, tmp_path / "plain", *QUICK, "--no-cache"))
    loop = project / "trainer" / "loop.py"
    loop.write_bytes(b"\xef\xbb\xbf" + loop.read_bytes())
    before = digest(project)
    marked = statuses(campaign(project, tmp_path / "marked", *QUICK, "--no-cache"))
    assert marked == plain
    assert "killed" in marked.values()
    assert digest(project) == before


@pytest.mark.parametrize("own_config", [False, True], ids=["no-pytest-config", "own-pytest-config"])
def test_a_temporary_folder_inside_another_checkout_changes_no_verdict(project, tmp_path, monkeypatch, own_config):
    # CI runners and developers set TMPDIR inside a checkout; pytest looks upwards for its
    # configuration and conftest.py, so a copy made there must still read only the project's.
    if own_config:
        with (project / "pyproject.toml").open("a") as f:
            f.write('\n[tool.pytest.ini_options]\naddopts = "-p no:randomly"\n')
    host = tmp_path / "host"
    (host / "tmp").mkdir(parents=True)
    (host / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--an-option-pytest-does-not-know"\n')
    (host / "conftest.py").write_text('raise RuntimeError("the host checkout\'s conftest was loaded")\n')
    (tmp_path / "clean").mkdir()
    (tmp_path / "hosted").mkdir()
    clean = statuses(campaign(project, tmp_path / "clean", *QUICK, "--no-cache"))
    monkeypatch.setenv("TMPDIR", str(host / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    hosted = statuses(campaign(project, tmp_path / "hosted", *QUICK, "--no-cache"))
    assert hosted == clean
    assert "killed" in clean.values()


def test_a_kill_names_the_test_and_its_first_failure_line(project, tmp_path):
    report = campaign(project, tmp_path, "--operators", "missing-backward")
    [outcome] = report["outcomes"]
    assert outcome["status"] == "killed"
    assert outcome["test"] == "tests/test_loop.py::test_loss_goes_down"
    assert outcome["message"].startswith("assert")


def test_mutants_no_guard_reaches_are_no_coverage(project, tmp_path):
    (project / "trainer" / "unused.py").write_text(
        "def fit(optimizer, loss):\n    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n"
    )
    report = campaign(project, tmp_path, "--operators", "missing-zero-grad", "--mte", str(tmp_path / "mte.json"))
    by_file = {o["file"]: o["status"] for o in report["outcomes"]}
    assert by_file["trainer/unused.py"] == "no_coverage"
    assert report["score"] is not None and report["counts"]["no_coverage"] == 1
    # the baseline's reach, as the mutation-testing-elements viewer shows it
    mte = json.loads((tmp_path / "mte.json").read_text())
    tests = {t["id"] for file in mte["testFiles"].values() for t in file["tests"]}
    assert tests == {
        "tests/test_loop.py::test_loss_goes_down",
        "tests/test_loop.py::test_drain_finishes",
        "tests/test_loop.py::test_evaluate_switches_to_eval_mode",
    }
    covered = {m["location"]["start"]["line"]: m["coveredBy"] for m in mte["files"]["trainer/loop.py"]["mutants"]}
    assert covered == {57: ["tests/test_loop.py::test_loss_goes_down"]}  # train() alone runs it
    assert [m["coveredBy"] for m in mte["files"]["trainer/unused.py"]["mutants"]] == [[]]


def test_a_hanging_mutant_times_out_and_leaves_no_process(project, tmp_path):
    (project / "tests" / "test_spawn.py").write_text(
        "import subprocess, sys\n"
        "from trainer.loop import SGD, Param, drain\n"
        "def test_helper_process_and_drain():\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{MARKER}'])\n"
        "    optimizer = SGD([Param(1.0)], lr=0.1)\n"
        "    optimizer.pending = 2\n"
        "    drain(optimizer)\n"
    )
    report = campaign(project, tmp_path, "--operators", "missing-optimizer-step", "--timeout-factor", "1")
    drain_outcome = next(o for o in report["outcomes"] if o["line"] == 68)
    assert drain_outcome["status"] == "timeout"
    assert drain_outcome["duration"] < 30
    assert leftovers() == []


def test_the_project_is_byte_identical_after_a_campaign(project, tmp_path):
    before = digest(project)
    campaign(project, tmp_path, "--jobs", "2", *QUICK)
    assert digest(project) == before
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == [".trainwreck-cache"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_or_killed_campaign_leaves_the_project_untouched(project, tmp_path, sig):
    (project / "tests" / "test_slow.py").write_text(
        "import subprocess, sys, time\n"
        "def test_slow():\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{MARKER}'])\n"
        "    time.sleep(0.5)\n"
    )
    before = digest(project)
    process = start_campaign(project, tmp_path)
    time.sleep(1.0)  # mid-way through the mutants
    process.send_signal(sig)
    code = process.wait(timeout=30)
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    deadline = time.monotonic() + 10
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers() == []
    assert digest(project) == before


def test_shards_merge_into_the_single_run_report(project, tmp_path):
    whole = statuses(campaign(project, tmp_path, *QUICK))
    shards = []
    for index in (1, 2, 3):
        path = tmp_path / f"shard{index}.json"
        assert main(["run", str(project), "--shard", f"{index}/3", "--json", str(path), *QUICK]) == 0
        shards.append(path)
    assert sum(len(json.loads(p.read_text())["outcomes"]) for p in shards) == len(whole)
    merged = tmp_path / "merged.json"
    assert main(["merge", *map(str, shards), "--json", str(merged)]) == 0
    assert statuses(json.loads(merged.read_text())) == whole


def test_since_mutates_only_changed_lines(project, tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    loop = project / "trainer" / "loop.py"
    loop.write_text(loop.read_text().replace("    model.eval()\n", "    model.eval()  # evaluate\n"))
    report = campaign(project, tmp_path, "--since", "HEAD")
    assert [(o["operator"], o["line"]) for o in report["outcomes"]] == [("missing-eval-mode", 72)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: (p / "tests" / "test_loop.py").write_text(
                "from trainer.loop import evaluate, Model\ndef test_fails():\n    assert evaluate(Model()) == 0\n"
            ),
            "the unmutated guard fails: tests/test_loop.py::test_fails (assert ",
        ),
        (
            lambda p: (p / "tests" / "test_loop.py").write_text("import trainer.nonexistent\n"),
            "the guard's tests do not import",
        ),
        (lambda p: (p / "tests" / "test_loop.py").write_text("x = 1\n"), "the guard collected no tests"),
    ],
)
def test_a_guard_that_cannot_serve_as_baseline_is_one_line_and_exit_2(project, tmp_path, capsys, change, message):
    change(project)
    code = main(["run", str(project), "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err


def test_a_failing_guard_command_says_how_it_failed(project, tmp_path, capsys):
    (project / "check.py").write_text("import sys\nprint('epoch 1')\nsys.exit('RuntimeError: no dataset at data/')\n")
    code = main(["run", str(project), "--guard", "python check.py", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "the unmutated guard fails" in err and "no dataset at data/" in err


def test_a_program_calling_main_keeps_its_own_sigterm_handler(project, tmp_path):
    import signal

    mine = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        main(["run", str(project), "--operators", "missing-eval-mode", "--json", str(tmp_path / "r.json")])
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, mine)


def test_a_guard_command_that_does_not_exist_is_one_line_and_exit_2(project, tmp_path, capsys):
    code = main(["run", str(project), "--guard", "no-such-guard-command --fast"])
    assert code == 2
    assert capsys.readouterr().err == "injector: error: the guard command 'no-such-guard-command' was not found\n"


def test_a_command_guard_runs_afresh_per_mutant(project, tmp_path):
    (project / "smoke.py").write_text(
        "from trainer.loop import Model, train\n"
        "history = train(Model(), steps=5)\n"
        "assert history[-1] < history[0], history\n"
    )
    report = campaign(
        project, tmp_path, "--guard", f"{sys.executable} smoke.py", "--operators", "missing-backward,missing-eval-mode"
    )
    found = {o["operator"]: o for o in report["outcomes"]}
    assert found["missing-backward"]["status"] == "killed"
    assert "AssertionError" in found["missing-backward"]["message"]
    assert found["missing-eval-mode"]["status"] == "no_coverage"  # the smoke run never evaluates


def test_flaky_guard_tests_are_found_by_repeating_the_baseline(project, tmp_path):
    (project / "tests" / "test_flaky.py").write_text(
        "import os, pathlib\n"
        "def test_sometimes():\n"
        "    marker = pathlib.Path(os.environ['FLAKY_MARKER'])\n"
        "    first = not marker.exists()\n"
        "    marker.touch()\n"
        "    assert first\n"
    )
    os.environ["FLAKY_MARKER"] = str(tmp_path / "flaky-marker")
    try:
        report = campaign(project, tmp_path, "--repeat", "2", "--operators", "missing-backward")
    finally:
        del os.environ["FLAKY_MARKER"]
    assert report["baseline"]["flaky"] == ["tests/test_flaky.py::test_sometimes"]
    assert report["outcomes"][0]["test"] != "tests/test_flaky.py::test_sometimes"


def test_the_demo_campaign_kills_and_keeps_survivors(tmp_path):
    report = tmp_path / "demo.json"
    assert (
        main(
            [
                "run",
                "--demo",
                "--jobs",
                "2",
                "--no-cache",
                "--json",
                str(report),
                "--operators",
                "missing-zero-grad,wrong-softmax-dim,missing-eval-mode,missing-train-mode",
            ]
        )
        == 0
    )
    data = json.loads(report.read_text())
    found = {o["status"] for o in data["outcomes"]}
    assert "killed" in found and "survived" in found


def test_a_hanging_baseline_is_one_line_and_exit_2(project, tmp_path, capsys):
    (project / "tests" / "test_hang.py").write_text("import time\ndef test_hang():\n    time.sleep(60)\n")
    code = main(["run", str(project), "--baseline-timeout", "3", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and "did not finish within 3 s" in err and "Traceback" not in err


def test_a_mutant_that_crashes_the_test_process_is_an_error_not_a_kill(project, tmp_path):
    guards = project / "tests" / "test_loop.py"
    guards.write_text(guards.read_text().replace("def test_evaluate_switches", "def _not_a_test"))
    (project / "tests" / "test_crash.py").write_text(
        "import os\n"
        "from trainer.loop import Model, evaluate\n"
        "def test_eval_or_crash():\n"
        "    model = Model()\n"
        "    evaluate(model)\n"
        "    if model.training:\n"
        "        os.abort()\n"
    )
    report = campaign(project, tmp_path, "--operators", "missing-eval-mode")
    [outcome] = report["outcomes"]
    assert outcome["status"] == "error"
    assert "SIGABRT" in outcome["message"]
    assert report["counts"]["killed"] == 0


def test_a_mutant_in_import_time_code_runs_afresh_and_an_import_failure_is_an_error(project, tmp_path):
    (project / "trainer" / "defaults.py").write_text(
        "from trainer.loop import SGD, Param\n"
        "DEFAULT = SGD([Param(0.0)], lr=0.01)\n"
        "assert DEFAULT.lr < 1, 'the default learning rate must be small'\n"
    )
    (project / "tests" / "test_defaults.py").write_text(
        "from trainer.defaults import DEFAULT\ndef test_default():\n    assert DEFAULT.params\n"
    )
    report = campaign(project, tmp_path, "--operators", "lr-too-high")
    by_file = {o["file"]: o for o in report["outcomes"]}
    assert by_file["trainer/defaults.py"]["status"] == "error"
    assert (
        "the default learning rate must be small" in by_file["trainer/defaults.py"]["message"]
        or "error" in by_file["trainer/defaults.py"]["message"].lower()
    )
    assert by_file["trainer/loop.py"]["status"] == "killed"


def test_a_change_that_touches_no_training_code_runs_nothing(project, tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"], cwd=project, check=True
    )
    (project / "tests" / "test_hang.py").write_text("import time\ndef test_hang():\n    time.sleep(60)\n")
    started = time.monotonic()
    report = campaign(project, tmp_path, "--since", "HEAD", "--baseline-timeout", "30")
    assert report["outcomes"] == [] and report["baseline"]["tests"] == 0
    assert time.monotonic() - started < 15  # the hanging guard test never ran


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.cfg", "tests"])
def test_a_bare_run_inside_a_project_runs_that_project_not_the_demo(project, tmp_path, monkeypatch, marker):
    if marker != "pyproject.toml":  # the same project, known only by its setup.cfg or its tests/
        (project / "pyproject.toml").unlink()
        if marker == "setup.cfg":
            (project / "setup.cfg").write_text("[metadata]\nname = trainer\n")
    monkeypatch.chdir(project)
    report = tmp_path / "report.json"
    assert main(["run", "--json", str(report), *QUICK]) == 0
    files = {o["file"] for o in json.loads(report.read_text())["outcomes"]}
    assert files == {"trainer/loop.py"}


def test_a_bare_run_in_a_folder_that_is_no_project_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "notes.txt").write_text("not a project\n")
    monkeypatch.chdir(tmp_path)
    before = digest(tmp_path)
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("injector: error: no project here") and len(err.strip().splitlines()) == 1
    assert "--demo" in err and "injector run PATH" in err
    assert digest(tmp_path) == before


def test_demo_and_a_project_together_are_one_line_and_exit_2(project, capsys):
    assert main(["run", str(project), "--demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("injector: error: give PROJECT or --demo") and len(err.strip().splitlines()) == 1
