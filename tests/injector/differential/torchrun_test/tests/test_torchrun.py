import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_two_ranks_under_torchrun(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(ROOT / "train_ddp.py")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "RANKS_SYNC_DIR": str(tmp_path)})
    errors = [line for line in run.stderr.splitlines() if "Error" in line or "error" in line]
    assert run.returncode == 0, " | ".join(errors[-4:])
