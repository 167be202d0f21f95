"""Log reading: every line of a (gzipped, piped, coloured, multi-rank, huge) log, in bounded memory.

A *reading* is one thing a program printed: a line, or one of the carriage-return updates a
progress bar packs into a single line. Each keeps the line number it came from and the rank
that printed it (`[rank1]:`, torchrun's `[default1]:` or `1:` prefixes).

Every byte of the log is read, in chunks of `CHUNK` bytes that end on a line boundary. Per-line
Python work is what makes a reader slow, so each chunk is first searched as a whole, at C speed:

* newlines are counted (`bytes.count`), which numbers every line exactly;
* `KEYWORDS` (the one list of event words) and `NON_FINITE` words are found by one combined
  search (Hyperscan where it is installed, else one `re` pass per word);
* then only the lines that matter are cut out and decoded: lines with a keyword (events),
  lines with a non-finite word, and, for metric series, every line of a small log but only the
  lines at a fixed byte stride of a big one, plus its first and last `HEAD_LINES` lines.

So a big log's metric series is a deterministic decimation (head, tail, a stride sample, and
the non-finite values), while its events are complete (but for crowded chunks, below): a
warning printed once in the middle of a 10 GB log is found, at its real line number. A plain
file of `PARALLEL_BYTES` or more is read by worker processes, one chunk each, merged in file
order. They are forked from this process only while it has a single thread: a child forked from a
process with other threads inherits whatever locks those threads held at that instant and can
block on one forever (a test runner, a notebook, a library user's program), so there the
workers are forked from a fresh single-threaded server instead (multiprocessing's forkserver).

Memory does not grow with the log: a line longer than `MAX_LINE` is cut to windows of that size
around what made it interesting (the scan counts such lines); once `EVENT_BUDGET` events are
kept (or within a chunk of over `CHUNK_EVENT_LINES` event lines), an event is kept only
`SHAPE_KEEP` times per shape (its text without digits) and its other repeats are counted; a chunk with more than `CHUNK_EVENT_HITS` keyword matches (NCCL
debug output, a warning every step) is read one line per keyword per `BLOCK` after that many
(the scan counts such blocks); and every kept byte counts against `KEEP_BYTES`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import os
import re
import sys
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from trainwreck import processes
from trainwreck.errors import BadInputError

CHUNK = 8 << 20  # bytes per chunk (chunk k starts at the first line start >= k * CHUNK)
MAX_LINE = 16 << 10  # longer lines are cut to windows of this size for matching
SAMPLE_PIECE = 2 << 10  # the window kept around a sample point inside an over-long line
FULL_PARSE_BYTES = 8 << 20  # logs up to this size have every line read into readings
SAMPLES = 4096  # stride samples of a big log's metric lines (its head and tail besides)
STREAM_SAMPLES = 4_096  # stride samples per doubling of a piped log (its length is unknown)
HEAD_LINES = 1000  # lines read in full at each end of a big log
END_BYTES = 1 << 20  # ... within this many bytes of that end
CHUNK_EVENT_LINES = 512  # a chunk with more event lines sends `SHAPE_KEEP` per shape
CHUNK_EVENT_HITS = 512  # keyword matches read one by one per chunk; then ...
BLOCK = 128 << 10  # ... the first match of each keyword per block of this size
NON_FINITE_HITS = 64  # non-finite words looked at per chunk
SHAPE_KEEP = 2  # occurrences kept of one event shape (its text without digits)
EVENT_BUDGET = 1000  # events kept before repeats are only counted
SHAPES_MAX = 50_000  # distinct event shapes remembered
NON_FINITE_PER_CHUNK = 16  # lines with a non-finite word kept per chunk (of those) ...
NON_FINITE_BUDGET = 512  # ... and in all
CHUNK_KEEP_BYTES = 4 << 20  # bytes of kept lines one chunk may send back whole
KEEP_BYTES = 48 << 20  # bytes of kept lines in all; beyond it, kept lines are cut short
SHORT_PIECE = 256  # what a kept line is cut to beyond those budgets
PARALLEL_BYTES = 64 << 20  # plain files at least this big are read by worker processes

# The one list of event words, matched on raw bytes anywhere in a line (case as written, but for
# those in CASELESS): a line holding one is an *event*, which the signature detectors read. Add
# words here, nowhere else.
KEYWORDS: tuple[bytes, ...] = (
    b"rror",
    b"arning",
    b"imed out",
    b"imeout",
    b"atchdog",
    b"ssert",
    b"ecompil",
    b"raph break",
    b"rainable",
    b"SIGTERM",
    b"SIGKILL",
    b"Terminated",
    b"Killed",
    b"cancel",
    b"TIME LIMIT",
    b"NCCL",
    b"exitcode",
    b"triage watch:",
    b"[trainwreck probe]",
    # what the real-world corpus showed errors and prose reports spelled with (issue 9)
    b"xpected",
    b"out of memory",
    b"OOM",
    b"backward",
    b"shapes",
    b"target size",
    b"cache_size",
    b"emory",
    b"nan",
    b".item()",
    b"zero_grad",
    b"requires_grad",
    b"frozen",
    b"bounds",
    # a dtype error pasted without its exception prefix: `"nll_loss..." not implemented for 'Float'`
    b"implemented for",
    # fresh batch 3 (issue 9): the in-place error quoted with no prefix, and reports of a GPU
    # starved by its data loader ("GPU utilization is very low", "... may be a bottleneck")
    b"nplace operation",
    b"bottleneck",
    b"pu util",
    b"pu-util",
    # fresh batch 5 (issue 9): a loss reported blown up, and a report naming the call the code
    # missed (`model.eval()` was not called; the other calls' words are events already)
    b"huge",
    b"xplod",
    b"eval()",
    b"train()",
    b"no_grad",
    b"set_epoch",
    b"step()",
    # fresh batch 6: reports that name the fault in words (a kept graph, a softmax before the loss,
    # data left unshuffled, a scheduler stepped without the optimizer, a call not made, a model
    # not in eval mode)
    b"leak",
    b"graph",
    b"oftmax",
    b"shuffle",
    b"chedul",
    b"not call",
    b"n't call",
    b"eval mode",
    b"evaluation mode",
    # fresh batch 7: a GPU reported idle or little used, parameters left out of the optimizer, a
    # rate that fell to zero, and reports written in Chinese (a loss that diverged, 发散, or blew
    # up, 爆炸)
    b"pu usage",
    b"PU usage",
    b"PU Usage",
    b"idle",
    b"the optimizer",
    b"the optimiser",
    b"to zero",
    b"ing zero",
    b"es zero",
    b"ame zero",
    # fresh batch 8: a loader too slow, an optimizer that cannot update some parameters, a division
    # by zero
    b"slow",
    b"annot update",
    b"n't update",
    b"not update",
    b"by zero",
    b"enominator",
    # fresh batch 9: a model not switched to "eval state", a delay in data loading
    b"eval state",
    b"delay",
    # ... and a run that says it trains in mixed precision
    b"fp16",
    b"AMP",
    b"amp=",
    b"amp:",
    b"utocast",
    b"ixed precision",
    b"ixed_precision",
    "发散".encode(),
    "爆炸".encode(),
    # fresh batch 10: host memory reported growing ("my cpu ram keep increasing"), a loader said
    # to be slow in Chinese (慢), its time per batch said to be large ("data_time>2")
    b" ram ",
    b" RAM ",
    "慢".encode(),
    b"time>",
    # fresh batch 11: host memory in Chinese (内存, 显存), parameters that cannot train, a schedule
    # stepped per batch "instead of" per epoch, Lightning's profiler row for the wait for batches
    "内存".encode(),
    "显存".encode(),
    b"instead of",
    b"dataloader_next",
    # fresh batch 12: parameters left out of the optimizer, in Chinese (优化器)
    "优化器".encode(),
    # fresh batch 13: Lightning's `precision=16`, a shape error quoted without its exception
    # name (`size mismatch, m1: [4 x 32768], m2: [2048 x 196] at ...THCTensorMathBlas.cu:268`),
    # a loss said to rise "suddenly"
    b"precision=",
    b"size mismatch",
    b"uddenly",
    b"bruptly",
    # fresh batch 14: weights "not given to AdamOptimizer"
    b"Optimizer",
    # fresh batch 15: a smaller rate said to work, a loss in Chinese (损失), its accumulation
    b"maller lr",
    b"ower lr",
    b"maller learning",
    b"ower learning",
    "损失".encode(),
    "累积".encode(),
    "累加".encode(),
    # fresh batch 17: a GPU's "utilization rate", a long time "to load data", parameters the code
    # is said to freeze
    b"tilization",
    b"o load data",
    b"freez",
    # fresh batch 19: results that differ run to run, a model not put back into train mode
    b"eterministic",
    b"ifferent results",
    b"rain mode",
    b"raining mode",
    # fresh batch 20: the loader's time beside a batch's ("data loading ... batch time"), the speed
    # data is read at in Chinese (数据读取速度), a report that the test phase errors
    b"ata loading",
    "数据读取".encode(),
    b"test is",
    # session 30 (the world corpus's misses): an infinite loss written in capitals ("turned into
    # INF in the third epoch"; never inside INFO), a rate the reporter says should come down, and
    # memory taken up again by a pronoun ("it keeps growing")
    b"INF ",
    b"INF.",
    b"hould be reduced",
    b"eeps growing",
    # fresh batch 22: zero_grad as people also type it
    b"zero_gard",
    # session 38 (the world corpus's misses): a loss said to diverge in English, and a loss said
    # to be computed after a sigmoid
    b"iverg",
    b"igmoid",
    # ... and a process said to get killed, in lower case ("the epochs after unfreezing get killed")
    b"killed",
    # ... and a loss that "suddenly" (突然) fell to zero, in Chinese
    "突然".encode(),
    # fresh batch 24: dynamo's warnings of a frame it could not compile, half precision set as the
    # default tensor type, DDP's list of parameters that received no gradient
    b"_dynamo/",
    b"HalfTensor",
    b"set_default_dtype",
    b"receive grad",
    # fresh batch 25: hours a paper reported set against the run's, a schedule that should approach
    # or reach zero
    b"paper",
    b"ach zero",
)
# Event words matched in any case ("Error", "ERROR"; "nan", "NaN"; slurm's "CANCELLED"): one
# caseless word costs the matcher less than two spellings. Hyperscan gets every spelling of each
# (2^letters): keep them short (a 14-letter phrase took 30 s to compile).
CASELESS: frozenset[bytes] = frozenset(
    {
        b"rror",
        b"arning",
        b"nan",
        b"frozen",
        b"cancel",
        b"pu util",
        b"pu-util",
        b"huge",
        b"xplod",
        b"leak",
        b"graph",
        b"oftmax",
        b"shuffle",
        b"chedul",
        b"freez",
    }
)


def is_event(raw: bytes) -> bool:
    """True if a line holds an event word (`KEYWORDS`, `CASELESS` ones in any case)."""
    low = raw.lower()
    return any(k in (low if k in CASELESS else raw) for k in KEYWORDS)


# Words that print a non-finite number, matched as whole words: every line holding one is read
# (up to the budgets above), so the first NaN of a big log is exact, not sampled.
# (Python, numpy, torch and JSON print these; "INF" is left out: it is in every "INFO".)
NON_FINITE: tuple[bytes, ...] = (b"nan", b"NaN", b"inf", b"Inf", b"Infinity")
# Every NON_FINITE word holds one of these: a chunk without any needs no search for the words.
_NF_LETTERS: tuple[bytes, ...] = (b"nan", b"NaN", b"inf", b"Inf")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PREFIX = re.compile(r"\[default(\d+)\]:|\[(?:rank|Rank|RANK)\s?(\d+)\]:?\s?|(\d{1,3}): ")
# pytest prints the exception of a failing test as `E       RuntimeError: ...`: without the
# marker the line reads as a plain traceback's would.
_PYTEST_E = re.compile(r"E {3,}(?=\S)")
_DIGITS = b"0123456789"


@dataclass(frozen=True)
class Reading:
    """One printed update: its line number, position within the line, rank and clean text.

    `index` orders the updates of one line: the update's number for a whole line, the byte
    offset of the window for a line too long to keep whole.
    """

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
    sampled: bool = False  # metric lines were decimated (a big log)
    cut_lines: int = 0  # lines longer than MAX_LINE, cut for matching
    events_thinned: int = 0  # repeated event lines counted but not kept
    crowded_blocks: int = 0  # blocks so crowded with event lines that one per keyword was read
    readings: list[Reading] = field(default_factory=list)
    events: list[Reading] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)


def clean(raw: bytes) -> tuple[str, int | None]:
    """Decode one line (invalid UTF-8 replaced), strip colour codes, rank prefixes and pytest's
    `E   ` failure marker."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    rank = None
    while True:
        m = _PREFIX.match(text)
        if not m:
            break
        rank = int(next(g for g in m.groups() if g is not None))
        text = text[m.end() :]
    if text.startswith("E "):
        m = _PYTEST_E.match(text)
        if m:
            text = text[m.end() :]
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


