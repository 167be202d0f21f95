"""Silencing mutants judged equivalent: `# trainwreck: ignore[...]` and `skip-mutants`.

Silenced mutants are still made and listed, marked ignored; a campaign reports them with the
status "ignored" without running them, and they do not count in the score.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from injector.cli import main
from injector.generate import mutants_for_source

PROJECT = Path(__file__).parent / "campaign_project"
STEP = "for x, y in loader:\n    optimizer.zero_grad()\n    loss = model(x, y)\n    loss.backward(){}\n    optimizer.step()\n"


def by_operator(text: str) -> dict[str, str | None]:
    return {m.operator: m.ignored for m in mutants_for_source(text, "train.py")}


def test_a_comment_with_a_fault_id_silences_only_that_fault_on_its_line():
    ignored = by_operator(STEP.format("  # trainwreck: ignore[missing-backward]"))
    assert ignored["missing-backward"] == "`# trainwreck: ignore[missing-backward]` on line 4"
    assert ignored["missing-zero-grad"] is None and ignored["missing-optimizer-step"] is None
    assert by_operator(STEP.format("  # trainwreck: ignore[missing-zero-grad]"))["missing-backward"] is None


def test_a_bare_comment_silences_every_fault_on_its_line_and_only_there():
    mutants = mutants_for_source(STEP.format("  # trainwreck: ignore"), "train.py")
    assert {m.operator for m in mutants if m.ignored} >= {"missing-backward"}
    assert all(m.ignored is None for m in mutants if m.line != 4 and m.operator != "no-grad-training")
    # The same mutants are made either way: silenced, not dropped.
    assert [m.id for m in mutants] == [
        m.id for m in mutants_for_source(STEP.format("  # trainwreck: ignore"), "train.py")
    ]
    assert len(mutants) == len(mutants_for_source(STEP.format(""), "train.py"))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    loop = target / "trainer" / "loop.py"
    loop.write_text(
        loop.read_text().replace(
            "        loss.backward()\n", "        loss.backward()  # trainwreck: ignore[missing-backward]\n"
        )
    )
    return target


def listed(project: Path, capsys) -> tuple[list[dict], str]:
    assert main(["mutants", str(project), "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["mutants"], captured.err


def test_skip_mutants_and_comments_show_as_ignored_in_the_mutant_list(project, capsys):
    zero_grad = next(m for m in listed(project, capsys)[0] if m["operator"] == "missing-zero-grad")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'skip-mutants = ["{zero_grad["id"]}", "000000000000"]\n')
    mutants, warnings = listed(project, capsys)
    ignored = {m["operator"]: m["ignored"] for m in mutants if m["ignored"]}
    assert ignored == {
        "missing-backward": "`# trainwreck: ignore[missing-backward]` on line 59",
        "missing-zero-grad": "listed in skip-mutants",
    }
    assert "skip-mutants lists 000000000000, which is no mutant" in warnings


def test_a_campaign_reports_ignored_mutants_without_running_or_scoring_them(project, tmp_path, capsys):
    report_path, markdown = tmp_path / "report.json", tmp_path / "report.md"
    operators = ["--operators", "missing-backward,missing-zero-grad"]
    assert main(["run", str(project), "--json", str(report_path), "--markdown", str(markdown), *operators]) == 0
    report = json.loads(report_path.read_text())
    [ignored] = [o for o in report["outcomes"] if o["status"] == "ignored"]
    assert ignored["operator"] == "missing-backward" and ignored["tests_run"] == 0
    assert "trainwreck: ignore[missing-backward]" in ignored["message"]
    assert report["counts"]["ignored"] == 1
    scored = [o for o in report["outcomes"] if o["status"] in {"killed", "timeout", "survived"}]
    caught = [o for o in scored if o["status"] != "survived"]
    assert report["score"] == len(caught) / len(scored)
    text = markdown.read_text()
    assert "Ignored by the project (1)" in text and "ignore[missing-backward]" in text


def test_skip_mutants_must_be_a_list_of_strings(project, capsys):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "skip-mutants = [1, 2]\n")
    assert main(["mutants", str(project)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith("[tool.trainwreck] skip-mutants must be a list of strings")
    assert "\n" not in error and "Traceback" not in error
