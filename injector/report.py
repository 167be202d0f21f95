"""The mutation-coverage report, rendered for people and for tools.

Markdown for a PR comment or `$GITHUB_STEP_SUMMARY`, one self-contained HTML page, the report's
own versioned JSON, and the mutation-testing-elements JSON schema that Stryker's HTML viewer and
dashboard read. Every explanation of a fault comes from the catalog; user text (paths, test names,
messages, diffs) is fenced or escaped so it can neither break the markdown nor ping anyone.
"""

from __future__ import annotations

import bisect
import html
import json
import re
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from markupsafe import Markup

from injector import catalog
from trainwreck.errors import UsageError
from injector.outcomes import ERROR, IGNORED, KILLED, NO_COVERAGE, STATUSES, SURVIVED, TIMEOUT, Outcome, Report
from trainwreck_templates import render
from trainwreck.markdown import GITHUB_LIMIT
from trainwreck.markdown import code_span as md_code
from trainwreck.markdown import fence as md_fence
from trainwreck.markdown import inline as md_inline
from trainwreck.markdown import split_code
from trainwreck.markdown import unping as _unping

MARKER = "<!-- trainwreck:mutation-report -->"  # finds the sticky PR comment again
COLLAPSE_FROM = 6  # from this many survivors on, each fault's survivors fold into <details>
MAX_UNCOVERED = 50  # mutants no guard reaches, listed one line each in the markdown
MAX_MESSAGE_LINES = 20  # of an error's message, in the markdown (the HTML has it all)
MAX_MESSAGE_CHARS = 2_000

LABELS = {KILLED: "killed", TIMEOUT: "timeout", SURVIVED: "survived", NO_COVERAGE: "no coverage",
          ERROR: "error", IGNORED: "ignored"}

# mutation-testing-elements report schema (package mutation-testing-report-schema, 3.x)
MTE_SCHEMA_VERSION = "2"
MTE_THRESHOLDS = {"high": 80, "low": 60}
MTE_STATUS = {KILLED: "Killed", SURVIVED: "Survived", TIMEOUT: "Timeout",
              NO_COVERAGE: "NoCoverage", ERROR: "RuntimeError", IGNORED: "Ignored"}


# ---------------------------------------------------------------- numbers shared by every format

@dataclass(frozen=True)
class Row:
    """One fault id's outcomes."""

    id: str
    counts: Counter[str]

    @property
    def caught(self) -> int:
        return self.counts[KILLED] + self.counts[TIMEOUT]

    @property
    def covered(self) -> int:
        return self.caught + self.counts[SURVIVED]

    @property
    def total(self) -> int:
        return sum(self.counts[s] for s in STATUSES)

    @property
    def percent(self) -> int | None:
        # floored, so a report never claims 100% while a mutant survives
        return self.caught * 100 // self.covered if self.covered else None


def rows(report: Report) -> list[Row]:
    """One row per fault id: the weakest-guarded faults first, then by id."""
    table = [Row(fault, counts) for fault, counts in report.by_operator().items()]
    return sorted(table, key=lambda r: (r.percent is None, r.percent or 0, r.id))


def _fault(fault_id: str) -> catalog.Fault | None:
    try:
        return catalog.get(fault_id)
    except KeyError:
        return None


def _percent_text(percent: int | None) -> str:
    return "n/a" if percent is None else f"{percent}%"


def headline(report: Report) -> str:
    """`Mutation score 71% (15 of 21 covered mutants caught)`, or why there is no score."""
    total = Row("", report.counts())
    if not report.outcomes:
        return "Mutation score n/a (no mutants)"
    if not total.covered:
        return "Mutation score n/a (no guard reached any mutant)"
    return (f"Mutation score {total.percent}% ({total.caught} of {total.covered} covered "
            f"mutant{'s' if total.covered != 1 else ''} caught)")


