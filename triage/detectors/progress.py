"""A run that stops logging: the last gap between timestamped lines dwarfs the usual one.

`triage watch` ends a run that went silent with its devices idle and writes one line saying so
into the log (`watch_hang_line`); that line is the hang's record, timestamps or not.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from statistics import median

from triage.detectors import Context
from triage.records import Evidence, Symptom

# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {
        "log-stopped",
    }
)

# ISO-ish (logging module, most loggers) and glog-style (torch's C++ and torchrun) timestamps
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
MIN_GAP_S = 120.0
# The line `triage watch` writes when it ends a hung run: one format, written and read here.
_WATCH_HANG = re.compile(
    r"^triage watch: stall timeout: no output for (\d+(?:\.\d+)?) s and (.+?); "
    r"ended the run as hung"
)


def watch_hang_line(silent_s: float, idle: str) -> str:
    """The log line `triage watch` writes when it ends a run as hung (`idle` says what sat idle)."""
    return f"triage watch: stall timeout: no output for {silent_s:.0f} s and {idle}; ended the run as hung"


def _time(text: str) -> float | None:
    head = text[:40]
    m = _ISO.search(head) if "-" in head else None
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        hour = _hour(y, mo, d, h)
        return None if hour is None or mi > 59 or s > 59 else hour + 60 * mi + s + frac
    m = _GLOG.match(text)
    if m:
        mo, d, h, mi, s = (int(g) for g in m.groups()[:5])
        frac = float("0." + m.group(6)) if m.group(6) else 0.0
        hour = _hour(2000, mo, d, h)
        return None if hour is None or mi > 59 or s > 59 else hour + 60 * mi + s + frac
    return None


@functools.lru_cache(maxsize=256)
def _hour(y: int, mo: int, d: int, h: int) -> float | None:
    """The local time's seconds at the start of an hour (a log stamps thousands of lines per
    hour: one conversion each, not one per line), or None for a date that does not exist."""
    try:
        return datetime(y, mo, d, h).timestamp()
    except ValueError:
        return None


def detect(ctx: Context) -> list[Symptom]:
    watched = _watch_hang(ctx)
    if watched:
        return watched
    stamped = []
    for rd in ctx.readings:
        t = _time(rd.text)
        if t is not None:
            stamped.append((t, rd))
    if len(stamped) < 6:
        return []
    gaps = [b[0] - a[0] for a, b in zip(stamped, stamped[1:], strict=False)]
    usual = median(gaps[:-1])
    last = gaps[-1]
    if last >= MIN_GAP_S and last >= 20 * max(usual, 1.0):
        (_, a), (_, b) = stamped[-2], stamped[-1]
        return [
            Symptom(
                "log-stopped",
                f"the log went silent for {last:.0f} s before its last line (lines usually {usual:.1f} s apart)",
                (
                    Evidence(a.line, a.text.strip()[:300], rank=a.rank),
                    Evidence(b.line, b.text.strip()[:300], rank=b.rank),
                ),
                value=last,
            )
        ]
    return []


def _watch_hang(ctx: Context) -> list[Symptom]:
    """The hang `triage watch` recorded: its line, and the last thing the run printed before it."""
    for i in range(len(ctx.readings) - 1, -1, -1):
        rd = ctx.readings[i]
        m = _WATCH_HANG.match(rd.text) if rd.text.startswith("triage watch:") else None
        if not m:
            continue
        silent = float(m.group(1))
        before = next((r for r in reversed(ctx.readings[:i]) if not r.text.startswith("triage watch:")), None)
        ev = [Evidence(rd.line, rd.text.strip()[:300], rank=rd.rank)]
        if before is not None:
            ev.insert(0, Evidence(before.line, before.text.strip()[:300], rank=before.rank))
        return [
            Symptom(
                "log-stopped",
                f"the run hung: no output for {silent:.0f} s and {m.group(2)}, so triage watch ended it",
                tuple(ev),
                value=silent,
            )
        ]
    return []
