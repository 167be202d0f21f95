"""The mutation-coverage report as a reader and a tool meet it: markdown, HTML, JSON, and the
mutation-testing-elements schema."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt  # CommonMark parser (a dependency of rich)

from injector import catalog
from injector import report as rendering
from trainwreck.errors import UsageError
from trainwreck.markdown import GITHUB_LIMIT
from injector.outcomes import SCHEMA, Baseline, Outcome, Report

FIXTURES = Path(__file__).parent / "fixtures"

TRAIN = (
    '"""Train the demo classifier."""\n'                                    # 1
    "import torch\n"                                                         # 2
    "import torch.nn.functional as F\n"                                      # 3
    "\n"                                                                     # 4
    'USAGE = """Run it like this:\n'                                         # 5
    "```sh\n"                                                                # 6
    "python train.py --lr 0.1\n"                                             # 7
    "````\n"                                                                 # 8
    '"""\n'                                                                  # 9
    "def train(model, loader, epochs=1):\n"                                  # 10
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"          # 11
    "    model.train()\n"                                                    # 12
    "    for _ in range(epochs):\n"                                          # 13
    "        for x, y in loader:\n"                                          # 14
    "            optimizer.zero_grad()\n"                                    # 15
    "            logits = F.relu(model(x))\n"                                # 16
    "            loss = F.cross_entropy(logits, y)\n"                        # 17
    "            loss.backward()\n"                                          # 18
    "            optimizer.step()\n"                                         # 19
    "    return loss.item()\n"                                               # 20
    "\n"                                                                     # 21
    "BANNER = \"<script>alert('x')</script>\"\n"                             # 22
    "\n"                                                                     # 23
    "def evaluate(model, x):\n"                                              # 24
    "    model.eval()\n"                                                     # 25
    "    with torch.no_grad():\n"                                            # 26
    "        return F.softmax(model(x), dim=-1)\n"                           # 27
)
DATA = (
    "from torch.utils.data import DataLoader\n"
    "\n"
    "\n"
    "def make_loader(dataset, batch_size=32):\n"
    "    return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n"
)
SOURCES = {"demo/train.py": TRAIN, "demo/data.py": DATA}


def mutated(path: str, line: int, new: str) -> str:
    """The file with line `line` replaced by `new` (any number of lines, or none)."""
    lines = SOURCES[path].splitlines(keepends=True)
    return "".join(lines[:line - 1]) + new + "".join(lines[line:])


def diff(path: str, line: int, new: str, source: str | None = None) -> str:
    """The unified diff (3 lines of context) that replaces line `line` of a file by `new`."""
    lines = (SOURCES[path] if source is None else source).splitlines(keepends=True)
    start, stop = max(1, line - 3), min(len(lines), line + 3)
    before, after = lines[start - 1:line - 1], lines[line:stop]
    added = new.splitlines(keepends=True)
    return (f"--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{len(before) + 1 + len(after)} +{start},{len(before) + len(added) + len(after)} @@\n"
            + "".join(" " + text for text in before) + "-" + lines[line - 1]
            + "".join("+" + text for text in added) + "".join(" " + text for text in after))


