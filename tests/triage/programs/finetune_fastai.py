"""Program 18 (written for issue 9's fresh program 18 without reading triage's rules): fastai-style transfer.

Transfer learning of a small image classifier the way fastai users do it, without fastai: a small
convolutional body (three conv + batch norm + ReLU stages) "pretrained" at start-up on a
synthetic 4-class shape task (ring, diagonal cross, triangle, dot grid) with a fixed seed, as a
downloaded checkpoint would be, then cut from its head and given a new fastai-style head
(concatenated average and max pooling, batch norm, dropout, linear, ReLU, batch norm, dropout,
linear) for a 7-class synthetic task: 16x16 RGB textures and shapes (horizontal, vertical and
diagonal stripes, checkerboard, disc, square, cross) in random colours over a noisy background,
a little class-imbalanced and stored class by class, split 80/20 at random as RandomSplitter
does, random horizontal flips in training. AdamW (betas 0.9/0.99, weight decay 0.01) over two
parameter groups (body at lr/10, head at lr), label-smoothing cross-entropy (eps 0.1), an LR range
test (`lr_find`, valley suggestion) on the frozen model, then `fine_tune` done by hand: a
one-cycle fit of 2 epochs with the body frozen (its batch norm still training), unfreeze, a
one-cycle fit of 6 epochs (cosine warm-up over the first quarter to max_lr, cosine annealing to
max_lr/1e4, beta1 cycled 0.95 -> 0.85 -> 0.95, stepped every batch). It prints as fastai's console
does (fastai itself is not used): a `Learner(...)` line and the tail of `learn.summary()`,

    SuggestedLRs(valley=0.0014454397605732083)
    epoch     train_loss  valid_loss  accuracy  error_rate  time
    0         1.912345    1.654321    0.412500  0.587500    00:03

(train_loss is the debiased exponential moving average of the batch losses at the epoch's end,
as fastai's Recorder shows it; valid_loss the mean over the validation set; each fit prints its
own header and numbers its epochs from 0). Nothing per batch.

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

SIZE = 16
CLASSES = ("hstripes", "vstripes", "dstripes", "checker", "disc", "square", "cross")
PRETRAIN_KINDS = ("ring", "xcross", "triangle", "dots")
# images per class before the split: a little imbalanced
COUNTS = (240, 228, 216, 204, 192, 180, 168)
BS = 64
EPOCHS_FROZEN, EPOCHS = 2, 6
BASE_LR = 8e-3

FAULT = "healthy"


# ---------------------------------------------------------------- data
def draw(kind: str, g: torch.Generator) -> torch.Tensor:
    ys, xs = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")

    def ri(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    cx, cy = ri(5, 10), ri(5, 10)
    if kind in ("hstripes", "vstripes", "dstripes"):
        period, phase = ri(4, 7), ri(0, 6)
        coord = {"hstripes": ys, "vstripes": xs, "dstripes": xs + ys}[kind]
        mask = ((coord + phase) % period) < period // 2
    elif kind == "checker":
        p = ri(2, 4)
        mask = ((xs // p) + (ys // p)) % 2 == 0
    elif kind == "disc":
        r = ri(3, 5)
        mask = (xs - cx) ** 2 + (ys - cy) ** 2 <= r * r + 1
    elif kind == "square":
        r = ri(2, 4)
        mask = ((xs - cx).abs() <= r) & ((ys - cy).abs() <= r)
    elif kind == "cross":
        r, w = ri(3, 5), ri(0, 1)
        mask = (((xs - cx).abs() <= w) & ((ys - cy).abs() <= r)) | (((ys - cy).abs() <= w) & ((xs - cx).abs() <= r))
    elif kind == "ring":
        r = ri(3, 5)
        d = ((xs - cx) ** 2 + (ys - cy) ** 2).float().sqrt()
        mask = (d - r).abs() <= 0.8
    elif kind == "xcross":
        r = ri(3, 5)
        mask = (((xs - cx) - (ys - cy)).abs() <= 0) | (((xs - cx) + (ys - cy)).abs() <= 0)
        mask &= ((xs - cx).abs() <= r) & ((ys - cy).abs() <= r)
    elif kind == "triangle":
        h = ri(4, 7)
        mask = ((ys - cy + h // 2) >= 0) & ((ys - cy + h // 2) <= h) & ((xs - cx).abs() <= (ys - cy + h // 2) // 2 + 1)
    else:  # dots
        p = ri(3, 5)
        mask = ((xs + cx) % p == 0) & ((ys + cy) % p == 0)
    bg = torch.rand(3, generator=g) * 0.5
    fg = 0.45 + torch.rand(3, generator=g) * 0.55
    if bool(torch.rand(1, generator=g) < 0.5):
        bg, fg = fg, bg
    m = mask.float()[None]
    img = fg[:, None, None] * m + bg[:, None, None] * (1 - m)
    img = img + 0.18 * torch.randn(3, SIZE, SIZE, generator=g)
    return img.clamp(0, 1)


def make_items(kinds: tuple[str, ...], counts: tuple[int, ...], g: torch.Generator) -> tuple[torch.Tensor, list[int]]:
    """Images stored kind by kind, as a folder per class is read; labels are 1-based class ids."""
    xs, ids = [], []
    for k, (kind, n) in enumerate(zip(kinds, counts, strict=True)):
        for _ in range(n):
            xs.append(draw(kind, g))
            ids.append(k + 1)
    return torch.stack(xs), ids


class ImageDataset(Dataset):
    def __init__(self, x: torch.Tensor, ids: list[int], train: bool, mean: torch.Tensor, std: torch.Tensor) -> None:
        self.x, self.ids, self.train = x, ids, train
        self.mean, self.std = mean[:, None, None], std[:, None, None]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img = self.x[i]
        if self.train and bool(torch.rand(1) < 0.5):
            img = img.flip(-1)
        y = self.ids[i] - 1  # CategoryMap: class id -> vocab index
        if FAULT == "label-out-of-range":
            y = self.ids[i]
        return (img - self.mean) / self.std, y


# ---------------------------------------------------------------- model
def conv_bn(ci: int, co: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(ci, co, 3, stride, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))


def make_body() -> nn.Sequential:
    return nn.Sequential(conv_bn(3, 16, 1), conv_bn(16, 32, 2), conv_bn(32, 64, 2), conv_bn(64, 64, 1))


class AdaptiveConcatPool2d(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([F.adaptive_max_pool2d(x, 1), F.adaptive_avg_pool2d(x, 1)], 1).flatten(1)


def create_head(nf: int, n_out: int) -> nn.Sequential:
    head = nn.Sequential(
        AdaptiveConcatPool2d(),
        nn.BatchNorm1d(2 * nf),
        nn.Dropout(0.25),
        nn.Linear(2 * nf, 128, bias=False),
        nn.ReLU(inplace=True),
        nn.BatchNorm1d(128),
        nn.Dropout(0.5),
        nn.Linear(128, n_out, bias=False),
    )
    for m in head.modules():
        if isinstance(m, nn.Linear):
            if FAULT == "bad-init":
                nn.init.normal_(m.weight, std=10.0)
            else:
                nn.init.kaiming_normal_(m.weight)
    return head


def pretrained_body() -> dict:
    """Stands in for downloading a checkpoint: always the same weights, whatever the run's seed."""
    g = torch.Generator().manual_seed(1234)
    torch.manual_seed(1234)
    x, ids = make_items(PRETRAIN_KINDS, (256,) * len(PRETRAIN_KINDS), g)
    y = torch.tensor(ids) - 1
    x = (x - 0.5) / 0.3
    net = nn.Sequential(make_body(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, len(PRETRAIN_KINDS)))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(160):
        idx = torch.randint(0, len(y), (64,), generator=g)
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net[0].state_dict()


