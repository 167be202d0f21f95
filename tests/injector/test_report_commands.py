"""What a user does with a campaign's report from the command line: gate CI on the score
(`--fail-under`), look at one mutant (`injector show`), put it into the tree (`injector apply`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import make_report

from injector import report as rendering
from injector.cli import EXIT_UNDER, main

PROJECT = Path(__file__).parent / "campaign_project"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def saved(tmp_path) -> Path:
    """The sample report (7 of 10 covered mutants caught: 70%) as a JSON file."""
    path = tmp_path / "shard.json"
    path.write_text(rendering.to_json(make_report()), encoding="utf-8")
    return path


# ---------------------------------------------------------------- --fail-under


@pytest.mark.parametrize(
    "threshold, expected", [("80", EXIT_UNDER), ("70.5", EXIT_UNDER), ("70", 0), ("0", 0), ("65%", 0)]
)
def test_fail_under_exits_3_below_the_threshold_after_writing_the_reports(capsys, saved, tmp_path, threshold, expected):
    out = tmp_path / "merged.json"
    code, _, err = run(capsys, "merge", saved, "--json", out, "--fail-under", threshold)
    assert code == expected
    assert rendering.from_file(out).percent == 70  # written either way
    lines = [line for line in err.splitlines() if "fail-under" in line]
    if expected:
        assert lines == [f"injector: mutation score 70% is below --fail-under {threshold.rstrip('%')}%"]
    else:
        assert lines == []


def test_fail_under_comes_from_the_project_configuration(capsys, saved, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.trainwreck]\nfail-under = 75\n")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "merge", saved, "--json", tmp_path / "m.json")[0] == EXIT_UNDER
    assert run(capsys, "merge", saved, "--json", tmp_path / "m.json", "--fail-under", "60")[0] == 0


def test_a_report_without_a_score_passes_the_gate_and_says_why(capsys, tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(rendering.to_json(make_report([])), encoding="utf-8")
    code, _, err = run(capsys, "merge", empty, "--json", tmp_path / "m.json", "--fail-under", "90")
    assert code == 0 and "no score to hold to --fail-under 90%" in err


@pytest.mark.parametrize("command", ["run", "merge"])
def test_help_says_which_exit_code_the_gate_uses(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert f"{EXIT_UNDER} the score is below --fail-under" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("value", ["120", "-1", "lots"])
def test_a_bad_fail_under_is_exit_2(capsys, saved, tmp_path, value):
    with pytest.raises(SystemExit) as exit_:
        main(["merge", str(saved), "--json", str(tmp_path / "m.json"), "--fail-under", value])
    assert exit_.value.code == 2
    assert "--fail-under" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["120", "true", '"high"'])
def test_a_bad_configured_fail_under_is_one_line_and_exit_2(capsys, saved, tmp_path, monkeypatch, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.trainwreck]\nfail-under = {value}\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "merge", saved, "--json", tmp_path / "m.json")
    assert code == 2
    assert err.strip().count("\n") == 0 and "fail-under must be a percentage from 0 to 100" in err


def test_a_campaign_under_its_configured_gate_fails_ci(capsys, project, tmp_path):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "fail-under = 100\n")
    code, _, err = run(
        capsys,
        "run",
        project,
        "--json",
        tmp_path / "r.json",
        "--operators",
        "missing-zero-grad,missing-backward,missing-eval-mode",
    )
    shown = json.loads((tmp_path / "r.json").read_text())["percent"]
    assert shown < 100
    assert code == EXIT_UNDER
    assert f"injector: mutation score {shown}% is below --fail-under 100%" in err


# ---------------------------------------------------------------- show and apply


@pytest.fixture()
def campaigned(capsys, project) -> tuple[Path, dict]:
    """The campaign project after `injector run` in it: (project, its report's JSON)."""
    report = project / "trainwreck-report" / "report.json"
    code, _, err = run(capsys, "run", project, "--json", report, "--operators", "missing-backward,missing-eval-mode")
    assert code == 0, err
    return project, json.loads(report.read_text())


def test_show_prints_a_mutants_outcome_and_diff_from_the_last_report(capsys, campaigned, monkeypatch):
    project, data = campaigned
    monkeypatch.chdir(project)
    killed = next(o for o in data["outcomes"] if o["status"] == "killed")
    code, out, _ = run(capsys, "show", killed["mutant_id"][:6])  # a unique prefix is enough
    assert code == 0
    assert out.splitlines()[0] == (
        f"{killed['mutant_id']} {killed['operator']} {killed['file']}:{killed['line']}  {killed['description']}"
    )
    assert f"outcome: killed by {killed['test']}" in out
    assert f"message: {killed['message']}" in out
    assert out.endswith(killed["diff"])  # byte for byte off a terminal: it can be applied


def test_show_reads_a_named_report_and_refuses_unknown_ids_in_one_line(capsys, saved, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "show", "a1lrhigh0001", "--report", saved)
    assert code == 0 and "outcome: survived" in out and "lr=0.1 * 100" in out
    for wanted, message in [("nope", "no mutant 'nope' in"), ("", "no mutant ''")]:
        code, _, err = run(capsys, "show", wanted, "--report", saved)
        assert code == 2 and message in err and err.count("\n") == 1
    code, _, err = run(capsys, "show", "a1lrhigh0001")  # no ./trainwreck-report here
    assert code == 2 and "run `injector run` first" in err and err.count("\n") == 1


def guard_passes(project: Path) -> bool:
    import subprocess
    import sys

    return (
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "tests", "-p", "no:cacheprovider"],
            cwd=project,
            capture_output=True,
            timeout=60,
        ).returncode
        == 0
    )


