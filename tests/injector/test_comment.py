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
    code = main(
        [
            "run",
            str(project),
            "--operators",
            operators,
            "--json",
            str(out / "report.json"),
            "--markdown",
            str(out / "report.md"),
            *extra,
        ]
    )
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
    code, _, err = campaign(
        capsys, project, tmp_path, "missing-backward", "--comment", "acme/trainer#7", "--api-url", github_api.url
    )
    assert code == 4
    assert err.strip().splitlines()[-1] == (
        "injector: error: no GitHub token: set GITHUB_TOKEN to a token that can write pull-request comments"
    )
    assert json.loads((tmp_path / "report.json").read_text())["outcomes"]
    assert (tmp_path / "report.md").read_text().startswith(report.MARKER)
    assert github_api.requests == []


def test_a_pull_request_that_does_not_exist_is_one_line(github_api, project, tmp_path, capsys):
    code, _, err = campaign(
        capsys, project, tmp_path, "missing-backward", "--comment", "acme/trainer#99", "--api-url", github_api.url
    )
    assert code == 4 and err.strip().splitlines()[-1].startswith("injector: error: acme/trainer#99 not found (404)")
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
    code = main(
        [
            "merge",
            str(tmp_path / "report.json"),
            "--markdown",
            str(tmp_path / "merged.md"),
            "--comment",
            "acme/trainer#7",
            "--api-url",
            github_api.url,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "created the comment on acme/trainer#7" in out
    assert github_api.comments("acme", "trainer", 7) == [(tmp_path / "merged.md").read_text(encoding="utf-8")]


# ---------------------------------------------------------------- PR mode: score change and links

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_the_pr_comment_shows_the_score_change_and_links_each_survivor_to_its_line(
    github_api, tmp_path, capsys, monkeypatch
):
    from dataclasses import replace

    from markdown_it import MarkdownIt
    from report_samples import make_report

    monkeypatch.delenv("GITHUB_SHA", raising=False)
    now = replace(make_report(), repo_path="ml/trainer")  # the project is a folder of the repository
    base = make_report(
        [
            o if o.status != "survived" or o.mutant_id == "a1lrhigh0001" else replace(o, status="killed")
            for o in now.outcomes
        ]
    )
    (tmp_path / "now.json").write_text(report.to_json(now))
    (tmp_path / "base.json").write_text(report.to_json(base))
    code = main(
        [
            "merge",
            str(tmp_path / "now.json"),
            "--markdown",
            str(tmp_path / "pr.md"),
            "--base-report",
            str(tmp_path / "base.json"),
            "--sha",
            SHA,
            "--comment",
            "acme/trainer#7",
            "--api-url",
            github_api.url,
        ]
    )
    assert code == 0, capsys.readouterr().err
    (posted,) = github_api.comments("acme", "trainer", 7)
    assert posted == (tmp_path / "pr.md").read_text(encoding="utf-8")
    assert "**Against the base branch:** score 90% → 70% (−20 points) · survivors 1 → 3" in posted
    links = {
        token.attrGet("href")
        for block in MarkdownIt("commonmark").parse(posted)
        if block.children
        for token in block.children
        if token.type == "link_open"
    }
    for survivor in (o for o in now.outcomes if o.status == "survived"):
        assert f"https://github.com/acme/trainer/blob/{SHA}/ml/trainer/{survivor.file}#L{survivor.line}" in links


def test_the_commit_comes_from_github_actions_and_links_need_pr_mode(github_api, tmp_path, capsys, monkeypatch):
    from report_samples import make_report

    (tmp_path / "now.json").write_text(report.to_json(make_report()))
    monkeypatch.setenv("GITHUB_SHA", SHA)
    assert (
        main(
            [
                "merge",
                str(tmp_path / "now.json"),
                "--markdown",
                str(tmp_path / "pr.md"),
                "--comment",
                "acme/trainer#7",
                "--api-url",
                github_api.url,
            ]
        )
        == 0
    )
    assert f"](https://github.com/acme/trainer/blob/{SHA}/demo/train.py#L11)" in (tmp_path / "pr.md").read_text()
    assert main(["merge", str(tmp_path / "now.json"), "--markdown", str(tmp_path / "plain.md")]) == 0
    plain = (tmp_path / "plain.md").read_text()
    assert "https://github.com" not in plain and "Against the base branch" not in plain


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--sha", "not-a-sha", "not a commit id"),
        ("--base-report", "missing.json", "no such report file"),
    ],
)
def test_bad_pr_mode_options_are_refused_before_the_campaign(project, tmp_path, capsys, option, value, message):
    with pytest.raises(SystemExit) as exit:
        main(
            [
                "run",
                str(project),
                "--json",
                str(tmp_path / "r.json"),
                option,
                str(tmp_path / value) if option == "--base-report" else value,
            ]
        )
    assert exit.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_campaign_records_where_its_project_sits_in_the_repository(tmp_path):
    import subprocess

    from injector.campaign import repo_path

    project = tmp_path / "repo" / "ml" / "trainer"
    project.mkdir(parents=True)
    assert repo_path(project) == ""  # not in a repository: links use the file paths as they are
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "repo", check=True)
    assert repo_path(project) == "ml/trainer"
    assert repo_path(tmp_path / "repo") == ""