def cached_text(report: Report) -> str:
    """How many outcomes came from the outcome cache (nothing they depend on had changed)."""
    run = sum(1 for o in report.outcomes if o.status != IGNORED)
    return f"{report.cached} of {run} outcomes from the cache"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


# ---------------------------------------------------------------- markdown that user text cannot break
# md_code, md_fence, md_inline and _unping are trainwreck/markdown.py's, shared with the triage comment.


def html_inline(text: str) -> Markup:
    """The same markdown as HTML: code spans become `<code>`, everything else is escaped."""
    out = []
    for is_code, piece in split_code(" ".join(text.split())):
        escaped = html.escape(piece.strip() if is_code else piece)
        out.append(f"<code>{escaped}</code>" if is_code else escaped)
    return Markup("".join(out))


# ---------------------------------------------------------------- markdown

def _bar(percent: int | None, width: int = 10) -> str:
    if percent is None:
        return ""
    filled = (percent * width + 50) // 100
    return "█" * filled + "░" * (width - filled)


def _mermaid_pie(counts: Counter[str]) -> str | None:
    slices = [(LABELS[s], counts[s]) for s in STATUSES if counts[s]]
    if not slices:
        return None
    total = sum(n for _, n in slices)
    lines = ["```mermaid", "pie showData", f"    title Outcomes of {total} mutants"]
    lines += [f'    "{label}" : {n}' for label, n in slices]
    lines.append("```")
    return "\n".join(lines)


def _clip(message: str) -> str:
    lines = message.splitlines()
    clipped = "\n".join(lines[:MAX_MESSAGE_LINES])[:MAX_MESSAGE_CHARS]
    return clipped if clipped == "\n".join(lines) else clipped + "\n... (clipped; the HTML report has it all)"


def _where(outcome: Outcome) -> str:
    return f"{outcome.file}:{outcome.line}"


