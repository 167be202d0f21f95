"""`injector run --calibrate`: each caught mutant's guard output becomes a labelled log, triage
reads every log, and the reports show per fault id whether triage named the injected fault.

The campaigns are small and real: the dependency-free campaign project (a pytest guard run
warm, in-process) and a tiny torch script run as a smoke-training command guard.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from injector import calibrate
from injector.cli import main
from injector.worker.output import LOG_HEAD, LOG_TAIL, bounded_log
from triage.cli import main as triage_main

ROOT = Path(__file__).resolve().parents[2]
# missing-zero-grad survives on the campaign project; the other three are killed
OPERATORS = "missing-backward,lr-too-high,missing-eval-mode,missing-zero-grad"


def run(project: Path, out: Path, *args: str) -> int:
    return main(["run", str(project), "--no-cache", "--json", str(out / "report.json"), "--calibrate", *args])


def test_a_pytest_guard_campaign_writes_the_corpus_the_manifest_and_the_table(project, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        run(project, out, "--operators", OPERATORS, "--markdown", str(out / "r.md"), "--html", str(out / "r.html")) == 0
    )
    report = json.loads((out / "report.json").read_text())
    caught = {o["mutant_id"]: o for o in report["outcomes"] if o["status"] in ("killed", "timeout")}
    assert len(caught) == 3

    manifest = json.loads((out / "calibration" / "manifest.json").read_text())
    assert manifest["schema"] == calibrate.SCHEMA
    assert manifest["guard"] == "python -m pytest -q tests"
    entries = {e["mutant_id"]: e for e in manifest["entries"]}
    assert set(entries) == set(caught)  # the survivor left no failing run
    for mutant_id, entry in entries.items():
        outcome = caught[mutant_id]
        assert entry["cause"] == entry["fault"] == outcome["operator"]
        assert (entry["diff"], entry["file"], entry["line"]) == (outcome["diff"], outcome["file"], outcome["line"])
        assert entry["test"] == outcome["test"]
        log = (out / "calibration" / entry["log"]).read_text()
        # the whole failing run as pytest shows it: the test, its traceback, the summary line
        assert f"FAILED {outcome['test']} - " in log
        assert "\nE   " in log
        assert entry["triaged"] and entry["verdict"] in calibrate.VERDICTS
    # a survivor's verdict is the same as without --calibrate
    assert {o["operator"]: o["status"] for o in report["outcomes"]}["missing-zero-grad"] == "survived"

    table = report["calibration"]["table"]
    assert [row["fault"] for row in table] == ["lr-too-high", "missing-backward", "missing-eval-mode"]
    for row in table:
        assert row["caught"] == 1 == sum(row[v] for v in calibrate.VERDICTS)
    assert report["calibration"]["total"]["caught"] == 3

    markdown = (out / "r.md").read_text()
    assert "### Triage calibration" in markdown
    assert "| `missing-eval-mode` | 1 |" in markdown
    assert "Triage calibration" in (out / "r.html").read_text()
    err = capsys.readouterr().err
    assert "triage calibration" in err and "Triage read the guard output of 3 caught mutants" in err

    # triage reads the corpus again on its own, and the accuracy bench reads it too
    assert triage_main(["calibrate", str(out / "calibration")]) == 0
    assert "missing-eval-mode" in capsys.readouterr().out
    bench = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "triage_accuracy.py"), "--calibration", str(out / "calibration")],
        capture_output=True,
        text=True,
    )
    assert bench.returncode == 0, bench.stderr
    assert "3 runs" in bench.stdout and "missing-eval-mode" in bench.stdout


SMOKE = """\
import torch

torch.manual_seed(0)
x = torch.randn(64, 4)
y = (x.sum(dim=1) > 0).long()
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(20):
    optimizer.zero_grad()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    print(f"step {step} | loss={loss.item():.4f}", flush=True)
assert loss.item() < 0.5, "the loss did not go down"
"""


def test_a_smoke_training_command_guard_logs_what_the_run_printed(tmp_path):
    project = tmp_path / "smoke"
    project.mkdir()
    (project / "train.py").write_text(SMOKE)
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [tool.trainwreck]
        paths = ["train.py"]
        guard = "python train.py"
        """)
    )
    out = tmp_path / "out"
    assert run(project, out, "--operators", "detached-graph,missing-optimizer-step") == 0
    manifest = json.loads((out / "calibration" / "manifest.json").read_text())
    by_fault = {e["fault"]: e for e in manifest["entries"]}
    assert set(by_fault) == {"detached-graph", "missing-optimizer-step"}
    detached = (out / "calibration" / by_fault["detached-graph"]["log"]).read_text()
    assert "does not require grad" in detached and "Traceback" in detached
    flat = (out / "calibration" / by_fault["missing-optimizer-step"]["log"]).read_text()
    assert flat.count("loss=") == 20 and "the loss did not go down" in flat
    # a real exception and a metric series are training symptoms; triage read both
    assert by_fault["detached-graph"]["shows_symptom"] and by_fault["missing-optimizer-step"]["shows_symptom"]
    assert "no-grad-fn" in by_fault["detached-graph"]["symptoms"]
    # the same error as no-grad-training, and the same flat loss as a missing backward: the
    # training probe's line, last in each log, says what ran (every forward with gradients on, a
    # backward that raised; backward passes, an optimizer never stepped), and triage names each
    assert detached.splitlines()[-1].startswith("[trainwreck probe] ")
    assert "probe-graph-cut" in by_fault["detached-graph"]["symptoms"]
    assert "probe-optimizer-never-stepped" in by_fault["missing-optimizer-step"]["symptoms"]
    assert by_fault["detached-graph"]["verdict"] == by_fault["missing-optimizer-step"]["verdict"] == calibrate.FIRST