# ---------------------------------------------------------------- loss, metrics
class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, eps: float = 0.1, reduction: str = "mean") -> None:
        super().__init__()
        self.eps, self.reduction = eps, reduction

    def forward(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        c = output.size(-1)
        log_preds = F.log_softmax(output, dim=-1)
        if self.reduction == "sum":
            loss = -log_preds.sum()
        else:
            loss = -log_preds.sum(dim=-1)
            if self.reduction == "mean":
                loss = loss.mean()
        nll = F.nll_loss(log_preds, target, reduction=self.reduction)
        return self.eps * loss / c + (1 - self.eps) * nll

    def __repr__(self) -> str:
        return f"FlattenedLoss of LabelSmoothingCrossEntropy(eps={self.eps}, reduction='{self.reduction}')"


# ---------------------------------------------------------------- schedule
def sched_cos(start: float, end: float, pos: float) -> float:
    return start + (1 + math.cos(math.pi * (1 - pos))) * (end - start) / 2


def combined_cos(pct: float, start: float, middle: float, end: float, pct_start: float = 0.25) -> float:
    if pct < pct_start:
        return sched_cos(start, middle, pct / pct_start)
    return sched_cos(middle, end, min(1.0, (pct - pct_start) / (1 - pct_start)))


class OneCycle:
    """fit_one_cycle's ParamScheduler: lr and beta1 for every parameter group, set before each batch."""

    def __init__(self, opt: torch.optim.Optimizer, max_lrs: list[float], total_steps: int) -> None:
        self.opt, self.max_lrs, self.total, self.it = opt, max_lrs, total_steps, 0
        self.div, self.div_final, self.moms = 25.0, 1e4, (0.95, 0.85, 0.95)
        self._set()

    def _set(self) -> None:
        pct = min(1.0, self.it / self.total)
        for pg, mx in zip(self.opt.param_groups, self.max_lrs, strict=True):
            pg["lr"] = combined_cos(pct, mx / self.div, mx, mx / self.div_final)
            pg["betas"] = (combined_cos(pct, *self.moms), pg["betas"][1])

    def step(self) -> None:
        self.it += 1
        self._set()


# ---------------------------------------------------------------- learner
class Learner:
    def __init__(self, train_dl: DataLoader, valid_dl: DataLoader, body: nn.Module, head: nn.Module) -> None:
        self.train_dl, self.valid_dl = train_dl, valid_dl
        self.model = nn.Sequential(body, head)
        self.loss_func = LabelSmoothingCrossEntropy(0.1, "sum" if FAULT == "wrong-loss-reduction" else "mean")
        self.wd, self.smooth_beta = 0.01, 0.98
        self.opt = torch.optim.AdamW(
            [{"params": list(body.parameters())}, {"params": list(head.parameters())}],
            lr=1e-3,
            betas=(0.9, 0.99),
            weight_decay=self.wd,
        )
        self.sched: OneCycle | None = None

    def __repr__(self) -> str:
        return (
            f"Learner(dls=DataLoaders(train={len(self.train_dl.dataset)} items, valid={len(self.valid_dl.dataset)}"
            f" items, bs={BS}), arch=conv_body (pretrained), loss_func={self.loss_func!r}, opt_func=AdamW,"
            f" lr=0.001, splitter=[body, head], wd={self.wd}, metrics=[accuracy, error_rate])"
        )

    def summary(self) -> str:
        ps = list(self.model.parameters())
        total = sum(p.numel() for p in ps)
        trainable = sum(p.numel() for p in ps if p.requires_grad)
        return "\n".join(
            [
                f"Total params: {total:,}",
                f"Total trainable params: {trainable:,}",
                f"Total non-trainable params: {total - trainable:,}",
                "",
                "Optimizer used: <function AdamW at 0x7f3a2c1d5e50>",
                f"Loss function: {self.loss_func!r}",
                "",
                "Model frozen up to parameter group #1" if trainable < total else "Model unfrozen",
                "",
                "Callbacks:",
                "  - TrainEvalCallback",
                "  - CastToTensor",
                "  - Recorder",
                "  - ProgressCallback",
            ]
        )

    def freeze(self) -> None:
        # freeze_to(-1) with train_bn=True: the body's batch norm layers keep training
        for m in self.model[0].modules():
            for p in m.parameters(recurse=False):
                p.requires_grad_(isinstance(m, nn.BatchNorm2d))

    def unfreeze(self) -> None:
        self.model.requires_grad_(True)

    # ---- the loop
    def one_batch(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        pred = self.model(xb)
        if FAULT == "double-softmax":
            pred = F.softmax(pred, dim=-1)
        loss = self.loss_func(pred, yb)
        if FAULT != "missing-backward":
            loss.backward()
        if FAULT != "missing-optimizer-step":
            self.opt.step()
        if self.sched is not None:
            self.sched.step()
            if FAULT == "scheduler-step-misaligned":
                self.sched.step()
        if FAULT != "missing-zero-grad":
            self.opt.zero_grad()
        return loss

    def smooth(self, loss: torch.Tensor) -> None:
        # AvgSmoothLoss: an exponential moving average of the batch losses, debiased
        self.count += 1
        if FAULT == "loss-tensor-leak":
            self.smooth_val = self.smooth_beta * self.smooth_val + (1 - self.smooth_beta) * loss
        else:
            self.smooth_val = self.smooth_beta * self.smooth_val + (1 - self.smooth_beta) * loss.item()
        self.smooth_loss = self.smooth_val / (1 - self.smooth_beta**self.count)

    def validate(self) -> tuple[float, float]:
        if FAULT != "missing-eval-mode":
            self.model.eval()
        tot, correct, n = 0.0, 0, 0
        with torch.no_grad():
            for xb, yb in self.valid_dl:
                pred = self.model(xb)
                if FAULT == "double-softmax":
                    pred = F.softmax(pred, dim=-1)
                tot += self.loss_func(pred, yb).item() * len(yb)
                correct += int((pred.argmax(-1) == yb).sum())
                n += len(yb)
        if FAULT != "missing-train-mode":
            self.model.train()
        return tot / n, correct / n

    def fit_one_cycle(self, n_epoch: int, lr_max: slice) -> None:
        max_lrs = [lr_max.start, lr_max.stop]
        self.sched = OneCycle(self.opt, max_lrs, n_epoch * len(self.train_dl))
        self.smooth_val, self.count, self.smooth_loss = 0.0, 0, 0.0
        names = ("epoch", "train_loss", "valid_loss", "accuracy", "error_rate", "time")
        widths = (10, 12, 12, 10, 12, 4)
        print("".join(f"{n:<{w}}" for n, w in zip(names, widths, strict=True)).rstrip())
        for epoch in range(n_epoch):
            t0 = time.time()
            for xb, yb in self.train_dl:
                self.smooth(self.one_batch(xb, yb))
            valid_loss, acc = self.validate()
            secs = int(time.time() - t0)
            row = (
                f"{epoch}",
                f"{self.smooth_loss:.6f}",
                f"{valid_loss:.6f}",
                f"{acc:.6f}",
                f"{1 - acc:.6f}",
                f"{secs // 60:02d}:{secs % 60:02d}",
            )
            print("".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=True)).rstrip())
        self.sched = None

    def lr_find(self, start_lr: float = 1e-7, end_lr: float = 10.0, num_it: int = 100) -> float:
        model_state = {k: v.clone() for k, v in self.model.state_dict().items()}
        opt_state = self.opt.state_dict()
        self.smooth_val, self.count, self.smooth_loss = 0.0, 0, 0.0
        lrs, losses, best, it = [], [], float("inf"), 0
        done = False
        while not done:
            for xb, yb in self.train_dl:
                lr = start_lr * (end_lr / start_lr) ** (it / num_it)
                for pg in self.opt.param_groups:
                    pg["lr"] = lr
                self.smooth(self.one_batch(xb, yb))
                lrs.append(lr)
                losses.append(self.smooth_loss)
                best = min(best, self.smooth_loss)
                it += 1
                if self.smooth_loss > 4 * best or not math.isfinite(self.smooth_loss) or it >= num_it:
                    done = True
                    break
        self.model.load_state_dict(model_state)
        self.opt.load_state_dict(opt_state)
        self.opt.zero_grad()
        # valley: the longest descending run of the loss curve, two thirds of the way down it
        lrs, losses = lrs[10:-5], losses[10:-5]
        n = len(losses)
        lds, max_start, max_end = [1] * n, 0, 0
        for i in range(1, n):
            for j in range(i):
                if losses[i] < losses[j] and lds[i] < lds[j] + 1:
                    lds[i] = lds[j] + 1
                if lds[max_end] < lds[i]:
                    max_end, max_start = i, i - lds[i]
        sections = (max_end - max_start) / 3
        return lrs[max_start + int(sections) + int(sections / 2)]


