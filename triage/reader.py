"""Log reading: stream a (possibly gzipped, coloured, multi-rank, huge) log into readings.

A *reading* is one thing a program printed: a line, or one of the carriage-return updates a
progress bar packs into a single line. Each keeps the line number it came from and the rank
that printed it (`[rank1]:`, torchrun's `[default1]:` or `1:` prefixes).

The file is read in large binary chunks and never held whole. Speed comes from doing as little
per-line Python work as possible on big logs:

* lines that may matter to a detector are found by `bytes.find` on a few literal keywords per
  chunk (C speed), and only those lines are decoded and split;
* metric lines are parsed in full for small logs; for big ones, the first and last few thousand
  lines are parsed in full and the middle is sampled at a fixed byte stride, which is plenty
  for trend detectors (the first non-finite value is still exact: it is a keyword hit);
* a log beyond `max_bytes` is read as its head and its tail, and the skipped middle is reported.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from triage.errors import BadInputError

CHUNK = 8 << 20
FULL_PARSE_BYTES = 8 << 20       # logs up to this size have every line parsed
HEAD_TAIL_LINES = 2000           # lines parsed in full at each end of a sampled log
SAMPLES = 4_000                  # target number of sampled lines in a big log's middle
MAX_BYTES = 4 << 30              # beyond this, read the first and last half of it only
PER_CHUNK_HITS = 64              # keyword hits kept from each end of each chunk, per keyword

# Literal keywords searched for in the middle of a big log, on raw bytes. Every pass over the
# file costs about as much as `grep` itself, so the list is short: errors a run survives
# mid-way ("...Error: ..."). A crash sits in the tail and setup messages and first-step warnings
# in the head, both parsed in full; the first non-finite value is found from the sampled series
# and pinned to its exact line by a search between two samples. (`re` finds a literal faster
# than `bytes.find` does.)
KEYWORDS: tuple[re.Pattern[bytes], ...] = (re.compile(rb"Error"),)
# Lines at the ends of a log are checked against a richer list (setup and shutdown messages).
_EVENT = re.compile(
    r"rror|arning|imed out|imeout|atchdog|ssert|ecompil|"
    r"raph break|rainable|SIGTERM|SIGKILL|Terminated|Killed|[Cc]ancel|TIME LIMIT|NCCL|exitcode|RROR|ARNING|xpected|out of memory|OOM|backward|shapes|target size|cache_size|emory|[Nn]a[Nn]\b|\.item\(\)|zero_grad|requires_grad|[Ff]rozen|bounds"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PREFIX = re.compile(r"\[default(\d+)\]:|\[(?:rank|Rank|RANK)\s?(\d+)\]:?\s?|(\d{1,3}): ")


@dataclass(frozen=True)
class Reading:
    """One printed update: its line number, position within the line, rank and clean text."""

    line: int | None
    index: int
    text: str
    rank: int | None = None


@dataclass
class Scan:
    """What reading a log produced: readings for metric series, keyword events, and totals."""

    path: str
    size: int
    bytes_read: int = 0
    lines: int = 0
    sampled: bool = False
    skipped_bytes: int = 0
    readings: list[Reading] = field(default_factory=list)
    events: list[Reading] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    offsets: dict[int, int] = field(default_factory=dict)  # line -> byte offset, sampled logs only


def clean(raw: bytes) -> tuple[str, int | None]:
    """Decode one line (invalid UTF-8 replaced), strip colour codes and rank prefixes."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    rank = None
    while True:
        m = _PREFIX.match(text)
        if not m:
            break
        rank = int(next(g for g in m.groups() if g is not None))
        text = text[m.end():]
    return text, rank


def split_readings(line: int | None, raw: bytes) -> list[Reading]:
    """Clean one line and split it at carriage returns into readings."""
    text, rank = clean(raw)
    if "\r" not in text:
        text = text.rstrip()
        return [Reading(line, 0, text, rank)] if text else []
    parts = [p.rstrip() for p in text.split("\r")]
    out = []
    for i, part in enumerate(parts):
        if part:
            # a rank prefix may precede only the first update
            part, r = clean(part.encode()) if i else (part, None)
            out.append(Reading(line, i, part, r if r is not None else rank))
    if len(out) > 2000:  # one bar with thousands of updates: keep both ends and a spread
        step = len(out) // 1000
        out = out[:100] + out[100:-100:step] + out[-100:]
    return out


