"""Two gloo ranks on CPU average their gradients by hand; the step forgot `loss.backward()`.

    python tests/triage/calibration/programs/none_grad_allreduce.py > none_grad_allreduce.log 2>&1

Every `.grad` is still None when `dist.all_reduce` is called on it: c10d rejects the argument
(torch 2.x: `TypeError: Invalid function argument. Expected parameter `tensor` of type
torch.Tensor` and, on the next line, `but got <class 'NoneType'> instead.`). The log it writes
is the one tests/triage/test_triage_calibration.py reads.
"""

import datetime
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def average_gradients(model, world):
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world


def rank_main(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(5):
        x = torch.randn(16, 4, generator=g)
        y = (x[:, 0] > 0).long()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        average_gradients(model, world)
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    mp.spawn(rank_main, args=(2, free), nprocs=2)
