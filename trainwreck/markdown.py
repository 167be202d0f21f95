"""Markdown that user text cannot break, and comment bodies that fit GitHub's size limit.

Every body trainwreck posts (the triage comment and the mutation report) follows these rules:
text that comes from a log, a diff or a user's project is fenced or escaped so that it cannot
close its fence, start markdown (headings, links, images, HTML) or mention (`@name`) anyone; and
a body over GitHub's limit is cut at a safe boundary (between lines, never inside a code fence,
open `<details>` blocks closed) with a note saying what was cut.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

GITHUB_LIMIT = 65_536  # GitHub refuses comment bodies longer than this many characters

ZWJ = "\u200d"  # zero-width joiner: invisible, and breaks what it sits in (a mention, a fence)
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"#(?=\d)")
_BACKTICKS = re.compile(r"`+")
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]!|~])")  # what starts markdown inside a line
# what GitHub links with no markup at all: a scheme's `://` and `www.` (the ZWJ goes in between)
_AUTOLINK = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,31}:)(?=//)|\b(www)(?=\.)")
# a block marker where a line starts: heading, quote, list item, setext underline
_BLOCK_START = re.compile(r"\d{1,9}[.)]|[#>+=-]")


# ---------------------------------------------------------------- user text


def unping(text: str) -> str:
    """Keep `@name` from notifying anyone: a zero-width joiner after the @."""
    return _MENTION.sub("@" + ZWJ, text)


def longest_run(text: str, char: str) -> int:
    """The longest run of `char` in `text` (0 when there is none)."""
    return max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)


def code_span(text: str) -> str:
    """An inline code span that holds `text` (on one line) whatever backticks it contains."""
    text = " ".join(str(text).split())
    ticks = "`" * (longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, info: str = "") -> str:
    """A fenced block that shows `text` byte for byte: the fence outlasts any backtick run in it."""
    ticks = "`" * max(3, longest_run(text, "`") + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def defuse_backticks(text: str, longest: int = 2) -> str:
    """`text` with every backtick run longer than `longest` broken up by zero-width joiners.

    For text placed inside a fence whose length is fixed elsewhere (a template's three
    backticks): no line of it can then close the fence, and it still reads the same.
    """

    def breakup(match: re.Match[str]) -> str:
        run = match.group()
        return run if len(run) <= longest else ZWJ.join(run)

    return _BACKTICKS.sub(breakup, text)


def split_code(text: str) -> list[tuple[bool, str]]:
    """Split markdown into (is_code, piece): a backtick run opens a span closed by a run as long."""
    pieces: list[tuple[bool, str]] = []
    position = 0
    plain_from = 0
    while (opening := _BACKTICKS.search(text, position)) is not None:
        closing: re.Match[str] | None = opening
        while closing is not None and (closing := _BACKTICKS.search(text, closing.end())) is not None:
            if len(closing.group()) == len(opening.group()):
                break
        if closing is None:
            position = opening.end()  # an unmatched run is literal text
            continue
        if opening.start() > plain_from:
            pieces.append((False, text[plain_from : opening.start()]))
        pieces.append((True, text[opening.end() : closing.start()]))
        position = plain_from = closing.end()
    if plain_from < len(text):
        pieces.append((False, text[plain_from:]))
    return pieces


def inline(text: str) -> str:
    """One line of markdown with code spans (a catalog description, a cause's title or fix from
    a user's table): the code spans kept, everything else escaped as `plain` escapes it."""
    out = []
    for is_code, piece in split_code(" ".join(str(text).split())):
        out.append(code_span(piece) if is_code else _escape(piece))
    return _unblock("".join(out))


def plain(text: str) -> str:
    """One line of user text shown as text: no markdown, HTML, link, mention or issue reference.

    Inline markdown is backslash-escaped and HTML entity-escaped; what GitHub turns into a
    link or a notification without any markup (`@name`, `#12`, `https://...`, `www.`) gets a
    zero-width joiner that breaks the pattern; a block marker at the start (`#`, `>`, `-`,
    `1.`) is escaped so the line cannot become a heading, quote or list.
    """
    return _unblock(_escape(" ".join(str(text).split())))


def _escape(text: str) -> str:
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False))
    text = _REFERENCE.sub("#" + ZWJ, unping(text))
    return _AUTOLINK.sub(lambda m: m.group() + ZWJ, text)


def _unblock(line: str) -> str:
    start = _BLOCK_START.match(line)
    return line if start is None else line[: start.end() - 1] + "\\" + line[start.end() - 1 :]


# ---------------------------------------------------------------- fitting a body to a limit

