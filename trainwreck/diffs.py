"""Unified diffs, read one way everywhere: a PR's diff (triage), `git diff` for `--since`
(the campaign) and a mutant's own diff (the reports).

unidiff does the parsing (git's extended headers, renames, new and deleted files, binary notes,
"\\ No newline at end of file"); this module gives its result the shape the rest of the code
uses: hunks of lines, each with its line numbers on the old and the new side.
"""

from __future__ import annotations

from dataclasses import dataclass

import unidiff
from unidiff.constants import LINE_TYPE_NO_NEWLINE

from trainwreck.errors import BadInputError

REMOVED, ADDED, CONTEXT = "-", "+", " "


class DiffError(BadInputError):
    """The text is not a unified diff."""


@dataclass(frozen=True)
class Line:
    """One line of a hunk: its kind (`REMOVED`, `ADDED` or `CONTEXT`), its text with its own
    line ending (none where the file ends without one), and its number on each side."""

    kind: str
    text: str
    old: int | None
    new: int | None


@dataclass(frozen=True)
class Hunk:
    """One hunk of one file. `path` is the file's name after the change (before it, for a deleted
    file), without git's a/ and b/ prefixes."""

    path: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str
    lines: tuple[Line, ...]
    file_deleted: bool = False

    @property
    def old(self) -> list[str]:
        """The old side: context and removed lines, without line endings."""
        return [line.text.rstrip("\r\n") for line in self.lines if line.kind != ADDED]

    @property
    def new(self) -> list[str]:
        """The new side: context and added lines, without line endings."""
        return [line.text.rstrip("\r\n") for line in self.lines if line.kind != REMOVED]

    @property
    def removed(self) -> list[str]:
        return [line.text.rstrip("\r\n") for line in self.lines if line.kind == REMOVED]

    @property
    def added(self) -> list[str]:
        return [line.text.rstrip("\r\n") for line in self.lines if line.kind == ADDED]


def parse(text: str) -> list[Hunk]:
    """Every hunk of a unified diff (git's or plain `diff -u`), in order; DiffError if the text
    is not one (a hunk whose line counts do not add up included)."""
    try:
        patch = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise DiffError(f"not a unified diff ({str(exc).splitlines()[0]})") from None
    hunks: list[Hunk] = []
    for patched in patch:
        path = patched.path
        for hunk in patched:
            lines: list[Line] = []
            for line in hunk:
                if line.line_type == LINE_TYPE_NO_NEWLINE:
                    if lines:  # the line before it has no line ending in its file
                        last = lines[-1]
                        lines[-1] = Line(last.kind, last.text.rstrip("\r\n"), last.old, last.new)
                    continue
                if line.line_type in (REMOVED, ADDED, CONTEXT):
                    lines.append(Line(line.line_type, line.value, line.source_line_no, line.target_line_no))
            header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
            hunks.append(
                Hunk(
                    path,
                    hunk.source_start,
                    hunk.source_length,
                    hunk.target_start,
                    hunk.target_length,
                    header,
                    tuple(lines),
                    patched.is_removed_file,
                )
            )
    return hunks


def changed_lines(text: str) -> dict[str, set[int]]:
    """Per file, the new-side numbers of the lines a diff adds or changes; a file whose change
    only removes lines gets the line where the removal was (so that code there counts as changed).
    Deleted files are left out."""
    changed: dict[str, set[int]] = {}
    for hunk in parse(text):
        if hunk.file_deleted:
            continue
        lines = {line.new for line in hunk.lines if line.kind == ADDED and line.new is not None}
        if not lines and any(line.kind == REMOVED for line in hunk.lines):
            lines = {max(hunk.new_start, 1)}
        changed.setdefault(hunk.path, set()).update(lines)
    return changed
