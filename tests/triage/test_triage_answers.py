"""The single-pass reader gives every corpus log the answer the per-line reader gave it.

`reader_answers.json` was written by `capture_answers.py` from the code before the single-pass
reader (see its docstring); each corpus log must still get the same status, causes, symptoms,
evidence line numbers, series and line count, whichever way it is read: from the file, from a
pipe, with or without Hyperscan, and when its chunks are read by worker processes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from capture_answers import OUT, corpus_logs

from triage import reader
from triage.explain import explain

HERE = Path(__file__).resolve().parent
ANSWERS = json.loads(OUT.read_text())
# keys the single-pass reader dropped: nothing is skipped any more
DROPPED = {"skipped_bytes"}
LOGS = corpus_logs()


def _answer(path: Path | str) -> dict[str, object]:
    out = explain(path).to_json()
    out.pop("log")
    return out


def _same(got: dict[str, object], want: dict[str, object]) -> None:
    for key, value in want.items():
        if key not in DROPPED:
            assert got[key] == value, key


def test_every_corpus_log_has_a_pinned_answer():
    assert sorted(ANSWERS) == sorted(str(p.relative_to(HERE)) for p in LOGS)
    assert len(LOGS) >= 150


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_answer_is_unchanged(path):
    _same(json.loads(json.dumps(_answer(path))), ANSWERS[str(path.relative_to(HERE))])


def test_answers_are_the_same_without_hyperscan(monkeypatch):
    monkeypatch.setattr(reader, "_MATCHER", reader.Matcher(use_hyperscan=False))
    for path in LOGS[::7]:
        _same(json.loads(json.dumps(_answer(path))), ANSWERS[str(path.relative_to(HERE))])


def test_answers_are_the_same_from_a_pipe(monkeypatch):
    for path in LOGS[::11]:
        stdin = io.TextIOWrapper(io.BytesIO(path.read_bytes()))
        monkeypatch.setattr("sys.stdin", stdin)
        _same(json.loads(json.dumps(_answer("-"))), ANSWERS[str(path.relative_to(HERE))])
