"""Two-process data-parallel training over gloo on CPU.

The ranks run as forked processes so that they share this interpreter's imports (and, under a
mutation campaign, its mutated code). A rank that skips a collective leaves the other blocked,
so every wait here is bounded: the process group times out and the test kills what is left.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from demo_train.train import build_model, train

WORLD_SIZE = 2
COLLECTIVE_TIMEOUT = timedelta(seconds=5)
TEST_TIMEOUT_S = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_rank(rank, port, config, results):
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD_SIZE,
        timeout=COLLECTIVE_TIMEOUT,
    )
    try:
        model = build_model(config)
        history = train(config, model=model)
        weights = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
        results.put((rank, [float(loss) for loss in history["train_loss"]], weights))
    finally:
        dist.destroy_process_group()


def test_ddp_two_ranks_train_in_lockstep(make_config):
    config = make_config(batch_size=8, epochs=2)
    context = mp.get_context("fork")
    results = context.Queue()
    port = _free_port()
    ranks = [
        context.Process(target=_run_rank, args=(rank, port, config, results), daemon=True)
        for rank in range(WORLD_SIZE)
    ]
    for process in ranks:
        process.start()

    reports = {}
    failed = False
    deadline = time.monotonic() + TEST_TIMEOUT_S
    try:
        # Read while the ranks run: a rank that has not handed over its report cannot exit.
        while len(reports) < WORLD_SIZE and time.monotonic() < deadline:
            try:
                rank, losses, weights = results.get(timeout=0.1)
                reports[rank] = (losses, weights)
            except queue.Empty:
                exit_codes = [process.exitcode for process in ranks]
                failed = any(code for code in exit_codes)
                if failed or None not in exit_codes:
                    break
    finally:
        for process in ranks:
            # Once one rank has failed, the others are stuck in a collective: do not wait.
            grace = 1.0 if failed else max(0.0, deadline - time.monotonic())
            process.join(timeout=grace)
            if process.is_alive():
                process.kill()
                process.join()

    exit_codes = [process.exitcode for process in ranks]
    assert exit_codes == [0] * WORLD_SIZE, f"rank exit codes {exit_codes} (-9: killed, hung)"
    assert sorted(reports) == list(range(WORLD_SIZE))
    for losses, _ in reports.values():
        assert all(math.isfinite(loss) for loss in losses)
    torch.testing.assert_close(torch.tensor(reports[0][1]), torch.tensor(reports[1][1]))