# (id, fault id, file, line, new text of the line, description, status, test, message)
MUTANTS = [
    ("a1lrhigh0001", "lr-too-high", "demo/train.py", 11,
     "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * 100)\n",
     "learning rate multiplied by 100", "survived", None, None),
    ("b2zerograd02", "missing-zero-grad", "demo/train.py", 15, "",
     "removed `optimizer.zero_grad()`: gradients now accumulate across steps", "survived", None, None),
    ("c3evalmode03", "missing-eval-mode", "demo/train.py", 25, "",
     "removed `model.eval()`: evaluation runs in training mode", "survived", None, None),
    ("d4inplace004", "inplace-activation", "demo/train.py", 16,
     "            logits = F.relu_(model(x))\n", "`relu` works in place", "killed",
     "tests/test_train.py::test_backward_runs", "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation"),
    ("e5backward05", "missing-backward", "demo/train.py", 18, "",
     "removed `loss.backward()`: nothing is learned", "killed", "tests/test_train.py::test_loss_decreases",
     "AssertionError: loss did not decrease"),
    ("f6optstep006", "missing-optimizer-step", "demo/train.py", 19, "",
     "removed `optimizer.step()`: the parameters never change", "killed",
     "tests/test_train.py::test_params_change", "AssertionError: parameters did not change"),
    ("g7reduce0007", "wrong-loss-reduction", "demo/train.py", 17,
     '            loss = F.cross_entropy(logits, y, reduction="sum")\n',
     "`cross_entropy` sums instead of averaging", "killed", "tests/test_train.py::test_loss_scale",
     "AssertionError: loss depends on the batch size"),
    ("h8shuffle008", "no-shuffle", "demo/data.py", 5,
     "    return DataLoader(dataset, batch_size=batch_size, shuffle=False)\n",
     "the DataLoader no longer shuffles", "killed", "tests/test_data.py::test_order_is_shuffled",
     "AssertionError: batches come in dataset order"),
    ("i9rankskip09", "rank-skip", "demo/train.py", 15,
     "            if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1:\n"
     "                continue\n"
     "            optimizer.zero_grad()\n",
     "rank 1 skips one training step", "timeout", "tests/test_train.py::test_ddp_two_ranks", None),
    ("j0detach0010", "detached-graph", "demo/train.py", 17,
     "            loss = F.cross_entropy(logits.detach(), y)\n",
     "the loss is cut off from the model's graph", "timeout", "tests/test_train.py::test_loss_decreases",
     None),
    ("k1trainmode1", "missing-train-mode", "demo/train.py", 12, "",
     "removed `model.train()`: training runs in eval mode after evaluation", "no_coverage", None, None),
    ("l2softmax012", "wrong-softmax-dim", "demo/train.py", 27,
     "        return F.softmax(model(x), dim=0)\n", "softmax over dim 0 instead of -1",
     "no_coverage", None, None),
    ("m3nograd0013", "no-grad-training", "demo/train.py", 16,
     "            with torch.no_grad():\n                logits = F.relu(model(x))\n",
     "the forward pass runs without autograd", "error", None,
     "ImportError: cannot import name `Trainer` ```\ncc @someone, this broke in CI\n"),
]


def outcome(spec, diff_text: str | None = None) -> Outcome:
    mutant_id, fault, path, line, new, description, status, test, message = spec
    return Outcome(mutant_id=mutant_id, operator=fault, file=path, line=line, description=description,
                   diff=diff(path, line, new) if diff_text is None else diff_text, status=status,
                   test=test, message=message, duration=1.25, tests_run=0 if status == "no_coverage" else 3)


def make_report(outcomes=None, **changes) -> Report:
    fields = dict(
        project="demo", guard="pytest -x -q tests", device="cpu",
        baseline=Baseline(tests=14, duration=3.5, flaky=("tests/test_train.py::test_converges[@seed]",)),
        outcomes=tuple(sorted((outcome(s) for s in MUTANTS) if outcomes is None else outcomes,
                              key=lambda o: (o.file, o.line, o.operator, o.mutant_id))),
        duration=83.125, shards=("1/2", "2/2"), sources=dict(SOURCES))
    fields.update(changes)
    return Report(**fields)


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
        assert [int(c) for c in cells[:5]] == [counts[s] for s in
                                                ("killed", "timeout", "survived", "no_coverage", "error")]
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
        "killed": 5, "timeout": 2, "survived": 3, "no coverage": 2, "error": 1}


def test_every_survivor_shows_its_diff_and_the_catalog_guard_and_fix(report, markdown):
    diffs = fences(markdown, "diff")
    survivors = [o for o in report.outcomes if o.status == "survived"]
    assert sorted(diffs) == sorted(o.diff for o in survivors)  # byte for byte, fences intact
    for survivor in survivors:
        fault = catalog.get(survivor.operator)
        section = markdown[markdown.index(f"#### `{survivor.operator}`"):]
        section = section[:section.index("```")]
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
    errors = markdown[markdown.index("### Errors (1)"):]
    assert "`no-grad-training`" in errors and "`m3nograd0013`" in errors
    assert "cc @\u200dsomeone, this broke in CI" in errors


