"""The bundled demo project: its guards pass on unmutated code and its training script runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import injector

DEMO = Path(injector.__file__).parent / "demo"
LOG_LINE = re.compile(r"^epoch 1/1 \| step \d+ \| loss=\d+\.\d{4} \| lr=\S+ \| grad_norm=\d+\.\d{3}$", re.MULTILINE)


def _start_in_demo(*args: str) -> subprocess.Popen[str]:
    # No bytecode caches: the demo may sit inside an installed package. One thread: the model is
    # tiny, and extra threads only contend for a shared CI runner's cores.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=DEMO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def demo_runs() -> dict[str, tuple[int, str, str]]:
    """Run the guard suite and a short training side by side: each mostly waits on one core."""
    runs = {
        "guards": _start_in_demo("-m", "pytest", "-q", "tests"),
        "train": _start_in_demo("-m", "demo_train.train", "--epochs", "1"),
    }
    results = {}
    try:
        for name, process in runs.items():
            stdout, stderr = process.communicate(timeout=180)
            results[name] = (process.returncode, stdout, stderr)
    finally:
        for process in runs.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    return results


def test_demo_config_names_existing_code():
    config = tomllib.loads((DEMO / "pyproject.toml").read_text())["tool"]["trainwreck"]
    assert config["guard"] == "python -m pytest -x -q tests"
    assert all((DEMO / path).exists() for path in config["paths"])


def test_demo_guard_suite_passes_without_skips(demo_runs):
    returncode, stdout, stderr = demo_runs["guards"]
    assert returncode == 0, stdout + stderr
    assert "passed" in stdout
    assert "skipped" not in stdout


def test_demo_training_script_logs_every_step(demo_runs):
    returncode, stdout, stderr = demo_runs["train"]
    assert returncode == 0, stderr
    assert len(LOG_LINE.findall(stdout)) == 16  # 512 samples / batch 32, one line a step
    assert "done | eval_loss=" in stdout
