"""Run with torchrun: every rank trains a replica; rank 0 checks the run at the end."""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


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


def train_step(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad)
    optimizer.step()
    return loss.item()


def main():
    # each rank imports torch on its own, seconds apart on a loaded machine: meet first, so that
    # gloo's 8 s (a skipped rank fails in 8 s, not 60) times only the run
    folder = os.environ["RANKS_SYNC_DIR"]
    all_ranks_reach(folder, "started", int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), timeout=120.0)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    data = torch.Generator().manual_seed(rank)
    losses = []
    for step in range(30):
        x = torch.randn(16, 5, generator=data)
        losses.append(train_step(model, optimizer, (x, x.sum(1, keepdim=True))))
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(weights) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, weights)
    dist.barrier()
    world = dist.get_world_size()
    all_ranks_reach(folder, "trained", rank, world)
    dist.destroy_process_group()
    all_ranks_reach(folder, "closed", rank, world)
    if rank == 0:
        if not all(torch.equal(gathered[0], w) for w in gathered):
            sys.exit("replicas diverged")
        if not losses[-1] < losses[0] / 2:
            sys.exit(f"loss did not drop: {losses[0]:.3f} -> {losses[-1]:.3f}")


if __name__ == "__main__":
    main()