_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+(.*?)[ \t#]*")
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.IGNORECASE)
_DETAILS_OPEN = re.compile(r"<details\b", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_NAMED = 5  # sections named in the cut note
_NOTE_RESERVE = 1_500  # the note (and closers) never take more than this


@dataclass(frozen=True)
class _Boundary:
    """The start of a line: where a body may be cut."""

    offset: int
    line: int
    fence: str | None  # the run of the fence this line sits inside, None outside any fence
    info: str  # that fence's info string ("mermaid", "text", ...)
    details: int  # <details> blocks open at this point
    rank: int = 0  # 2: a section starts here (heading, <details>), 1: a paragraph does, 0: neither


@dataclass(frozen=True)
class _Layout:
    boundaries: list[_Boundary]
    sections: list[tuple[int, str]]  # (offset, name) of each heading and <summary>
    lines: int


def _layout(body: str) -> _Layout:
    boundaries: list[_Boundary] = []
    sections: list[tuple[int, str]] = []
    fence_run: str | None = None
    info = ""
    details = 0
    offset = 0
    after_blank = False
    lines = body.splitlines(keepends=True)
    for number, line in enumerate(lines):
        text = line.rstrip("\r\n")
        rank = 0
        if fence_run is None:
            rank = 2 if _HEADING.fullmatch(text) or _DETAILS_OPEN.match(text) else int(after_blank)
        boundaries.append(_Boundary(offset, number, fence_run, info, details, rank))
        after_blank = fence_run is None and not text.strip()
        match = _FENCE_LINE.fullmatch(text)
        if fence_run is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence_run, info = match.group(1), match.group(2).strip()
            else:
                details = max(0, details + len(_DETAILS_OPEN.findall(text)) - len(_DETAILS_CLOSE.findall(text)))
                heading = _HEADING.fullmatch(text)
                names = [heading.group(1)] if heading else _SUMMARY.findall(text)
                sections.extend((offset, name) for name in names)
        elif (
            match
            and match.group(1)[0] == fence_run[0]
            and len(match.group(1)) >= len(fence_run)
            and not match.group(2).strip()
        ):
            fence_run, info = None, ""
        offset += len(line)
    return _Layout(boundaries, sections, len(lines))


def _section_name(text: str) -> str:
    name = " ".join(_TAG.sub("", html.unescape(text)).replace("`", "").replace("*", "").split())
    return name if len(name) <= 80 else name[:79] + "…"


def _note(body: str, layout: _Layout, at: _Boundary, hint: str | None) -> str:
    """What replaces body[at.offset:]: closers for what is open there, then the note."""
    closers = ""
    if at.fence is not None:
        closers += at.fence + "\n"
    closers += "\n</details>\n" * at.details
    cut_chars = len(body) - at.offset
    cut_lines = layout.lines - at.line
    first = bisect.bisect_left(layout.sections, (at.offset, ""))
    named = ", ".join(f"“{plain(_section_name(name))}”" for _, name in layout.sections[first : first + _NAMED])
    if len(layout.sections) - first > _NAMED:
        named += f" and {len(layout.sections) - first - _NAMED} more"
    note = (
        f"_Cut to fit a GitHub comment: the last {cut_chars:,} characters "
        f"({cut_lines:,} line{'s' if cut_lines != 1 else ''}) are left out"
        + (f", including {named}" if named else "")
        + "._"
    )
    if hint:
        note += " " + hint
    return closers + "\n---\n\n" + note + "\n"


def fit(body: str, limit: int = GITHUB_LIMIT, *, hint: str | None = None) -> str:
    """`body` if it fits `limit` characters; else its longest head that can be cut safely, with
    a note saying what was cut (and `hint`, e.g. where the whole text is, appended to it).

    A cut falls between lines, keeps the first line (the hidden marker), lands outside code
    fences where that keeps at least half the limit (else it closes the fence it cuts, never a
    mermaid chart's), before a heading or a paragraph where one is near, and closes the
    `<details>` blocks left open.
    """
    if len(body) <= limit:
        return body
    layout = _layout(body)
    first_line_end = layout.boundaries[1].offset if len(layout.boundaries) > 1 else len(body)

    offsets = [b.offset for b in layout.boundaries]

    def best(allowed: Callable[[_Boundary], bool], floor: int = 0) -> _Boundary | None:
        last = bisect.bisect_right(offsets, limit) - 1
        for index in range(last, 0, -1):
            boundary = layout.boundaries[index]
            if boundary.offset < max(floor, first_line_end):
                break
            if allowed(boundary) and boundary.offset + len(_note(body, layout, boundary, hint)) <= limit:
                return boundary
        return None

    outside = best(lambda b: b.fence is None)
    if outside is not None:
        # rather end where a section (or at least a paragraph) ends, when that costs little
        for rank, window in ((2, limit // 5), (1, 2_000)):
            # the lambda runs within this iteration: `rank` is the one meant
            nicer = best(lambda b: b.fence is None and b.rank >= rank, outside.offset - window)  # noqa: B023
            if nicer is not None:
                outside = nicer
                break
    if outside is None or outside.offset < limit // 2:
        inside = best(lambda b: b.fence is not None and b.info.split()[:1] != ["mermaid"])
        if inside is not None and (outside is None or inside.offset > outside.offset):
            outside = inside
    if outside is None:  # no line boundary to cut at (one enormous line): cut inside the line
        keep = max(0, limit - _NOTE_RESERVE)
        within = layout.boundaries[bisect.bisect_right(offsets, keep) - 1]
        return body[:keep] + "\n" + _note(body, layout, replace(within, offset=keep), hint)
    return body[: outside.offset] + _note(body, layout, outside, hint)
