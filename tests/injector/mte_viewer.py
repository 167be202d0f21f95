"""The mutation-testing-elements format's own rules, for judging our reports: its JSON schema,
and what its viewer does with a mutant when a reader opens it (a line for line transliteration
of the viewer's TypeScript, kept apart from `injector.report.mte` so the tests judge the report
by the viewer's rules, not by the report's own idea of them).

Sources (stryker-mutator/mutation-testing-elements, Apache-2.0, read at commit
1d010ffe1cf973febe405d73a0187b9e089f47cc):
- packages/metrics/src/helpers/text.ts: `computeLineStarts`
- packages/metrics/src/model/source-file.ts: `getLines` (the original rows of the diff view)
- packages/metrics/src/model/file-under-test-model.ts: `getMutationLines` (the mutated rows)
- packages/elements/src/lib/code-helpers.ts: `findDiffIndices`, `transformHighlightedLines`
- packages/elements/src/components/file/file.component.ts: `#toggleMutant`,
  `#highlightedReplacementRows`

Prism's syntax highlighting is left out: its spans carry no id, so they never decide whether the
viewer's `diff-focus` span finds its opening tag, and an HTML entity counts as one character,
so offsets are character offsets into the plain text.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema


class ViewerError(Exception):
    """The viewer would throw (the reader sees no mutated lines)."""


# The line breaks `computeLineStarts` walks over: CRLF as one, then CR, LF, U+2028 and U+2029.
_BREAK = re.compile("\r\n|[\r\n\u2028\u2029]")


@functools.lru_cache(maxsize=64)
def compute_line_starts(text: str) -> tuple[int, ...]:
    """`computeLineStarts`: index 1 is line 1's start (the viewer's lines are 1-based). The
    viewer walks the text a character at a time; a search for the same breaks gives the same
    starts, and every mutant of a file asks for those of the one text."""
    return (0, 0, *(match.end() for match in _BREAK.finditer(text)))


def _at(line_map: tuple[int, ...], index: int) -> int | None:
    return line_map[index] if index < len(line_map) else None  # JS: undefined past the end


def _substring(text: str, start: int, end: int | None) -> str:
    return text[start:] if end is None else text[start:end]


def js_index(text: str, column: int) -> int:
    """JS strings count UTF-16 units: the Python index `column` units into `text`."""
    index = 0
    while column > 0 and index < len(text):
        column -= 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return index + max(column, 0)


def offset(source: str, position: dict) -> int:
    """The Python index of a location's position (1-based line, 1-based UTF-16 column)."""
    start = compute_line_starts(source)[position["line"]]
    return start + js_index(source[start:], position["column"] - 1)


def mutated_file(source: str, mutant: dict) -> str:
    """The whole file with the mutant's replacement at its location (the end exclusive)."""
    location = mutant["location"]
    begin, end = offset(source, location["start"]), offset(source, location["end"])
    if begin > end:
        raise ViewerError(f"location ends before it starts: {location}")
    return source[:begin] + mutant["replacement"] + source[end:]


def original_lines(source: str, location: dict) -> str:
    """`getLines`: the source from the start line's start to the end line's end."""
    line_map = compute_line_starts(source)
    return _substring(source, line_map[location["start"]["line"]], _at(line_map, location["end"]["line"] + 1))


def mutated_lines(source: str, mutant: dict) -> str:
    """`getMutationLines`: those lines with the replacement (or the description) in place."""
    line_map = compute_line_starts(source)
    location = mutant["location"]
    start = line_map[location["start"]["line"]]
    start_of_end_line = line_map[location["end"]["line"]]
    end = _at(line_map, location["end"]["line"] + 1)
    shown = mutant.get("replacement")
    if shown is None:
        shown = mutant.get("description") or mutant["mutatorName"]
    head = source[start : start + js_index(source[start:], location["start"]["column"] - 1)]
    tail_from = start_of_end_line + js_index(source[start_of_end_line:], location["end"]["column"] - 1)
    return head + shown + _substring(source, tail_from, end)


def _whitespace(ch: str | None) -> bool:
    return ch in ("\n", " ", "\t")


def find_diff_indices(original: str, mutated: str) -> tuple[int, int]:
    """`findDiffIndices`, reading past either end as JS does (undefined)."""

    def at(text: str, index: int) -> str | None:
        return text[index] if 0 <= index < len(text) else None

    focus_from, focus_to = 0, len(mutated) - 1
    while at(original, focus_from) == at(mutated, focus_from) and focus_from < len(mutated):
        focus_from += 1
    length_diff = len(original) - len(mutated)
    while at(original, focus_to + length_diff) == at(mutated, focus_to) and focus_to > focus_from:
        focus_to -= 1
    if focus_to == focus_from and not _whitespace(at(mutated, focus_from - 1)):
        focus_from -= 1
    focus_to += 1
    part = mutated[max(focus_from, 0) : focus_to]
    for keyword in ("true", "false"):
        if part == keyword[:-1] and keyword.endswith(at(mutated, focus_to) or "\0"):
            focus_to += 1
        if part == keyword[1:] and keyword.startswith(at(mutated, focus_from - 1) or "\0"):
            focus_from -= 1
    return focus_from, focus_to


@dataclass(frozen=True)
class Opened:
    """What the reader sees on opening a mutant: the old rows marked, the new rows added."""

    old_rows: tuple[int, int]  # first and last line marked as removed (1-based)
    new_rows: tuple[str, ...]  # the added rows, as plain text
    focus: str  # the highlighted part of the added rows


def open_mutant(source: str, mutant: dict) -> Opened:
    """`#toggleMutant` on a mutant of `source`; ViewerError where the viewer throws."""
    location = mutant["location"]
    rows = source.split("\n")  # transformHighlightedLines makes one row per "\n"
    if location["end"]["line"] > len(rows) or location["start"]["line"] < 1:
        raise ViewerError("Cannot read properties of null (reading 'insertAdjacentHTML')")
    mutated = mutated_lines(source, mutant).rstrip()  # trimEnd
    original = original_lines(source, location).rstrip()
    focus_from, focus_to = find_diff_indices(original, mutated)
    # transformHighlightedLines with the focus visitor: the visitor only sees characters that
    # are not line breaks; it opens `diff-focus` at focus_from, else closes it at focus_to
    active = False
    focus = []
    for offset, ch in enumerate(mutated):
        if ch in "\r\n":
            continue
        if offset == focus_from:
            active = True
        elif offset == focus_to:
            if not active:
                raise ViewerError("Cannot find corresponding opening tag for </span>")
            active = False
        if active:
            focus.append(ch)
    return Opened((location["start"]["line"], location["end"]["line"]), tuple(mutated.split("\n")), "".join(focus))


SCHEMA = Path(__file__).parent / "mte" / "mutation-testing-report-schema.json"


def validate(doc: dict) -> None:
    """Check a report against the format's official JSON schema (vendored: mte/README.md), as it
    will be written and read: through JSON."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(json.loads(json.dumps(doc)), schema, cls=jsonschema.Draft7Validator)
