"""triage on what real CUDA runs print and what real NVML reads. The CPU suite reads CUDA errors
as bug reports quote them, and NVML through one fake (test_triage_watch.py); here torch's CUDA
build raises them and the driver answers. Every test but the first needs an NVIDIA GPU and is
skipped elsewhere; the first reads the logs these programs printed on one (cuda_runs/)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from triage.explain import explain
from triage.watch import EXIT_HUNG

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU and its driver")
RECORDED = Path(__file__).parent / "cuda_runs"

# A small classifier trained on the GPU; each fault is the last statement of the run.
PRELUDE = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(20):
    x, y = torch.randn(64, 32, device="cuda"), torch.randint(0, 10, (64,), device="cuda")
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
"""

FAULTS = {
    # a batch far beyond any GPU's memory: the allocator's own message
    "cuda-oom": "model(torch.randn(2**34, 32, device='cuda'))",
    # a label past the classes: the kernel's assertion, then the device-side assert
    "label-out-of-range": "F.cross_entropy(model(x), torch.full((64,), 12, device='cuda')).item()",
    # the batch left on the CPU
    "device-mismatch": "model(torch.randn(64, 32))",
}


def _run(tmp_path: Path, fault: str) -> Path:
    program = tmp_path / f"{fault}.py"
    program.write_text(PRELUDE + FAULTS[fault] + "\n")
    log = tmp_path / f"{fault}.log"
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    log.write_text(done.stdout + done.stderr)
    return log


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_recorded_cuda_run_is_named(fault):
    report = explain(RECORDED / f"{fault}.log")
    assert report.status == "explained" and report.causes[0].id == fault, report.causes


@needs_gpu
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_real_cuda_error_is_named(tmp_path, fault):
    log = _run(tmp_path, fault)
    report = explain(log)
    assert report.status == "explained", log.read_text()[-3000:]
    assert report.causes[0].id == fault, (report.causes, log.read_text()[-3000:])


@needs_gpu
def test_the_cli_reads_a_real_cuda_log_from_a_pipe(tmp_path):
    log = _run(tmp_path, "cuda-oom")
    done = subprocess.run(
        [sys.executable, "-m", "triage.cli", "explain", "-", "--format", "json"],
        input=log.read_bytes(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr  # 1: a failure, explained
    assert json.loads(done.stdout)["causes"][0]["id"] == "cuda-oom"


@needs_gpu
def test_watch_samples_the_gpu_through_nvml_and_ends_an_idle_hang(tmp_path):
    """A run that trains on the GPU, then waits forever with the GPU idle (a rank stuck in a
    collective): watch reads real NVML, sees the GPU go idle and ends the run as hung."""
    child = tmp_path / "stuck.py"
    # The small classifier alone keeps an H200 busy for under a second, so the run also
    # multiplies large matrices for four seconds, printing as it goes, before it waits. Starting
    # CUDA is silent and idle for up to eight seconds on a virtualised machine (seen on an H200),
    # so the stall timeout is well above that: a shorter one ends the run before it trains.
    child.write_text(
        PRELUDE
        + textwrap.dedent(
            """
            import time
            a = torch.randn(8192, 8192, device="cuda")
            busy_until = time.monotonic() + 4
            while time.monotonic() < busy_until:
                for _ in range(20):
                    a = torch.tanh(a @ a)
                torch.cuda.synchronize()
                print("busy", flush=True)
            torch.cuda.synchronize()
            print("waiting for the other ranks", flush=True)
            time.sleep(600)
            """
        )
    )
    started = time.monotonic()
    options = ["--interval", "0.2", "--stall-timeout", "30", "--grace", "1"]
    argv = [sys.executable, "-m", "triage.cli", "watch", *options, "--", sys.executable, str(child)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=180)
    err = done.stderr.decode()
    assert done.returncode == EXIT_HUNG, err[-3000:]
    assert time.monotonic() - started < 120
    assert "the GPUs idle" in err or "GPUs idle" in err, err[-3000:]
    records = [json.loads(line) for line in (tmp_path / "trainwreck-telemetry.jsonl").read_text().splitlines()]
    gpu = [r for r in records if "gpu" in r]
    assert gpu, records[:5]
    assert all(r["mem_total"] > 0 for r in gpu if "mem_total" in r)
    assert max(r.get("gpu_util", 0) for r in gpu) >= 50, "NVML never saw the GPU busy"
    assert "busy" in (tmp_path / "trainwreck-run.log").read_text(), "the run was ended before it trained"
    report = explain(tmp_path / "trainwreck-run.log", telemetry=tmp_path / "trainwreck-telemetry.jsonl")
    assert "log-stopped" in {s.name for s in report.symptoms}
