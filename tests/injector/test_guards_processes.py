"""Guard checks across processes: replicas of a 2-rank gloo run, scripts the watched code
starts, and (on CUDA only) the GradScaler under fp16 autocast."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from injector import guards
from injector.generate import mutants_for_source
from injector.guards import GuardFailure, watch
from injector.mutants import apply_edits
from injector.operators import select

SNIPPET = (Path(__file__).parent / "guard_snippet.py").read_text()


def _ranks_step(skip_rank: int | None):
    def train_rank(rank: int, world_size: int) -> torch.nn.Module:
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(rank)
        for step in range(3):
            x = torch.randn(8, 4, generator=data)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).backward()
            if rank == skip_rank and step == 1:
                continue  # this rank's step is skipped after the gradients were all-reduced
            optimizer.step()
        assert dist.get_world_size() == world_size
        return model

    return train_rank


def test_replicas_in_sync_passes_when_every_rank_steps():
    guards.assert_replicas_in_sync(_ranks_step(None))


def test_replicas_in_sync_fails_when_one_rank_skips_a_step():
    with pytest.raises(GuardFailure, match="differ"):
        guards.assert_replicas_in_sync(_ranks_step(1))


def _fails_on_rank_one(rank: int, world_size: int) -> torch.nn.Module:
    if rank == 1:
        raise ValueError("no data for this rank")
    return _ranks_step(None)(rank, world_size)


def test_a_rank_that_raises_is_reported_with_its_error_not_as_a_hang():
    with pytest.raises(GuardFailure, match="rank 1 failed: ValueError: no data for this rank"):
        guards.assert_replicas_in_sync(_fails_on_rank_one)


def _script(tmp_path: Path, text: str, name: str = "snippet") -> list[str]:
    tmp_path.mkdir()
    (tmp_path / f"{name}.py").write_text(text)
    runner = tmp_path / "run.py"
    runner.write_text(
        f"import {name} as snippet\n"
        "model, optimizer, scheduler, scaler = snippet.make_training()\n"
        "loader = snippet.make_loader()\n"
        "for _ in range(2):\n"
        "    snippet.train_epoch(model, loader, optimizer, scheduler, scaler)\n"
    )
    return [sys.executable, str(runner)]


def test_a_script_started_inside_watch_is_watched(tmp_path):
    (mutant,) = mutants_for_source(SNIPPET, "snippet.py", select(["missing-zero-grad"]))
    faulty = _script(tmp_path / "faulty", apply_edits(SNIPPET, mutant.edits))
    correct = _script(tmp_path / "correct", SNIPPET)
    with watch("missing-zero-grad"):
        failed = subprocess.run(faulty, capture_output=True, text=True, cwd=tmp_path)
        passed = subprocess.run(correct, capture_output=True, text=True, cwd=tmp_path)
    assert failed.returncode != 0
    assert "zero_grad() is not called" in failed.stderr
    assert passed.returncode == 0, passed.stderr[-500:]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fp16 autocast with a GradScaler needs CUDA")
@pytest.mark.parametrize("scaled", [True, False])
def test_fp16_autocast_needs_the_scaler(scaled):
    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", enabled=scaled)
    x, y = torch.randn(16, 8, device="cuda"), torch.randint(0, 2, (16,), device="cuda")

    def step() -> None:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        if scaled:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    if scaled:
        guards.assert_scaler_used(step)
    else:
        with pytest.raises(GuardFailure, match="scaler"):
            guards.assert_scaler_used(step)


def _rank_training(rank: int, step: bool) -> None:
    torch.manual_seed(rank)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(torch.randn(8, 4)), torch.zeros(8, 1)).backward()
        if step:
            optimizer.step()


def test_spawned_ranks_are_forked_and_judged_at_their_end():
    # Forked, the ranks inherit the watchers (no fresh torch import per rank), and a whole-run
    # check that fails at a rank's end fails that rank as in a freshly spawned one.
    _rank_training(0, True)  # torch's lazy start-up, paid here once instead of in every rank
    with watch("missing-optimizer-step"):
        torch.multiprocessing.spawn(_rank_training, args=(True,), nprocs=2)
    failed = pytest.raises(torch.multiprocessing.ProcessRaisedException, match="did not change")
    with failed, watch("missing-optimizer-step"):
        torch.multiprocessing.spawn(_rank_training, args=(False,), nprocs=2)
    assert torch.multiprocessing.start_processes.__module__ == "torch.multiprocessing.spawn"


def test_a_guard_command_runs_in_this_process_and_leaves_its_state(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "smoke.py").write_text(
        "import sys, torch\n"
        "torch.manual_seed(1)\n"
        "torch.set_default_dtype(torch.float64)\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(int(sys.argv[1]))\n"
    )
    (tmp_path / "script.py").write_text("import sys\nsys.exit('loss did not drop')\n")
    monkeypatch.chdir(Path(__file__).parent)
    argv, draws = list(sys.argv), torch.random.get_rng_state()
    assert guards.run_python(["-m", "pkg.smoke", "0"], cwd=tmp_path) == 0
    assert guards.run_python(["-m", "pkg.smoke", "3"], cwd=tmp_path) == 3
    assert guards.run_python(["script.py"], cwd=tmp_path) == 1
    assert Path.cwd() == Path(__file__).parent and sys.argv == argv
    assert torch.get_default_dtype() == torch.float32 and torch.equal(torch.random.get_rng_state(), draws)
    with pytest.raises(ValueError, match="not a `python -m module`"):
        guards.run_python(["-c", "pass"], cwd=tmp_path)


def test_in_process_a_watched_script_runs_here_and_answers_as_a_subprocess(tmp_path):
    (mutant,) = mutants_for_source(SNIPPET, "snippet.py", select(["missing-zero-grad"]))
    # (modules a script imports stay imported in this process: each version has its own name)
    faulty = _script(tmp_path / "faulty", apply_edits(SNIPPET, mutant.edits), "snippet_faulty")
    correct = _script(tmp_path / "correct", SNIPPET, "snippet_correct")
    (tmp_path / "correct" / "loud.py").write_text("import sys\nprint('trained')\nsys.exit(4)\n")
    with watch("missing-zero-grad", in_process=True):
        passed = subprocess.run(correct, capture_output=True, text=True, cwd=tmp_path)
        loud = subprocess.run([sys.executable, "loud.py"], capture_output=True, cwd=tmp_path / "correct")
        with pytest.raises(GuardFailure, match="zero_grad"):
            subprocess.run(faulty, capture_output=True, text=True, cwd=tmp_path)
    assert passed.returncode == 0, passed.stderr[-500:]
    assert (loud.returncode, loud.stdout) == (4, b"trained\n")
    assert subprocess.run.__module__ == "subprocess"


RANKS_AFTER_TRAINING = """\
import torch
from injector.guards import watch


def rank(index):
    model = torch.nn.Linear(256, 256)
    model(torch.randn(512, 256)).square().mean().backward()


if __name__ == "__main__":
    torch.set_num_threads(2)
    model = torch.nn.Linear(256, 256)
    model(torch.randn(512, 256)).square().mean().backward()  # the parent trained before the block
    with watch("wrong-softmax-dim"):
        torch.multiprocessing.spawn(rank, nprocs=2)
    print("ranks done")
"""


def test_ranks_forked_after_the_parent_trained_do_not_hang(tmp_path):
    # A process that ran parallel ops (an earlier test, suggest's timing warm-up) holds an
    # intra-op thread pool that a fork does not carry over: a forked rank's first parallel op
    # then waited forever (spawn_ddp's suggested guard, run after the warm-up). Forked ranks run
    # single-threaded.
    (tmp_path / "ranks.py").write_text(RANKS_AFTER_TRAINING)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "ranks.py")], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0 and "ranks done" in done.stdout, done.stderr[-2000:]