# ---- finding keywords and non-finite words in a whole chunk -----------------------------------


def _spellings() -> tuple[list[int], list[bytes]]:
    """Each keyword's index and literal, as two lists: a keyword as written, and a `CASELESS`
    one in every ASCII spelling of its letters (`nan`: `nan`, `naN`, ..., `NaN`, ..., `NAN`)."""
    ids: list[int] = []
    spelt: list[bytes] = []
    for i, k in enumerate(KEYWORDS):
        if k in CASELESS:
            letters = [(bytes([c]).lower(), bytes([c]).upper()) if bytes([c]).isalpha() else (bytes([c]),) for c in k]
            variants = sorted({b"".join(p) for p in itertools.product(*letters)})
        else:
            variants = [k]
        ids += [i] * len(variants)
        spelt += variants
    return ids, spelt


class Matcher:
    """Finds `KEYWORDS` and `NON_FINITE` words in a chunk, all words in one pass where it can.

    Hyperscan (an optional dependency, with wheels for Linux x86-64) searches all words at once
    at several GB/s; without it each word is one `re` pass (a literal: a fast skip loop), which
    finds the same positions, slower by about the number of words.
    """

    def __init__(self, use_hyperscan: bool = True) -> None:
        self.hs: Any = None  # the hyperscan module, where it is installed and wanted
        if use_hyperscan:
            try:
                import hyperscan

                self.hs = hyperscan
            except ImportError:
                pass
        words = [rb"\b" + re.escape(w) + rb"\b" for w in NON_FINITE]
        if self.hs is not None:
            # pass 1: every keyword, and whether a non-finite word may be there at all (its
            # letters, once each); pass 2, only where they are: the whole words. A caseless
            # keyword is given as each of its spellings under the keyword's id: hyperscan's
            # caseless flag on these short words made every scan about three times slower.
            ids, spelt = _spellings()
            nf_ids = list(range(len(KEYWORDS), len(KEYWORDS) + len(_NF_LETTERS)))
            single = self.hs.HS_FLAG_SINGLEMATCH
            self._first = self._db(spelt + list(_NF_LETTERS), ids + nf_ids, [0] * len(spelt) + [single] * len(nf_ids))
            self._once = self._db(spelt, ids, [single] * len(spelt))
            self._words = self._db(words, list(range(len(words))), [0] * len(words), escape=False)
        self._literals = [re.compile(re.escape(k), re.I if k in CASELESS else 0) for k in KEYWORDS]
        self._word_res = [re.compile(w) for w in words]

    def _db(self, expressions: list[bytes], ids: list[int], flags: list[int], escape: bool = True) -> Any:
        db = self.hs.Database(mode=self.hs.HS_MODE_BLOCK)
        exprs = [re.escape(e) for e in expressions] if escape else expressions
        db.compile(expressions=exprs, ids=ids, flags=flags)
        return db

    def find(self, buf: bytes | bytearray, lo: int, hi: int) -> tuple[list[int], list[int], int]:
        """(keyword positions, non-finite word positions, crowded blocks) in buf[lo:hi].

        Keywords: the first `CHUNK_EVENT_HITS` in the chunk; after that (a chunk crowded with
        event lines) the first of each keyword per `BLOCK` bytes. Non-finite words: the first
        `NON_FINITE_HITS`. A position lies inside its match.
        """
        view = memoryview(buf)
        events: list[int] = []
        maybe_nf = hi
        capped = False
        if self.hs is not None:
            n = len(KEYWORDS)

            def on(i: int, _f: int, to: int, _fl: int, _c: object) -> bool:
                nonlocal maybe_nf
                if i < n:
                    events.append(lo + to - 1)
                    return len(events) >= CHUNK_EVENT_HITS
                maybe_nf = min(maybe_nf, lo + to - 4)
                return False

            try:
                self._first.scan(view[lo:hi], match_event_handler=on)
            except self.hs.ScanTerminated:
                capped = True
        else:
            ends = sorted(m.end() for p in self._literals for m in p.finditer(buf, lo, hi))
            capped = len(ends) >= CHUNK_EVENT_HITS
            events = [e - 1 for e in ends[:CHUNK_EVENT_HITS]]
            maybe_nf = lo
        crowded = 0
        if capped:
            maybe_nf = lo
            b = buf.find(b"\n", events[-1], hi) + 1 or hi
            while b < hi:
                e = buf.find(b"\n", min(hi, b + BLOCK), hi) + 1 or hi
                events.extend(self._first_of_each(buf, b, e))
                crowded += 1
                b = e
        non_finite: list[int] = []
        if maybe_nf < hi:
            start = buf.rfind(b"\n", lo, max(lo, maybe_nf)) + 1 or lo
            non_finite = self._non_finite(buf, start, hi)
        return events, non_finite, crowded

    def _first_of_each(self, buf: bytes | bytearray, lo: int, hi: int) -> list[int]:
        """The position of the first match of each keyword in buf[lo:hi]."""
        if self.hs is not None:
            out: list[int] = []
            self._once.scan(
                memoryview(buf)[lo:hi], match_event_handler=lambda _i, _f, to, _fl, _c: out.append(lo + to - 1)
            )
            return out
        found = (p.search(buf, lo, hi) for p in self._literals)
        return [m.end() - 1 for m in found if m is not None]

    def _non_finite(self, buf: bytes | bytearray, lo: int, hi: int) -> list[int]:
        """Positions of the first `NON_FINITE_HITS` non-finite words in buf[lo:hi]."""
        if self.hs is not None:
            hits: list[int] = []

            def on(_i: int, _f: int, to: int, _fl: int, _c: object) -> bool:
                hits.append(lo + to - 1)
                return len(hits) >= NON_FINITE_HITS

            with contextlib.suppress(self.hs.ScanTerminated):
                self._words.scan(memoryview(buf)[lo:hi], match_event_handler=on)
            return hits
        ends = sorted(m.end() for p in self._word_res for m in p.finditer(buf, lo, hi))
        return [e - 1 for e in ends[:NON_FINITE_HITS]]


