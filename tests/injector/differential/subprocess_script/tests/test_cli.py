import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "train.py"


def test_the_script_learns():
    run = subprocess.run([sys.executable, str(SCRIPT), "--steps", "60"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["last"] < result["first"] * 0.7
    assert result["deterministic"]