STEP = """\
import torch


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    return loss.item()
"""

STEP_TEST = """\
import torch

from step import train_step


def test_a_step_runs():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_step(model, optimizer, torch.randn(8, 4), torch.randint(0, 2, (8,)))
"""


def test_a_pytest_guard_s_traceback_quotes_the_step_that_broke_the_graph(tmp_path):
    # the autograd error surfaces in the step function, a middle frame of the test's traceback:
    # the calibration log quotes that frame whole (pytest's long form), `no_grad` or `.detach()`
    # included, so triage tells the two faults apart instead of calling them a tie
    project = tmp_path / "stepper"
    (project / "tests").mkdir(parents=True)
    (project / "step.py").write_text(STEP)
    (project / "tests" / "test_step.py").write_text(STEP_TEST)
    (project / "pyproject.toml").write_text(
        '[tool.trainwreck]\npaths = ["step.py"]\nguard = "python -m pytest -q tests"\n'
    )
    out = tmp_path / "out"
    assert run(project, out, "--operators", "no-grad-training,detached-graph") == 0
    manifest = json.loads((out / "calibration" / "manifest.json").read_text())
    by_fault = {e["fault"]: e for e in manifest["entries"]}
    assert set(by_fault) == {"no-grad-training", "detached-graph"}
    no_grad = (out / "calibration" / by_fault["no-grad-training"]["log"]).read_text()
    assert "    def train_step(model, optimizer, x, y):" in no_grad and "with torch.no_grad():" in no_grad
    # the failing test's report ends with the training probe's section: its forward ran with
    # gradients off in training mode, the other's with them on; both backward passes raised
    assert "- trainwreck probe call -" in no_grad
    assert "probe-no-grad-forward" in by_fault["no-grad-training"]["symptoms"]
    assert "probe-graph-cut" in by_fault["detached-graph"]["symptoms"]
    for fault, entry in by_fault.items():
        assert entry["verdict"] == calibrate.FIRST, (fault, entry["verdict"], entry.get("tied"))


def test_nothing_caught_gives_an_empty_table_that_says_why(project, tmp_path, capsys):
    out = tmp_path / "out"
    assert run(project, out, "--operators", "missing-zero-grad", "--markdown", str(out / "r.md")) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["calibration"]["table"] == []
    assert "no mutant was killed or timed out" in report["calibration"]["note"]
    assert "no mutant was killed or timed out" in capsys.readouterr().err
    assert "no mutant was killed or timed out" in (out / "r.md").read_text()
    assert json.loads((out / "calibration" / "manifest.json").read_text())["entries"] == []


def test_an_unwritable_corpus_folder_is_one_line_before_any_guard_runs(project, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["run", str(project), "--calibrate", "--json", str(blocker / "report.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("injector: error: ") and "cannot write the calibration corpus" in err
    assert len(err.strip().splitlines()) == 1


def test_triage_calibrate_on_a_folder_without_a_corpus_is_one_line(tmp_path, capsys):
    assert triage_main(["calibrate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no calibration corpus here" in err and len(err.strip().splitlines()) == 1


def test_shard_reports_merge_their_calibrations(project, tmp_path):
    shards = []
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        assert run(project, out, "--operators", OPERATORS, "--shard", f"{index}/2") == 0
        shards.append(out / "report.json")
    merged = tmp_path / "merged.json"
    assert main(["merge", *map(str, shards), "--json", str(merged)]) == 0
    total = json.loads(merged.read_text())["calibration"]["total"]
    assert total["caught"] == 3


def test_a_long_guard_output_keeps_its_start_and_its_end():
    output = "".join(f"step {i} loss={i}\n" for i in range(60_000))
    kept = bounded_log(output)
    assert len(kept) <= LOG_HEAD + LOG_TAIL + 100
    assert kept.startswith("step 0 loss=0\n") and kept.endswith("step 59999 loss=59999\n")
    assert "characters of guard output left out here" in kept
    assert bounded_log("short\n") == "short\n"


@pytest.mark.parametrize(
    ("log", "shows"),
    [
        ("E       assert 1.2 < 1.1\nAssertionError", False),
        ("E   RuntimeError: element 0 of tensors does not require grad", True),
        ("Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory", True),
    ],
)
def test_an_exception_other_than_the_guards_assertion_is_a_symptom(log, shows):
    assert calibrate.raises(log) is shows


def test_a_second_campaign_replaces_the_logs_of_the_first_and_nothing_else(project, tmp_path):
    out = tmp_path / "out"
    assert run(project, out, "--operators", "missing-backward") == 0
    logs = out / "calibration" / "logs"
    assert len(list(logs.glob("*.log"))) == 1
    (logs / "notes.txt").write_text("mine")
    assert run(project, out, "--operators", "missing-zero-grad") == 0
    assert [p.name for p in logs.iterdir()] == ["notes.txt"]
