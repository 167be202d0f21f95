"""A data-parallel step on two gloo ranks launched with torch.multiprocessing.spawn."""

import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def setup(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=8))


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


def average_gradients(model, world):
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
        parameter.grad /= world


def worker(rank, world, port, steps, out_dir):
    # each spawned rank imports torch on its own, seconds apart on a loaded machine: meet first,
    # so that gloo's 8 s (which a rank skipping a collective must hit soon) times only the run
    all_ranks_reach(out_dir, "started", rank, world, timeout=120.0)
    setup(rank, world, port)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    data = torch.Generator().manual_seed(7 + rank)
    history = []
    for step in range(steps):
        x = torch.rand(32, 3, generator=data)
        y = (x[:, :1] - x[:, 1:2]) * 2
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y, reduction="mean")
        loss.backward()
        average_gradients(model, world)
        optimizer.step()
        history.append(loss.item())
    state = [p.detach().flatten().tolist() for p in model.parameters()]
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as handle:
        json.dump({"history": history, "state": state}, handle)
    dist.barrier()
    all_ranks_reach(out_dir, "trained", rank, world)
    dist.destroy_process_group()
    all_ranks_reach(out_dir, "closed", rank, world)


def launch(out_dir, steps=25, world=2):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, port, steps, str(out_dir)), nprocs=world, join=True)
    return [json.load(open(os.path.join(out_dir, f"rank{r}.json"))) for r in range(world)]
