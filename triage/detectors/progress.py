"""A run that stops logging: the last gap between timestamped lines dwarfs the usual one."""

from __future__ import annotations

import re
from datetime import datetime
from statistics import median

from triage.detectors import Context
from triage.records import Evidence, Symptom

# ISO-ish (logging module, most loggers) and glog-style (torch's C++ and torchrun) timestamps
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
MIN_GAP_S = 120.0


def _time(text: str) -> float | None:
    m = _ISO.search(text[:40])
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        try:
            return datetime(y, mo, d, h, mi, s).timestamp() + frac
        except ValueError:
            return None
    m = _GLOG.match(text)
    if m:
        mo, d, h, mi, s = (int(g) for g in m.groups()[:5])
        frac = float("0." + m.group(6)) if m.group(6) else 0.0
        try:
            return datetime(2000, mo, d, h, mi, s).timestamp() + frac
        except ValueError:
            return None
    return None


def detect(ctx: Context) -> list[Symptom]:
    stamped = []
    for rd in ctx.readings:
        t = _time(rd.text)
        if t is not None:
            stamped.append((t, rd))
    if len(stamped) < 6:
        return []
    gaps = [b[0] - a[0] for a, b in zip(stamped, stamped[1:])]
    usual = median(gaps[:-1])
    last = gaps[-1]
    if last >= MIN_GAP_S and last >= 20 * max(usual, 1.0):
        (_, a), (_, b) = stamped[-2], stamped[-1]
        return [Symptom("log-stopped",
                        f"the log went silent for {last:.0f} s before its last line "
                        f"(lines usually {usual:.1f} s apart)",
                        (Evidence(a.line, a.text.strip()[:300], rank=a.rank),
                         Evidence(b.line, b.text.strip()[:300], rank=b.rank)),
                        value=last)]
    return []
