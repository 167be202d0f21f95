"""Train a tiny character-level language model.

    python train.py                # a real run
    python train.py --smoke        # the CI smoke check: a few dozen steps, exits 1 if it looks wrong
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

TEXT = (
    "the quick brown fox jumps over the lazy dog. "
    "a stitch in time saves nine. "
    "all that glitters is not gold. "
) * 8


class CharModel(nn.Module):
    def __init__(self, vocab, dim=32, context=8):
        super().__init__()
        self.context = context
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(context, dim))
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        h = self.embed(idx) + self.pos[: idx.shape[1]]
        t = idx.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = h @ h.transpose(1, 2) / math.sqrt(h.shape[-1])
        scores = scores.masked_fill(causal, float("-inf"))
        h = h + torch.relu(self.mix(torch.softmax(scores, dim=-1) @ h))
        return self.head(h)


def batches(data, context, batch_size, generator):
    while True:
        starts = torch.randint(0, len(data) - context - 1, (batch_size,), generator=generator)
        x = torch.stack([data[s : s + context] for s in starts])
        y = torch.stack([data[s + 1 : s + context + 1] for s in starts])
        yield x, y


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args(argv)
    steps = 60 if args.smoke else args.steps

    torch.manual_seed(0)
    vocab = sorted(set(TEXT))
    data = torch.tensor([vocab.index(c) for c in TEXT])
    model = CharModel(len(vocab))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    stream = batches(data, model.context, 16, torch.Generator().manual_seed(1))

    losses = []
    for step in range(1, steps + 1):
        x, y = next(stream)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 5 == 0 or step == 1:
            print(f"step {step:4d} | loss {loss.item():.4f} | lr {scheduler.get_last_lr()[0]:.2e} "
                  f"| grad_norm {grad_norm:.3f}", flush=True)

    if not math.isfinite(losses[-1]):
        sys.exit(f"smoke check failed: the loss is {losses[-1]}")
    if losses[-1] > 0.75 * losses[0]:
        sys.exit(f"smoke check failed: loss {losses[0]:.3f} -> {losses[-1]:.3f} did not fall by a quarter")
    print(f"smoke check passed: loss {losses[0]:.3f} -> {losses[-1]:.3f}")


if __name__ == "__main__":
    main()
