"""One model evaluated at three batch sizes: `python eval_batch_size.py train|eval`.

An MLP with batch norm learns five classes with Adam, then its test accuracy is printed for test
batches of 8, 128 and 256 samples (`bs8: 0.932`), the test set stored class by class as image
folders are. With `eval` the model is switched to eval mode first and every batch size gives the
same accuracy; with `train` it is not (a forgotten `model.eval()`), so batch norm normalises each
test batch by its own statistics and the accuracy depends on the batch size. Run by
tests/triage/test_triage_programs.py.
"""

from __future__ import annotations

import sys

import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(2048, 20)
    y = (x @ torch.randn(20, 5)).argmax(1)
    net = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 5))
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    for _ in range(200):
        i = torch.randint(0, 1536, (64,))
        loss = nn.functional.cross_entropy(net(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    if sys.argv[1] == "eval":
        net.eval()
    order = y[1536:].argsort()
    xt, yt = x[1536:][order], y[1536:][order]
    for bs in (8, 128, 256):
        with torch.no_grad():
            pred = torch.cat([net(xt[j : j + bs]).argmax(1) for j in range(0, len(xt), bs)])
        print(f"bs{bs}: {(pred == yt).float().mean().item():.3f}", flush=True)


if __name__ == "__main__":
    main()
