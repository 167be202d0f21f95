"""Small classifiers that learn slowly, and why: a second softmax, a frozen layer, a small step.

    python tests/triage/calibration/programs/slow_learners.py > slow_learners.log 2>&1

For 3, 4, 10 and 28 classes and three seeds each, one two-layer classifier is trained for 60
Adam steps four ways: as written, with the logits put through a softmax before
`cross_entropy` (double-softmax), with its first layer frozen, and with a learning rate 30 times
smaller. Each run ends with the verdict a smoke check would print ("loss A -> B did not fall by
two thirds"). The second softmax squeezes the first outputs onto a uniform guess, so its first
loss sits on ln(C) to about a tenth of the spacing between ln(C) and ln(C+1); the other slow
learners start wherever their initial outputs put them. tests/triage/test_triage_calibration.py
reads the log it writes.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60
BAR = 2 / 3  # the share of the first loss a healthy run loses in STEPS steps


def train(classes: int, variant: str, seed: int) -> tuple[float, float]:
    torch.manual_seed(seed)
    x = torch.randn(256, 16)
    y = (x @ torch.randn(16, classes)).argmax(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, classes))
    if variant == "first layer frozen":
        for p in model[0].parameters():
            p.requires_grad_(False)
    lr = 1e-2 / 30 if variant == "lr 30x smaller" else 1e-2
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for step in range(STEPS):
        start = (step * 32) % 256
        logits = model(x[start : start + 32])
        if variant == "second softmax":
            logits = logits.softmax(dim=-1)
        loss = F.cross_entropy(logits, y[start : start + 32])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses[0], losses[-1]


def main() -> None:
    for classes in (3, 4, 10, 28):
        for variant in ("as written", "second softmax", "first layer frozen", "lr 30x smaller"):
            for seed in range(3):
                first, last = train(classes, variant, seed)
                fell = last <= (1 - BAR) * first
                verdict = "fell by two thirds" if fell else "did not fall by two thirds"
                print(
                    f"[{classes} classes, {variant}, seed {seed}, ln C = {math.log(classes):.4f}] "
                    f"loss {first:.4f} -> {last:.4f} {verdict}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
