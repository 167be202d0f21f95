"""`injector run --comment OWNER/NAME#N`: the mutation report kept as its own sticky PR comment,
against the loopback GitHub API (tests/github_api.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from github_api import TOKEN

from injector import report
from injector.cli import main
from triage import render

PROJECT = Path(__file__).parent / "campaign_project"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def campaign(capsys, project: Path, out: Path, operators: str, *extra: str) -> tuple[int, str, str]:
    code = main(["run", str(project), "--operators", operators, "--json", str(out / "report.json"),
                 "--markdown", str(out / "report.md"), *extra])
    stdout, stderr = capsys.readouterr()
    assert TOKEN not in stdout + stderr
    return code, stdout, stderr


def test_run_creates_the_mutation_comment_and_a_second_run_updates_it(github_api, project, tmp_path, capsys):
    where = ["--comment", "acme/trainer#7", "--api-url", github_api.url]
    github_api.add_comment("acme", "trainer", 7, render.MARKER + "\nthe triage comment", user="bot")

    code, out, _ = campaign(capsys, project, tmp_path, "missing-backward", *where)
    assert code == 0 and "injector: created the comment on acme/trainer#7: http://127.0.0.1:" in out
    first = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert github_api.comments("acme", "trainer", 7)[1] == first

    code, out, _ = campaign(capsys, project, tmp_path, "missing-backward,missing-zero-grad", *where)
    assert code == 0 and "injector: updated the comment on acme/trainer#7" in out
    second = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert second != first and "missing-zero-grad" in second
    mutation = [b for b in github_api.comments("acme", "trainer", 7) if b.startswith(report.MARKER)]
    assert mutation == [second]
    # the triage comment, with its own marker, is a separate comment left alone
    assert github_api.comments("acme", "trainer", 7)[0] == render.MARKER + "\nthe triage comment"
    assert [r.method for r in github_api.writes()] == ["POST", "PATCH"]


def test_a_github_failure_still_writes_the_reports_and_exits_4(github_api, project, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    code, _, err = campaign(capsys, project, tmp_path, "missing-backward",
                            "--comment", "acme/trainer#7", "--api-url", github_api.url)
    assert code == 4
    assert err.strip().splitlines()[-1] == ("injector: error: no GitHub token: set GITHUB_TOKEN to a "
                                            "token that can write pull-request comments")
    assert json.loads((tmp_path / "report.json").read_text())["outcomes"]
    assert (tmp_path / "report.md").read_text().startswith(report.MARKER)
    assert github_api.requests == []


def test_a_pull_request_that_does_not_exist_is_one_line(github_api, project, tmp_path, capsys):
    code, _, err = campaign(capsys, project, tmp_path, "missing-backward",
                            "--comment", "acme/trainer#99", "--api-url", github_api.url)
    assert code == 4 and err.strip().splitlines()[-1].startswith(
        "injector: error: acme/trainer#99 not found (404)")
    assert (tmp_path / "report.json").is_file() and github_api.writes() == []


@pytest.mark.parametrize("value", ["acme/trainer", "acme/trainer#0", "acme#7", "acme/trainer#x"])
def test_a_malformed_comment_target_is_refused_before_the_campaign(github_api, project, tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit:
        main(["run", str(project), "--json", str(tmp_path / "r.json"), "--comment", value])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "argument --comment:" in err
    assert not (tmp_path / "r.json").exists() and github_api.requests == []


def test_merge_can_comment_too(github_api, project, tmp_path, capsys):
    assert campaign(capsys, project, tmp_path, "missing-backward")[0] == 0
    code = main(["merge", str(tmp_path / "report.json"), "--markdown", str(tmp_path / "merged.md"),
                 "--comment", "acme/trainer#7", "--api-url", github_api.url])
    out = capsys.readouterr().out
    assert code == 0 and "created the comment on acme/trainer#7" in out
    assert github_api.comments("acme", "trainer", 7) == [(tmp_path / "merged.md").read_text(encoding="utf-8")]
