"""Incremental runs: the outcome cache gives what a fresh campaign would, and runs only what a
change touches.

The differential tests change the project the way a developer does (a line of training code,
a test) and compare every outcome of the cached re-run with a `--no-cache` run of the same tree.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from background import start_campaign

from injector import cache as cache_module
from injector import fingerprint
from injector.cli import main

# Operators whose mutants finish fast in the campaign project (no deliberate hang).
QUICK = "missing-zero-grad,missing-backward,lr-too-high,missing-eval-mode,missing-train-mode,loss-tensor-leak"


def run(project: Path, tmp_path: Path, *args: str, name: str = "report") -> dict:
    report = tmp_path / f"{name}.json"
    assert main(["run", str(project), "--operators", QUICK, "--json", str(report), *args]) == 0
    return json.loads(report.read_text())


def verdicts(report: dict) -> dict[str, tuple]:
    """What a user reads off each mutant: its status, the test that killed it and the tests
    that reach it (the viewers' coverage)."""
    return {o["mutant_id"]: (o["status"], o["test"], tuple(o["covered_by"])) for o in report["outcomes"]}


def rerun(report: dict) -> set[tuple[str, int]]:
    """The mutants that were run rather than taken from the cache: (operator, line)."""
    return {(o["operator"], o["line"]) for o in report["outcomes"] if not o["cached"]}


@pytest.fixture()
def guard_runs(tmp_path, monkeypatch) -> Path:
    """A file every run of the project's guard tests appends to (so a test can tell whether
    any guard ran); the variable is outside the project, as a CI runner's would be."""
    log = tmp_path / "guard-runs.log"
    monkeypatch.setenv("TRAINWRECK_TEST_GUARD_LOG", str(log))
    return log


def count_guard_runs(project: Path) -> None:
    (project / "tests" / "conftest.py").write_text(
        "import os\n"
        "def pytest_runtest_setup(item):\n"
        "    with open(os.environ['TRAINWRECK_TEST_GUARD_LOG'], 'a') as log:\n"
        "        log.write(item.nodeid + '\\n')\n"
    )


def test_a_rerun_on_an_unchanged_tree_runs_no_guard_and_gives_the_same_outcomes(project, tmp_path, guard_runs, capsys):
    count_guard_runs(project)
    first = run(project, tmp_path, name="first")
    ran = guard_runs.read_text()
    capsys.readouterr()
    started = time.monotonic()
    second = run(project, tmp_path, name="second")
    elapsed = time.monotonic() - started
    assert guard_runs.read_text() == ran  # no baseline, no mutant: no worker started
    assert verdicts(second) == verdicts(first)
    assert second["cached"] == len(second["outcomes"]) and first["cached"] == 0
    assert second["baseline"] == first["baseline"]
    assert elapsed < 5
    err = capsys.readouterr().err
    assert "nothing changed since the last run" in err
    assert f"{len(first['outcomes'])} of {len(first['outcomes'])} outcomes from the cache" in err


def test_changing_a_line_of_training_code_reruns_only_the_mutants_its_tests_reach(project, tmp_path):
    run(project, tmp_path, name="first")
    loop = project / "trainer" / "loop.py"
    loop.write_text(
        loop.read_text().replace(
            "    model.eval()\n    return sum(p.value ** 2 for p in model.params)\n",
            "    model.eval()\n    total = sum(p.value ** 2 for p in model.params)\n    return total\n",
        )
    )
    cached = run(project, tmp_path, name="cached")
    fresh = run(project, tmp_path, "--no-cache", name="fresh")
    assert verdicts(cached) == verdicts(fresh)
    assert rerun(cached) == {("missing-eval-mode", 72)}  # the one mutant in evaluate()
    assert fresh["cached"] == 0


def test_changing_a_test_reruns_the_mutants_it_reaches_and_can_turn_a_survivor_into_a_kill(project, tmp_path):
    first = run(project, tmp_path, name="first")
    assert {o["operator"]: o["status"] for o in first["outcomes"]}["missing-train-mode"] == "survived"
    tests = project / "tests" / "test_loop.py"
    tests.write_text(
        tests.read_text().replace(
            "def test_loss_goes_down():\n    history = train(Model(), steps=5)\n",
            "def test_loss_goes_down():\n    model = Model()\n    model.eval()\n"
            "    history = train(model, steps=5)\n    assert model.training\n",
        )
    )
    cached = run(project, tmp_path, name="cached")
    fresh = run(project, tmp_path, "--no-cache", name="fresh")
    assert verdicts(cached) == verdicts(fresh)
    assert {o["operator"]: o["status"] for o in cached["outcomes"]}["missing-train-mode"] == "killed"
    # Every mutant test_loss_goes_down reaches ran again; the one in evaluate() did not.
    assert rerun(cached) == {(o["operator"], o["line"]) for o in cached["outcomes"]} - {("missing-eval-mode", 72)}


def test_a_new_test_that_reaches_a_mutant_reruns_it(project, tmp_path):
    first = run(project, tmp_path, name="first")
    (project / "tests" / "test_modes.py").write_text(
        "from trainer.loop import Model, train\n"
        "def test_train_switches_back_to_training():\n"
        "    model = Model()\n"
        "    model.eval()\n"
        "    train(model, steps=1)\n"
        "    assert model.training\n"
    )
    cached = run(project, tmp_path, name="cached")
    fresh = run(project, tmp_path, "--no-cache", name="fresh")
    assert verdicts(cached) == verdicts(fresh) != verdicts(first)
    assert ("missing-eval-mode", 72) not in rerun(cached)


def test_a_change_to_a_helper_the_tests_run_reruns_the_mutants_of_those_tests(project, tmp_path):
    run(project, tmp_path, name="first")
    loop = project / "trainer" / "loop.py"
    # Gradients now accumulate into zero: every training mutant's verdict may change.
    loop.write_text(
        loop.read_text().replace("            p.grad += 2 * p.value\n", "            p.grad += 0 * p.value\n")
    )
    (project / "tests" / "test_loop.py").write_text(
        (project / "tests" / "test_loop.py")
        .read_text()
        .replace("    assert history[-1] < history[0]\n", "    assert history[-1] <= history[0]\n")
    )
    cached = run(project, tmp_path, name="cached")
    fresh = run(project, tmp_path, "--no-cache", name="fresh")
    assert verdicts(cached) == verdicts(fresh)
    assert rerun(cached) >= {("missing-zero-grad", 57), ("missing-backward", 59)}


def test_blank_lines_and_comments_rerun_nothing(project, tmp_path):
    first = run(project, tmp_path, name="first")
    loop = project / "trainer" / "loop.py"
    loop.write_text(
        "# a comment above everything\n\n"
        + loop.read_text().replace("def evaluate(model):\n", "def evaluate(model):  # switch to eval\n")
    )
    cached = run(project, tmp_path, name="cached")
    assert rerun(cached) == set()
    assert {o["mutant_id"]: o["status"] for o in cached["outcomes"]} == {
        o["mutant_id"]: o["status"] for o in first["outcomes"]
    }


def test_code_run_at_import_is_part_of_every_key(project, tmp_path):
    (project / "trainer" / "defaults.py").write_text("def make_lr():\n    return 0.1\n\nLR = make_lr()\n")
    loop = project / "trainer" / "loop.py"
    loop.write_text(
        loop.read_text().replace(
            "def train(model, steps, lr=0.1):", "from trainer.defaults import LR\n\n\ndef train(model, steps, lr=LR):"
        )
    )
    run(project, tmp_path, name="first")
    # make_lr runs at import only (never under a test's trace): a change to it reruns everything.
    (project / "trainer" / "defaults.py").write_text("def make_lr():\n    return 0.05\n\nLR = make_lr()\n")
    cached = run(project, tmp_path, name="cached")
    assert all(not o["cached"] for o in cached["outcomes"] if o["status"] != "no_coverage")


@pytest.mark.parametrize(
    "change", [["--timeout-factor", "2"], ["--guard", "python -m pytest -q -x tests"], ["--repeat", "2"]]
)
def test_settings_that_can_change_a_verdict_are_part_of_the_key(project, tmp_path, change):
    run(project, tmp_path, name="first")
    assert run(project, tmp_path, *change, name="changed")["cached"] == 0
    assert run(project, tmp_path, *change, name="again")["cached"] > 0


def test_other_operators_reuse_what_is_known_and_run_the_rest(project, tmp_path):
    main(["run", str(project), "--operators", "missing-backward", "--json", str(tmp_path / "one.json")])
    report = run(project, tmp_path)
    assert rerun(report) == {(o["operator"], o["line"]) for o in report["outcomes"]} - {("missing-backward", 59)}


def test_no_cache_neither_reads_nor_writes_a_cache(project, tmp_path):
    run(project, tmp_path, "--no-cache")
    assert not (project / ".trainwreck-cache").exists()


def test_the_cache_can_live_elsewhere_and_is_never_copied_into_a_slot(project, tmp_path):
    (project / "tests" / "test_slot.py").write_text(
        "from pathlib import Path\n"
        "def test_no_cache_beside_the_tests():\n"
        "    here = Path(__file__).resolve().parent.parent\n"
        "    assert not (here / '.trainwreck-cache').exists() and not (here / 'my-cache').exists()\n"
    )
    run(project, tmp_path, name="first")
    run(project, tmp_path, "--cache", str(project / "my-cache"), name="elsewhere")
    assert (project / "my-cache" / "outcomes.json").is_file()
    second = run(project, tmp_path, "--cache", str(project / "my-cache"), name="second")
    assert second["cached"] == len(second["outcomes"])  # its own files are not a change either
    assert (project / ".trainwreck-cache" / ".gitignore").read_text().strip().endswith("*")


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\x00\xff\xfe",
        b'{"schema": "trainwreck.cache/1"}',
        b'{"schema": "something-else", "entries": {}}',
        b'{"schema": "trainwreck.cache/1", "generation": 1, "runs": {},'
        b' "entries": {"k": {"result": {"status": "exploded"}}}}',
    ],
)
def test_a_corrupt_cache_is_ignored_with_one_warning_line(project, tmp_path, capsys, content):
    first = run(project, tmp_path, name="first")
    path = project / ".trainwreck-cache" / "outcomes.json"
    path.write_bytes(content)
    capsys.readouterr()
    again = run(project, tmp_path, name="again")
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert "Traceback" not in err
    assert verdicts(again) == verdicts(first)
    if content.startswith(b'{"schema": "trainwreck.cache/1", "generation"'):
        assert warnings == [] and again["cached"] == 0  # readable; the odd record is a miss
    else:
        assert len(warnings) == 1 and warnings[0].startswith("injector: warning: ignoring the cache at")
    json.loads(path.read_text())  # replaced by a good one


