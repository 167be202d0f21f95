"""A short run whose memory runs out where it is first spent: in evaluation, or in a training step.

`python oom_at_eval.py validate` trains a few steps, then its `validate()` builds every batch's
graph (no `torch.no_grad()`) and keeps the outputs, then asks for one buffer too many; with
`train_step` the same request comes from a training step. On a GPU the allocator raises CUDA's
out-of-memory error there; on CPU it is the CPU allocator's, at the same line. Run by
tests/triage/test_triage_programs.py.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

IMPOSSIBLE = 1 << 48  # elements: more memory than any machine has


def train_step(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, *, run_out: bool
) -> float:
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if run_out:
        torch.empty(IMPOSSIBLE)
    return loss.item()


def validate(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    model.eval()
    kept = [model(x) for x, _ in batches]  # each output holds its graph: no torch.no_grad()
    torch.empty(IMPOSSIBLE, dtype=kept[0].dtype)
    return 0.0


def main() -> None:
    where = sys.argv[1]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for step in range(1, 11):
        loss = train_step(model, opt, x, y, run_out=where == "train_step" and step == 10)
        if step % 5 == 0:
            print(f"step {step} loss {loss:.4f}", flush=True)
    validate(model, [(x, y)] * 4)


if __name__ == "__main__":
    main()