def test_apply_writes_the_mutant_so_the_guard_fails_and_revert_undoes_it(capsys, campaigned, monkeypatch):
    project, data = campaigned
    monkeypatch.chdir(project)
    killed = next(o for o in data["outcomes"] if o["status"] == "killed")
    target = project / killed["file"]
    original = target.read_bytes()
    code, _, err = run(capsys, "apply", killed["mutant_id"])
    assert code == 0
    assert f"wrote mutant {killed['mutant_id']}" in err and "warning:" in err
    assert f"injector apply {killed['mutant_id']} --revert" in err  # how to undo it
    assert target.read_text() != original.decode() and not guard_passes(project)
    code, _, err = run(capsys, "apply", killed["mutant_id"])  # twice: refused, file kept
    assert code == 2 and "already has mutant" in err
    code, _, err = run(capsys, "apply", killed["mutant_id"], "--revert")
    assert code == 0 and target.read_bytes() == original and guard_passes(project)


def test_apply_refuses_a_file_changed_since_the_report(capsys, campaigned, monkeypatch):
    project, data = campaigned
    monkeypatch.chdir(project)
    outcome = data["outcomes"][0]
    target = project / outcome["file"]
    edited = target.read_text() + "\n# a line written after the campaign\n"
    target.write_text(edited)
    code, _, err = run(capsys, "apply", outcome["mutant_id"])
    assert code == 2 and err.count("\n") == 1
    assert "changed since the report" in err and "refusing to write over your edits" in err
    assert target.read_text() == edited


def test_apply_suggests_git_checkout_only_for_a_clean_tracked_file(capsys, campaigned, monkeypatch):
    import subprocess

    project, data = campaigned
    monkeypatch.chdir(project)
    killed = next(o for o in data["outcomes"] if o["status"] == "killed")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", killed["file"]], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=project, check=True)
    code, _, err = run(capsys, "apply", killed["mutant_id"])
    assert code == 0 and f"`git checkout -- {killed['file']}`" in err
    subprocess.run(["git", "checkout", "--", killed["file"]], cwd=project, check=True)
    assert guard_passes(project)


def test_a_shard_leaves_the_configured_gate_to_the_merge(capsys, project, tmp_path, monkeypatch):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "fail-under = 100\n")
    shards = []
    for index in (1, 2):
        shards.append(tmp_path / f"shard-{index}.json")
        code, _, err = run(
            capsys,
            "run",
            project,
            "--shard",
            f"{index}/2",
            "--json",
            shards[-1],
            "--operators",
            "missing-zero-grad,missing-backward,missing-eval-mode",
        )
        assert code == 0, err
    monkeypatch.chdir(project)
    code, _, err = run(capsys, "merge", *shards, "--json", tmp_path / "merged.json")
    assert code == EXIT_UNDER and "is below --fail-under 100%" in err
