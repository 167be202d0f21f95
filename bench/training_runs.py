"""Small CPU training programs of several shapes, each really run, for the throughput benchmark.

    python bench/training_runs.py SHAPE STEPS [--seed N]

SHAPE is one of `SHAPES`: a conv net (logging module lines), a GRU tagger (a tqdm-style bar
redrawn with carriage returns), a tiny transformer language model (JSON lines), an MLP whose
learning rate is too high (key=value lines, until the loss turns NaN and the run raises), and a
GAN (one line per step with both losses; it ends with a shape error in an extra head). What
they print is what `bench/triage_throughput.py` concatenates: the triage corpus's own programs
(tests/triage/corpus/train.py) are not among them, so the benchmark's log differs from the
corpus by program, not only by seed.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time

import torch
from torch import nn

SHAPES = ("cnn", "gru", "transformer", "mlp-lr", "gan")


def _cnn(steps: int) -> None:
    log = logging.getLogger("cnn")
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    log.info("model: %d parameters", sum(p.numel() for p in model.parameters()))
    x, y = torch.randn(256, 3, 16, 16), torch.randint(0, 10, (256,))
    for step in range(1, steps + 1):
        i = torch.randint(0, 256, (32,))
        out = model(x[i])
        loss = nn.functional.cross_entropy(out, y[i])
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        acc = (out.argmax(1) == y[i]).float().mean()
        log.info(
            "step %d loss=%.4f acc=%.3f grad_norm=%.3f lr=%.3g",
            step,
            loss.item(),
            acc.item(),
            norm.item(),
            opt.param_groups[0]["lr"],
        )
        if step % 50 == 0:
            with torch.no_grad():
                val = nn.functional.cross_entropy(model(x[:64]), y[:64])
            log.info("eval step %d val_loss=%.4f", step, val.item())


def _gru(steps: int) -> None:
    emb, rnn, head = nn.Embedding(50, 16), nn.GRU(16, 32, batch_first=True), nn.Linear(32, 5)
    params = [*emb.parameters(), *rnn.parameters(), *head.parameters()]
    opt = torch.optim.Adam(params, lr=3e-3)
    x, y = torch.randint(0, 50, (128, 12)), torch.randint(0, 5, (128, 12))
    per_epoch = 20
    for epoch in range(math.ceil(steps / per_epoch)):
        t0 = time.time()
        for b in range(1, per_epoch + 1):
            i = torch.randint(0, 128, (16,))
            h, _ = rnn(emb(x[i]))
            loss = nn.functional.cross_entropy(head(h).reshape(-1, 5), y[i].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            rate = b / max(time.time() - t0, 1e-6)
            bar = "#" * (b * 10 // per_epoch)
            sys.stderr.write(
                f"\rEpoch {epoch}: {b * 100 // per_epoch:3d}%|{bar:<10}| {b}/{per_epoch} "
                f"[00:00<00:00, {rate:.2f}it/s, loss={loss.item():.3f}]"
            )
        sys.stderr.write("\n")
        sys.stderr.flush()


def _transformer(steps: int) -> None:
    vocab, width = 64, 32
    layer = nn.TransformerEncoderLayer(width, 4, 64, batch_first=True)
    model = nn.ModuleDict(
        {"emb": nn.Embedding(vocab, width), "enc": nn.TransformerEncoder(layer, 2), "out": nn.Linear(width, vocab)}
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    data = torch.randint(0, vocab, (64, 17))
    for step in range(1, steps + 1):
        seq = data[torch.randint(0, 64, (8,))]
        h = model["enc"](model["emb"](seq[:, :-1]))
        loss = nn.functional.cross_entropy(model["out"](h).reshape(-1, vocab), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        print(
            json.dumps(
                {
                    "step": step,
                    "loss": round(loss.item(), 5),
                    "lr": sched.get_last_lr()[0],
                    "tokens_per_sec": 8 * 16 * step,
                }
            ),
            flush=True,
        )


def _mlp_lr(steps: int) -> None:
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.3)  # too high: the loss climbs, then blows up
    x = torch.randn(512, 20)
    y = x.sum(1, keepdim=True)
    for step in range(1, steps + 1):
        i = torch.randint(0, 512, (64,))
        loss = nn.functional.mse_loss(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step={step} loss={loss.item():.6g} lr=0.3", flush=True)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")


def _gan(steps: int) -> None:
    g = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    d = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    og, od = torch.optim.Adam(g.parameters(), 2e-4), torch.optim.Adam(d.parameters(), 2e-4)
    bce = nn.BCEWithLogitsLoss()
    real = torch.randn(1024, 2) * 0.5 + 2
    for step in range(1, steps + 1):
        fake = g(torch.randn(64, 8))
        d_loss = bce(d(real[torch.randint(0, 1024, (64,))]), torch.ones(64, 1)) + bce(
            d(fake.detach()), torch.zeros(64, 1)
        )
        od.zero_grad()
        d_loss.backward()
        od.step()
        g_loss = bce(d(fake), torch.ones(64, 1))
        og.zero_grad()
        g_loss.backward()
        og.step()
        print(f"[{step}/{steps}] Loss_D: {d_loss.item():.4f} Loss_G: {g_loss.item():.4f}", flush=True)
    aux = nn.Linear(3, 1)
    aux(fake)  # the extra head was built for 3 features: a real shape error ends the run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shape", choices=SHAPES)
    p.add_argument("steps", type=int)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s", stream=sys.stdout
    )
    {"cnn": _cnn, "gru": _gru, "transformer": _transformer, "mlp-lr": _mlp_lr, "gan": _gan}[a.shape](a.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
