"""The report in the mutation-testing-elements JSON schema, which Stryker's HTML viewer and
dashboard read."""

from __future__ import annotations

import bisect
import json
import re
from importlib import metadata

from injector.outcomes import ERROR, IGNORED, KILLED, NO_COVERAGE, SURVIVED, TIMEOUT, Outcome, Report
from injector.report.diffs import change, parse_hunks

# mutation-testing-elements report schema (package mutation-testing-report-schema, 3.x)
MTE_SCHEMA_VERSION = "2"
MTE_THRESHOLDS = {"high": 80, "low": 60}
MTE_STATUS: dict[str, str] = {
    KILLED: "Killed",
    SURVIVED: "Survived",
    TIMEOUT: "Timeout",
    NO_COVERAGE: "NoCoverage",
    ERROR: "RuntimeError",
    IGNORED: "Ignored",
}

_MTE_LINE_BREAK = re.compile("\r\n|[\r\n\u2028\u2029]")  # the line breaks the MTE viewer counts


class _Positions:
    """Offsets to the viewer's positions: 1-based lines and 1-based UTF-16 columns."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0] + [m.end() for m in _MTE_LINE_BREAK.finditer(source)]

    def __call__(self, offset: int) -> dict[str, int]:
        line = bisect.bisect_right(self.starts, offset)
        before = self.source[self.starts[line - 1] : offset]
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
    shown = _shown(source, positions, *found) if found is not None else None
    if shown is not None:
        start, end, replacement = shown
        mutant["replacement"] = replacement
    elif found is not None:
        # No location lets the viewer show this change (a moved statement whose new first
        # line is blank, say): mark the changed lines; the viewer shows the description there.
        start, end = _trimmed(source, found[0], found[1])
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
    if (covered := _covered_by(outcome)) is not None:
        mutant["coveredBy"] = covered
    mutant["testsCompleted"] = outcome.tests_run
    # the schema wants the net test time, without the framework's overhead: the guard's own
    # seconds where the report has them (older reports only have the whole duration)
    mutant["duration"] = round((outcome.guard_seconds or outcome.duration) * 1000)
    return mutant


def _covered_by(outcome: Outcome) -> list[str] | None:
    """The guard tests that run the mutated lines (from the baseline's reach); None if unknown."""
    covered = list(outcome.covered_by)
    if outcome.status == KILLED and outcome.test and outcome.test not in covered:
        covered.append(outcome.test)  # what killed it ran it (reports older than `covered_by`)
    if covered or outcome.status == NO_COVERAGE:
        return covered
    return None


# ---- what the viewer can show
# When a reader opens a mutant, the viewer (packages/elements, file.component.ts
# `#highlightedReplacementRows`) takes the mutant's whole lines, start line to end line, before
# and after the replacement, trims their ends, and finds the changed part (code-helpers.ts
# `findDiffIndices`). It then walks the new lines and opens a highlight at the first changed
# character, or else closes it at the character after the last, visiting every character but
# line breaks. A close with no open throws "Cannot find corresponding opening tag for </span>"
# and the mutated lines never appear. That happens when the first changed character is a line
# break (a blank line comes first) or lies before the text (a top-level line is deleted).

_SEARCH_LINES = 3  # how many whole lines a location may take in, before and after the change


def _shown(source: str, positions: _Positions, start: int, end: int, replacement: str) -> tuple[int, int, str] | None:
    """The change as a location the viewer can open: the smallest one, or one widened by a few
    whole lines before or after (the same change, more context); None if none can be opened."""
    first, last = positions(start)["line"], positions(end)["line"]
    lines = len(positions.starts)
    widenings = sorted(
        ((before, after) for before in range(_SEARCH_LINES + 1) for after in range(_SEARCH_LINES + 1)),
        key=lambda w: (sum(w), w[0]),
    )
    for before, after in widenings:
        if first - before < 1 or last + after > lines:
            continue
        # widen to the end of an earlier line and to the start of a later one, so what the file
        # view underlines still begins and ends where the change does
        head = start if not before else positions.line_span(first - before)[1]
        tail = end if not after else positions.starts[last + after - 1]
        wider = source[head:start] + replacement + source[end:tail]
        if _opens(source, positions, head, tail, wider):
            return head, tail, wider
    return None


def _opens(source: str, positions: _Positions, start: int, end: int, replacement: str) -> bool:
    """Whether the viewer's diff view can open a mutant with this location and replacement."""
    first, last = positions(start)["line"], positions(end)["line"]
    begin = positions.starts[first - 1]
    stop = positions.starts[last] if last < len(positions.starts) else len(source)
    original = source[begin:stop].rstrip()
    mutated = (source[begin:start] + replacement + source[end:stop]).rstrip()
    focus_from, focus_to = _diff_indices(original, mutated)

    def visited(index: int) -> bool:
        return 0 <= index < len(mutated) and mutated[index] not in "\r\n"

    return not visited(focus_to) or (visited(focus_from) and focus_from <= focus_to)


def _diff_indices(original: str, mutated: str) -> tuple[int, int]:
    """The viewer's `findDiffIndices`: where the highlight opens and closes in `mutated`."""

    def at(text: str, index: int) -> str:
        return text[index] if 0 <= index < len(text) else ""  # JS reads undefined past the ends

    focus_from, focus_to = 0, len(mutated) - 1
    while focus_from < len(mutated) and at(original, focus_from) == at(mutated, focus_from):
        focus_from += 1
    shift = len(original) - len(mutated)
    while focus_to > focus_from and at(original, focus_to + shift) == at(mutated, focus_to):
        focus_to -= 1
    if focus_to == focus_from and at(mutated, focus_from - 1) not in ("\n", " ", "\t"):
        focus_from -= 1
    focus_to += 1
    part = mutated[max(focus_from, 0) : focus_to]
    for keyword in ("true", "false"):  # the viewer's own exception for JS booleans
        if part == keyword[:-1] and at(mutated, focus_to) and keyword.endswith(at(mutated, focus_to)):
            focus_to += 1
        if part == keyword[1:] and at(mutated, focus_from - 1) and keyword.startswith(at(mutated, focus_from - 1)):
            focus_from -= 1
    return focus_from, focus_to


def _trimmed(source: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) without the blank space at either end (the changed lines' text)."""
    while start < end and source[start].isspace():
        start += 1
    while end > start and source[end - 1].isspace():
        end -= 1
    return start, end


def _source_from_diffs(outcomes: list[Outcome]) -> str:
    """A stand-in for a file whose text the report lacks: the lines its diffs show, in place."""
    known: dict[int, str] = {}
    for outcome in outcomes:
        for hunk in parse_hunks(outcome.diff):
            line = hunk.old_start if hunk.old_count else hunk.old_start + 1
            for entry in hunk.lines:
                if entry.kind != "+":
                    known.setdefault(line, entry.text)
                    line += 1
    last = max(known, default=0)
    return "".join(known.get(line, "\n") for line in range(1, last + 1))


def _test_files(report: Report) -> dict[str, dict[str, object]]:
    """Every guard test, by file (a pytest node id's file part; "" for tests without one), so
    the viewer's Tests tab can say which mutants each covers and kills."""
    names = list(report.baseline.names)
    for outcome in report.outcomes:
        names += outcome.covered_by
        if outcome.test:
            names.append(outcome.test)
    files: dict[str, dict[str, dict[str, str]]] = {}
    for test in dict.fromkeys(names):
        file, _, name = test.partition("::") if "::" in test else ("", "", test)
        files.setdefault(file, {})[test] = {"id": test, "name": name}
    return {file: {"tests": list(tests.values())} for file, tests in sorted(files.items())}


def _version() -> str | None:
    try:
        return metadata.version("trainwreck")
    except metadata.PackageNotFoundError:
        return None


def to_mutation_testing_elements(
    report: Report, *, high: int = MTE_THRESHOLDS["high"], low: int = MTE_THRESHOLDS["low"]
) -> dict[str, object]:
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
        files[path] = {
            "language": "python",
            "source": source,
            "mutants": [_mte_mutant(o, source, positions) for o in outcomes],
        }
    framework: dict[str, object] = {"name": "trainwreck"}
    if (version := _version()) is not None:
        framework["version"] = version
    result: dict[str, object] = {
        "schemaVersion": MTE_SCHEMA_VERSION,
        "thresholds": {"high": high, "low": low},
        "files": files,
        "framework": framework,
        "config": {
            "project": report.project,
            "guard": report.guard,
            "device": report.device,
            "shards": list(report.shards),
            "flaky": list(report.baseline.flaky),
        },
    }
    test_files = _test_files(report)
    if test_files:
        result["testFiles"] = test_files
    return result


def mte_text(report: Report) -> str:
    """`to_mutation_testing_elements` as the JSON file the viewer loads."""
    return json.dumps(to_mutation_testing_elements(report), indent=2, ensure_ascii=False) + "\n"
