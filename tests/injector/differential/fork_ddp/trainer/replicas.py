"""Two gloo ranks started with the fork start method, training one DDP replica each."""

import datetime
import os
import shutil
import socket
import tempfile
import time
from queue import Empty

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def all_ranks_reach(folder, stage, rank, world, timeout=30.0):
    """A rendezvous through files, outside gloo. torch 2.13's gloo can abort a rank whose peer
    closes its sockets while a message is still in flight, so no rank tears the group down
    before every rank is past the last collective, and none exits before all have torn down."""
    open(os.path.join(folder, f"{stage}.{rank}"), "w").close()
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(os.path.join(folder, f"{stage}.{r}")) for r in range(world)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank {rank}: the other ranks did not reach {stage!r} in {timeout:g} s")
        time.sleep(0.01)


def run_rank(rank, world, port, steps, queue, folder):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=6))
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    losses = []
    for step in range(steps):
        x = torch.randn(16, 4, generator=data)
        target = x.sum(dim=1, keepdim=True)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    queue.put((rank, losses, weights.tolist()))
    dist.barrier()
    all_ranks_reach(folder, "trained", rank, world)
    dist.destroy_process_group()
    all_ranks_reach(folder, "closed", rank, world)


def train(steps=20, world=2):
    """Train on `world` ranks; returns each rank's losses and final weights."""
    context = mp.get_context("fork")
    queue = context.Queue()
    port = free_port()
    folder = tempfile.mkdtemp(prefix="replicas-")
    ranks = [context.Process(target=run_rank, args=(r, world, port, steps, queue, folder)) for r in range(world)]
    for process in ranks:
        process.start()
    results = {}
    try:
        while len(results) < world:
            try:
                rank, losses, weights = queue.get(timeout=0.2)
                results[rank] = (losses, weights)
            except Empty:
                failed = [p.exitcode for p in ranks if p.exitcode not in (None, 0)]
                if failed:
                    raise RuntimeError(f"a rank failed with exit code {failed[0]}")
        for process in ranks:
            process.join()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results