def _markdown_context(report: Report, diffs: int, listed: int) -> dict[str, object]:
    """What `report.md.j2` shows; only the first `diffs` survivors keep their diff and
    only the first `listed` survivors are listed, so the comment can be fitted to a size."""
    counts = report.counts()
    table = rows(report)
    total = Row("total", counts)
    outcomes = sorted(report.outcomes, key=lambda o: (o.file, o.line, o.mutant_id))
    survivors = [o for o in outcomes if o.status == SURVIVED]
    order = {row.id: index for index, row in enumerate(table)}
    survivors.sort(key=lambda o: order[o.operator])  # stable: grouped by fault, in table order
    errors = [o for o in outcomes if o.status == ERROR]
    uncovered = [o for o in outcomes if o.status == NO_COVERAGE]

    shown = 0

    def entry(outcome: Outcome, with_diff: bool) -> dict[str, object]:
        nonlocal shown
        shown += with_diff
        return {
            "id": md_code(outcome.mutant_id), "fault": md_code(outcome.operator),
            "where": md_code(_where(outcome)), "description": md_inline(outcome.description),
            "diff": md_fence(outcome.diff, "diff") if with_diff and shown <= diffs else None,
            "message": md_fence(_unping(_clip(outcome.message))) if outcome.message else None,
        }

    groups: list[dict[str, object]] = []
    for outcome in survivors[:listed]:
        if not groups or groups[-1]["id"] != outcome.operator:
            fault = _fault(outcome.operator)
            summary = Markup(f"<code>{html.escape(outcome.operator)}</code>")
            groups.append({
                "id": outcome.operator, "code": md_code(outcome.operator),
                "title": md_inline(fault.title) if fault else "(not in the fault catalog)",
                "guard": md_inline(fault.guard) if fault else None,
                "fix": md_inline(fault.fix) if fault else None,
                "summary": summary + ": " + html_inline(f"would be caught by {fault.guard}")
                if fault else summary,
                "survivors": [],
            })
        groups[-1]["survivors"].append(entry(outcome, with_diff=bool(outcome.diff)))
    for group in groups:
        group["count"] = len(group["survivors"])

    facts = [f"guard {md_code(report.guard)}", f"device {md_code(report.device)}"]
    if report.project:
        facts.insert(0, f"project {md_code(report.project)}")
    if report.shards and tuple(report.shards) != ("1/1",):
        facts.append(f"shards {', '.join(report.shards)}")
    facts.append(f"ran {_duration(report.duration)} (baseline: {report.baseline.tests} tests "
                 f"in {_duration(report.baseline.duration)})")
    if report.cached:
        facts.append(cached_text(report))

    return {
        "marker": MARKER,
        "title": headline(report),
        "facts": " · ".join(facts),
        "counts": " · ".join(f"**{counts[s]}** {LABELS[s]}" for s in STATUSES),
        "caught": (f"The score counts killed ({counts[KILLED]}) and timed-out ({counts[TIMEOUT]}) "
                   f"mutants over the {total.covered} that a guard ran against; mutants no guard "
                   f"reaches and mutants that errored are kept apart.") if total.covered else None,
        "pie": _mermaid_pie(counts),
        "rows": [{"id": md_code(r.id), "counts": [r.counts[s] for s in STATUSES],
                  "score": f"{_bar(r.percent)} {_percent_text(r.percent)}".strip()} for r in table],
        "total": {"counts": [counts[s] for s in STATUSES],
                  "score": f"{_bar(total.percent)} {_percent_text(total.percent)}".strip()},
        "labels": [LABELS[s] for s in STATUSES],
        "flaky": [md_code(name) for name in report.baseline.flaky],
        "second_looks": second_looks(report),
        "survived": len(survivors),
        "groups": groups,
        "collapse": len(survivors) >= COLLAPSE_FROM,
        "left_out": len(survivors) - min(listed, len(survivors)),
        "errors": [entry(o, with_diff=False) for o in errors],
        "collapse_errors": len(errors) >= COLLAPSE_FROM,
        "uncovered": [{"fault": md_code(o.operator), "where": md_code(_where(o)),
                       "description": md_inline(o.description)} for o in uncovered[:MAX_UNCOVERED]],
        "uncovered_count": len(uncovered),
        "ignored": [{"fault": md_code(o.operator), "where": md_code(_where(o)),
                     "description": md_inline(o.description), "why": md_inline(o.message or "")}
                    for o in outcomes if o.status == IGNORED],
        "diffs_left_out": shown > diffs,
    }


def render_markdown(report: Report, *, limit: int | None = GITHUB_LIMIT) -> str:
    """The report as GitHub markdown (a PR comment or a job summary), at most `limit` characters.

    When the whole report is too long, diffs are dropped from the last survivors first, then
    survivors from the end of the list, so the markdown stays well formed (never cut mid-fence).
    Only a report whose summary alone is over the limit comes back longer.
    """
    survivors = report.counts()[SURVIVED]

    def body(diffs: int, listed: int) -> str:
        return render("report.md.j2", **_markdown_context(report, diffs, listed))

    text = body(survivors, survivors)
    if limit is None or len(text) <= limit:
        return text
    fits = _largest(lambda k: len(body(k, survivors)) <= limit, survivors)
    if fits is not None:
        return body(fits, survivors)
    fits = _largest(lambda k: len(body(0, k)) <= limit, survivors)
    return body(0, fits or 0)


def _largest(ok, high: int) -> int | None:
    """The largest k in [0, high] with ok(k), for ok monotone (true up to some k); None if none."""
    if not ok(0):
        return None
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if ok(middle):
            low = middle
        else:
            high = middle - 1
    return low


# ---------------------------------------------------------------- HTML