def test_an_unwritable_cache_costs_a_warning_not_the_campaign(project, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    report = run(project, tmp_path, "--cache", str(blocker))
    err = capsys.readouterr().err
    assert report["outcomes"] and "Traceback" not in err
    assert "injector: warning: cannot write the cache" in err
    assert blocker.read_text() == "not a folder"


def test_a_failed_save_leaves_the_previous_cache_whole(project, tmp_path, monkeypatch):
    run(project, tmp_path)
    path = project / ".trainwreck-cache" / "outcomes.json"
    before = path.read_bytes()
    store = cache_module.Cache.open(path.parent, warn=lambda line: None)
    store.entries["extra"] = {"result": {"status": "killed", "id": "x"}, "used": 9}
    store._changed = True

    def explode(*args, **kwargs):
        raise KeyboardInterrupt  # as if the run were interrupted in the middle of the write

    monkeypatch.setattr(cache_module.json, "dump", explode)
    with pytest.raises(KeyboardInterrupt):
        store.save()
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".outcomes")] == []


def test_a_killed_campaign_leaves_a_readable_cache_and_keeps_what_it_finished(project, tmp_path):
    (project / "tests" / "conftest.py").write_text(
        "import time\ndef pytest_runtest_setup(item):\n    time.sleep(0.5)\n"
    )  # every mutant takes a while
    process = start_campaign(project, tmp_path, "--operators", QUICK)
    time.sleep(2.5)  # a few mutants in, not all
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    path = project / ".trainwreck-cache" / "outcomes.json"
    data = json.loads(path.read_text())
    assert data["entries"]  # what finished before the kill is kept
    report = run(project, tmp_path, name="after")
    assert 0 < report["cached"] < len(report["outcomes"])


