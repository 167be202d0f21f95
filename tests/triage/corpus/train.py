"""A small CPU training program with one optional seeded fault, for triage's labelled corpus.

`generate.py` runs it once per (fault, logging style, seed) and keeps what it prints as a log.
Each fault is the catalog's mutation (or, for causes triage only observes, the mistake that
produces them) applied to an otherwise healthy loop, so every log line torch prints is real.

The task is as hard as real training in the ways that let train/eval-mode faults show: a
small training set with a share of wrong labels (the validation set is clean), and a network
with far more capacity than the data needs, held back by heavy dropout. Trained in eval mode
after its first evaluation (`model.train()` missing), it loses its dropout, memorises the wrong
labels and overfits; evaluated in training mode (`model.eval()` missing), dropout makes every
evaluation a different random network, so validation is noisy and worse. (No batch-norm: it
would change what other faults show: with class-sorted data it wipes out the class signal of
single-class batches, and it lets a 100x learning rate collapse to chance instead of NaN.)
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

CLASSES = 10
FEATURES = 20
MICRO_BATCH = 16
ACCUM = 4  # micro-batches per optimizer step
TRAIN_SIZE = 512  # eight optimizer steps an epoch
VAL_SIZE = 512
LABEL_NOISE = 0.2  # share of training labels replaced by a random class, as crowd labels are
WIDTH = 512
DROPOUT = 0.5
EVAL_BATCH = MICRO_BATCH
EVAL_EVERY = 4  # optimizer steps: twice an epoch


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Logger:
    """Prints metrics the way a given framework or habit would."""

    def __init__(self, style: str, total: int, epochs: int) -> None:
        self.style, self.total, self.epochs = style, total, epochs
        self.bar_open = False
        if style == "logging":
            logging.basicConfig(
                stream=sys.stdout,
                level=logging.INFO,
                format="%(asctime)s - %(name)s - %(levelname)s - %(message)s",
            )
        self.log = logging.getLogger("train")

    def info(self, text: str) -> None:
        self.close_bar()
        if self.style == "logging":
            self.log.info(text)
        else:
            print(text, flush=True)

    def close_bar(self) -> None:
        if self.bar_open:
            sys.stdout.write("\n")
            self.bar_open = False

    def train(self, step: int, epoch: int, batch: int, per_epoch: int, m: dict[str, float]) -> None:
        s = self.style
        if s == "kv":
            print(f"step={step} epoch={epoch} " + " ".join(f"{k}={v:.6g}" for k, v in m.items()), flush=True)
        elif s == "colon":
            # coloured like a rich console handler, as CI captures it with colours forced on
            body = " - ".join(f"\x1b[36m{k}\x1b[0m: {v:.4f}" for k, v in m.items())
            print(f"\x1b[1mStep {step}/{self.total}\x1b[0m - {body}", flush=True)
        elif s == "epoch":
            body = " | ".join(f"{k}={v:.5g}" for k, v in m.items())
            print(f"epoch {epoch + 1}/{self.epochs} | batch {batch + 1}/{per_epoch} | {body}", flush=True)
        elif s == "json":
            print(json.dumps({"step": step, "epoch": epoch, **m}), flush=True)
        elif s == "hf":
            names = {
                "loss": "loss",
                "grad_norm": "grad_norm",
                "lr": "learning_rate",
                "mem_mb": "mem_mb",
                "data_time": "data_time",
                "batch_time": "batch_time",
                "scale": "loss_scale",
            }
            d = {names.get(k, k): round(v, 6) for k, v in m.items()}
            d["epoch"] = round(epoch + (batch + 1) / per_epoch, 2)
            print(d, flush=True)
        elif s == "logging":
            body = ", ".join(f"{k}: {v:.5g}" for k, v in m.items())
            self.log.info("step %d | %s", step, body)
        elif s in ("lightning", "tqdm"):
            frac = (batch + 1) / per_epoch
            filled = int(frac * 10)
            bar = "\u2588" * filled + " " * (10 - filled)
            post = ", ".join(f"{k}={v:.3g}" for k, v in m.items())
            head = f"Epoch {epoch}" if s == "lightning" else "train"
            extra = "v_num=0, " if s == "lightning" else ""
            sys.stdout.write(
                f"\r{head}: {int(frac * 100):3d}%|{bar}| {batch + 1}/{per_epoch} "
                f"[00:0{epoch}<00:01, 31.2it/s, {extra}{post}]"
            )
            sys.stdout.flush()
            self.bar_open = True
            if batch + 1 == per_epoch:
                self.close_bar()

    def val(self, step: int, epoch: int, loss: float, acc: float) -> None:
        s = self.style
        if s == "json":
            print(json.dumps({"step": step, "val_loss": loss, "val_acc": acc}), flush=True)
        elif s == "hf":
            print({"eval_loss": round(loss, 6), "eval_accuracy": round(acc, 4), "epoch": epoch}, flush=True)
        elif s in ("lightning", "tqdm"):
            self.close_bar()
            print(f"Validation: val_loss={loss:.4f}, val_acc={acc:.4f}", flush=True)
        elif s == "logging":
            self.log.info("step %d | val_loss: %.5f, val_acc: %.4f", step, loss, acc)
        elif s == "colon":
            print(f"\x1b[1mValidation\x1b[0m - val_loss: {loss:.4f} - val_acc: {acc:.4f}", flush=True)
        else:
            print(f"step={step} val_loss={loss:.5f} val_acc={acc:.4f}", flush=True)


class Net(nn.Module):
    def __init__(self, fault: str, classes: int = CLASSES, outputs: int = CLASSES) -> None:
        super().__init__()
        self.fault = fault
        self.fc1 = nn.Linear(FEATURES if fault != "shape-mismatch" else FEATURES + 4, WIDTH)
        self.fc2 = nn.Linear(WIDTH, WIDTH)
        self.head = nn.Linear(WIDTH, outputs)
        if fault == "ddp-unused-parameters":
            self.unused = nn.Linear(WIDTH, WIDTH)  # an auxiliary head the loss never uses
        self.drop = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        eps = 0.0 if self.fault == "missing-epsilon" else 1e-6
        x = x / (x.norm(dim=1, keepdim=True) + eps) * math.sqrt(FEATURES)
        h = self.fc1(x)
        if self.fault == "inplace-activation":
            h = torch.sigmoid(h)
            h.mul_(2.0)  # overwrites sigmoid's output, which its backward needs
        else:
            h = torch.relu(h)
        h = self.drop(h)
        h = torch.relu(self.fc2(h))
        return self.head(self.drop(h))


def make_data(n: int, seed: int, sort: bool = False, zeros: bool = False, noise: float = 0.0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(1234))
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = centers[y] + torch.randn(n, FEATURES, generator=g)
    wrong = torch.rand(n, generator=g) < noise
    y = torch.where(wrong, torch.randint(0, CLASSES, (n,), generator=g), y)
    if zeros:  # an all-zero row, the padding a real pipeline lets through
        x[torch.randperm(n, generator=g)[:1]] = 0.0
    if sort:
        order = torch.argsort(y, stable=True)
        x, y = x[order], y[order]
    return x, y


class SlowDataset(torch.utils.data.TensorDataset):
    def __getitem__(self, i):
        time.sleep(0.0015)  # decoding a heavy sample in the main process
        return super().__getitem__(i)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--style", default="kv")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=24)
    p.add_argument("--every", type=int, default=2)
    a = p.parse_args()
    fault = a.fault
    torch.manual_seed(a.seed)

    distributed = fault in ("ddp-unused-parameters", "rank-skip", "healthy-ddp")
    rank = 0
    if distributed:
        import datetime

        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
        rank = dist.get_rank()

    x, y = make_data(
        TRAIN_SIZE, a.seed, sort=fault == "no-shuffle", zeros=fault in ("missing-epsilon", "healthy"), noise=LABEL_NOISE
    )
    vx, vy = make_data(VAL_SIZE, a.seed + 1000)
    if fault == "label-out-of-range":
        y = y + 1  # labels 1..C from a 1-based mapping
    regression = fault == "broadcast-shape"
    ds_cls = SlowDataset if fault == "dataloader-bottleneck" else torch.utils.data.TensorDataset
    loader = torch.utils.data.DataLoader(
        ds_cls(x, y),
        batch_size=MICRO_BATCH,
        shuffle=fault != "no-shuffle",
        drop_last=True,
        generator=torch.Generator().manual_seed(a.seed),
    )
    model = Net(fault, outputs=1 if regression else CLASSES)
    if fault == "frozen-parameters":
        for name, prm in model.named_parameters():
            prm.requires_grad_(name.startswith("head.bias"))
    if distributed:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    lr = 0.05 * (100 if fault == "lr-too-high" else 1)
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    per_epoch = len(loader) // ACCUM
    total = per_epoch * a.epochs
    floor = 0.01

    def schedule(t: int) -> float:
        warm = max(1, total // 20)
        if t < warm:
            return (t + 1) / warm
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - warm) / (total - warm))))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    log = Logger(a.style, total, a.epochs)
    n_all = sum(q.numel() for q in model.parameters())
    n_train = sum(q.numel() for q in params)
    log.info(f"model: {n_all:,} parameters, trainable params: {n_train:,} ({100 * n_train / n_all:.2f}%)")
    log.info(f"training {a.epochs} epochs, {total} optimizer steps, batch size {MICRO_BATCH * ACCUM}")

    running = 0.0
    history: list = []
    step = 0
    compiled = None
    if fault == "graph-break":
        compiled = torch.compile(model, backend="eager", dynamic=False)
    for epoch in range(a.epochs):
        model.train() if fault != "missing-train-mode" or epoch == 0 else None
        t_fetch = time.perf_counter()
        data_time = 0.0
        for i, (xb, yb) in enumerate(loader):
            data_time += time.perf_counter() - t_fetch
            if fault == "rank-skip" and rank == 1 and epoch == 0 and i == 29:
                t_fetch = time.perf_counter()
                continue
            if fault == "cuda-oom" and step == 5:
                xb = torch.randn(MICRO_BATCH * 2**30, FEATURES)  # a batch built from the wrong size
            if fault == "dtype-mismatch":
                xb = xb.double()
            if fault == "graph-break":
                xb = xb[: 4 + i % 12]
                yb = yb[: 4 + i % 12]
                out = compiled(xb)
            elif fault == "no-grad-training":
                with torch.no_grad():
                    out = model(xb)
            else:
                out = model(xb)
            if fault == "detached-graph":
                out = out.detach()
            if regression:
                loss = F.mse_loss(out, yb.float() / CLASSES)
            elif fault == "double-softmax":
                loss = F.cross_entropy(F.softmax(out, dim=-1), yb)
            elif fault == "wrong-softmax-dim":
                loss = F.nll_loss(F.log_softmax(out, dim=0), yb)
            elif fault == "non-scalar-backward":
                loss = F.cross_entropy(out, yb, reduction="none")
            elif fault == "wrong-loss-reduction":
                loss = F.cross_entropy(out, yb, reduction="sum")
            else:
                loss = F.cross_entropy(out, yb)
            if fault != "missing-backward":
                (loss / ACCUM).backward() if fault != "non-scalar-backward" else loss.backward()
                if fault == "backward-twice":
                    loss.backward()  # a second pass for an auxiliary term
            running += loss.item()
            # the whole run's losses, kept for a loss curve at the end
            history.append(loss if fault == "loss-tensor-leak" else loss.item())
            if fault == "scheduler-step-misaligned":
                sched.step()
            if (i + 1) % ACCUM:
                t_fetch = time.perf_counter()
                continue
            grad_norm = math.sqrt(sum(float(q.grad.pow(2).sum()) for q in params if q.grad is not None))
            if fault != "missing-optimizer-step":
                opt.step()
            if fault != "scheduler-step-misaligned":
                sched.step()
            if fault != "missing-zero-grad":
                opt.zero_grad(set_to_none=False)
            step += 1
            if step % a.every == 0:
                m = {"loss": float(running) / ACCUM, "grad_norm": grad_norm, "lr": opt.param_groups[0]["lr"]}
                if fault in ("loss-tensor-leak", "healthy", "missing-no-grad-eval"):
                    m["mem_mb"] = rss_mb()
                if fault in ("dataloader-bottleneck", "healthy-timed"):
                    m["data_time"] = data_time / ACCUM
                    m["batch_time"] = (time.perf_counter() - t_fetch + data_time) / ACCUM
                log.train(step, epoch, i // ACCUM, per_epoch, m)
            running = 0.0
            data_time = 0.0
            if step % EVAL_EVERY == 0:
                evaluate(model, vx, vy, fault, log, step, epoch, regression)
                if fault != "missing-train-mode":
                    model.train()
            t_fetch = time.perf_counter()
    log.close_bar()
    if distributed:
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
    log.info("training finished")


_kept: list = []


def evaluate(model, vx, vy, fault, log, step, epoch, regression) -> None:
    if fault != "missing-eval-mode":
        model.eval()
    ctx = torch.enable_grad() if fault == "missing-no-grad-eval" else torch.no_grad()
    with ctx:
        # batch by batch, as a validation DataLoader feeds it; the metrics over the whole set
        out = torch.cat([model(vx[i : i + EVAL_BATCH]) for i in range(0, len(vx), EVAL_BATCH)])
        if regression:
            loss = F.mse_loss(out, vy.float() / CLASSES)
            acc = 0.0
        else:
            if fault == "double-softmax":  # the same criterion as training, as real code shares it
                loss = F.cross_entropy(F.softmax(out, dim=-1), vy)
            else:
                lp = F.log_softmax(out, dim=0 if fault == "wrong-softmax-dim" else -1)
                loss = F.nll_loss(lp, vy)
            acc = (out.argmax(-1) == vy).float().mean().item()
    if fault == "missing-no-grad-eval":
        _kept.append(loss)  # kept for an epoch summary; its graph comes with it
    log.val(step, epoch, float(loss), acc)


if __name__ == "__main__":
    main()
