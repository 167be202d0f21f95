"""The labelled corpus of real training logs (see corpus/generate.py), for the triage tests; and
a calibration log as it reads without the training probe."""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
LOGS = CORPUS / "logs"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())


def logs_for(cause: str | None) -> list[Path]:
    """Every corpus log seeded with `cause` (None: the healthy runs)."""
    return [LOGS / m["file"] for m in MANIFEST if m["cause"] == cause]


def one_log(cause: str | None, style: str | None = None) -> Path:
    for m in MANIFEST:
        if m["cause"] == cause and (style is None or m["style"] == style):
            return LOGS / m["file"]
    raise LookupError(f"no corpus log for {cause} / {style}")


def without_probe(log: Path, folder: Path) -> Path:
    """The same log as a run without the training probe leaves it (`triage watch --no-probe`, a
    CI log uploaded as it is): its probe line and pytest's section header for it taken out."""
    kept = [
        line
        for line in log.read_text().splitlines(keepends=True)
        if not line.startswith("[trainwreck probe]") and " trainwreck probe " not in line
    ]
    bare = folder / log.name
    bare.write_text("".join(kept))
    return bare
