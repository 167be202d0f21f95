"""Log reading: the messy things real logs do, and big logs read the same as small ones."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from triage_corpus import LOGS, one_log

from trainwreck.errors import BadInputError
from triage import reader
from triage.explain import explain


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


# ---- big logs: every line read, real line numbers, bounded memory ------------------------------
# The chunk sizes are shrunk so that a few MiB behave as a big log does (many chunks, worker
# processes, decimated metrics); workers are given the patched sizes however they are started.


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(reader, "CHUNK", 256 << 10)
    monkeypatch.setattr(reader, "FULL_PARSE_BYTES", 128 << 10)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 1 << 20)
    monkeypatch.setattr(reader, "END_BYTES", 32 << 10)
    monkeypatch.setattr(reader, "SAMPLES", 512)


def _big_log(tmp_path, middle: bytes, *, repeats: int = 400) -> tuple[Path, int]:
    """Healthy epochs, `middle` once after the first half, more epochs, a real crash at the end.
    Returns the path and the line number of `middle`."""
    healthy = (LOGS / "healthy__epoch__s2.log").read_bytes()
    crash = one_log("shape-mismatch").read_bytes()
    head = healthy * (repeats // 2)
    p = tmp_path / "big.log"
    p.write_bytes(head + middle + healthy * (repeats // 2) + crash)
    return p, head.count(b"\n") + 1


def _key(scan: reader.Scan, rds: list[reader.Reading]) -> list[tuple]:
    return [(r.line, r.index, r.text, r.rank) for r in rds]


def test_a_warning_printed_once_mid_log_is_found_at_its_real_line(tmp_path, small_chunks):
    warning = b"/opt/train.py:88: UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`\n"
    p, line = _big_log(tmp_path, warning)
    assert p.stat().st_size > 4 * reader.PARALLEL_BYTES
    scan = reader.scan(p)
    assert scan.sampled and scan.lines == p.read_bytes().count(b"\n")
    hit = [r for r in scan.events if "lr_scheduler.step()" in r.text]
    assert [r.line for r in hit] == [line]
    crash = [r for r in scan.events if "mat1 and mat2 shapes" in r.text]
    assert crash and "mat1 and mat2 shapes" in p.read_bytes().split(b"\n")[crash[0].line - 1].decode()


def test_the_first_nan_of_a_big_log_is_exact(tmp_path, small_chunks):
    # The NaN line continues the run around it (same step counter), as a real run's would:
    # the series drops a lone line whose step belongs to another phase.
    healthy = (LOGS / "healthy__epoch__s2.log").read_bytes().splitlines(keepends=True)
    last = next(row for row in reversed(healthy) if b"loss" in row and b"val" not in row)
    p, line = _big_log(tmp_path, re.sub(rb"(loss[=: ]+)[0-9.e+-]+", rb"\1nan", last))
    report = explain(p)
    nf = next(s for s in report.symptoms if s.name == "loss-non-finite")
    assert nf.evidence[0].line == line


def test_parallel_sequential_and_piped_reads_agree(tmp_path, small_chunks, monkeypatch):
    p, _ = _big_log(tmp_path, b"RuntimeError: CUDA error: device-side assert triggered\n")
    parallel = reader.scan(p)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 1 << 40)
    sequential = reader.scan(p)
    for a, b in ((parallel, sequential),):
        assert a.lines == b.lines and a.bytes_read == b.bytes_read == p.stat().st_size
        assert _key(a, a.events) == _key(b, b.events)
        assert _key(a, a.readings) == _key(b, b.readings)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(p.read_bytes())))
    piped = reader.scan("-")
    # a pipe's length is unknown, so its metric sample differs; its events and count do not
    assert piped.lines == parallel.lines
    assert _key(piped, piped.events) == _key(parallel, parallel.events)


def test_a_process_with_threads_reads_a_big_log_without_forking_itself(tmp_path, small_chunks, monkeypatch):
    # A library user's program (or a test runner) has other threads; one of them holds a lock
    # while the log is read. A worker forked from this process would inherit that lock held and
    # could wait on it forever, so the workers must come from a clean server, and agree with a
    # read done here.
    import multiprocessing as mp
    import threading

    p, _ = _big_log(tmp_path, b"RuntimeError: CUDA error: device-side assert triggered\n")
    held, release = threading.Lock(), threading.Event()
    held.acquire()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    methods = []
    real = mp.get_context
    monkeypatch.setattr(mp, "get_context", lambda method=None: methods.append(method) or real(method))
    try:
        parallel = reader.scan(p)
    finally:
        release.set()
        held.release()
        thread.join()
    assert methods and "fork" not in methods
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 1 << 40)
    here = reader.scan(p)
    assert parallel.lines == here.lines and _key(parallel, parallel.events) == _key(here, here.events)
    assert _key(parallel, parallel.readings) == _key(here, here.readings)


def test_without_hyperscan_the_same_lines_are_picked(tmp_path, small_chunks, monkeypatch):
    p, _ = _big_log(tmp_path, b"[rank1]: Watchdog caught collective operation timeout\n", repeats=100)
    with_hs = reader.scan(p)
    monkeypatch.setattr(reader, "_MATCHER", reader.Matcher(use_hyperscan=False))
    without = reader.scan(p)
    assert _key(with_hs, with_hs.events) == _key(without, without.events)
    assert _key(with_hs, with_hs.readings) == _key(without, without.readings)


def test_caseless_words_are_found_in_any_spelling_with_and_without_hyperscan(tmp_path, small_chunks, monkeypatch):
    # nvidia-smi's "GPU-Util", numpy's "NaN", "eRROR"-style oddities: every mixed spelling of a
    # caseless word is an event, in a quiet log and in one crowded with warnings alike
    odd = [b"GPU-Util 3%", b"Gpu Util 0%", b"loss NaN", b"loss nAn", b"eRRoR in step", b"FROZEN layers", b"CanCeLLed"]
    flood = b"".join(b"WARNING: step %d slow\n" % i for i in range(3000))
    body = b"step 1 loss 0.5\n" * 50 + b"\n".join(odd) + b"\n" + flood + b"\n".join(odd) + b"\n"
    p = tmp_path / "odd.log"
    p.write_bytes(body)
    with_hs = reader.scan(p)
    found = {r.text for r in with_hs.events}
    assert {o.decode() for o in odd} <= found
    monkeypatch.setattr(reader, "_MATCHER", reader.Matcher(use_hyperscan=False))
    without = reader.scan(p)
    assert _key(with_hs, with_hs.events) == _key(without, without.events)


def test_a_crowded_log_keeps_rare_events_and_counts_repeats(tmp_path, small_chunks):
    lines = [f"2024-05-01 10:00:{i % 60:02d} WARNING: NCCL INFO channel {i} ring {i % 8}\n" for i in range(60000)]
    lines.insert(30000, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x6)\n")
    p = tmp_path / "nccl.log"
    p.write_text("".join(lines))
    scan = reader.scan(p)
    rare = [r.line for r in scan.events if "mat1" in r.text]
    assert rare == [30001]
    assert scan.crowded_blocks > 0 and scan.events_thinned > 0 and len(scan.events) < 10000


def peak_rss_kb() -> int:
    """This process's peak resident memory in KiB (ru_maxrss survives exec on Linux: it would
    report the forking parent's size, so the kernel's own high-water mark is read first)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_an_over_long_line_is_cut_and_memory_stays_flat(tmp_path):
    p = tmp_path / "one-line.log"
    with open(p, "wb") as f:
        f.write(b"step=1 loss=2.5\n")
        for i in range(64 * 4096):  # a 64 MiB line: a progress bar redrawn with \r, never ended
            f.write(b"\r 40%%|####      | %d/9999 [00:10<00:15, loss=2.31]" % i + b" " * 190)
        f.write(b"\rRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    code = (
        "import json, sys; from triage import reader; s = reader.scan(sys.argv[1]); "
        f"from {__name__} import peak_rss_kb; "
        "print(json.dumps({'rss_kb': peak_rss_kb(), 'lines': s.lines, 'cut': s.cut_lines, "
        "'oom': [r.line for r in s.events if 'out of memory' in r.text]}))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, check=True, env=env)
    got = json.loads(out.stdout)
    assert got["lines"] == 2 and got["cut"] == 1 and got["oom"] == [2]
    # the whole line would be 64 MiB as bytes and again as text; the reader holds a chunk or two
    assert got["rss_kb"] < 64 * 1024


def test_gzip_on_stdin_is_read(monkeypatch):
    gz = LOGS / "healthy__kv__s0.log.gz"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(gz.read_bytes())))
    piped = reader.scan("-")
    plain = reader.scan(gz)
    assert piped.path == "<stdin>" and piped.lines == plain.lines
    assert _key(piped, piped.readings) == _key(plain, plain.readings)