_MATCHER: Matcher | None = None


def matcher() -> Matcher:
    """The process's matcher (compiled once, before any worker is forked)."""
    global _MATCHER
    if _MATCHER is None:
        _MATCHER = Matcher()
    return _MATCHER


# ---- one chunk: which lines to keep -----------------------------------------------------------

# Why a line was picked (bits). CUT marks a window of a line too long to keep whole.
EVENT, NON_FINITE_LINE, WHOLE, SAMPLE, CUT = 1, 2, 4, 8, 16


@dataclass(frozen=True)
class Plan:
    """How to read one chunk: every line, or a stride sample (and the head if it is the first)."""

    full: bool
    stride: int = 0
    head: bool = False


# A kept piece of a chunk: (newlines before it in the chunk, file offset of a cut window or -1
# for a whole line, raw bytes, why-bits, event shape or b""). Tuples: they cross process pipes.
Piece = tuple[int, int, bytes, int, bytes]


@dataclass(frozen=True)
class ChunkResult:
    """What one chunk holds: its newline count and the pieces to keep, in file order."""

    newlines: int
    pieces: list[Piece]
    at: int = 0
    size: int = 0
    ends_with_newline: bool = True
    cut_lines: int = 0
    events_thinned: int = 0
    crowded_blocks: int = 0