def test_flaky_guard_tests_and_uncovered_mutants_are_named(markdown):
    assert "**Flaky guard tests.**" in markdown
    assert "`tests/test_train.py::test_converges[@seed]`" in markdown  # code: cannot ping
    uncovered = markdown[markdown.index("Not reached by any guard (2)"):]
    assert "`demo/train.py:12` `missing-train-mode`" in uncovered
    assert "`demo/train.py:27` `wrong-softmax-dim`" in uncovered


def test_many_survivors_fold_into_details_per_fault():
    survivors = [outcome(("s%011d" % n, fault, "demo/train.py", line, new, "survived here",
                          "survived", None, None))
                 for n, (fault, line, new) in enumerate(
                     [("missing-zero-grad", 15, ""), ("missing-backward", 18, ""),
                      ("missing-optimizer-step", 19, "")] * 3)]
    markdown = rendering.render_markdown(make_report(survivors))
    assert markdown.count("<details><summary>") == 3 + 0  # one per fault; nothing uncovered
    assert markdown.count("</details>") == 3
    guard = catalog.get("missing-backward").guard
    assert re.search(r"<summary><code>missing-backward</code>: would be caught by "
                     + re.escape(guard) + r" \(3 survived\)</summary>", markdown)
    assert len(fences(markdown, "diff")) == 9


def test_a_huge_report_still_fits_a_comment_and_stays_well_formed():
    body = "".join(f"+    x{n} = torch.zeros(1024)  # padding to make the diff long\n" for n in range(60))
    big = [Outcome(f"big{n:09d}", "missing-zero-grad", f"demo/file{n}.py", 10, "removed a call",
                   f"--- a/demo/file{n}.py\n+++ b/demo/file{n}.py\n@@ -10,1 +10,60 @@\n-    pass\n"
                   + body, "survived") for n in range(300)]
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


# ---------------------------------------------------------------- mutation-testing-elements

POSITION_KEYS = {"line", "column"}
STATUSES = {"Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout", "Ignored",
            "Pending"}


def check_mte(doc: dict) -> None:
    """The rules of the mutation-testing-report-schema (schema version 2) this report touches."""
    assert {"schemaVersion", "thresholds", "files"} <= doc.keys()
    assert re.fullmatch(r"([1-2])(\.(([1-9]\d*)|0)){0,2}", doc["schemaVersion"])
    for bound in ("high", "low"):
        assert isinstance(doc["thresholds"][bound], int) and 0 <= doc["thresholds"][bound] <= 100
    for path, file in doc["files"].items():
        assert isinstance(path, str)
        assert isinstance(file["language"], str) and isinstance(file["source"], str)
        ids = [m["id"] for m in file["mutants"]]
        assert len(ids) == len(set(ids))
        for mutant in file["mutants"]:
            assert isinstance(mutant["id"], str) and isinstance(mutant["mutatorName"], str)
            assert mutant["status"] in STATUSES
            location = mutant["location"]
            for end in ("start", "end"):
                assert location[end].keys() == POSITION_KEYS
                assert all(isinstance(v, int) and v >= 1 for v in location[end].values())
            assert (location["start"]["line"], location["start"]["column"]) <= \
                (location["end"]["line"], location["end"]["column"])
            for key, kind in (("replacement", str), ("statusReason", str), ("description", str),
                              ("duration", (int, float)), ("testsCompleted", (int, float))):
                assert key not in mutant or isinstance(mutant[key], kind)
            for key in ("killedBy", "coveredBy"):
                assert key not in mutant or all(isinstance(t, str) for t in mutant[key])
    for file in doc.get("testFiles", {}).values():
        assert all(isinstance(t["id"], str) and isinstance(t["name"], str) for t in file["tests"])
    assert "framework" not in doc or isinstance(doc["framework"]["name"], str)
    json.dumps(doc)


def viewer_apply(source: str, mutant: dict) -> str:
    """What the viewer shows as the mutated file: 1-based lines, 1-based UTF-16 columns, end exclusive."""
    starts = [0] + [m.end() for m in re.finditer("\r\n|[\r\n\u2028\u2029]", source)]

    def offset(position):
        index, units = starts[position["line"] - 1], position["column"] - 1
        while units > 0:
            units -= 2 if ord(source[index]) > 0xFFFF else 1
            index += 1
        return index

    location = mutant["location"]
    return source[:offset(location["start"])] + mutant["replacement"] + source[offset(location["end"]):]


