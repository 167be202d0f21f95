"""How fast `triage explain` reads big logs, against `grep -c loss` on the same file, side by side.

    python bench/triage_throughput.py [--size-gb 1] [--repeat 5] [--kinds concat,uniform]
                                      [--memory] [--dir /tmp/triage-bench] [--keep]

Two kinds of log (issue 14), each written once to --dir and then timed:

  concat   a concatenation of varied real training logs: every log of the triage corpus and its
           held-out set (tests/triage/corpus), plus logs of five other programs really run here
           (bench/training_runs.py: a conv net, a GRU with a progress bar, a transformer LM, an
           MLP whose loss blows up, a GAN ending in a shape error) at several step counts, in a
           seeded random order, repeated to the size;
  uniform  one long uniform run in `key=value` style (timestamps, a progress-bar line now and
           then), whose loss turns NaN 80% of the way through and which ends in a traceback.

For each kind the two commands run alternately, --repeat times each, with the file in the page
cache, and the best time of each is kept (the machine is shared: the best is the least
disturbed):

    grep -c loss FILE                          (GNU grep looks at every line)
    triage explain FILE --format json          (interpreter start-up included)

It prints both times, their ratio (the target is <= 2) and the peak resident memory of the
largest triage process (the target is <= 256 MiB). `--memory` adds two logs that only measure
memory and time, once each: a 10 GiB sparse log (a hole of zeros between two runs; both programs
skip the hole) and a single 1 GiB line (a progress bar redrawn with carriage returns).
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "triage" / "corpus"
RUNS = ("cnn", "gru", "transformer", "mlp-lr", "gan")
STEPS = (30, 120, 400)

TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 212, in <module>
    main()
  File "train.py", line 180, in main
    raise FloatingPointError(f"loss is {loss}")
FloatingPointError: loss is nan
"""


