"""Program 3 of 5: a tiny causal transformer LM on a synthetic grammar, AdamW under accelerate.

Gradient accumulation over micro-batches, warm-up then cosine LR, one JSON object per logged
optimizer step (`{"step": ..., "loss": ..., "lr": ..., "grad_norm": ...}`) as many LM scripts
write for later plotting. `--fault` applies one catalogued mistake. Kept for reproduction only
(needs `accelerate`); the tests read the logs it left.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 24
CTX = 24
ACCUM = 4


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def corpus(n: int, g: torch.Generator) -> torch.Tensor:
    """Sequences from a noisy cyclic grammar: each token mostly predicts the next."""
    seqs = torch.empty(n, CTX + 1, dtype=torch.long)
    for i in range(n):
        t = int(torch.randint(0, VOCAB, (1,), generator=g))
        step = int(torch.randint(1, 4, (1,), generator=g))
        for j in range(CTX + 1):
            seqs[i, j] = t
            t = (
                (t + step) % VOCAB
                if torch.rand(1, generator=g) > 0.15
                else int(torch.randint(0, VOCAB, (1,), generator=g))
            )
    return seqs


class Block(nn.Module):
    def __init__(self, d: int, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).chunk(3, dim=-1)
        att = q @ k.transpose(1, 2) / math.sqrt(d)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        att = att.masked_fill(mask, float("-inf"))
        att = F.softmax(att, dim=1 if self.fault == "wrong-softmax-dim" else -1)
        x = x + self.proj(att @ v)
        return x + self.ff(self.n2(x))


class LM(nn.Module):
    def __init__(self, fault: str, d: int = 48) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(CTX, d))
        self.blocks = nn.Sequential(Block(d, fault), Block(d, fault))
        self.out = nn.Linear(d, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        return self.out(self.blocks(self.emb(idx) + self.pos[:t]))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=40)
    a = p.parse_args()
    from accelerate import Accelerator

    acc = Accelerator(cpu=True, gradient_accumulation_steps=1)
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(700 + a.seed)
    data, val = corpus(1024, g), corpus(128, g)
    model = LM(a.fault)
    if a.fault == "graph-break":
        torch._dynamo.config.recompile_limit = 4
        model = torch.compile(model, backend="eager", dynamic=False)
    lr = 3e-3 * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warm, total = 6, a.steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    )
    model, opt = acc.prepare(model, opt)
    micro = 12
    losses_kept = []
    val_hist = []
    pos = 0
    for step in range(1, total + 1):
        if a.fault != "missing-zero-grad":
            opt.zero_grad()
        tot = 0.0
        for m in range(ACCUM):
            batch = data[pos : pos + micro]
            pos = (pos + micro) % len(data)
            if a.fault == "graph-break":
                batch = batch[:, : CTX + 1 - (step * ACCUM + m) % 9]  # ragged lengths, no padding
            x, y = batch[:, :-1], batch[:, 1:]
            if a.fault == "no-grad-training":
                with torch.no_grad():
                    logits = model(x)
            else:
                logits = model(x)
            if a.fault == "detached-graph":
                logits = logits.detach()
            if a.fault == "non-scalar-backward":
                loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), reduction="none") / ACCUM
            else:
                loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1)) / ACCUM
            acc.backward(loss)
            if a.fault == "backward-twice" and step > 2:
                aux = loss * 0.1  # an auxiliary term added after the main backward
                acc.backward(aux)
            if a.fault == "scheduler-step-misaligned":
                sched.step()
            if a.fault == "loss-tensor-leak":
                losses_kept.append(logits)  # kept "for a perplexity plot", graph and all
                tot = tot + loss
            else:
                tot += loss.item()
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
        opt.step()
        if a.fault != "scheduler-step-misaligned":
            sched.step()
        rec = {
            "step": step,
            "loss": round(float(tot), 5),
            "lr": float(f"{sched.get_last_lr()[0]:.6g}"),
            "grad_norm": round(gn, 5),
        }
        if a.fault in ("loss-tensor-leak", "missing-no-grad-eval") or a.seed % 2:
            rec["rss_mb"] = round(rss_mb(), 1)
        print(json.dumps(rec), flush=True)
        if step % 10 == 0:
            model.eval()
            outs = []
            if a.fault == "missing-no-grad-eval":
                for i in range(0, len(val), 32):
                    outs.append(
                        F.cross_entropy(model(val[i : i + 32, :-1]).reshape(-1, VOCAB), val[i : i + 32, 1:].reshape(-1))
                    )
                val_hist.append(sum(outs) / len(outs))  # the history keeps every evaluation's graph
                vl = float(val_hist[-1])
            else:
                with torch.no_grad():
                    vl = float(
                        sum(
                            F.cross_entropy(
                                model(val[i : i + 32, :-1]).reshape(-1, VOCAB), val[i : i + 32, 1:].reshape(-1)
                            )
                            for i in range(0, len(val), 32)
                        )
                        / 4
                    )
            model.train()
            ev = {"step": step, "val_loss": round(vl, 5)}
            if a.fault == "missing-no-grad-eval" or a.seed % 2:
                ev["rss_mb"] = round(rss_mb(), 1)
            print(json.dumps(ev), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