def test_mte_report_follows_the_schema(report):
    doc = rendering.to_mutation_testing_elements(report)
    check_mte(doc)
    assert doc["schemaVersion"] == "2"
    assert doc["thresholds"] == {"high": 80, "low": 60}
    assert doc["framework"]["name"] == "trainwreck"
    assert {path: file["source"] for path, file in doc["files"].items()} == SOURCES
    assert all(file["language"] == "python" for file in doc["files"].values())


def test_mte_statuses_tests_and_reasons(report):
    doc = rendering.to_mutation_testing_elements(report)
    mutants = {m["id"]: m for file in doc["files"].values() for m in file["mutants"]}
    expected = {"killed": "Killed", "survived": "Survived", "timeout": "Timeout",
                "no_coverage": "NoCoverage", "error": "RuntimeError"}
    for spec in MUTANTS:
        mutant = mutants[spec[0]]
        assert mutant["status"] == expected[spec[6]]
        assert mutant["mutatorName"] == spec[1] and mutant["description"] == spec[5]
        assert mutant.get("killedBy") == ([spec[7]] if spec[6] == "killed" else None)
    assert mutants["m3nograd0013"]["statusReason"].startswith("ImportError: cannot import name")
    assert mutants["i9rankskip09"]["statusReason"] == "timed out in tests/test_train.py::test_ddp_two_ranks"
    assert mutants["d4inplace004"]["duration"] == 1250 and mutants["d4inplace004"]["testsCompleted"] == 3
    timed = replace(outcome(MUTANTS[3]), guard_seconds=0.75)  # the guard's own time, when known
    (net,) = rendering.to_mutation_testing_elements(make_report([timed]))["files"]["demo/train.py"]["mutants"]
    assert net["duration"] == 750
    tests = {t["id"] for file in doc["testFiles"].values() for t in file["tests"]}
    assert tests == {spec[7] for spec in MUTANTS if spec[6] == "killed"}
    assert {"id": "tests/test_data.py::test_order_is_shuffled", "name": "test_order_is_shuffled"} in \
        doc["testFiles"]["tests/test_data.py"]["tests"]


def test_mte_locations_reproduce_each_mutant_in_the_viewer(report):
    doc = rendering.to_mutation_testing_elements(report)
    mutants = {m["id"]: m for file in doc["files"].values() for m in file["mutants"]}
    for mutant_id, _, path, line, new, *_ in MUTANTS:
        mutant = mutants[mutant_id]
        assert viewer_apply(SOURCES[path], mutant) == mutated(path, line, new), mutant_id
    # and they point at the change itself, not at the diff's context
    assert mutants["a1lrhigh0001"]["location"] == {"start": {"line": 11, "column": 59},
                                                   "end": {"line": 11, "column": 59}}
    assert mutants["a1lrhigh0001"]["replacement"] == " * 100"
    assert mutants["b2zerograd02"]["location"] == {"start": {"line": 15, "column": 1},
                                                   "end": {"line": 16, "column": 1}}
    assert mutants["d4inplace004"]["replacement"] == "F.relu_"
    assert mutants["l2softmax012"]["replacement"] == "0"
    assert mutants["l2softmax012"]["location"]["start"] == {"line": 27, "column": 40}


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.py")))
def test_mte_locations_match_generated_mutants(fixture):
    from injector.generate import mutants_for_source

    text = (FIXTURES / fixture).read_text()
    generated = mutants_for_source(text, fixture)
    outcomes = tuple(Outcome(m.id, m.operator, m.file, m.line, m.description, m.diff, "survived")
                     for m in generated)
    doc = rendering.to_mutation_testing_elements(make_report(outcomes, sources={fixture: text}))
    check_mte(doc)
    shown = {m["id"]: m for m in doc["files"][fixture]["mutants"]}
    for mutant in generated:
        assert viewer_apply(text, shown[mutant.id]) == mutant.apply(text), mutant.operator
        assert shown[mutant.id]["location"]["start"]["line"] == mutant.line


