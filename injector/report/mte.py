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
MTE_STATUS = {KILLED: "Killed", SURVIVED: "Survived", TIMEOUT: "Timeout",
              NO_COVERAGE: "NoCoverage", ERROR: "RuntimeError", IGNORED: "Ignored"}

_MTE_LINE_BREAK = re.compile("\r\n|[\r\n\u2028\u2029]")  # the line breaks the MTE viewer counts


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



def mte_text(report: Report) -> str:
    """`to_mutation_testing_elements` as the JSON file the viewer loads."""
    return json.dumps(to_mutation_testing_elements(report), indent=2, ensure_ascii=False) + "\n"
