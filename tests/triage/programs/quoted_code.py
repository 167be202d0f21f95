"""Run `guard_step.py` under pytest once per fault (and healthy), keep what pytest printed.

    python tests/triage/programs/quoted_code.py

Writes `quoted/<fault>.log`. The three faults raise the same autograd error at `backward()`;
only the test body pytest quotes in its long traceback tells them apart.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAULTS = ("healthy", "no-grad-training", "detached-graph", "frozen-parameters")


def main() -> int:
    out = HERE / "quoted"
    out.mkdir(exist_ok=True)
    for fault in FAULTS:
        env = dict(os.environ, FAULT=fault, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        cmd = [sys.executable, "-m", "pytest", "guard_step.py", "--tb=long", "-p", "no:cacheprovider", "-q"]
        cmd += ["-o", "addopts=", "--rootdir", str(HERE)]
        proc = subprocess.run(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        (out / f"{fault}.log").write_bytes(proc.stdout)
        print(proc.returncode, fault)
    return 0


if __name__ == "__main__":
    sys.exit(main())