def run_programs(out: Path) -> list[bytes]:
    """Run each program of bench/training_runs.py at a few step counts (once; kept in `out`)."""
    out.mkdir(parents=True, exist_ok=True)
    logs = []
    for shape in RUNS:
        for seed, steps in enumerate(STEPS):
            path = out / f"{shape}-{steps}.log"
            if not path.exists():
                print(f"  running {shape} for {steps} steps ...", flush=True)
                done = subprocess.run(
                    [sys.executable, str(ROOT / "bench" / "training_runs.py"), shape, str(steps), "--seed", str(seed)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
                path.write_bytes(done.stdout)
            logs.append(path.read_bytes())
    return logs


def corpus_logs() -> list[bytes]:
    """Every log of the triage corpus and its held-out set, unpacked."""
    out = []
    for p in sorted(CORPUS.rglob("*")):
        if p.name.endswith(".log"):
            out.append(p.read_bytes())
        elif p.name.endswith(".log.gz"):
            out.append(gzip.decompress(p.read_bytes()))
    return out


def write_concat(path: Path, size: int, runs_dir: Path, seed: int = 0) -> None:
    logs = corpus_logs() + run_programs(runs_dir)
    rng = random.Random(seed)
    written = 0
    with open(path, "wb") as f:
        while written < size:
            block = b"".join(rng.choice(logs) for _ in range(256))
            f.write(block)
            written += len(block)


def write_uniform(path: Path, size: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    nan_at = int(size * 0.8)
    written = 0
    step = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("2024-05-01 10:00:00,000 - train - INFO - model: 124,439,808 parameters\n")
        block: list[str] = []
        while written < size:
            step += 1
            loss = 2.3 * math.exp(-step / 2e6) + 0.05 * rng.random() if written < nan_at else float("nan")
            sec = step // 10
            stamp = f"2024-05-01 {10 + sec // 3600 % 14:02d}:{sec // 60 % 60:02d}:{sec % 60:02d},{step % 1000:03d}"
            if step % 50 == 0:
                line = (
                    f"\rtrain:  {step % 100:3d}%|#####     | {step % 1000}/1000 [01:02<01:02, 8.1it/s, "
                    f"loss={loss:.3g}, lr=3e-4]\n"
                )
            else:
                line = (
                    f"{stamp} - train - INFO - step={step} loss={loss:.5f} grad_norm={0.5 + rng.random():.4f} "
                    f"lr={3e-4 * (1 - step / 2e7):.6g} mem_mb={10240 + rng.random():.1f} tok/s=81234\n"
                )
            block.append(line)
            if len(block) == 4096:
                text = "".join(block)
                f.write(text)
                written += len(text)
                block.clear()
        f.write("".join(block))
        f.write(TRACEBACK)


def write_sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.write(b"step=1 loss=2.30\n" * 1000)
        f.seek(size)
        f.write(b"step=9 loss=2.20\n" * 1000 + b"IndexError: Target 10 is out of bounds.\n")


def write_one_line(path: Path, size: int) -> None:
    update = b"\r 40%|####      | 4000/9999 [00:10<00:15, loss=2.31]" + b" " * 200
    with open(path, "wb") as f:
        f.write(b"step=1 loss=2.5\n")
        chunk = update * (4 << 20 // len(update))
        for _ in range(max(1, size // len(chunk))):
            f.write(chunk)
        f.write(b"\rRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds of one run and the peak RSS (KiB) of its largest process (its workers too)."""
    # output goes to a file, not /dev/null: GNU grep stops at the first match when it sees its
    # output is /dev/null, which would make the comparison meaningless
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=out)
        _, _, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = 0  # reaped above
    return wall, usage.ru_maxrss


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-gb", type=float, default=1.0)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--kinds", default="concat,uniform")
    p.add_argument("--memory", action="store_true", help="also a 10 GiB sparse log and a 1 GiB single line")
    p.add_argument("--dir", default="/tmp/triage-bench", help="where the logs are written (and reused)")
    p.add_argument("--keep", action="store_true", help="keep the generated logs")
    a = p.parse_args()
    out = Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    size = int(a.size_gb * 2**30)
    writers = {
        "concat": lambda path: write_concat(path, size, out / "runs"),
        "uniform": lambda path: write_uniform(path, size),
    }
    triage = [sys.executable, "-m", "triage.cli", "explain"]
    made: list[Path] = []
    print(f"{'log':<10} {'size':>9} {'grep -c':>8} {'triage':>8} {'ratio':>6} {'triage RSS':>11}")
    for kind in a.kinds.split(","):
        path = out / f"{kind}-{a.size_gb:g}g.log"
        if not (path.exists() and abs(path.stat().st_size - size) < 2**24):
            print(f"writing {kind} ({a.size_gb:g} GiB) to {path} ...", flush=True)
            writers[kind](path)
        made.append(path)
        warm(path)
        grep_best = triage_best = math.inf
        rss = 0
        for _ in range(a.repeat):
            grep_best = min(grep_best, timed(["grep", "-c", "loss", str(path)])[0])
            wall, peak = timed([*triage, str(path), "--format", "json"])
            triage_best, rss = min(triage_best, wall), max(rss, peak)
        print(
            f"{kind:<10} {path.stat().st_size / 2**30:7.2f}Gi {grep_best:7.2f}s {triage_best:7.2f}s "
            f"{triage_best / grep_best:5.2f}x {rss / 1024:8.0f} MiB",
            flush=True,
        )
    if a.memory:
        for kind, writer, gib in (("sparse", write_sparse, 10), ("one-line", write_one_line, 1)):
            path = out / f"{kind}-{gib}g.log"
            if not path.exists():
                writer(path, gib * 2**30)
            made.append(path)
            grep, grep_peak = timed(["grep", "-c", "loss", str(path)])
            wall, peak = timed([*triage, str(path), "--format", "json"])
            print(
                f"{kind:<10} {path.stat().st_size / 2**30:7.2f}Gi {grep:7.2f}s {wall:7.2f}s {'':>6} "
                f"{peak / 1024:8.0f} MiB  (grep: {grep_peak / 1024:.0f} MiB)",
                flush=True,
            )
    if not a.keep:
        for path in made:
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