def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, text) per diff line: the two header lines, hunk headers, additions, deletions."""
    out = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
            kind = "hunk"
        elif not in_hunk or line.startswith("\\"):
            kind = "meta"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


def second_looks(report: Report) -> list[str]:
    """Sentences on the verdicts that needed a second run to be right (empty when none did)."""
    order = sum(1 for o in report.outcomes if o.note and "collection order" in o.note)
    alone = sum(1 for o in report.outcomes if o.note and "alone" in o.note)
    said = []
    if order:
        said.append(f"{order} kill{'s' if order != 1 else ''} re-judged in collection order: run "
                    "fastest first, the guard tests also fail on the unmutated code (they share state).")
    if alone:
        were = "were" if alone != 1 else "was"
        said.append(f"{alone} mutant{'s' if alone != 1 else ''} timed out or crashed beside another "
                    f"mutant and {were} run again alone; the report gives that run's outcome.")
    return said


def _html_mutant(outcome: Outcome) -> dict[str, object]:
    fault = _fault(outcome.operator)
    return {
        "id": outcome.mutant_id, "fault": outcome.operator, "status": outcome.status,
        "label": LABELS.get(outcome.status, outcome.status), "where": _where(outcome),
        "file": outcome.file, "line": outcome.line,
        "description": html_inline(outcome.description), "test": outcome.test,
        "message": outcome.message + (f" ({outcome.note})" if outcome.note else "") if outcome.message
        else outcome.note, "duration": f"{outcome.duration:.2f}s",
        "diff": _diff_lines(outcome.diff),
        "guard": html_inline(fault.guard) if fault else None,
        "fix": html_inline(fault.fix) if fault else None,
    }


def _segments(counts: Counter[str]) -> list[dict[str, object]]:
    total = sum(counts[s] for s in STATUSES)
    return [{"status": s, "label": LABELS[s], "count": counts[s],
             "width": f"{100 * counts[s] / total:.3f}"} for s in STATUSES if counts[s]]


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, a few lines of inline JS)."""
    counts = report.counts()
    total = Row("total", counts)
    outcomes = sorted(report.outcomes, key=lambda o: (o.file, o.line, o.operator, o.mutant_id))
    table = []
    for row in rows(report):
        fault = _fault(row.id)
        table.append({"id": row.id, "title": fault.title if fault else "",
                      "counts": {s: row.counts[s] for s in STATUSES}, "total": row.total,
                      "percent": row.percent, "score": _percent_text(row.percent),
                      "segments": _segments(row.counts)})
    return render(
        "report.html.j2",
        title=headline(report), project=report.project, guard=report.guard, device=report.device,
        shards=", ".join(report.shards), duration=_duration(report.duration),
        baseline=report.baseline, baseline_duration=_duration(report.baseline.duration),
        percent=total.percent, score=_percent_text(total.percent), caught=total.caught,
        covered=total.covered, total=total.total,
        counts=[{"status": s, "label": LABELS[s], "count": counts[s]} for s in STATUSES],
        segments=_segments(counts), labels=[(s, LABELS[s]) for s in STATUSES], rows=table,
        survivors=[_html_mutant(o) for o in outcomes if o.status == SURVIVED],
        errors=[_html_mutant(o) for o in outcomes if o.status == ERROR],
        mutants=[_html_mutant(o) for o in outcomes],
        flaky=list(report.baseline.flaky), cached=cached_text(report) if report.cached else None,
    )


# ---------------------------------------------------------------- the report's own JSON

def to_json(report: Report) -> str:
    """The report's versioned JSON (`trainwreck.report/1`), indented for people and diffs."""
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"


