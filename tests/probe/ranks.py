"""Two ranks that torch.multiprocessing starts afresh, each training a few steps; rank 1 never
calls backward and skips the last step. Nothing here knows of trainwreck: the probe reaches the ranks, if at all,
through the environment the run was started with (its sitecustomize on PYTHONPATH)."""

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F


def rank(index: int) -> None:
    torch.manual_seed(index)
    net = torch.nn.Linear(8, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    for step in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        if index == 0:
            loss.backward()
        if index == 0 or step < 4:
            opt.step()


if __name__ == "__main__":
    mp.spawn(rank, nprocs=2)
    print("ranks done")