def open_log(path: str | os.PathLike[str]) -> tuple[BinaryIO, int, bool]:
    """Open a log for binary reading; return (file, size on disk, gzipped)."""
    p = Path(path)
    try:
        if p.is_dir():
            raise BadInputError(f"{p}: is a directory, not a log file")
        f = open(p, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise BadInputError(f"{p}: no such file") from None
    except PermissionError:
        raise BadInputError(f"{p}: permission denied") from None
    except OSError as exc:
        raise BadInputError(f"{p}: cannot open ({exc.strerror or exc})") from None
    size = os.fstat(f.fileno()).st_size
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb"), size, True  # type: ignore[return-value]
    return f, size, False


def looks_binary(head: bytes) -> bool:
    """True if the start of a file is mostly not text (NULs or control bytes)."""
    if not head:
        return False
    # a text log followed by zeros (space preallocated, or a file cut off by a crash) is text
    sample = head[:8192].rstrip(b"\x00")
    if not sample:
        return True
    bad = sum(1 for b in sample if b < 9 or 13 < b < 27 or 27 < b < 32 or b == 127)
    return (b"\x00" in sample[:1024] and bad > len(sample) // 10) or bad > len(sample) * 3 // 10


def _chunks(f: BinaryIO, limit: int | None) -> Iterator[bytes]:
    """Yield chunks that end on a line boundary (or at a forced cut in an endless line)."""
    carry = b""
    remaining = limit
    while True:
        want = CHUNK if remaining is None else min(CHUNK, remaining)
        try:
            block = f.read(want) if want > 0 else b""
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInputError(f"cannot read the log: {exc}") from None
        if remaining is not None:
            remaining -= len(block)
        if not block:
            if carry:
                yield carry
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) < 4 * CHUNK:
                carry = data
                continue
            cut = len(data)  # no newline for a long time: force a cut, the line goes on
        carry = data[cut:]
        yield data[:cut]


def scan(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES,
         full_parse_bytes: int = FULL_PARSE_BYTES) -> Scan:
    """Read a log and return its readings and events; raise BadInputError if it is not a log."""
    f, size, gz = open_log(path)
    with f:
        try:
            head = f.read(8192)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInputError(f"{path}: cannot read ({exc})") from None
        if looks_binary(head):
            raise BadInputError(f"{path}: binary data, not a text log")
        f.seek(0)
        result = Scan(str(path), size)
        # a gzipped log is judged by a guess at its unpacked size
        est = size * 8 if gz else size
        result.sampled = est > full_parse_bytes
        stride = max(1, est // SAMPLES) if result.sampled else 0
        if result.sampled and not gz:
            f.close()
            _scan_big(str(path), size, max_bytes, result)
            return result
        state = _State(result, stride)
        state.feed_all(_chunks(f, None))
        state.finish()
    return result


class _State:
    """The running position of one scan: line numbering, the head/tail windows, dedupe."""

    def __init__(self, result: Scan, stride: int) -> None:
        self.r = result
        self.stride = stride
        self.line0 = 0                 # lines before the current chunk
        self.line_known = True
        self.recent: deque[tuple[int, bytes]] = deque(maxlen=2)
        self.seen: set[tuple[int, int]] = set()
        self.next_sample = 0           # byte offset (in the current chunk) of the next sample

    def number(self, n: int) -> int | None:
        return n if self.line_known else None

    def feed_all(self, chunks: Iterator[bytes]) -> None:
        for chunk in chunks:
            self.r.bytes_read += len(chunk)
            if not self.stride:
                self._full(chunk)
            else:
                self._sampled(chunk)

    # -- small logs: every line --------------------------------------------------------------
    def _full(self, chunk: bytes) -> None:
        lines = chunk.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        base = self.line0
        for i, raw in enumerate(lines, start=base + 1):
            readings = split_readings(self.number(i), raw)
            self.r.readings.extend(readings)
            if readings and _EVENT.search(raw.decode("utf-8", "replace")):
                self.r.events.extend(readings)
            for rd in readings:
                if rd.rank is not None:
                    self.r.ranks.add(rd.rank)
        self.line0 = base + len(lines)
        self.r.lines = self.line0

    # -- big logs: keyword hits, a byte-stride sample, head and tail in full ------------------
    def _sampled(self, chunk: bytes) -> None:
        n_lines = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
        head_room = HEAD_TAIL_LINES - self.line0 if self.line_known else 0
        if head_room > 0:
            # parse the head in full (it holds setup lines: parameter counts, config)
            cut = 0
            for _ in range(min(head_room, n_lines)):
                nxt = chunk.find(b"\n", cut)
                cut = len(chunk) if nxt < 0 else nxt + 1
            self._full(chunk[:cut])
            rest = chunk[cut:]
            if not rest:
                return
            chunk = rest
            n_lines = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
        positions: set[int] = set()
        for kw in KEYWORDS:
            positions.update(_hits(chunk, kw))
        # sample positions at a fixed byte stride
        pos = self.next_sample
        while pos < len(chunk):
            positions.add(pos)
            pos += self.stride
        self.next_sample = pos - len(chunk)
        starts: dict[int, int] = {}
        for p in positions:
            s = chunk.rfind(b"\n", 0, p) + 1
            starts[s] = starts.get(s, 0)
        # number the chosen lines with one incremental pass of newline counting
        count = self.line0
        prev = 0
        for s in sorted(starts):
            count += chunk.count(b"\n", prev, s)
            prev = s
            e = chunk.find(b"\n", s)
            raw = chunk[s:] if e < 0 else chunk[s:e]
            lineno = count + 1
            self._one(lineno, raw)
        self.line0 += n_lines
        self.r.lines = self.line0
        # the last two chunks are kept: the log's tail is parsed in full at the end
        self.recent.append((self.line0 - n_lines, chunk))

    def _one(self, lineno: int, raw: bytes) -> None:
        key = (lineno, 0)
        if key in self.seen:
            return
        self.seen.add(key)
        readings = split_readings(self.number(lineno), raw)
        if not readings:
            return
        self.r.readings.extend(readings)
        text = raw.decode("utf-8", "replace")
        if _EVENT.search(text):
            self.r.events.extend(readings)
        for rd in readings:
            if rd.rank is not None:
                self.r.ranks.add(rd.rank)

    def finish(self) -> None:
        if self.stride:
            tail: list[tuple[int, bytes]] = []
            for line0, chunk in reversed(self.recent):
                lines = chunk[-(HEAD_TAIL_LINES * 400):].split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                total = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
                first = line0 + total - len(lines) + 1
                tail[:0] = [(first + i, raw) for i, raw in enumerate(lines)]
                if len(tail) >= HEAD_TAIL_LINES:
                    break
            for lineno, raw in tail[-HEAD_TAIL_LINES:]:
                self._one(lineno, raw)
            order = lambda rd: (rd.line if rd.line is not None else 1 << 62, rd.index)  # noqa: E731
            self.r.readings.sort(key=order)
            self.r.events.sort(key=order)


def _hits(chunk: bytes, kw: re.Pattern[bytes]) -> list[int]:
    """Positions of `kw` in `chunk`: all of them, or the first and last few if there are many."""
    out: list[int] = []
    start = 0
    search = kw.search
    while len(out) < PER_CHUNK_HITS:
        m = search(chunk, start)
        if m is None:
            return out
        out.append(m.start())
        start = m.end()
    end = len(chunk)
    literal = kw.pattern
    for _ in range(PER_CHUNK_HITS):
        i = chunk.rfind(literal, start, end)
        if i < 0:
            break
        out.append(i)
        end = i
    return out


# ---- big plain logs: ranges scanned in parallel worker processes ------------------------------

def _scan_big(path: str, size: int, max_bytes: int, result: Scan) -> None:
    """Scan a big uncompressed log: head and tail in full, the rest in parallel ranges."""
    with open(path, "rb") as f:
        segments = [(0, size, True)]
        if size > max_bytes:
            half = max_bytes // 2
            tail_start = _line_start_after(f, size - half, size)
            result.skipped_bytes = tail_start - half
            segments = [(0, half, True), (tail_start, size, False)]
        ranges: list[tuple[int, int, int]] = []  # start, end, segment index
        workers = max(1, min(4, os.cpu_count() or 1))
        for seg_i, (start, end, _) in enumerate(segments):
            cuts = [start]
            for k in range(1, workers):
                cuts.append(_line_start_after(f, start + (end - start) * k // workers, end))
            cuts.append(end)
            ranges += [(a, b, seg_i) for a, b in zip(cuts, cuts[1:]) if b > a]
    stride = max(4096, (size if size <= max_bytes else max_bytes) // SAMPLES)
    jobs = [(path, a, b, stride) for a, b, _ in ranges]
    parts = _map(jobs)
    state = _State(result, 0)
    line0 = 0
    seg_known = {i: known for i, (_, _, known) in enumerate(segments)}
    prev_seg = 0
    kept: list[tuple[int, int, bytes]] = []  # line number, byte offset, raw
    for (a, b, seg_i), (n_lines, picks) in zip(ranges, parts):
        if seg_i != prev_seg:
            prev_seg = seg_i
            state.line_known = seg_known[seg_i]
        for idx, off, raw in picks:
            kept.append((line0 + idx + 1, off, raw))
        line0 += n_lines
        result.bytes_read += b - a
    result.lines = line0
    # head and tail in full; everything else as picked
    with open(path, "rb") as f:
        head = f.read(min(size, HEAD_TAIL_LINES * 512))
        head_lines = head.split(b"\n")[:HEAD_TAIL_LINES]
        f.seek(max(0, size - HEAD_TAIL_LINES * 512))
        tail = f.read()
    tail_lines = tail.split(b"\n")
    if size > HEAD_TAIL_LINES * 512:
        tail_lines = tail_lines[1:]  # the first piece is a partial line
    if tail_lines and tail_lines[-1] == b"":
        tail_lines.pop()
    tail_lines = tail_lines[-HEAD_TAIL_LINES:]
    for i, raw in enumerate(head_lines[:-1] if len(head_lines) > 1 else head_lines, 1):
        state._one(i, raw)
    known_tail = not result.skipped_bytes
    state.line_known = known_tail
    first_tail = result.lines - len(tail_lines) + 1
    for i, raw in enumerate(tail_lines):
        state._one(first_tail + i, raw)
    state.line_known = True
    for lineno, _, raw in kept:
        state.line_known = not (result.skipped_bytes and lineno > _segment_lines(ranges, parts, 0))
        state._one(lineno, raw)
    state.line_known = True
    order = lambda rd: (rd.line if rd.line is not None else 1 << 62, rd.index)  # noqa: E731
    result.readings.sort(key=order)
    result.events.sort(key=order)
    result.offsets = {ln: off for ln, off, _ in kept}


def _line_start_after(f: BinaryIO, pos: int, end: int) -> int:
    """The start of the first line after `pos` (looking at most 1 MiB ahead; a longer line is cut)."""
    f.seek(pos)
    window = f.read(min(1 << 20, max(0, end - pos)))
    i = window.find(b"\n")
    return min(end, pos + (i + 1 if i >= 0 else len(window)))


def _segment_lines(ranges: list[tuple[int, int, int]], parts: list[tuple[int, list]], seg: int) -> int:
    return sum(n for (_, _, s), (n, _) in zip(ranges, parts) if s == seg)


def _map(jobs: list[tuple[str, int, int, int]]) -> list[tuple[int, list[tuple[int, int, bytes]]]]:
    """Run `_scan_range` over the jobs, in forked workers where the platform allows it."""
    if len(jobs) > 1:
        try:
            import multiprocessing as mp

            ctx = mp.get_context("fork")
        except (ImportError, ValueError):
            ctx = None
        if ctx is not None:
            with ctx.Pool(len(jobs)) as pool:
                return pool.map(_scan_range, jobs)
    return [_scan_range(job) for job in jobs]


def _scan_range(job: tuple[str, int, int, int]) -> tuple[int, list[tuple[int, int, bytes]]]:
    """Count the lines of one byte range and pick its keyword lines and stride samples.

    Returns (lines in the range, [(line index in the range, byte offset, raw line)]). The range
    is read into one reused buffer and worked on by index, never sliced: copies cost as much as
    the search itself.
    """
    path, start, end, stride = job
    picks: list[tuple[int, int, bytes]] = []
    lines = 0
    next_sample = 0
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        pos = start
        while pos < end:
            f.seek(pos)
            n = f.readinto(view[: min(CHUNK, end - pos)])
            if not n:
                break
            cut = n
            if pos + n < end:
                cut = buf.rfind(b"\n", 0, n) + 1 or n  # no newline at all: cut a giant line
            positions: list[int] = []
            for kw in KEYWORDS:
                at = 0
                while len(positions) < PER_CHUNK_HITS:
                    m = kw.search(buf, at, cut)
                    if m is None:
                        break
                    positions.append(m.start())
                    at = m.end()
            q = next_sample
            while q < cut:
                positions.append(q)
                q += stride
            next_sample = q - cut
            count = lines
            prev = 0
            for st in sorted({buf.rfind(b"\n", 0, p) + 1 for p in positions}):
                count += buf.count(b"\n", prev, st)
                prev = st
                e = buf.find(b"\n", st, cut)
                picks.append((count, pos + st, bytes(buf[st: cut if e < 0 else e])))
            count += buf.count(b"\n", prev, cut)
            lines = count + (0 if buf[cut - 1] == 10 else 1)
            pos += cut
    return lines, picks


def first_match_between(path: str, start: int, end: int, pattern: re.Pattern[bytes]) -> tuple[int, bytes] | None:
    """The first line in the byte range [start, end) that matches, as (lines skipped, raw line)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(max(0, end - start))
    m = pattern.search(data)
    if not m:
        return None
    s = data.rfind(b"\n", 0, m.start()) + 1
    e = data.find(b"\n", m.start())
    return data.count(b"\n", 0, s), data[s:] if e < 0 else data[s:e]