def test_the_reports_say_how_many_outcomes_came_from_the_cache(project, tmp_path):
    run(project, tmp_path)
    markdown = tmp_path / "report.md"
    html = tmp_path / "report.html"
    assert main(["run", str(project), "--operators", QUICK, "--markdown", str(markdown), "--html", str(html)]) == 0
    assert "6 of 6 outcomes from the cache" in markdown.read_text()
    assert "6 of 6 outcomes from the cache" in html.read_text()


# ---- the fingerprint, unit by unit ----

SOURCE = """import torch

SCALE = 2


class Trainer:
    steps = 3

    def step(self, batch):
        return batch * SCALE

    @staticmethod
    def helper():
        return 1


def train(trainer):
    return [trainer.step(b) for b in range(trainer.steps)]
"""


def digests(text: str) -> tuple[str, dict[str, str]]:
    source = fingerprint.source_digest(text)
    return source.skeleton, {u.name: u.digest for u in source.units}


def test_a_function_body_change_changes_only_that_function():
    skeleton, units = digests(SOURCE)
    changed_skeleton, changed = digests(SOURCE.replace("batch * SCALE", "batch * SCALE + 1"))
    assert changed_skeleton == skeleton
    assert {name for name in units if units[name] != changed[name]} == {"step"}


@pytest.mark.parametrize(
    "edit", [("SCALE = 2", "SCALE = 3"), ("    steps = 3", "    steps = 4"), ("import torch", "import torch.nn")]
)
def test_import_time_code_changes_the_skeleton(edit):
    skeleton, units = digests(SOURCE)
    changed_skeleton, changed = digests(SOURCE.replace(*edit))
    assert changed_skeleton != skeleton and changed == units


