"""Log reading: the messy things real logs do, and big logs read the same as small ones."""

from __future__ import annotations

import gzip
import os

import pytest

from triage_corpus import LOGS, one_log
from triage import reader
from triage.errors import BadInputError


def test_ansi_colour_codes_are_stripped():
    scan = reader.scan(LOGS / "healthy__colon__s1.log")
    texts = [r.text for r in scan.readings]
    assert any(t.startswith("Step ") for t in texts)
    assert not any("\x1b" in t for t in texts)


def test_tqdm_carriage_return_updates_are_separate_readings_on_one_line():
    scan = reader.scan(LOGS / "healthy__tqdm__s7.log")
    by_line: dict[int, int] = {}
    for r in scan.readings:
        by_line[r.line] = by_line.get(r.line, 0) + 1
    # the bar is redrawn with \r between evaluations: one line holds several readings
    assert max(by_line.values()) >= 2
    assert len(scan.readings) > scan.lines


def test_rank_prefixes_are_recognised_and_kept(tmp_path):
    scan = reader.scan(one_log("ddp-unused-parameters", "kv"))  # torchrun --tee: [default1]:[rank1]:
    assert scan.ranks == {0, 1}
    err = [r for r in scan.events if "Expected to have finished reduction" in r.text]
    assert {r.rank for r in err} == {0, 1}
    assert all(not r.text.startswith("[") for r in err)
    bare = tmp_path / "bare.log"
    bare.write_text("0: step=1 loss=2.0\n1: step=1 loss=2.1\n")
    assert {r.rank for r in reader.scan(bare).readings} == {0, 1}


def test_line_numbers_are_the_original_ones():
    path = one_log("shape-mismatch")
    lines = path.read_text(errors="replace").splitlines()
    scan = reader.scan(path)
    hit = next(r for r in scan.events if "mat1 and mat2 shapes" in r.text)
    assert "mat1 and mat2 shapes" in lines[hit.line - 1]


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    p = tmp_path / "bad.log"
    p.write_bytes(b"step=1 loss=2.5\n\xff\xfe garbage \xc3\x28\nstep=2 loss=2.4\n")
    scan = reader.scan(p)
    assert [r.line for r in scan.readings] == [1, 2, 3]
    assert "\ufffd" in scan.readings[1].text


def test_gzip_logs_read_like_plain_ones():
    gz = LOGS / "healthy__kv__s0.log.gz"
    plain = reader.scan(gz)
    assert plain.lines == gzip.decompress(gz.read_bytes()).count(b"\n")
    assert plain.readings[0].line == 1


def test_binary_and_missing_files_are_bad_input(tmp_path):
    b = tmp_path / "core"
    b.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(BadInputError, match="binary"):
        reader.scan(b)
    with pytest.raises(BadInputError, match="no such file"):
        reader.scan(tmp_path / "nope.log")
    with pytest.raises(BadInputError, match="directory"):
        reader.scan(tmp_path)


def test_sampled_scan_of_a_big_log_finds_the_same_events(tmp_path):
    src = one_log("shape-mismatch").read_bytes()
    # a big log: many healthy epochs, then the real crash
    healthy = (LOGS / "healthy__epoch__s2.log").read_bytes()
    p = tmp_path / "big.log"
    p.write_bytes(healthy * 200 + src)
    full = reader.scan(p)
    sampled = reader.scan(p, full_parse_bytes=0)
    assert sampled.sampled and not full.sampled
    assert sampled.lines == full.lines
    key = lambda s: [(r.line, r.text) for r in s.events if "mat1" in r.text]  # noqa: E731
    assert key(sampled) == key(full)
    assert len(sampled.readings) < len(full.readings)


def test_a_log_beyond_max_bytes_is_read_as_head_and_tail(tmp_path):
    p = tmp_path / "huge.log"
    head = b"step=1 loss=2.30\n" * 1000
    tail = b"step=9 loss=2.20\n" * 1000 + b"RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n"
    with open(p, "wb") as f:
        f.write(head)
        f.seek(10 * 2**30)  # a sparse 10 GiB file: nothing is written in between
        f.write(tail)
    assert os.path.getsize(p) > 10 * 2**30
    scan = reader.scan(p, max_bytes=2**20)
    assert scan.skipped_bytes > 9 * 2**30
    crash = [r for r in scan.events if "mat1" in r.text]
    assert crash and crash[0].line is None  # line numbers after a skipped middle are unknown
