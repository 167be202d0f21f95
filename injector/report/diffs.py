"""Where a mutant's unified diff changes its file: the diff re-parsed against the original text,
as the span a reader would mark (for viewers that take a location and a replacement)."""

from __future__ import annotations

import re

from trainwreck import diffs

_WORD = re.compile(r"[\w.]")


def _lines(text: str) -> list[str]:
    """Split after each "\\n" (the only line break mutant diffs count), keeping the newlines."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def parse_hunks(diff: str) -> list[diffs.Hunk]:
    """The hunks of a mutant's one-file diff; none when the text is not a unified diff."""
    try:
        return diffs.parse(diff)
    except diffs.DiffError:
        return []


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
        for tag, text in ((line.kind, line.text) for line in hunk.lines):
            if tag == "+":
                out.append(text)
                continue
            if cursor >= len(lines) or lines[cursor] != text:
                return None
            cursor += 1
            if tag == " ":
                out.append(text)
    return starts[first], starts[cursor], "".join(out)


def apply_diff(source: str, diff: str) -> str | None:
    """`source` with the diff applied; None when the diff does not apply to this source."""
    patched = _patch(source, diff)
    if patched is None:
        return None
    start, end, new = patched
    return source[:start] + new + source[end:]


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
    replacement = new[prefix : len(new) - suffix]
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
    after_indent = not source[line:start].strip(" \t") and not source[start : start + 1].isspace()
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