def read_chunk(
    buf: bytes | bytearray,
    lo: int,
    hi: int,
    at: int,
    plan: Plan,
    starts_mid_line: bool = False,
    ends_mid_line: bool = False,
) -> ChunkResult:
    """Pick the lines of buf[lo:hi] (at file offset `at`) worth keeping, in file order.

    `starts_mid_line`/`ends_mid_line` say that an over-long line crosses the chunk's edge.
    """
    why: dict[int, int] = {}  # line start -> why-bits
    find, count = buf.find, buf.count
    event_hits, nf_hits, crowded = matcher().find(buf, lo, hi)
    event_hits.sort()
    nf_hits.sort()
    for s in _line_starts(buf, lo, event_hits):
        why[s] = EVENT
    thin = len(why) > CHUNK_EVENT_LINES  # a crowded chunk sends only the first few of each shape
    per_shape: dict[bytes, int] = {}
    nf_lines = 0
    for s in _line_starts(buf, lo, nf_hits):
        bits = why.get(s, 0)
        if not bits & NON_FINITE_LINE and nf_lines < NON_FINITE_PER_CHUNK:
            nf_lines += 1
            why[s] = bits | NON_FINITE_LINE
    samples: list[int] = []
    if plan.full or plan.head:
        s, n = lo, 0
        while s < hi and (plan.full or (n < HEAD_LINES and s - lo < END_BYTES)):
            why[s] = why.get(s, 0) | WHOLE
            e = find(b"\n", s, hi)
            if e < 0:
                break
            s, n = e + 1, n + 1
    if plan.stride:
        q = -(-at // plan.stride) * plan.stride  # the first multiple of the stride in the chunk
        samples = [lo + x - at for x in range(q, at + hi - lo, plan.stride)]
        for s in _line_starts(buf, lo, samples):
            why[s] = why.get(s, 0) | SAMPLE
    pieces: list[Piece] = []
    cut_lines = kept = nl = thinned = 0
    prev = lo
    for s in sorted(why):
        bits = why[s]
        nl += count(b"\n", prev, s)
        prev = s
        e = find(b"\n", s, hi)
        end = hi if e < 0 else e
        # an event's shape (its start without digits) tells its repeats apart from new events
        shape = bytes(buf[s : min(end, s + 200)]).translate(None, _DIGITS) if bits & EVENT else b""
        if thin and shape:
            seen = per_shape.get(shape, 0)
            per_shape[shape] = seen + 1
            if seen >= SHAPE_KEEP:
                thinned += 1
                bits &= ~EVENT
                if not bits:
                    continue
        crosses = (s == lo and starts_mid_line) or (e < 0 and ends_mid_line)
        if end - s <= MAX_LINE and not crosses:
            raw = bytes(buf[s:end]) if kept < CHUNK_KEEP_BYTES else bytes(buf[s : min(end, s + SHORT_PIECE)])
            kept += len(raw)
            pieces.append((nl, -1, raw, bits, shape))
            continue
        cut_lines += not crosses  # a line across chunk edges is counted where it ends, below
        for a, b, wbits in _windows(buf, s, end, bits, event_hits, nf_hits, samples):
            raw = bytes(buf[a:b]) if kept < CHUNK_KEEP_BYTES else bytes(buf[a : min(b, a + SHORT_PIECE)])
            if not raw.strip(b"\x00 \t\r"):
                continue  # a run of NULs (a preallocated or sparse file) says nothing
            kept += len(raw)
            pieces.append((nl, at + a - lo, raw, wbits | CUT, shape if wbits & EVENT else b""))
    newlines = nl + count(b"\n", prev, hi)
    if starts_mid_line and (newlines or not ends_mid_line):
        cut_lines += 1  # the over-long line that began in an earlier chunk ends in this one
    return ChunkResult(newlines, pieces, at, hi - lo, hi == lo or buf[hi - 1] == 10, cut_lines, thinned, crowded)


def _line_starts(buf: bytes | bytearray, lo: int, positions: list[int]) -> list[int]:
    """The start of the line holding each of the sorted positions, each newline looked for once
    (a search back from each position would cross a 1 GB line once per position)."""
    out = []
    prev_p = prev_s = lo
    for p in positions:
        s = buf.rfind(b"\n", prev_p, p) + 1
        prev_s = s or prev_s
        prev_p = p
        out.append(prev_s)
    return out


def _windows(
    buf: bytes | bytearray, s: int, end: int, bits: int, event_hits: list[int], nf_hits: list[int], samples: list[int]
) -> list[tuple[int, int, int]]:
    """Windows of an over-long line [s, end) around what picked it: (start, end, why-bits).

    Each window is the carriage-return update holding its point where that is short enough
    (a progress bar's redraw), else `MAX_LINE` (`SAMPLE_PIECE` for a sample) bytes around it.
    """
    points: list[tuple[int, int]] = []
    if bits & EVENT:
        points += [(p, EVENT) for p in event_hits if s <= p < end]
    if bits & NON_FINITE_LINE:
        points += [(p, NON_FINITE_LINE) for p in nf_hits if s <= p < end][:NON_FINITE_PER_CHUNK]
    if bits & WHOLE:
        points += [(s, WHOLE), (max(s, end - 1), WHOLE)]
    if bits & SAMPLE:
        points += [(p, SAMPLE) for p in samples if s <= p < end]
    out: list[tuple[int, int, int]] = []
    for p, why in sorted(points):
        half = (SAMPLE_PIECE if why == SAMPLE else MAX_LINE) // 2
        a0, b0 = max(s, p - half), min(end, p + half)
        a = buf.rfind(b"\r", a0, p) + 1 or a0
        b = buf.find(b"\r", p, b0)
        b = b0 if b < 0 else b
        if out and a < out[-1][1]:  # overlaps the previous window: one window, both reasons
            pa, pb, pw = out[-1]
            out[-1] = (pa, max(pb, b), pw | why)
        else:
            out.append((a, b, why))
    return out


# ---- chunk boundaries, the same whether a log is read whole, in parallel or from a pipe -----


def _boundary_in(data: bytes | bytearray, pos: int) -> tuple[int, bool] | None:
    """Where the chunk that should start near `pos` in data starts: (offset, mid-line), or None
    if data does not reach far enough to tell."""
    i = data.find(b"\n", pos - 1, pos + MAX_LINE)
    if i >= 0:
        return i + 1, False
    if len(data) >= pos + MAX_LINE:
        return pos + MAX_LINE, True  # an over-long line: cut it
    return None


def _file_boundary(f: BinaryIO, k: int, size: int) -> tuple[int, bool]:
    """The start of chunk k of a seekable file: the first line start at or after k * CHUNK."""
    if k == 0:
        return 0, False
    pos = k * CHUNK
    if pos >= size:
        return size, False
    f.seek(pos - 1)
    window = f.read(MAX_LINE + 1)
    found = _boundary_in(window, 1)
    if found is None:
        return size, False  # the file ends inside the window, with no newline: one last line
    return pos - 1 + found[0], found[1]


def _read_file_chunk(f: BinaryIO, k: int, size: int, plan: Plan, buf: bytearray) -> ChunkResult:
    """Read and pick chunk k of a seekable file, into a reused buffer."""
    start, starts_mid = _file_boundary(f, k, size)
    end, ends_mid = _file_boundary(f, k + 1, size)
    if end <= start:
        return ChunkResult(0, [])
    if _all_hole(f, start, end):
        # a hole of a sparse file reads as NULs: no newline, no word, nothing to keep
        return ChunkResult(0, [], start, end - start, False)
    f.seek(start)
    n = f.readinto(memoryview(buf)[: end - start])  # type: ignore[attr-defined]  # a raw or buffered file
    return read_chunk(buf, 0, n, start, plan, starts_mid, ends_mid)


def _all_hole(f: BinaryIO, start: int, end: int) -> bool:
    """True if [start, end) of a file lies in a hole (where the system can tell: SEEK_DATA)."""
    if not hasattr(os, "SEEK_DATA"):
        return False
    fd = f.fileno()
    here = os.lseek(fd, 0, os.SEEK_CUR)  # put back below: `f` may buffer on top of this fd
    try:
        return os.lseek(fd, start, os.SEEK_DATA) >= end
    except OSError as exc:  # ENXIO: no data after start at all; anything else: cannot tell
        import errno

        return exc.errno == errno.ENXIO
    finally:
        os.lseek(fd, here, os.SEEK_SET)


def _stream_chunks(f: BinaryIO) -> Iterator[tuple[bytes, int, bool, bool]]:
    """Chunks of a stream (a pipe, a gzip file): (data, file offset, starts mid-line, ends mid-line)."""
    data = bytearray()
    at = 0
    k = 1
    starts_mid = False
    eof = False
    while True:
        if not eof:
            try:
                block = f.read(CHUNK)
            except (OSError, EOFError, zlib.error) as exc:
                raise BadInputError(f"cannot read the log: {exc}") from None
            eof = not block
            data += block
        while True:
            found = _boundary_in(data, k * CHUNK - at) if k * CHUNK - at <= len(data) else None
            if found is None:
                break
            cut, mid = found
            yield bytes(data[:cut]), at, starts_mid, mid
            del data[:cut]
            at += cut
            starts_mid = mid
            k += 1
        if eof:
            if data:
                yield bytes(data), at, starts_mid, False
            return


# ---- putting chunks together ------------------------------------------------------------------


class _Assembler:
    """Turns chunk results, in file order, into a Scan: real line numbers, budgets, readings."""

    def __init__(self, scan: Scan, each: Callable[[Reading], None] | None, hold_from: int | None) -> None:
        self.scan = scan
        self.each = each
        self.emitted = 0
        # readings from before this file offset are final when their chunk is merged (the tail,
        # read last, lies after it); None: hold every reading of a sampled log until the end
        self.hold_from = hold_from
        self.newlines = 0
        self.kept_events = 0
        self.kept_non_finite = 0
        self.kept_bytes = 0
        self.shapes: dict[bytes, int] = {}
        self.last_byte_newline = True
        self.seen_lines: set[int] = set()

    def add(self, result: ChunkResult) -> None:
        scan = self.scan
        scan.cut_lines += result.cut_lines
        scan.events_thinned += result.events_thinned
        scan.crowded_blocks += result.crowded_blocks
        base = self.newlines + 1
        for nl, offset, raw, bits, shape in result.pieces:
            if bits & EVENT:
                bits = self._keep_event(shape, bits)
            if bits & NON_FINITE_LINE:
                if self.kept_non_finite < NON_FINITE_BUDGET:
                    self.kept_non_finite += 1
                else:
                    bits &= ~NON_FINITE_LINE
            if not bits & ~CUT:
                continue
            self._keep(base + nl, offset, raw, bits)
        self.newlines += result.newlines
        if result.size:
            scan.bytes_read += result.size
            self.last_byte_newline = result.ends_with_newline
        if not scan.sampled or (self.hold_from is not None and result.at + result.size <= self.hold_from):
            self._emit()

    def _emit(self) -> None:
        """Hand the readings that are final to `each`, in log order."""
        if self.each is not None:
            each = self.each
            for rd in self.scan.readings[self.emitted :]:
                each(rd)
        self.emitted = len(self.scan.readings)

    def _keep_event(self, shape: bytes, bits: int) -> int:
        seen = self.shapes.get(shape)
        if seen is None and len(self.shapes) >= SHAPES_MAX:
            keep = self.kept_events < EVENT_BUDGET
        else:
            seen = seen or 0
            self.shapes[shape] = seen + 1
            keep = self.kept_events < EVENT_BUDGET or seen < SHAPE_KEEP
        if keep:
            self.kept_events += 1
            return bits
        self.scan.events_thinned += 1
        return bits & ~EVENT

    def _keep(self, line: int, offset: int, raw: bytes, bits: int) -> None:
        scan = self.scan
        if self.kept_bytes > KEEP_BYTES:
            raw = raw[:SHORT_PIECE]
        self.kept_bytes += len(raw)
        readings = split_readings(line, raw)
        if offset >= 0:  # a window of a cut line: order its updates by where they sit
            readings = [Reading(r.line, offset + r.index, r.text, r.rank) for r in readings]
        if not readings:
            return
        if scan.sampled:
            self.seen_lines.add(line)
        scan.readings.extend(readings)
        if bits & EVENT:
            scan.events.extend(readings)
        for rd in readings:
            if rd.rank is not None:
                scan.ranks.add(rd.rank)

    def finish(self, tail: bytes, tail_is_whole: bool) -> None:
        """Count the last line, and read a big log's last lines in full."""
        scan = self.scan
        scan.lines = self.newlines + (0 if self.last_byte_newline or not scan.bytes_read else 1)
        if not scan.sampled:
            self._emit()
            return
        lines = tail.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if not tail_is_whole and len(lines) > 1:
            lines = lines[1:]  # the first piece is the end of a line that began earlier
        lines = lines[-HEAD_LINES:]
        first = scan.lines - len(lines) + 1
        for i, raw in enumerate(lines):
            line = first + i
            if line in self.seen_lines or line < 1:
                continue
            bits = EVENT if is_event(raw) else WHOLE
            offset = -1
            if len(raw) > MAX_LINE:
                scan.cut_lines += 1
                raw = raw[-MAX_LINE:]
                offset = scan.bytes_read - MAX_LINE  # an ordering key past any earlier window
            self._keep(line, offset, raw, bits)
        order = lambda rd: (rd.line if rd.line is not None else 1 << 62, rd.index)  # noqa: E731
        scan.readings.sort(key=order)  # the held readings and the tail: all after the emitted ones
        scan.events.sort(key=order)
        self._emit()


# ---- opening and reading a log ----------------------------------------------------------------

STDIN = "-"


class _Prefixed(io.RawIOBase):
    """A stream with its first bytes (already read to sniff it) put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head = head
        self.rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.head:
            n = min(len(b), len(self.head))
            b[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.rest.read(len(b))
        b[: len(data)] = data
        return len(data)


def _open(path: str | os.PathLike[str]) -> tuple[BinaryIO, int | None]:
    """Open a log: (binary stream, size if it is a plain seekable file; None for a stream)."""
    if str(path) == STDIN:
        stdin = sys.stdin.buffer
        head = stdin.read(2)
        stream: BinaryIO = io.BufferedReader(_Prefixed(head, stdin), CHUNK)
        if head == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=stream, mode="rb"), None  # type: ignore[return-value]
        return stream, None
    p = os.fspath(path)
    try:
        if os.path.isdir(p):
            raise BadInputError(f"{p}: is a directory, not a log file")
        f = open(p, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise BadInputError(f"{p}: no such file") from None
    except PermissionError:
        raise BadInputError(f"{p}: permission denied") from None
    except OSError as exc:
        raise BadInputError(f"{p}: cannot open ({exc.strerror or exc})") from None
    magic = f.read(2)
    if magic == b"\x1f\x8b":
        f.seek(0)
        return gzip.GzipFile(fileobj=f, mode="rb"), None  # type: ignore[return-value]
    if not f.seekable():  # a named pipe or a device: read it as a stream
        return io.BufferedReader(_Prefixed(magic, f), CHUNK), None
    f.seek(0)
    return f, os.fstat(f.fileno()).st_size


def scan(path: str | os.PathLike[str], each: Callable[[Reading], None] | None = None) -> Scan:
    """Read every line of a log (a path, or "-" for standard input); raise BadInputError if it
    is not a text log.

    `each` is called with every reading, in log order, as soon as it is final: a consumer works
    while the rest of the log is still being read.
    """
    with start(path) as begun:
        return begun.collect(each)


def start(path: str | os.PathLike[str]) -> Begun:
    """Open a log and set its reading going (a big file's worker processes start on its first
    chunks at once); raise BadInputError if it is not a text log. The caller may do other work
    before `collect()`: the workers do not wait for it."""
    f, size = _open(path)
    name = "<stdin>" if str(path) == STDIN else str(path)
    try:
        return Begun(f, size, name, os.fspath(path))
    except BaseException:
        f.close()
        raise


class Begun:
    """A log whose reading has started; `collect()` finishes it, `close()` abandons it."""

    def __init__(self, f: BinaryIO, size: int | None, name: str, path: str) -> None:
        self.f, self.size, self.name = f, size, name
        self._results: Iterator[ChunkResult] | None = None
        self._pool: Any = None
        if size is None:
            return  # a stream: read front to back by collect()
        try:
            head = f.read(8192)
        except OSError as exc:
            raise BadInputError(f"{name}: cannot read ({exc})") from None
        if looks_binary(head):
            raise BadInputError(f"{name}: binary data, not a text log")
        n_chunks = max(1, -(-size // CHUNK))
        method = _start_method() if size >= PARALLEL_BYTES and n_chunks > 1 else None
        if method is not None:
            self._pool, self._results = _parallel(path, size, n_chunks, method)
        else:
            self._results = _sequential(f, size, n_chunks, _file_plan(size))

    def collect(self, each: Callable[[Reading], None] | None = None) -> Scan:
        """Read the rest and put the log's readings together (see `scan`)."""
        f, size = self.f, self.size
        if size is None or self._results is None:
            return _scan_stream(f, self.name, each)
        result = Scan(self.name, size, sampled=size > FULL_PARSE_BYTES)
        asm = _Assembler(result, each, size - END_BYTES)
        for res in self._results:
            asm.add(res)
        tail = b""
        if result.sampled:
            f.seek(max(0, size - END_BYTES))
            tail = f.read(END_BYTES)
        asm.finish(tail, size <= END_BYTES)
        return result

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        self.f.close()

    def __enter__(self) -> Begun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _file_plan(size: int) -> Callable[[int], Plan]:
    """The plan of each chunk of a plain file of `size` bytes."""
    if size <= FULL_PARSE_BYTES:
        return lambda k: Plan(full=True)
    stride = max(1, size // SAMPLES)
    return lambda k: Plan(full=False, stride=stride, head=k == 0)


def _sequential(f: BinaryIO, size: int, n_chunks: int, plan_of: Callable[[int], Plan]) -> Iterator[ChunkResult]:
    buf = bytearray(min(size, CHUNK + MAX_LINE) or 1)
    for k in range(n_chunks):
        try:
            yield _read_file_chunk(f, k, size, plan_of(k), buf)
        except OSError as exc:
            raise BadInputError(f"cannot read the log: {exc}") from None


def _scan_stream(f: BinaryIO, name: str, each: Callable[[Reading], None] | None) -> Scan:
    """Read a stream front to back: its first FULL_PARSE_BYTES in full, then a stride sample
    whose stride doubles each time the log does (its length is not known in advance)."""
    result = Scan(name, 0)
    asm = _Assembler(result, each, None)
    tail = bytearray()
    first = True
    for data, at, starts_mid, ends_mid in _stream_chunks(f):
        if first:
            if looks_binary(data[:8192]):
                raise BadInputError(f"{name}: binary data, not a text log")
            first = False
        if at < FULL_PARSE_BYTES:
            plan = Plan(full=True)
        else:
            result.sampled = True
            doublings = (at // FULL_PARSE_BYTES).bit_length() - 1
            plan = Plan(full=False, stride=(FULL_PARSE_BYTES // STREAM_SAMPLES) << doublings)
        res = read_chunk(data, 0, len(data), at, plan, starts_mid, ends_mid)
        asm.add(res)
        tail += data[-END_BYTES:]
        del tail[:-END_BYTES]
    result.size = result.bytes_read
    asm.finish(bytes(tail), result.bytes_read <= END_BYTES)
    return result


# ---- big plain files: one chunk per task, in forked worker processes ----------------------------

_WORKER: dict[str, object] = {}


def _start_method() -> str | None:
    """How worker processes are started here, or None to read in this process: "fork" while
    this process has one thread, else "forkserver" (see the module's notes)."""
    import multiprocessing as mp

    methods = mp.get_all_start_methods()
    if (os.cpu_count() or 1) < 2:
        return None
    if "fork" in methods and processes.single_threaded():
        return "fork"
    return "forkserver" if "forkserver" in methods else None


def _limits() -> dict[str, int]:
    """This module's size limits as they stand (the upper-case integer settings): a worker
    started by a server, not forked from here, is given them so that it cuts the same chunks."""
    return {name: value for name, value in globals().items() if name.isupper() and type(value) is int}


def _init_worker(path: str, size: int, limits: dict[str, int], hyperscan: bool) -> None:
    global _MATCHER
    globals().update(limits)
    if _MATCHER is None or (_MATCHER.hs is not None) != hyperscan:  # not inherited: a server's child
        _MATCHER = Matcher(use_hyperscan=hyperscan)
    _WORKER["file"] = open(path, "rb", buffering=0)  # noqa: SIM115 - lives as long as the worker
    _WORKER["size"] = size
    _WORKER["buf"] = bytearray(CHUNK + MAX_LINE)
    _WORKER["plan"] = _file_plan(size)


def _worker_chunk(k: int) -> ChunkResult:
    plan_of = _WORKER["plan"]
    return _read_file_chunk(_WORKER["file"], k, _WORKER["size"], plan_of(k), _WORKER["buf"])  # type: ignore[operator, arg-type]


def _parallel(path: str, size: int, n_chunks: int, method: str) -> tuple[Any, Iterator[ChunkResult]]:
    """(the pool, chunk results in file order) read by worker processes started by `method`,
    which begin on the first chunks at once; at most a few chunks are ahead of the merge (so
    the results waiting for it stay small whatever the file size)."""
    import multiprocessing as mp

    found = matcher()  # compiled once here, before forking (a server's children compile their own)
    workers = min(n_chunks, os.cpu_count() or 1, 8)
    try:
        pool = mp.get_context(method).Pool(
            workers, initializer=_init_worker, initargs=(path, size, _limits(), found.hs is not None)
        )
    except OSError:  # no semaphores or pipes to be had (a locked-down container): read it here
        return None, _sequential_path(path, size, n_chunks)
    pending: deque = deque()
    for k in range(min(n_chunks, 2 * workers)):
        pending.append(pool.apply_async(_worker_chunk, (k,)))
    return pool, _merge(pool, pending, n_chunks, workers)


def _sequential_path(path: str, size: int, n_chunks: int) -> Iterator[ChunkResult]:
    with open(path, "rb") as f:
        yield from _sequential(f, size, n_chunks, _file_plan(size))


def _merge(pool: Any, pending: deque, n_chunks: int, workers: int) -> Iterator[ChunkResult]:
    nxt = len(pending)
    while pending:
        try:
            result = pending.popleft().get()
        except OSError as exc:
            raise BadInputError(f"cannot read the log: {exc}") from None
        if nxt < n_chunks:  # the freed worker takes the next chunk while this one is merged
            pending.append(pool.apply_async(_worker_chunk, (nxt,)))
            nxt += 1
        yield result
