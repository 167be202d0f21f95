"""The mutation-testing-elements report (`injector run --mte`) as the format's own tools meet it:
valid under the official schema, every mutant openable in the viewer with exactly its change in
place, and the Tests tab able to say which tests cover and kill which mutants."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from mte_viewer import ViewerError, mutated_file, open_mutant, validate
from report_samples import MUTANTS, SMOKE, SOURCES, TESTS, diff, make_report, mutated, outcome

from injector import report as rendering
from injector.generate import mutants_for_source
from injector.outcomes import Outcome
from injector.report.diffs import change
from injector.report.mte import _Positions

HERE = Path(__file__).parent
DEMO = HERE.parents[1] / "injector" / "demo" / "demo_train"
FIXTURES = HERE / "fixtures"
CORPUS = HERE / "corpus"  # training scripts from other projects (their sources in corpus/README.md)
PROGRAMS = sorted([*DEMO.glob("*.py"), *FIXTURES.glob("*.py"), *CORPUS.glob("*.py")])


@pytest.fixture(scope="module")
def report():
    return make_report()


@pytest.fixture(scope="module")
def doc(report) -> dict:
    return rendering.to_mutation_testing_elements(report)


def by_id(doc: dict) -> dict[str, dict]:
    return {m["id"]: m for file in doc["files"].values() for m in file["mutants"]}


def survivors_of(path: Path) -> tuple[str, list, dict]:
    """Every mutant the injector makes of a file, each as a survivor, and its MTE report."""
    text = path.read_text(encoding="utf-8")
    generated = mutants_for_source(text, path.name)
    outcomes = tuple(Outcome(m.id, m.operator, m.file, m.line, m.description, m.diff, "survived") for m in generated)
    return text, generated, rendering.to_mutation_testing_elements(make_report(outcomes, sources={path.name: text}))


# ---------------------------------------------------------------- the schema


def test_the_report_is_valid_under_the_official_schema(doc):
    validate(doc)
    assert doc["schemaVersion"] == "2"
    assert doc["thresholds"] == {"high": 80, "low": 60}
    assert doc["framework"]["name"] == "trainwreck"
    assert {path: file["source"] for path, file in doc["files"].items()} == SOURCES
    assert all(file["language"] == "python" for file in doc["files"].values())


def test_the_schema_check_rejects_what_the_viewer_would(doc):
    broken = json.loads(json.dumps(doc))
    next(iter(broken["files"].values()))["mutants"][0]["status"] = "Exploded"
    with pytest.raises(Exception, match="Exploded"):
        validate(broken)


def test_statuses_reasons_and_times(doc, report):
    mutants = by_id(doc)
    expected = {
        "killed": "Killed",
        "survived": "Survived",
        "timeout": "Timeout",
        "no_coverage": "NoCoverage",
        "error": "RuntimeError",
    }
    for spec in MUTANTS:
        mutant = mutants[spec[0]]
        assert mutant["status"] == expected[spec[6]]
        assert mutant["mutatorName"] == spec[1] and mutant["description"] == spec[5]
    assert mutants["m3nograd0013"]["statusReason"].startswith("ImportError: cannot import name")
    assert mutants["i9rankskip09"]["statusReason"] == "timed out in tests/test_train.py::test_ddp_two_ranks"
    assert mutants["d4inplace004"]["duration"] == 1250 and mutants["d4inplace004"]["testsCompleted"] == 3
    timed = replace(outcome(MUTANTS[3]), guard_seconds=0.75)  # the guard's own time, when known
    (net,) = rendering.to_mutation_testing_elements(make_report([timed]))["files"]["demo/train.py"]["mutants"]
    assert net["duration"] == 750


# ---------------------------------------------------------------- the Tests tab


def viewer_tests_tab(doc: dict) -> dict[str, tuple[int, int]]:
    """What the viewer's Tests tab counts per test (metrics calculateMetrics.ts `relate`): the
    mutants it covers and kills, matched by test id; ids no test file defines count nowhere."""
    tests = {t["id"] for file in doc.get("testFiles", {}).values() for t in file["tests"]}
    covering: Counter[str] = Counter()
    killing: Counter[str] = Counter()
    for mutant in by_id(doc).values():
        covering.update(t for t in mutant.get("coveredBy", ()) if t in tests)
        killing.update(t for t in mutant.get("killedBy", ()) if t in tests)
    return {test: (covering[test], killing[test]) for test in tests}


def test_every_guard_test_is_listed_with_the_mutants_it_covers_and_kills(doc, report):
    tab = viewer_tests_tab(doc)
    assert set(tab) == set(report.baseline.names)  # flaky ones too: the reader looks them up
    covered = [o for o in report.outcomes if o.status != "no_coverage"]
    assert tab[SMOKE] == (len(covered), 0)
    assert tab["tests/test_train.py::test_loss_decreases"] == (2, 1)  # a kill and a timeout
    assert tab["tests/test_data.py::test_order_is_shuffled"] == (1, 1)
    assert tab["tests/test_data.py::test_len"] == (0, 0)
    assert {"id": "tests/test_data.py::test_order_is_shuffled", "name": "test_order_is_shuffled"} in doc["testFiles"][
        "tests/test_data.py"
    ]["tests"]


def test_each_mutant_names_the_tests_that_reach_it_and_the_one_that_killed_it(doc, report):
    mutants = by_id(doc)
    for item in report.outcomes:
        mutant = mutants[item.mutant_id]
        assert mutant["coveredBy"] == list(item.covered_by)
        assert mutant.get("killedBy") == ([item.test] if item.status == "killed" else None)
    assert mutants["k1trainmode1"]["coveredBy"] == []  # no coverage, said as such


def test_a_report_from_before_reach_was_recorded_still_credits_the_killing_test():
    old = [replace(outcome(spec), covered_by=()) for spec in MUTANTS]
    mutants = by_id(rendering.to_mutation_testing_elements(make_report(old)))
    assert mutants["d4inplace004"]["coveredBy"] == ["tests/test_train.py::test_backward_runs"]
    assert "coveredBy" not in mutants["a1lrhigh0001"]  # unknown, so not claimed as none
    assert set(TESTS) <= set(viewer_tests_tab(rendering.to_mutation_testing_elements(make_report(old))))


# ---------------------------------------------------------------- locations and replacements


def test_each_replacement_at_its_location_is_exactly_the_mutant(doc):
    mutants = by_id(doc)
    for mutant_id, _, path, line, new, *_ in MUTANTS:
        assert mutated_file(SOURCES[path], mutants[mutant_id]) == mutated(path, line, new), mutant_id
    # and they point at the change itself, not at the diff's context
    assert mutants["a1lrhigh0001"]["location"] == {
        "start": {"line": 11, "column": 59},
        "end": {"line": 11, "column": 59},
    }
    assert mutants["a1lrhigh0001"]["replacement"] == " * 100"
    assert mutants["b2zerograd02"]["location"] == {"start": {"line": 15, "column": 1}, "end": {"line": 16, "column": 1}}
    assert mutants["d4inplace004"]["replacement"] == "F.relu_"
    assert mutants["l2softmax012"]["replacement"] == "0"
    assert mutants["l2softmax012"]["location"]["start"] == {"line": 27, "column": 40}


def test_every_mutant_opens_in_the_viewer_with_its_change_highlighted(doc):
    for mutant in by_id(doc).values():
        path = next(p for p, f in doc["files"].items() if mutant in f["mutants"])
        opened = open_mutant(SOURCES[path], mutant)
        assert opened.focus.strip() or mutant["replacement"] == "", mutant["id"]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_mutant_of_real_training_code_opens_in_the_viewer(program):
    """Each mutant the injector makes of the demo, the fixtures and the corpus of other projects'
    training scripts: valid, openable, and exactly the mutant wherever the viewer can show it."""
    text, generated, report = survivors_of(program)
    validate(report)
    shown = {m["id"]: m for m in report["files"][program.name]["mutants"]}
    for mutant in generated:
        entry = shown[mutant.id]
        open_mutant(text, entry)  # raises ViewerError where the viewer would throw
        if "replacement" in entry:
            assert mutated_file(text, entry) == mutant.apply(text), (mutant.operator, mutant.line)
            assert abs(entry["location"]["start"]["line"] - mutant.line) <= 3
        else:
            # only where no location could carry it: the exact change makes the viewer throw
            start, end, replacement = change(text, mutant.diff)
            positions = _Positions(text)
            exact = {
                **entry,
                "replacement": replacement,
                "location": {"start": positions(start), "end": positions(end)},
            }
            with pytest.raises(ViewerError):
                open_mutant(text, exact)
            assert entry["location"]["start"]["line"] == mutant.line


def test_the_demo_mutant_that_moves_scheduler_step_opens_with_its_description():
    """The demo's train.py:137 mutant moves `scheduler.step()` out of its `if`, leaving a blank
    line first: the viewer cannot highlight a change that starts with a line break, so the report
    marks the changed lines and the viewer shows the description in their place."""
    text, generated, report = survivors_of(DEMO / "train.py")
    (moved,) = [m for m in generated if m.operator == "scheduler-step-misaligned"]
    entry = next(m for m in report["files"]["train.py"]["mutants"] if m["id"] == moved.id)
    assert "replacement" not in entry
    assert entry["location"]["start"] == {"line": 137, "column": 13}  # `scheduler.step()`
    opened = open_mutant(text, entry)
    assert opened.new_rows[0].strip() == moved.description
    assert opened.old_rows[0] == 137


def test_a_deleted_top_level_line_opens_with_the_line_before_as_context():
    source = "import torch\n\n# cached\n@torch.no_grad()\ndef estimate(model):\n    return model(1)\n"
    mutant = next(m for m in mutants_for_source(source, "eval.py") if m.line == 4)
    report = rendering.to_mutation_testing_elements(
        make_report(
            [Outcome(mutant.id, mutant.operator, "eval.py", 4, mutant.description, mutant.diff, "survived")],
            sources={"eval.py": source},
        )
    )
    (entry,) = report["files"]["eval.py"]["mutants"]
    assert mutated_file(source, entry) == mutant.apply(source)
    opened = open_mutant(source, entry)
    assert "@torch.no_grad()" not in "\n".join(opened.new_rows)
    assert entry["location"]["start"]["line"] == 3  # the comment above: the viewer needs it


def test_columns_count_utf16_units_as_the_viewer_does():
    source = "def f(x):\n    note = '🔥 hot'; return F.relu(x)\n"
    new = "    note = '🔥 hot'; return F.relu_(x)\n"
    item = outcome(
        ("emoji0000001", "inplace-activation", "emoji.py", 2, new, "relu in place", "survived", None, None),
        diff_text=diff("emoji.py", 2, new, source),
    )
    doc = rendering.to_mutation_testing_elements(make_report([item], sources={"emoji.py": source}))
    (mutant,) = doc["files"]["emoji.py"]["mutants"]
    assert mutant["location"]["start"] == {"line": 2, "column": 29}  # 🔥 is two UTF-16 units
    assert mutated_file(source, mutant) == "def f(x):\n" + new
    open_mutant(source, mutant)


def test_without_the_source_the_lines_the_diffs_carry_stand_in(report):
    doc = rendering.to_mutation_testing_elements(make_report(report.outcomes, sources={}))
    validate(doc)
    source = doc["files"]["demo/train.py"]["source"]
    lines = source.splitlines()
    assert lines[14] == "            optimizer.zero_grad()" and lines[0] == ""
    zero_grad = by_id(doc)["b2zerograd02"]
    assert mutated_file(source, zero_grad) == source.replace("            optimizer.zero_grad()\n", "", 1)
    for mutant in doc["files"]["demo/train.py"]["mutants"]:
        open_mutant(source, mutant)


def test_a_mutant_whose_diff_does_not_fit_the_source_is_kept_without_a_guess():
    stale = outcome(MUTANTS[0], diff_text=diff("demo/train.py", 11, "x\n").replace("lr=0.1)", "lr=0.2)"))
    doc = rendering.to_mutation_testing_elements(make_report([stale]))
    validate(doc)
    (mutant,) = doc["files"]["demo/train.py"]["mutants"]
    assert "replacement" not in mutant  # unknown, so left out rather than guessed
    assert mutant["location"] == {"start": {"line": 11, "column": 1}, "end": {"line": 11, "column": 60}}
    open_mutant(SOURCES["demo/train.py"], mutant)
