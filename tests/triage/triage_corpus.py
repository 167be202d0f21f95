"""The labelled corpus of real training logs (see corpus/generate.py), for the triage tests."""

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
