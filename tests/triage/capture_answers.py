"""Write `reader_answers.json`: what `triage explain --format json` says for every corpus log.

    python tests/triage/capture_answers.py

The file pins the reader's behaviour: `test_triage_throughput.py` checks that every corpus log
still gets the same causes, symptoms, evidence line numbers and series. It was first written by
the code before the single-pass reader existed (the per-line reader of small logs). Regenerate
it only when a detector or the cause table changes on purpose, and check the diff: a change in
an answer that no detector change explains is a reader bug.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = HERE / "reader_answers.json"


def corpus_logs() -> list[Path]:
    """Every log file under tests/triage/corpus (the labelled corpus and the held-out set)."""
    corpus = HERE / "corpus"
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.name.endswith((".log", ".log.gz")))


def answer(path: Path) -> dict[str, object]:
    """The JSON report for one log, without the path it was read from."""
    from triage.explain import explain

    out = explain(path).to_json()
    out.pop("log")
    return out


def main() -> int:
    sys.path.insert(0, str(ROOT))
    answers = {str(p.relative_to(HERE)): answer(p) for p in corpus_logs()}
    OUT.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(answers)} answers to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
