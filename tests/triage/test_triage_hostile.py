"""Untrusted text in the triage comment: a cause table or a log name written by a PR's code.

A cause table from a user (or from an attacker, should one reach `--causes`) and the log's file
name go through the same escaping as log text, so no @mention, HTML, link, heading or code
fence of theirs is live in the posted comment. And `triage comment` never loads a cause table
it was not given: a `trainwreck-causes.yaml` beside the log (in CI: in the PR's artifact) or in
the working directory is ignored; only `triage explain`, run by a person, picks one up.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from github_api import TOKEN
from markdown_it import MarkdownIt
from triage_corpus import one_log

from triage import cli
from triage.explain import explain

PR = ["--repo", "acme/trainer", "--pr", "7"]
LOG = one_log("shape-mismatch")  # a real run's log: its symptom `shape-mismatch` drives the table

EMPTY = Path(__file__).parent / "empty-causes.yaml"  # no own causes: only the built-in table
HOSTILE = ["@org/team", "<img src=x onerror=alert(1)>", "[x](http://evil.example)", "```"]


def yaml_quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def table(tmp_path: Path, words: list[str], name: str = "causes.yaml") -> Path:
    """A cause table whose own cause (not in the catalog) wins on the log's `shape-mismatch`,
    with `words` in its id, title, explanation and fix."""
    text = " ".join(words)
    path = tmp_path / name
    path.write_text(
        "version: 1\ncauses:\n"
        f"  {yaml_quoted('team-cause ' + text)}:\n"
        "    supports: {shape-mismatch: 9.0}\n"
        f"    title: {yaml_quoted('# ' + text)}\n"
        f"    explanation: {yaml_quoted(text + ' see www.evil.example or #12')}\n"
        f"    fix: {yaml_quoted(chr(10).join(words) + chr(10) + '> quoted')}\n",
        encoding="utf-8",
    )
    return path


def live(markdown: str) -> list[str]:
    """What of `markdown` would act on GitHub: raw HTML other than our own `<details>`, links,
    images, mentions, issue references and bare URLs in text (not in code)."""
    found = []
    ours = re.compile(r"\s*(<!-- trainwreck:triage -->|</details>|<details><summary>All symptoms \(\d+\)</summary>)\s*")
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "html_block" and not ours.fullmatch(token.content):
            found.append(token.content)
        for child in token.children or []:
            if child.type in ("html_inline", "link_open", "image") and not (
                child.type == "html_inline" and ours.fullmatch(child.content)
            ):
                found.append(child.type + " " + child.content)
            if child.type == "text":
                found += re.findall(r"@[A-Za-z0-9]|#\d|\b[a-z]+://|\bwww\.", child.content)
    return found


def structure(markdown: str) -> list[str]:
    """The block structure of `markdown`: headings, fences, lists, quotes, paragraphs."""
    return [f"{t.type}:{t.markup}" for t in MarkdownIt("commonmark").parse(markdown) if t.type != "inline"]


def post(capsys, github_api, log: Path, *args: object) -> str:
    code = cli.main(["comment", str(log), *PR, "--api-url", github_api.url, *map(str, args)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert TOKEN not in out + err
    [body] = github_api.comments("acme", "trainer", 7)
    return body


def test_a_hostile_cause_table_reaches_the_comment_as_inert_text(github_api, tmp_path, capsys):
    hostile = post(capsys, github_api, LOG, "--causes", table(tmp_path, HOSTILE))
    assert "team\\-cause" in hostile or "team-cause" in hostile  # the table's cause is the one shown
    assert live(hostile) == []
    benign = cli.main(
        [
            "explain",
            str(LOG),
            "--format",
            "markdown",
            "--causes",
            str(table(tmp_path, ["plain", "words"], "benign.yaml")),
        ]
    )
    benign_body = capsys.readouterr().out
    assert benign == 1 and live(benign_body) == []
    # the same headings, fences, lists and paragraphs as with harmless words: no stray fence,
    # heading, quote or list item came from the table
    assert structure(hostile) == structure(benign_body)


def test_a_hostile_log_name_reaches_the_comment_as_inert_text(github_api, tmp_path, capsys):
    name = "run @org <img src=x onerror=alert(1)> [x](evil.example) ``` #12.log"
    log = tmp_path / name
    shutil.copyfile(LOG, log)
    body = post(capsys, github_api, log)
    assert live(body) == []
    assert structure(body) == structure(post_plain(capsys, tmp_path))
    line = next(line for line in body.splitlines() if line.startswith("**Log:**"))
    assert "<img" not in line and "```" not in line


def post_plain(capsys, folder: Path) -> str:
    """The built-in table's comment body for a copy of LOG named run.log in `folder`."""
    log = folder / "run.log"
    if not log.exists():
        shutil.copyfile(LOG, log)
    assert cli.main(["explain", str(log), "--format", "markdown", "--causes", str(EMPTY)]) == 1
    return capsys.readouterr().out


@pytest.mark.parametrize("where", ["beside-the-log", "working-directory"])
def test_comment_never_loads_a_cause_table_it_was_not_given(github_api, tmp_path, capsys, monkeypatch, where):
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    log = artifact / "run.log"
    shutil.copyfile(LOG, log)
    table(artifact if where == "beside-the-log" else tmp_path, ["planted"], "trainwreck-causes.yaml")
    monkeypatch.chdir(artifact if where == "beside-the-log" else tmp_path)
    body = post(capsys, github_api, log)
    assert "planted" not in body
    assert body == post_plain(capsys, artifact)  # the built-in table's answer


def test_explain_run_by_a_person_still_picks_up_their_table(tmp_path, capsys, monkeypatch):
    table(tmp_path, ["ours"], "trainwreck-causes.yaml")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["explain", str(LOG), "--format", "json"]) == 1
    assert "team-cause ours" in capsys.readouterr().out
    assert "team-cause ours" not in str(explain(LOG).to_json())  # the library call: explicit only
