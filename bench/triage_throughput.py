"""How fast `triage explain` reads a big log, against `grep -c` scanning the same file.

    python bench/triage_throughput.py [--size-gb 1] [--path /tmp/triage-bench.log] [--keep]

Writes a synthetic training log of the given size (a healthy-looking run in `key=value` style
with timestamps and a tqdm-style line now and then, whose loss turns NaN 80% of the way
through and which ends in a traceback), then times, each best of --repeat runs with the file
in the page cache:

    grep -c loss FILE          (a literal grep that has to look at every line)
    triage explain FILE --format json

and prints both times and their ratio. The target is a ratio of at most 3.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import time

TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 212, in <module>
    main()
  File "train.py", line 180, in main
    raise FloatingPointError(f"loss is {loss}")
FloatingPointError: loss is nan
"""


def write_log(path: str, size: int, seed: int = 0) -> None:
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
                line = (f"\rtrain:  {step % 100:3d}%|#####     | {step % 1000}/1000 [01:02<01:02, 8.1it/s, "
                        f"loss={loss:.3g}, lr=3e-4]\n")
            else:
                line = (f"{stamp} - train - INFO - step={step} loss={loss:.5f} grad_norm={0.5 + rng.random():.4f} "
                        f"lr={3e-4 * (1 - step / 2e7):.6g} mem_mb={10240 + rng.random():.1f} tok/s=81234\n")
            block.append(line)
            if len(block) == 4096:
                text = "".join(block)
                f.write(text)
                written += len(text)
                block.clear()
        f.write("".join(block))
        f.write(TRACEBACK)


def best_of(cmd: list[str], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        # output goes to a pipe, not /dev/null: GNU grep stops at the first match when it sees
        # its output is /dev/null, which would make the comparison meaningless
        subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-gb", type=float, default=1.0)
    p.add_argument("--path", default="/tmp/triage-bench.log")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", action="store_true", help="keep the generated log")
    a = p.parse_args()
    size = int(a.size_gb * 2**30)
    if not (os.path.exists(a.path) and abs(os.path.getsize(a.path) - size) < 2**20):
        print(f"writing {a.size_gb:g} GiB to {a.path} ...", flush=True)
        write_log(a.path, size)
    with open(a.path, "rb") as f:  # warm the page cache
        while f.read(8 << 20):
            pass
    grep = best_of(["grep", "-c", "loss", a.path], a.repeat)
    triage = best_of([sys.executable, "-m", "triage.cli", "explain", a.path, "--format", "json"], a.repeat)
    print(f"file:    {a.path} ({os.path.getsize(a.path) / 2**30:.2f} GiB)")
    print(f"grep -c: {grep:.2f} s")
    print(f"triage:  {triage:.2f} s (including interpreter start-up)")
    print(f"ratio:   {triage / grep:.2f}x  (target <= 3x)")
    if not a.keep:
        os.unlink(a.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