def test_layout_and_comments_change_nothing():
    assert digests(SOURCE) == digests(
        "# header\n\n"
        + SOURCE.replace("return 1", "return 1  # one").replace("\n\n\ndef train", "\n\n\n\n# the loop\ndef train")
    )


def test_lines_map_to_their_function():
    source = fingerprint.source_digest(SOURCE)
    names = {line: (source.unit_at(line).name if source.unit_at(line) else None) for line in (3, 7, 10, 12, 14, 18)}
    assert names == {3: None, 7: None, 10: "step", 12: "helper", 14: "helper", 18: "train"}


def test_a_test_module_that_only_defines_tests_is_its_own_tests_business(project):
    before = fingerprint.digest_tree(project)
    (project / "tests" / "test_more.py").write_text(
        "import pytest\nfrom trainer.loop import Model\n\nCASES = [1, 2]\n\n"
        "@pytest.mark.parametrize('n', CASES)\ndef test_model(n):\n    assert Model()\n"
    )
    quiet = fingerprint.digest_tree(project)
    assert quiet.whole != before.whole and quiet.shared == before.shared
    # A test module that does something at import (a seed, a patch) may change every test.
    (project / "tests" / "test_more.py").write_text(
        "import random\nrandom.seed(3)\n\ndef test_model():\n    assert True\n"
    )
    assert fingerprint.digest_tree(project).shared != before.shared


def test_non_python_files_and_conftest_are_shared_and_the_cache_is_not(project):
    before = fingerprint.digest_tree(project)
    (project / "data.csv").write_text("x,y\n1,2\n")
    with_data = fingerprint.digest_tree(project)
    assert with_data.shared != before.shared
    (project / "tests" / "conftest.py").write_text("def pytest_collection_modifyitems(items):\n    items.reverse()\n")
    assert fingerprint.digest_tree(project).shared != with_data.shared
    again = fingerprint.digest_tree(project)
    (project / ".trainwreck-cache").mkdir()
    (project / ".trainwreck-cache" / "outcomes.json").write_text("{}")
    (project / "elsewhere").mkdir()
    (project / "elsewhere" / "outcomes.json").write_text("{}")
    assert fingerprint.digest_tree(project, exclude=(project / "elsewhere",)) == again
