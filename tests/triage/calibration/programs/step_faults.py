"""A smoke training check (`python step_faults.py FAULT`) whose step lacks one part.

    FAULT: none | no-backward | no-step | no-zero-grad

A small classifier trains 30 steps on a fixed synthetic set and the check fails (exit 1) unless
the loss fell to below 60% of where it began, printing the first and last loss. Without the
backward or without the optimizer step, the two failures print the same thing: nothing
trained. Run under `triage watch`, the training probe's line tells them apart.
"""

import sys

import torch
import torch.nn.functional as F

FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"


def main() -> int:
    torch.manual_seed(0)
    x = torch.randn(256, 10)
    y = (x[:, :3].sum(dim=1) > 0).long() + (x[:, 3] > 1).long()
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    losses = []
    for step in range(30):
        if FAULT != "no-zero-grad":
            optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if FAULT != "no-backward":
            loss.backward()
        if FAULT != "no-step":
            optimizer.step()
        losses.append(loss.item())
        print(f"step {step} loss {loss.item():.4f}")
    if not losses[-1] < 0.6 * losses[0]:
        print(f"smoke check failed: loss {losses[0]:.4f} -> {losses[-1]:.4f}, expected a fall below 60%")
        return 1
    print("smoke check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
