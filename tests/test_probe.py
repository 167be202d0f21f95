"""The training probe (trainwreck.probe) on real training loops: what it counts, that the
processes a run starts count too, and that it changes nothing in the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainwreck import probe

HERE = Path(__file__).resolve().parent / "probe"


@pytest.fixture(scope="module")
def counted(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("probe")
    done = subprocess.run(
        [sys.executable, str(HERE / "scenarios.py"), str(folder)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_healthy_loop_and_its_evaluation_count_no_fault(counted):
    assert counted["healthy"] == {
        "backward": 6, "failed_backward": 0, "grad_calls": 0, "optimizers": 1, "stepped": 1, "steps": 6, "unstepped": 0,
        "gradless": 0, "kept": 0, "no_grad_forwards": 0, "stepping": 1, "uneven": 0,
    }  # fmt: skip


def test_the_faults_that_train_nothing_alike_are_told_apart(counted):
    assert counted["no_backward"]["backward"] == 0 and counted["no_backward"]["gradless"] == 1
    assert counted["no_step"]["backward"] == 6 and counted["no_step"]["unstepped"] == 1
    assert counted["no_step"]["stepped"] == counted["no_step"]["steps"] == 0
    assert counted["no_zero_grad"]["kept"] == 5  # every step but the first
    for name in ("no_backward", "no_step"):
        assert counted[name]["kept"] == 0 and counted[name]["no_grad_forwards"] == 0
    # the step's forward under no_grad: two Linear layers in training mode with gradients off
    assert counted["no_grad_step"]["no_grad_forwards"] == 2 and counted["no_grad_step"]["backward"] == 0
    assert counted["no_grad_step"]["failed_backward"] == 1


def test_an_optimizer_built_before_the_count_began_still_counts_as_never_stepped(counted):
    assert counted["no_step_prebuilt"]["optimizers"] == 0 and counted["no_step_prebuilt"]["unstepped"] == 1


@pytest.mark.parametrize("name", ["zeroed_in_place", "accumulation", "gan", "forked_rank"])
def test_legitimate_spellings_keep_no_gradient_across_steps(counted, name):
    """zero_grad(set_to_none=False), accumulation cleared through the model, DCGAN's order (the
    generator's backward reaches the discriminator's gradients after its step), a forked rank."""
    assert counted[name]["kept"] == 0 and counted[name]["gradless"] == 0 and counted[name]["unstepped"] == 0
    assert counted[name]["steps"] > 0 and counted[name]["stepped"] == counted[name]["optimizers"]


def test_a_gradient_penalty_without_an_optimizer_counts_its_grad_call(counted):
    assert counted["gradient_penalty_only"]["grad_calls"] == 1
    assert counted["gradient_penalty_only"]["optimizers"] == 0


def test_the_probe_changes_no_number_of_the_run(counted):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 8, generator=g), torch.randint(0, 3, (16,), generator=g)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert counted["losses"] == losses


def test_ranks_started_afresh_count_through_the_environment(tmp_path):
    folder = tmp_path / "probe"
    env = dict(os.environ, **probe.environment(folder))
    done = subprocess.run(
        [sys.executable, str(HERE / "ranks.py")], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0 and "ranks done" in done.stdout, done.stderr[-2000:]
    counts = probe.collect(folder)
    # rank 0 trained five steps; rank 1 stepped four times, on no gradient
    assert (counts.backward, counts.optimizers, counts.stepped, counts.steps, counts.gradless) == (5, 2, 2, 9, 1)
    assert (counts.stepping, counts.uneven) == (2, 1)


def test_the_line_reads_back_and_an_environments_own_sitecustomize_still_runs(tmp_path):
    counts = probe.Counts(backward=1, optimizers=2, stepped=1, steps=3, gradless=1, kept=2, uneven=1)
    assert probe.Counts.parse("noise " + counts.line()) == counts
    assert probe.Counts.parse("[trainwreck probe] something else") is None
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS_RAN = True\n")
    # ours first, then another of ours (a guard's watchers), then the environment's: each runs once
    from injector.guards.children import SITE as WATCHERS

    env = dict(os.environ, **probe.environment(tmp_path / "probe"))
    env["PYTHONPATH"] = os.pathsep.join([probe.SITE, WATCHERS, str(theirs), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "-c", "import builtins; print(getattr(builtins, 'THEIRS_RAN', False))"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]