def test_mte_columns_count_utf16_units_as_the_viewer_does():
    source = "def f(x):\n    note = '🔥 hot'; return F.relu(x)\n"
    new = "    note = '🔥 hot'; return F.relu_(x)\n"
    item = outcome(("emoji0000001", "inplace-activation", "emoji.py", 2, new, "relu in place",
                    "survived", None, None), diff_text=diff("emoji.py", 2, new, source))
    doc = rendering.to_mutation_testing_elements(make_report([item], sources={"emoji.py": source}))
    (mutant,) = doc["files"]["emoji.py"]["mutants"]
    assert mutant["location"]["start"] == {"line": 2, "column": 29}  # 🔥 is two UTF-16 units
    assert viewer_apply(source, mutant) == "def f(x):\n" + new


def test_mte_without_the_source_shows_the_lines_the_diffs_carry(report):
    doc = rendering.to_mutation_testing_elements(make_report(report.outcomes, sources={}))
    check_mte(doc)
    source = doc["files"]["demo/train.py"]["source"]
    lines = source.splitlines()
    assert lines[14] == "            optimizer.zero_grad()" and lines[0] == ""
    zero_grad = next(m for m in doc["files"]["demo/train.py"]["mutants"] if m["id"] == "b2zerograd02")
    assert viewer_apply(source, zero_grad) == source.replace("            optimizer.zero_grad()\n", "", 1)


def test_mte_keeps_a_mutant_whose_diff_does_not_fit_the_source(report):
    stale = outcome(MUTANTS[0], diff_text=diff("demo/train.py", 11, "x\n").replace("lr=0.1)", "lr=0.2)"))
    doc = rendering.to_mutation_testing_elements(make_report([stale]))
    check_mte(doc)
    (mutant,) = doc["files"]["demo/train.py"]["mutants"]
    assert "replacement" not in mutant  # unknown, so left out rather than guessed
    assert mutant["location"] == {"start": {"line": 11, "column": 1}, "end": {"line": 11, "column": 60}}


# ---------------------------------------------------------------- JSON and files

def test_json_round_trips(report, tmp_path):
    text = rendering.to_json(report)
    assert json.loads(text)["schema"] == SCHEMA
    again = Report.from_json(json.loads(text))
    assert again == report and again.sources == report.sources
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    assert rendering.from_file(path) == report


@pytest.mark.parametrize("content, expected", [
    (None, "no such report file"),
    ("{not json", "invalid JSON at line 1"),
    (json.dumps({"schema": "someone-else/3", "outcomes": []}), "not a trainwreck report"),
    (json.dumps({"schema": SCHEMA, "project": "p"}), "malformed trainwreck report"),
    ("directory", "cannot read the report"),
    (b"\xff\xfe\x00binary", "not UTF-8 text"),
])
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
    written = rendering.write(report, json_path=out / "mutation.json", markdown_path=out / "summary.md",
                              html_path=out / "index.html", mte_path=out / "mutation-testing.json")
    assert written == [out / "mutation.json", out / "summary.md", out / "index.html",
                       out / "mutation-testing.json"]
    assert rendering.from_file(out / "mutation.json") == report
    assert (out / "summary.md").read_text(encoding="utf-8").startswith(rendering.MARKER)
    assert "<!DOCTYPE html>" in (out / "index.html").read_text(encoding="utf-8")
    check_mte(json.loads((out / "mutation-testing.json").read_text(encoding="utf-8")))
    assert rendering.write(report) == []


def test_write_reports_an_unwritable_path_in_one_line(report, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="cannot write the report"):
        rendering.write(report, html_path=blocker / "index.html")


def test_a_fault_id_missing_from_the_catalog_still_renders():
    custom = outcome(("n4custom0014", "my-team-fault", "demo/train.py", 15, "", "a fault of our own",
                      "survived", None, None))
    markdown = rendering.render_markdown(make_report([custom]))
    assert "#### `my-team-fault`: (not in the fault catalog)" in markdown
    assert "Would be caught by" not in markdown
    assert "my-team-fault" in rendering.render_html(make_report([custom]))
    check_mte(rendering.to_mutation_testing_elements(make_report([custom])))
