"""Mutants: concrete, reviewable changes to a source file, with stable ids and exact diffs.

A mutant is a small set of text edits on one file. Operators find where a fault can be injected
by reading the concrete syntax tree once, then describe the change as edits on the original
text, so the user's formatting and comments survive and the diff shows only the change.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the characters `[start, end)` of the original source with `text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Mutant:
    """One injected fault in one file."""

    id: str
    operator: str
    file: str
    line: int
    description: str
    diff: str
    edits: tuple[Edit, ...] = field(repr=False)
    # Where it lives at run time: the outermost function holding every edit, as Python names
    # it (`Trainer.fit`, the code object's co_qualname) and its first line (decorators
    # included), or None for code that runs at import; `in_main` for `if __name__ == "__main__":`.
    function: str | None = None
    function_line: int | None = None
    in_main: bool = False
    # Why the user has silenced it (`# trainwreck: ignore[...]` on its line, or `skip-mutants`):
    # it is still listed and reported, as "ignored", but never run or scored.
    ignored: str | None = None

    def apply(self, source: str) -> str:
        """Return `source` (the file this mutant was made from) with the mutation applied."""
        return apply_edits(source, self.edits)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "operator": self.operator,
            "file": self.file,
            "line": self.line,
            "description": self.description,
            "diff": self.diff,
            "function": self.function,
            "ignored": self.ignored,
        }


def apply_edits(source: str, edits: tuple[Edit, ...]) -> str:
    """Apply non-overlapping edits to `source`."""
    parts: list[str] = []
    cursor = 0
    for edit in sorted(edits):
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        parts.append(source[cursor : edit.start])
        parts.append(edit.text)
        cursor = edit.end
    parts.append(source[cursor:])
    return "".join(parts)


def mutant_id(file: str, operator: str, scope: str, edits: tuple[Edit, ...], source: str, ordinal: int) -> str:
    """A content-based id: the same source gives the same ids on every run and machine.

    It hashes what changes and where it lives (file, enclosing scope, the replaced and the new
    text), not line numbers, so an unrelated edit elsewhere in the file keeps the id.
    """
    digest = hashlib.blake2b(digest_size=6)
    for piece in (file, operator, scope, str(ordinal)):
        digest.update(piece.encode())
        digest.update(b"\0")
    for edit in sorted(edits):
        digest.update(source[edit.start : edit.end].encode())
        digest.update(b"\1")
        digest.update(edit.text.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class LineIndex:
    """Maps between character offsets and 1-based line numbers of one source text."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0]
        position = source.find("\n")
        while position != -1:
            self.starts.append(position + 1)
            position = source.find("\n", position + 1)

    def offset(self, line: int, column: int) -> int:
        """Offset of a (1-based line, 0-based column) position."""
        return self.starts[line - 1] + column

    def line_of(self, offset: int) -> int:
        """1-based line that holds the character at `offset`."""
        return bisect_right(self.starts, offset)

    def line_start(self, line: int) -> int:
        return self.starts[line - 1]

    def line_end(self, line: int) -> int:
        """Offset just past the line's newline (or the end of the text)."""
        return self.starts[line] if line < len(self.starts) else len(self.source)

    def line_text(self, line: int) -> str:
        return self.source[self.line_start(line) : self.line_end(line)]


def unified_diff(source: str, edits: tuple[Edit, ...], path: str, lines: LineIndex, context: int = 3) -> str:
    """The unified diff (as `git diff` prints it) that turns `source` into the edited text.

    Built from the edits themselves rather than by comparing two whole files, so its cost
    depends on the size of the change, not of the file.
    """
    # Edits that share a line become one block: (first line, last line, the block's new lines).
    spans: list[tuple[int, int, list[Edit]]] = []
    for edit in sorted(edits):
        first = lines.line_of(edit.start)
        last = lines.line_of(max(edit.end - 1, edit.start))
        if edit.start == edit.end and edit.text.endswith("\n") and edit.start == lines.line_start(first):
            last = first - 1  # whole lines inserted before line `first`: no old line changes
        if spans and first <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(last, spans[-1][1]), spans[-1][2] + [edit])
        else:
            spans.append((first, last, [edit]))
    blocks = []
    for first, last, group in spans:
        base = lines.line_start(first)
        segment = source[base : lines.line_end(last)]
        shifted = tuple(Edit(e.start - base, e.end - base, e.text) for e in group)
        blocks.append((first, last, apply_edits(segment, shifted).splitlines(keepends=True)))

    total = len(lines.starts) - (1 if source.endswith("\n") else 0)
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    shift = 0  # how far new-file line numbers run ahead of old ones before the next hunk
    index = 0
    while index < len(blocks):
        # Blocks whose context windows touch share one hunk.
        hunk = [blocks[index]]
        index += 1
        while index < len(blocks) and blocks[index][0] - hunk[-1][1] - 1 <= 2 * context:
            hunk.append(blocks[index])
            index += 1
        start = max(1, hunk[0][0] - context)
        stop = min(total, hunk[-1][1] + context)
        body: list[str] = []
        old_count = new_count = 0
        line = start
        for first, last, new_lines in hunk:
            for same in range(line, first):
                body.append(" " + _terminated(lines.line_text(same)))
            old_count += first - line
            new_count += first - line
            body.extend("-" + _terminated(lines.line_text(old)) for old in range(first, last + 1))
            body.extend("+" + _terminated(new) for new in new_lines)
            old_count += last - first + 1
            new_count += len(new_lines)
            line = last + 1
        for same in range(line, stop + 1):
            body.append(" " + _terminated(lines.line_text(same)))
        old_count += stop + 1 - line
        new_count += stop + 1 - line
        out.append(f"@@ -{_range(start, old_count)} +{_range(start + shift, new_count)} @@\n")
        out.extend(body)
        shift += new_count - old_count
    return "".join(out)


def _terminated(text: str) -> str:
    return text if text.endswith("\n") else text + "\n\\ No newline at end of file\n"


def _range(start: int, count: int) -> str:
    if count == 0:
        return f"{start - 1},0"
    return f"{start}" if count == 1 else f"{start},{count}"