def from_file(path: str | Path) -> Report:
    """Read a report written by `to_json`; a missing, unreadable or foreign file is a UsageError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a trainwreck report (not UTF-8 text)") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read the report ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not a trainwreck report (invalid JSON at line {error.lineno}: "
                         f"{error.msg})") from None
    try:
        report = Report.from_json(data, name=str(path))
    except UsageError as error:
        raise UsageError(" ".join(str(error).split())) from None
    except (ValueError, AttributeError) as error:
        raise UsageError(" ".join(f"{path}: malformed trainwreck report ({error})".split())) from None
    for outcome in report.outcomes:
        if outcome.status not in STATUSES:
            raise UsageError(f"{path}: malformed trainwreck report (mutant {outcome.mutant_id} has "
                             f"unknown status {outcome.status!r})")
    return report


# ---------------------------------------------------------------- mutation-testing-elements

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_MTE_LINE_BREAK = re.compile("\r\n|[\r\n\u2028\u2029]")  # the line breaks the MTE viewer counts
_WORD = re.compile(r"[\w.]")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    body: tuple[tuple[str, str], ...]  # (" " | "-" | "+", line with its newline)


def _lines(text: str) -> list[str]:
    """Split after each "\\n" (the only line break mutant diffs count), keeping the newlines."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def parse_hunks(diff: str) -> list[Hunk]:
    """The hunks of a one-file unified diff; malformed trailing text is ignored."""
    hunks: list[Hunk] = []
    lines = _lines(diff)
    index = 0
    while index < len(lines):
        match = _HUNK.match(lines[index])
        index += 1
        if not match:
            continue
        old_count = int(match.group(2)) if match.group(2) is not None else 1
        new_count = int(match.group(4)) if match.group(4) is not None else 1
        body: list[tuple[str, str]] = []
        while index < len(lines) and (old_count > 0 or new_count > 0 or lines[index].startswith("\\")):
            line = lines[index]
            index += 1
            if line.startswith("\\"):
                if body:  # "\ No newline at end of file": the line before had no newline
                    tag, text = body[-1]
                    body[-1] = (tag, text[:-1] if text.endswith("\n") else text)
                continue
            tag, text = (line[0], line[1:]) if line[0] in " -+" else (" ", line)
            if tag in " -":
                old_count -= 1
            if tag in " +":
                new_count -= 1
            body.append((tag, text))
        hunks.append(Hunk(int(match.group(1)), int(match.group(2) or 1), tuple(body)))
    return hunks


def _patch(source: str, diff: str) -> tuple[int, int, str] | None:
    """Where the diff changes `source`: (start, end, new text of source[start:end]), or None
    when the diff does not apply to this source."""
    hunks = parse_hunks(diff)
    if not hunks:
        return None
    lines = _lines(source)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    out: list[str] = []
    first = cursor = hunks[0].old_start if hunks[0].old_count == 0 else hunks[0].old_start - 1
    for hunk in hunks:
        begin = hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1
        if begin < cursor or begin > len(lines):
            return None
        out.extend(lines[cursor:begin])
        cursor = begin
        for tag, text in hunk.body:
            if tag == "+":
                out.append(text)
                continue
            if cursor >= len(lines) or lines[cursor] != text:
                return None
            cursor += 1
            if tag == " ":
                out.append(text)
    return starts[first], starts[cursor], "".join(out)


def change(source: str, diff: str) -> tuple[int, int, str] | None:
    """The span of `source` the diff replaces, as a reader would mark it: (start, end, replacement),
    offsets into `source`; None when the diff does not apply or changes nothing.

    The span is the smallest one, except that a pure deletion or insertion is slid to whole lines
    where it can be, and a change that cuts into a word takes the whole word.
    """
    patched = _patch(source, diff)
    if patched is None:
        return None
    start, end, new = patched
    old = source[start:end]
    if old == new:
        return None
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    old_start, old_end = start + prefix, end - suffix
    replacement = new[prefix:len(new) - suffix]
    if not replacement:
        old_start, old_end = _slide_deletion(source, old_start, old_end)
    elif old_start == old_end:
        old_start, replacement = _slide_insertion(source, old_start, replacement)
        old_end = old_start
    # `relu` -> `relu_` reads better as the word `F.relu` replaced by `F.relu_` than as an
    # inserted underscore
    removed = source[old_start:old_end]
    head, tail = old_start, old_end
    if _WORD.match(removed[:1]) or _WORD.match(replacement[:1]):
        while head > 0 and _WORD.match(source[head - 1]):
            head -= 1
    if _WORD.match(removed[-1:]) or _WORD.match(replacement[-1:]):
        while tail < len(source) and _WORD.match(source[tail]):
            tail += 1
    return head, tail, source[head:old_start] + replacement + source[old_end:tail]


