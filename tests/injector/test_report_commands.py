"""What a user does with a campaign's report from the command line: gate CI on the score
(`--fail-under`), look at one mutant (`injector show`), put it into the tree (`injector apply`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from injector import report as rendering
from injector.cli import EXIT_UNDER, main
from report_samples import make_report

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

@pytest.mark.parametrize("threshold, expected", [("80", EXIT_UNDER), ("70.5", EXIT_UNDER), ("70", 0),
                                                 ("0", 0), ("65%", 0)])
def test_fail_under_exits_3_below_the_threshold_after_writing_the_reports(capsys, saved, tmp_path,
                                                                         threshold, expected):
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
    code, _, err = run(capsys, "run", project, "--json", tmp_path / "r.json",
                       "--operators", "missing-zero-grad,missing-backward,missing-eval-mode")
    shown = json.loads((tmp_path / "r.json").read_text())["percent"]
    assert shown < 100
    assert code == EXIT_UNDER
    assert f"injector: mutation score {shown}% is below --fail-under 100%" in err