def test_cli_reads_a_log_from_a_pipe(tmp_path):
    log = one_log("label-out-of-range")
    cmd = [sys.executable, "-m", "triage.cli", "explain", "-", "--format", "json"]
    piped = subprocess.run(cmd, input=log.read_bytes(), capture_output=True, check=False)
    direct = subprocess.run(cmd[:4] + [str(log), "--format", "json"], capture_output=True, check=False)
    assert piped.returncode == direct.returncode == 1
    a, b = json.loads(piped.stdout), json.loads(direct.stdout)
    assert a["log"] == "<stdin>" and a["causes"] == b["causes"] and a["symptoms"] == b["symptoms"]
    empty = subprocess.run(cmd, input=b"", capture_output=True, check=False)
    assert empty.returncode == 2 and empty.stderr.decode().count("\n") == 1 and b"empty" in empty.stderr


def test_a_reading_abandoned_after_its_workers_started_leaves_none_behind(tmp_path, small_chunks):
    # `triage explain` sets a big log's workers going before it loads the cause table; a table
    # that does not load must stop them, not leave them reading (or waiting) after the error.
    import multiprocessing as mp

    p, _ = _big_log(tmp_path, b"RuntimeError: CUDA error: device-side assert triggered\n")
    bad = tmp_path / "causes.yaml"
    bad.write_text("causes: [unclosed\n")
    with pytest.raises(BadInputError):
        explain(p, causes=bad)
    assert not [c for c in mp.active_children() if c.is_alive()]
    begun = reader.start(p)
    assert begun._pool is not None  # its workers took the first chunks before anyone asked
    begun.close()
    assert not [c for c in mp.active_children() if c.is_alive()]
    assert explain(p).causes  # and a reading that runs to the end still answers


def test_the_caseless_event_words_stay_cheap_to_compile():
    # hyperscan is given every spelling of a caseless word (2^letters); a 14-letter phrase once made
    # the first read of every log take 30 s
    from triage.reader import CASELESS

    assert sum(2 ** sum(chr(b).isalpha() for b in word) for word in CASELESS) <= 1024
