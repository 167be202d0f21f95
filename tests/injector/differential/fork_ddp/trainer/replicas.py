"""Two gloo ranks started with the fork start method, training one DDP replica each."""

import datetime
import os
import socket
from queue import Empty

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_rank(rank, world, port, steps, queue):
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
    dist.barrier()  # both ranks done before either tears the group down
    dist.destroy_process_group()


def train(steps=20, world=2):
    """Train on `world` ranks; returns each rank's losses and final weights."""
    context = mp.get_context("fork")
    queue = context.Queue()
    port = free_port()
    ranks = [context.Process(target=run_rank, args=(r, world, port, steps, queue)) for r in range(world)]
    for process in ranks:
        process.start()
    results = {}
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
    return results