def main() -> int:
    global FAULT
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    FAULT = a.fault
    torch.set_num_threads(1)

    weights = pretrained_body()

    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    x, ids = make_items(CLASSES, COUNTS, g)
    # RandomSplitter(valid_pct=0.2, seed=42): the kept items stay in their stored order
    perm = torch.randperm(len(ids), generator=torch.Generator().manual_seed(42)).tolist()
    cut = int(0.2 * len(ids))
    valid_idx, train_idx = sorted(perm[:cut]), sorted(perm[cut:])
    mean = x[train_idx].mean(dim=(0, 2, 3))
    std = x[train_idx].std(dim=(0, 2, 3))
    train_ds = ImageDataset(x[train_idx], [ids[i] for i in train_idx], True, mean, std)
    valid_ds = ImageDataset(x[valid_idx], [ids[i] for i in valid_idx], False, mean, std)
    train_dl = DataLoader(train_ds, batch_size=BS, shuffle=FAULT != "no-shuffle", drop_last=True)
    valid_dl = DataLoader(valid_ds, batch_size=2 * BS, shuffle=False)
    print(f"vocab: {list(CLASSES)}")
    print(f"train: {len(train_ds)} items, valid: {len(valid_ds)} items")

    body = make_body()
    body.load_state_dict(weights)
    head = create_head(64, len(CLASSES))
    learn = Learner(train_dl, valid_dl, body, head)
    learn.freeze()
    print(learn)
    print(learn.summary())

    print(f"SuggestedLRs(valley={learn.lr_find()})")

    lr = BASE_LR * (100 if FAULT == "lr-too-high" else 1)
    learn.fit_one_cycle(EPOCHS_FROZEN, slice(lr / 10, lr))
    if FAULT != "frozen-parameters":
        learn.unfreeze()
    lr /= 2
    learn.fit_one_cycle(EPOCHS, slice(lr / 10, lr))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
