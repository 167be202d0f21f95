"""The mutation-coverage report as a reader and a tool meet it: markdown, HTML and JSON (the
mutation-testing-elements format has test_mte.py)."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt  # CommonMark parser (a dependency of rich)
from mte_viewer import validate
from report_samples import make_report, outcome

from injector import catalog
from injector import report as rendering
from injector.outcomes import SCHEMA, Outcome, Report
from trainwreck.errors import UsageError
from trainwreck.markdown import GITHUB_LIMIT


@pytest.fixture(scope="module")
def report() -> Report:
    return make_report()


@pytest.fixture(scope="module")
def markdown(report) -> str:
    return rendering.render_markdown(report)


def parse(markdown_text: str):
    return MarkdownIt("commonmark").enable("table").parse(markdown_text)


def fences(markdown_text: str, info: str) -> list[str]:
    return [t.content for t in parse(markdown_text) if t.type == "fence" and t.info == info]


# ---------------------------------------------------------------- markdown


def test_markdown_leads_with_the_score_and_the_count_of_each_status(markdown):
    assert "## Mutation score 70% (7 of 10 covered mutants caught)" in markdown
    assert "**5** killed · **2** timeout · **3** survived · **2** no coverage · **1** error" in markdown
    assert "killed (5) and timed-out (2)" in markdown  # both parts of the score, shown apart
    assert "guard `pytest -x -q tests`" in markdown and "device `cpu`" in markdown


def test_markdown_has_one_table_row_per_fault_id_with_its_counts(report, markdown):
    for fault, counts in report.by_operator().items():
        row = re.search(rf"^\| `{re.escape(fault)}` \| (.*) \|$", markdown, re.MULTILINE)
        assert row, fault
        cells = [cell.strip() for cell in row.group(1).split("|")]
        assert [int(c) for c in cells[:5]] == [
            counts[s] for s in ("killed", "timeout", "survived", "no_coverage", "error")
        ]
    assert re.search(r"^\| `missing-backward` \|.*\| █+ 100% \|$", markdown, re.MULTILINE)
    assert re.search(r"^\| `missing-zero-grad` \|.*\| ░+ 0% \|$", markdown, re.MULTILINE)
    assert re.search(r"^\| `wrong-softmax-dim` \|.*\| n/a \|$", markdown, re.MULTILINE)
    assert "| **total** | **5** | **2** | **3** | **2** | **1** |" in markdown
    tables = [t for t in parse(markdown) if t.type == "table_open"]
    assert len(tables) == 1


def test_markdown_chart_is_a_valid_mermaid_pie_of_the_outcomes(report, markdown):
    (chart,) = fences(markdown, "mermaid")
    lines = chart.splitlines()
    assert lines[0] == "pie showData"
    assert re.fullmatch(r"    title [^\"]+", lines[1])
    slices = [re.fullmatch(r'    "([a-z ]+)" : (\d+)', line) for line in lines[2:]]
    assert all(slices), lines
    assert {m.group(1): int(m.group(2)) for m in slices} == {
        "killed": 5,
        "timeout": 2,
        "survived": 3,
        "no coverage": 2,
        "error": 1,
    }


def test_every_survivor_shows_its_diff_and_the_catalog_guard_and_fix(report, markdown):
    diffs = fences(markdown, "diff")
    survivors = [o for o in report.outcomes if o.status == "survived"]
    assert sorted(diffs) == sorted(o.diff for o in survivors)  # byte for byte, fences intact
    for survivor in survivors:
        fault = catalog.get(survivor.operator)
        section = markdown[markdown.index(f"#### `{survivor.operator}`") :]
        section = section[: section.index("```")]
        assert f"**Would be caught by:** {fault.guard}." in section
        assert f"**Fix:** {fault.fix}" in section
        assert f"`{survivor.mutant_id}`" in markdown
        assert f"`{survivor.file}:{survivor.line}`" in markdown
        assert survivor.description in markdown


def test_a_diff_full_of_backticks_cannot_close_its_fence(report, markdown):
    lr = next(o for o in report.outcomes if o.operator == "lr-too-high")
    assert " ```\n" in lr.diff or " ````\n" in lr.diff
    assert "`````diff\n" + lr.diff + "`````" in markdown  # longer than the ```` inside
    # and what follows the fence is still markdown, not swallowed code
    after = [t for t in parse(markdown) if t.type == "heading_open"]
    assert len(after) >= 3


def test_mentions_in_messages_do_not_ping(markdown):
    assert "@someone" not in markdown
    assert "@\u200dsomeone" in markdown
    (message,) = [f for f in fences(markdown, "") if "Trainer" in f]
    assert "ImportError: cannot import name `Trainer` ```" in message  # the fence held


def test_errors_are_listed_apart_with_their_message(markdown):
    errors = markdown[markdown.index("### Errors (1)") :]
    assert "`no-grad-training`" in errors and "`m3nograd0013`" in errors
    assert "cc @\u200dsomeone, this broke in CI" in errors


def test_flaky_guard_tests_and_uncovered_mutants_are_named(markdown):
    assert "**Flaky guard tests.**" in markdown
    assert "`tests/test_train.py::test_converges[@seed]`" in markdown  # code: cannot ping
    uncovered = markdown[markdown.index("Not reached by any guard (2)") :]
    assert "`demo/train.py:12` `missing-train-mode`" in uncovered
    assert "`demo/train.py:27` `wrong-softmax-dim`" in uncovered


def test_many_survivors_fold_into_details_per_fault():
    survivors = [
        outcome((f"s{n:011d}", fault, "demo/train.py", line, new, "survived here", "survived", None, None))
        for n, (fault, line, new) in enumerate(
            [("missing-zero-grad", 15, ""), ("missing-backward", 18, ""), ("missing-optimizer-step", 19, "")] * 3
        )
    ]
    markdown = rendering.render_markdown(make_report(survivors))
    assert markdown.count("<details><summary>") == 3 + 0  # one per fault; nothing uncovered
    assert markdown.count("</details>") == 3
    guard = catalog.get("missing-backward").guard
    assert re.search(
        r"<summary><code>missing-backward</code>: would be caught by "
        + re.escape(guard)
        + r" \(3 survived\)</summary>",
        markdown,
    )
    assert len(fences(markdown, "diff")) == 9


def test_a_huge_report_still_fits_a_comment_and_stays_well_formed():
    body = "".join(f"+    x{n} = torch.zeros(1024)  # padding to make the diff long\n" for n in range(60))
    big = [
        Outcome(
            f"big{n:09d}",
            "missing-zero-grad",
            f"demo/file{n}.py",
            10,
            "removed a call",
            f"--- a/demo/file{n}.py\n+++ b/demo/file{n}.py\n@@ -10,1 +10,60 @@\n-    pass\n" + body,
            "survived",
        )
        for n in range(300)
    ]
    markdown = rendering.render_markdown(make_report(big, sources={}))
    assert len(markdown) <= GITHUB_LIMIT
    shown = fences(markdown, "diff")
    assert 0 < len(shown) < 300
    assert set(shown) <= {o.diff for o in big}
    assert markdown.count("```diff") == len(shown)  # every fence opened was closed
    assert "left out to keep this report short" in markdown


def test_without_covered_mutants_there_is_no_score():
    only = [o for o in make_report().outcomes if o.status == "no_coverage"]
    markdown = rendering.render_markdown(make_report(only))
    assert "## Mutation score n/a (no guard reached any mutant)" in markdown
    empty = rendering.render_markdown(make_report([]))
    assert "## Mutation score n/a (no mutants)" in empty and "```mermaid" not in empty


# ---------------------------------------------------------------- HTML


def test_html_is_one_self_contained_page(report):
    page = rendering.render_html(report)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<html") == 1
    assert "http" not in page  # no external stylesheet, script, font or image
    assert "<link" not in page and " src=" not in page and "url(" not in page
    assert page.count("<script>") == 1  # our few lines of sorting, inline


def test_html_shows_every_survivor_diff_escaped_and_coloured(report):
    page = rendering.render_html(report)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert '<span class="del">-            optimizer.zero_grad()</span>' in page
    assert '<span class="add">+    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * 100)</span>' in page
    for survivor in (o for o in report.outcomes if o.status == "survived"):
        assert f'<article class="mutant survived" id="mutant-{survivor.mutant_id}">' in page
    assert catalog.get("missing-eval-mode").guard in page
    assert "cc @someone, this broke in CI" in page  # HTML cannot ping: the message is intact


def test_html_draws_a_stacked_bar_per_fault_id(report):
    page = rendering.render_html(report)
    for fault, counts in report.by_operator().items():
        row = re.search(rf'<tr><td data-sort="{re.escape(fault)}">.*?</tr>', page, re.DOTALL)
        assert row, fault
        widths = [float(w) for w in re.findall(r'style="width:([\d.]+)%"', row.group())]
        assert len(widths) == len(+counts) and abs(sum(widths) - 100) < 0.01


# ---------------------------------------------------------------- JSON and files


def test_json_round_trips(report, tmp_path):
    text = rendering.to_json(report)
    assert json.loads(text)["schema"] == SCHEMA
    again = Report.from_json(json.loads(text))
    assert again == report and again.sources == report.sources
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    assert rendering.from_file(path) == report


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "no such report file"),
        ("{not json", "invalid JSON at line 1"),
        (json.dumps({"schema": "someone-else/3", "outcomes": []}), "not a trainwreck report"),
        (json.dumps({"schema": SCHEMA, "project": "p"}), "malformed trainwreck report"),
        ("directory", "cannot read the report"),
        (b"\xff\xfe\x00binary", "not UTF-8 text"),
    ],
)
def test_from_file_refuses_what_is_not_a_report_in_one_line(tmp_path, content, expected):
    path = tmp_path / "report.json"
    if content == "directory":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as error:
        rendering.from_file(path)
    message = str(error.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_from_file_refuses_an_unknown_status(report, tmp_path):
    data = report.to_json()
    data["outcomes"][0]["status"] = "exploded"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UsageError, match="unknown status 'exploded'"):
        rendering.from_file(path)


def test_write_creates_the_requested_files(report, tmp_path):
    out = tmp_path / "reports" / "nested"
    written = rendering.write(
        report,
        json_path=out / "mutation.json",
        markdown_path=out / "summary.md",
        html_path=out / "index.html",
        mte_path=out / "mutation-testing.json",
    )
    assert written == [out / "mutation.json", out / "summary.md", out / "index.html", out / "mutation-testing.json"]
    assert rendering.from_file(out / "mutation.json") == report
    assert (out / "summary.md").read_text(encoding="utf-8").startswith(rendering.MARKER)
    assert "<!DOCTYPE html>" in (out / "index.html").read_text(encoding="utf-8")
    validate(json.loads((out / "mutation-testing.json").read_text(encoding="utf-8")))
    assert rendering.write(report) == []


def test_write_reports_an_unwritable_path_in_one_line(report, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="cannot write the report"):
        rendering.write(report, html_path=blocker / "index.html")


def test_a_fault_id_missing_from_the_catalog_still_renders():
    custom = outcome(
        ("n4custom0014", "my-team-fault", "demo/train.py", 15, "", "a fault of our own", "survived", None, None)
    )
    markdown = rendering.render_markdown(make_report([custom]))
    assert "#### `my-team-fault`: (not in the fault catalog)" in markdown
    assert "Would be caught by" not in markdown
    assert "my-team-fault" in rendering.render_html(make_report([custom]))
    validate(rendering.to_mutation_testing_elements(make_report([custom])))


# ---------------------------------------------------------------- one score everywhere


def test_console_markdown_html_and_json_show_the_same_percentage(tmp_path, capsys):
    from injector import render

    # 5 of 12 is 41.67%: rounding would say 42%, flooring 41%; every surface must say the same
    specs = [
        (
            f"k{n:011d}",
            "missing-backward",
            "demo/train.py",
            18,
            "",
            "removed",
            "killed",
            "tests/test_train.py::test_loss_decreases",
            "assert",
        )
        for n in range(5)
    ]
    specs += [
        (f"s{n:011d}", "missing-zero-grad", "demo/train.py", 15, "", "removed", "survived", None, None)
        for n in range(7)
    ]
    report = make_report([outcome(spec) for spec in specs])
    written = rendering.write(
        report, json_path=tmp_path / "r.json", markdown_path=tmp_path / "r.md", html_path=tmp_path / "r.html"
    )
    render.campaign_summary(report, written)
    console = capsys.readouterr().err
    shown = {
        "console": re.search(r"mutation score (\d+)%", console).group(1),
        "markdown": re.search(r"## Mutation score (\d+)%", (tmp_path / "r.md").read_text()).group(1),
        "html": re.search(r'<div class="score \w+">(\d+)%</div>', (tmp_path / "r.html").read_text()).group(1),
        "json": str(json.loads((tmp_path / "r.json").read_text())["percent"]),
    }
    assert set(shown.values()) == {"41"}, shown
    assert "41%" in re.search(r"\| \*\*total\*\* \|.*", (tmp_path / "r.md").read_text()).group()


# ---------------------------------------------------------------- HTML readability


def test_html_fault_titles_render_inline_code_as_code_escaped(report):
    page = rendering.render_html(report)
    title = catalog.get("no-grad-training").title  # "... runs under `torch.no_grad()`."
    assert "`" in title
    row = re.search(r'<tr><td data-sort="no-grad-training">.*?</tr>', page, re.DOTALL).group()
    assert "`" not in row
    assert "<code>torch.no_grad()</code>" in row
    custom = outcome(
        (
            "n5custom0015",
            "missing-backward",
            "demo/train.py",
            18,
            "",
            "removed `<b>loss</b>.backward()`",
            "survived",
            None,
            None,
        )
    )
    page = rendering.render_html(make_report([custom]))
    assert "<code>&lt;b&gt;loss&lt;/b&gt;.backward()</code>" in page and "<b>loss" not in page
    assert not re.search(r"<(?:p|summary|div)[^>]*>[^<]*`", page)  # no raw backtick left in prose


def test_html_tables_fit_the_page_width():
    """Long test ids, paths and diff lines wrap or scroll inside their table, not the page."""
    long = outcome(
        (
            "w6wide000016",
            "missing-backward",
            "demo/" + "very_long_folder_name/" * 8 + "train.py",
            18,
            "",
            "removed",
            "killed",
            "tests/" + "test_" * 40 + "x.py::test_" + "y" * 120,
            "assert",
        ),
        diff_text="--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-" + "x" * 400 + "\n+" + "y" * 400 + "\n",
    )
    page = rendering.render_html(make_report([long], sources={}))
    css = page[page.index("<style>") : page.index("</style>")]
    tables = re.findall(r"(<div class=\"table-scroll\">\s*<table[^>]*>)", page)
    assert len(tables) == page.count("<table")  # every table sits in a scroll container
    assert re.search(r"\.table-scroll \{[^}]*overflow-x: auto", css)
    assert re.search(r"table\.mutants \{[^}]*table-layout: fixed", css)  # columns do not grow
    assert re.search(r"table\.mutants td \{[^}]*overflow-wrap: anywhere", css)  # ids and paths wrap
    assert re.search(r"\npre \{[^}]*overflow-x: auto", css)  # a long diff line scrolls in its cell
    assert '<table class="sortable mutants">' in page