_SLIDE = 400  # how far a deletion or insertion may move to reach line boundaries


def _line_start(source: str, offset: int) -> bool:
    return offset == 0 or source[offset - 1] == "\n"


def _boundaries(source: str, start: int, end: int) -> int:
    """How well [start, end) sits on lines: whole lines best, then indentation to line end."""
    line = source.rfind("\n", 0, start) + 1
    after_indent = not source[line:start].strip(" \t") and not source[start:start + 1].isspace()
    at_end = end == len(source) or source[end] in "\r\n"
    return 3 * _line_start(source, start) + 3 * _line_start(source, end) + after_indent + at_end


def _slide_deletion(source: str, start: int, end: int) -> tuple[int, int]:
    """Of the equal ways to delete source[start:end] (shifted along repeated text), one that sits
    better on line boundaries, if there is one."""
    best, best_score = (start, end), _boundaries(source, start, end)
    for _ in range(_SLIDE):
        if start == 0 or source[start - 1] != source[end - 1]:
            break
        start, end = start - 1, end - 1  # to the leftmost equal deletion, then right along all
    for _ in range(2 * _SLIDE):
        if (score := _boundaries(source, start, end)) > best_score:
            best, best_score = (start, end), score
        if end >= len(source) or source[start] != source[end]:
            break
        start, end = start + 1, end + 1
    return best


def _slide_insertion(source: str, at: int, text: str) -> tuple[int, str]:
    """Of the equal places to insert `text`, one that inserts whole lines, if there is one."""

    def score(at: int, text: str) -> int:
        return 2 * (_line_start(source, at) and text.endswith("\n")) + _line_start(source, at)

    best, best_score = (at, text), score(at, text)
    for _ in range(_SLIDE):
        if at == 0 or source[at - 1] != text[-1]:
            break
        at, text = at - 1, source[at - 1] + text[:-1]  # to the leftmost equal insertion
    for _ in range(2 * _SLIDE):
        if (points := score(at, text)) > best_score:
            best, best_score = (at, text), points
        if at >= len(source) or source[at] != text[0]:
            break
        at, text = at + 1, text[1:] + source[at]
    return best


class _Positions:
    """Offsets to the viewer's positions: 1-based lines and 1-based UTF-16 columns."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0] + [m.end() for m in _MTE_LINE_BREAK.finditer(source)]

    def __call__(self, offset: int) -> dict[str, int]:
        line = bisect.bisect_right(self.starts, offset)
        before = self.source[self.starts[line - 1]:offset]
        return {"line": line, "column": len(before.encode("utf-16-le")) // 2 + 1}

    def line_span(self, line: int) -> tuple[int, int]:
        """Offsets of a line's first character and of its end (before its line break)."""
        line = max(1, min(line, len(self.starts)))
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.source)
        text = self.source[start:end]
        return start, start + len(text.rstrip("\r\n\u2028\u2029"))


def _mte_mutant(outcome: Outcome, source: str, positions: _Positions) -> dict[str, object]:
    mutant: dict[str, object] = {"id": outcome.mutant_id, "mutatorName": outcome.operator}
    found = change(source, outcome.diff) if outcome.diff else None
    if found is not None:
        start, end, replacement = found
        mutant["replacement"] = replacement
    else:  # the diff does not fit this source: point at the mutant's line, without replacement
        start, end = positions.line_span(outcome.line)
    mutant["location"] = {"start": positions(start), "end": positions(end)}
    mutant["status"] = MTE_STATUS[outcome.status]
    reason = outcome.message
    if reason is None and outcome.status == TIMEOUT and outcome.test:
        reason = f"timed out in {outcome.test}"
    if reason:
        mutant["statusReason"] = reason
    mutant["description"] = outcome.description
    if outcome.status == KILLED and outcome.test:
        mutant["killedBy"] = [outcome.test]
    mutant["testsCompleted"] = outcome.tests_run
    # the schema wants the net test time, without the framework's overhead: the guard's own
    # seconds where the report has them (older reports only have the whole duration)
    mutant["duration"] = round((outcome.guard_seconds or outcome.duration) * 1000)
    return mutant


