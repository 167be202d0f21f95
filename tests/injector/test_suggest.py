"""`injector suggest`: a guard test per survivor, verified, written only where it is new.

One small campaign on `suggest_project` (a torch project whose one test checks little) and one
`suggest` run are shared by the tests of this module; the bad-input tests need neither.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from injector.cli import main
from injector.suggest import STUB_MARK

PROJECT = Path(__file__).parent / "suggest_project"


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def suggested(tmp_path_factory):
    """The project copied, its campaign's report, and one `suggest --write` run on it."""
    base = tmp_path_factory.mktemp("suggest")
    project = base / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    # its own repository top: a .gitignore above the temporary folder must not hide its files
    (project / ".git").mkdir()
    report = base / "report.json"
    assert main(["run", str(project), "--no-cache", "--json", str(report)]) == 0
    before = digest(project)
    out = base / "suggested"
    code = main(
        [
            "suggest",
            str(project),
            "--report",
            str(report),
            "--write",
            str(project / "tests" / "guards"),
            "--json",
            str(out / "report.json"),
            "--markdown",
            str(out / "report.md"),
            "--html",
            str(out / "report.html"),
            # speed is bench/suggest.py's to measure: a loaded CI runner must not drop a guard
            "--max-seconds",
            "30",
        ]
    )
    assert code == 0
    return {"project": project, "report": report, "out": out, "before": before}


def suggestions(suggested) -> dict[str, dict]:
    data = json.loads((suggested["out"] / "report.json").read_text())
    return {o["operator"]: o["suggestion"] for o in data["outcomes"] if o["status"] == "survived"}


def test_every_survivor_with_a_check_gets_a_verified_guard(suggested):
    found = suggestions(suggested)
    assert {fault for fault, s in found.items() if s["verified"]} == {"missing-zero-grad", "no-shuffle", "lr-too-high"}
    assert "kills it" in found["missing-zero-grad"]["note"]
    assert "update-to-weight ratio" in found["lr-too-high"]["note"]
    # only a test method in a class reaches the evaluation: a marked stub, never verified
    assert not found["missing-no-grad-eval"]["verified"]
    assert STUB_MARK in found["missing-no-grad-eval"]["test"]


def test_the_guard_reuses_the_reaching_tests_fixture_and_call(suggested):
    text = suggestions(suggested)["missing-zero-grad"]["test"]
    assert "def test_guard_missing_zero_grad_via_fit_runs(model):" in text  # the conftest fixture
    assert "with watch('missing-zero-grad'):" in text
    assert "fit(model, make_loader())" in text


def test_only_verified_guards_are_written_and_they_pass_on_the_unmutated_code(suggested):
    project = suggested["project"]
    written = sorted(p.name for p in (project / "tests" / "guards").iterdir())
    ids = {s["path"].rsplit("/", 1)[-1] for s in suggestions(suggested).values() if s["verified"]}
    assert written == sorted(ids)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/guards"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-1000:]
    assert "3 passed" in run.stdout


def test_the_users_tree_is_only_added_to(suggested):
    after = digest(suggested["project"])
    new = set(after) - set(suggested["before"])
    assert {k: after[k] for k in suggested["before"]} == suggested["before"]
    assert all(name.startswith("tests/guards/test_trainwreck_guard_") for name in new)


def test_reports_show_the_suggested_test_beside_the_survivor(suggested):
    markdown = (suggested["out"] / "report.md").read_text()
    html = (suggested["out"] / "report.html").read_text()
    assert "Suggested guard" in markdown and "with watch(&#39;missing-zero-grad&#39;)" not in markdown
    assert "with watch('missing-zero-grad')" in markdown
    assert "Suggested guard" in html and "with watch(&#39;missing-zero-grad&#39;)" in html


def test_write_refuses_an_existing_path(suggested, capsys):
    code = main(
        [
            "suggest",
            str(suggested["project"]),
            "--report",
            str(suggested["report"]),
            "--write",
            str(suggested["project"] / "tests"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "exists" in err


def test_all_writes_the_stub_too(suggested, tmp_path, capsys):
    target = tmp_path / "all"
    report = suggested["out"] / "report.json"
    stub = [o for o in json.loads(report.read_text())["outcomes"] if o["operator"] == "missing-no-grad-eval"][0]
    code = main(
        [
            "suggest",
            str(suggested["project"]),
            "--report",
            str(report),
            "--mutant",
            stub["mutant_id"],
            "--all",
            "--write",
            str(target),
        ]
    )
    assert code == 0
    (written,) = target.iterdir()
    assert STUB_MARK in written.read_text() and "def check_guard():" in written.read_text()
    assert "1 stub" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--report", "missing.json"], "no such report file"),
        (["--report", "pyproject.toml"], "not a trainwreck report"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, monkeypatch, args, message):
    monkeypatch.chdir(PROJECT)
    code = main(["suggest", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and message in err


def test_an_unknown_survivor_is_one_line_and_exit_2(suggested, capsys):
    code = main(
        ["suggest", str(suggested["project"]), "--report", str(suggested["report"]), "--mutant", "ffffffffffff"]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no survivor" in err


def test_a_project_that_changed_since_the_report_is_refused(suggested, tmp_path, capsys):
    changed = tmp_path / "changed"
    shutil.copytree(suggested["project"], changed, ignore=shutil.ignore_patterns("__pycache__", "guards"))
    loop = changed / "trainer" / "loop.py"
    loop.write_text(loop.read_text().replace("lr=0.05", "lr=0.01"))
    code = main(["suggest", str(changed), "--report", str(suggested["report"])])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "changed since the report" in err


def test_a_shared_verification_that_fails_as_a_whole_verifies_each_survivor_alone(suggested, tmp_path, monkeypatch):
    """The survivors are verified in one campaign; should it fail as a whole (a draft that
    passed alone fails beside the others), each survivor gets a campaign of its own: one is
    verified as before, and one whose own campaign fails too says why, unverified."""
    from injector import campaign
    from injector.suggest import verify

    shared = verify._campaign
    calls = []

    def failing(copy, folder, kept, outcomes, *rest):
        operators = sorted(outcomes[index].operator for index in kept)
        calls.append(operators)
        if operators != ["lr-too-high"]:
            raise campaign.CampaignError("the unmutated guard fails: test_guard_x (a draft beside another)")
        return shared(copy, folder, kept, outcomes, *rest)

    monkeypatch.setattr(verify, "_campaign", failing)
    wanted = {name: guard for name, guard in suggestions(suggested).items() if name in ("lr-too-high", "no-shuffle")}
    report = json.loads((suggested["out"] / "report.json").read_text())
    ids = [o["mutant_id"] for o in report["outcomes"] if o["operator"] in wanted]
    out = tmp_path / "r.json"
    args = ["suggest", str(suggested["project"]), "--report", str(suggested["report"]), "--json", str(out)]
    assert main([*args, *[f"--mutant={i}" for i in ids]]) == 0
    assert sorted(calls) == [["lr-too-high"], ["lr-too-high", "no-shuffle"], ["no-shuffle"]]
    found = {o["operator"]: o["suggestion"] for o in json.loads(out.read_text())["outcomes"] if o["operator"] in wanted}
    assert found["lr-too-high"]["verified"] and found["lr-too-high"]["test"] == wanted["lr-too-high"]["test"]
    assert not found["no-shuffle"]["verified"]
    assert (
        found["no-shuffle"]["note"] == "not verified: the unmutated guard fails: test_guard_x (a draft beside another)"
    )