def _source_from_diffs(outcomes: list[Outcome]) -> str:
    """A stand-in for a file whose text the report lacks: the lines its diffs show, in place."""
    known: dict[int, str] = {}
    for outcome in outcomes:
        for hunk in parse_hunks(outcome.diff):
            line = hunk.old_start if hunk.old_count else hunk.old_start + 1
            for tag, text in hunk.body:
                if tag != "+":
                    known.setdefault(line, text)
                    line += 1
    last = max(known, default=0)
    return "".join(known.get(line, "\n") for line in range(1, last + 1))


def _test_files(outcomes: list[Outcome]) -> dict[str, dict[str, object]]:
    """The killing tests, by file (a pytest node id's file part; "" for tests without one)."""
    files: dict[str, dict[str, dict[str, str]]] = {}
    for outcome in outcomes:
        if outcome.status == KILLED and outcome.test:
            file, _, name = outcome.test.partition("::") if "::" in outcome.test \
                else ("", "", outcome.test)
            files.setdefault(file, {})[outcome.test] = {"id": outcome.test, "name": name}
    return {file: {"tests": list(tests.values())} for file, tests in sorted(files.items())}


def _version() -> str | None:
    try:
        return metadata.version("trainwreck")
    except metadata.PackageNotFoundError:
        return None


def to_mutation_testing_elements(report: Report, *, high: int = MTE_THRESHOLDS["high"],
                                 low: int = MTE_THRESHOLDS["low"]) -> dict[str, object]:
    """The report in the mutation-testing-elements schema (version 2), for Stryker's HTML viewer
    and dashboard. Locations are 1-based lines and columns, the end exclusive."""
    by_file: dict[str, list[Outcome]] = {}
    for outcome in sorted(report.outcomes, key=lambda o: (o.file, o.line, o.operator, o.mutant_id)):
        by_file.setdefault(outcome.file, []).append(outcome)
    files: dict[str, dict[str, object]] = {}
    for path in sorted(set(report.sources) | set(by_file)):
        outcomes = by_file.get(path, [])
        source = report.sources.get(path)
        if source is None:
            source = _source_from_diffs(outcomes)
        positions = _Positions(source)
        files[path] = {"language": "python", "source": source,
                       "mutants": [_mte_mutant(o, source, positions) for o in outcomes]}
    framework: dict[str, object] = {"name": "trainwreck"}
    if (version := _version()) is not None:
        framework["version"] = version
    result: dict[str, object] = {
        "schemaVersion": MTE_SCHEMA_VERSION,
        "thresholds": {"high": high, "low": low},
        "files": files,
        "framework": framework,
        "config": {"project": report.project, "guard": report.guard, "device": report.device,
                   "shards": list(report.shards), "flaky": list(report.baseline.flaky)},
    }
    test_files = _test_files(list(report.outcomes))
    if test_files:
        result["testFiles"] = test_files
    return result


# ---------------------------------------------------------------- files

def write(report: Report, json_path: str | Path | None = None,
          markdown_path: str | Path | None = None, html_path: str | Path | None = None,
          mte_path: str | Path | None = None) -> list[Path]:
    """Write the requested renderings (parent folders created); return the paths written."""
    jobs = [
        (json_path, lambda: to_json(report)),
        (markdown_path, lambda: render_markdown(report)),
        (html_path, lambda: render_html(report)),
        (mte_path, lambda: json.dumps(to_mutation_testing_elements(report), indent=2,
                                      ensure_ascii=False) + "\n"),
    ]
    written: list[Path] = []
    for path, make in jobs:
        if path is None:
            continue
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(make(), encoding="utf-8")
        except OSError as error:
            raise UsageError(f"{path}: cannot write the report ({error.strerror or error})") from None
        written.append(path)
    return written
