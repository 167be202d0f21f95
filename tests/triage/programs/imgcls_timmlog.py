"""Program 25 (written for issue 9's fresh program 25 without reading triage's rules): small ResNet on synthetic textures, timm-style log.

A compact residual CNN (3x3 stem, three residual units with batch norm at 16, 8 and
4 pixels, global average pooling, dropout 0.2, linear head) classifies synthetic
16x16 RGB images of 8 classes (stripes in three orientations, checkerboards, discs,
rings, squares, crosses) drawn with random colours, jitter and Gaussian noise; the
training split is generated and stored class by class, a shuffled validation split
is held out.  Training uses SGD with Nesterov momentum and weight decay (no decay on
batch-norm weights and biases), a label-smoothed cross-entropy written here, random
horizontal flips, and a linear warm-up followed by cosine annealing built from
torch.optim.lr_scheduler and stepped once per epoch.  The log imitates the format of
timm's train.py, for example:

    Model tinyresnet8 created, param count:77912
    Scheduled epochs: 12. LR stepped per epoch.
    Train: 0 [   0/22 (  5%)]  Loss: 2.10 (2.10)  Time: 0.210s,  304.76/s  (0.210s,  304.76/s)  LR: 5.000e-03  Data: 0.004 (0.004)
    Test: [   0/6]  Time: 0.050 (0.050)  Loss:   1.534 ( 1.534)  Acc@1:  48.000 ( 48.000)  Acc@5:  93.000 ( 93.000)
    *** Best metric: 91.25 (epoch 10)

Usage: python imgcls_timmlog.py --fault FAULT --seed N
"""

# ruff: noqa: B007, SIM108  (written as the framework's users write it)
import argparse
import logging
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

FAULTS = (
    "healthy",
    "missing-zero-grad",
    "lr-too-high",
    "no-shuffle",
    "missing-backward",
    "missing-optimizer-step",
    "frozen-parameters",
    "missing-train-mode",
    "missing-eval-mode",
    "loss-tensor-leak",
    "scheduler-step-misaligned",
    "detached-graph",
    "no-grad-training",
    "wrong-loss-reduction",
    "wrong-softmax-dim",
)

log = logging.getLogger("train")

NUM_CLASSES = 8
IMG = 16


# --------------------------------------------------------------------------- data


def _coords():
    ys = torch.arange(IMG, dtype=torch.float32).view(IMG, 1).expand(IMG, IMG)
    xs = torch.arange(IMG, dtype=torch.float32).view(1, IMG).expand(IMG, IMG)
    return ys, xs


def draw_mask(kind, gen):
    """Return a soft 16x16 mask in [0, 1] for one sample of pattern `kind`."""
    ys, xs = _coords()

    def uni(lo, hi):
        return lo + (hi - lo) * torch.rand((), generator=gen).item()

    if kind in (0, 1, 2):
        period = uni(3.0, 6.0)
        phase = uni(0.0, 2 * math.pi)
        if kind == 0:
            axis = ys
        elif kind == 1:
            axis = xs
        else:
            axis = (xs + ys) if torch.rand((), generator=gen).item() < 0.5 else (xs - ys)
            axis = axis / math.sqrt(2.0)
        return (torch.sin(2 * math.pi * axis / period + phase) > 0).float()
    if kind == 3:
        cell = int(uni(2.0, 5.0))
        ox, oy = int(uni(0, cell)), int(uni(0, cell))
        return ((((xs + ox) // cell) + ((ys + oy) // cell)) % 2).float()
    cy, cx = uni(5.0, 10.0), uni(5.0, 10.0)
    if kind == 4:
        r = uni(3.0, 5.5)
        return (((ys - cy) ** 2 + (xs - cx) ** 2) <= r * r).float()
    if kind == 5:
        r = uni(3.5, 5.5)
        d = torch.sqrt((ys - cy) ** 2 + (xs - cx) ** 2)
        return ((d - r).abs() <= 1.0).float()
    if kind == 6:
        h = uni(2.5, 4.5)
        return (((ys - cy).abs() <= h) & ((xs - cx).abs() <= h)).float()
    # kind == 7: a plus-shaped cross
    arm = uni(3.5, 6.0)
    w = uni(0.6, 1.3)
    vert = ((xs - cx).abs() <= w) & ((ys - cy).abs() <= arm)
    horz = ((ys - cy).abs() <= w) & ((xs - cx).abs() <= arm)
    return (vert | horz).float()


def render_split(per_class, gen, noise=0.3):
    images, labels = [], []
    for label in range(NUM_CLASSES):  # stored class after class, like a folder dump
        for _ in range(per_class):
            m = draw_mask(label, gen)
            bg = 0.4 * torch.rand(3, generator=gen)
            fg = 0.6 + 0.4 * torch.rand(3, generator=gen)
            if torch.rand((), generator=gen).item() < 0.5:
                fg, bg = bg, fg
            img = bg.view(3, 1, 1) + (fg - bg).view(3, 1, 1) * m.unsqueeze(0)
            img = img + noise * torch.randn(3, IMG, IMG, generator=gen)
            images.append(img)
            labels.append(label)
    return torch.stack(images), torch.tensor(labels, dtype=torch.long)


class TextureSet(Dataset):
    def __init__(self, images, labels, mean, std, flip=False):
        self.images = (images - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)
        self.labels = labels
        self.flip = flip

    def __len__(self):
        return self.labels.numel()

    def __getitem__(self, i):
        x = self.images[i]
        if self.flip and torch.rand(()) < 0.5:
            x = x.flip(-1)
        return x, self.labels[i]


# --------------------------------------------------------------------------- model


class ResUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv_a = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.norm_a = nn.BatchNorm2d(cout)
        self.conv_b = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.norm_b = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        else:
            self.skip = nn.Identity()

    def forward(self, x):
        h = F.relu(self.norm_a(self.conv_a(x)))
        h = self.norm_b(self.conv_b(h))
        return F.relu(h + self.skip(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, widths=(16, 32, 64), drop_rate=0.2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        units, cin = [], widths[0]
        for i, w in enumerate(widths):
            units.append(ResUnit(cin, w, 1 if i == 0 else 2))
            cin = w
        self.body = nn.Sequential(*units)
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.body(self.stem(x))
        x = x.mean(dim=(2, 3))
        return self.fc(self.drop(x))


# --------------------------------------------------------------------------- loss / metrics


class SmoothedXent(nn.Module):
    """Cross-entropy against targets mixed with a uniform distribution."""

    def __init__(self, eps=0.1, fault="healthy"):
        super().__init__()
        self.eps = eps
        self.fault = fault

    def forward(self, logits, target):
        class_dim = 0 if self.fault == "wrong-softmax-dim" else 1
        logp = F.log_softmax(logits, dim=class_dim)
        n_cls = logits.size(1)
        soft = torch.full_like(logp, self.eps / n_cls)
        soft.scatter_(1, target.unsqueeze(1), 1.0 - self.eps + self.eps / n_cls)
        per_sample = -(soft * logp).sum(dim=1)
        if self.fault == "wrong-loss-reduction":
            return per_sample.sum()
        return per_sample.mean()


class Tracker:
    def __init__(self):
        self.last = 0.0
        self.total = 0.0
        self.n = 0

    def add(self, value, n=1):
        self.last = value
        self.total = self.total + value * n
        self.n += n

    @property
    def mean(self):
        return self.total / max(self.n, 1)


def topk_hits(logits, target, ks=(1, 5)):
    kmax = min(max(ks), logits.size(1))
    pred = logits.topk(kmax, dim=1).indices
    hit = pred.eq(target.unsqueeze(1))
    return [hit[:, : min(k, kmax)].any(dim=1).float().mean().item() * 100.0 for k in ks]


# --------------------------------------------------------------------------- train / eval


def run_epoch(epoch, model, loader, criterion, optimizer, scheduler, args):
    if args.fault != "missing-train-mode":
        model.train()
    t_step, t_data, losses = Tracker(), Tracker(), Tracker()
    steps = len(loader)
    end = time.time()
    for i, (x, y) in enumerate(loader):
        t_data.add(time.time() - end)
        if args.fault == "no-grad-training":
            with torch.no_grad():
                out = model(x)
                loss = criterion(out, y)
        else:
            out = model(x)
            if args.fault == "detached-graph":
                out = out.detach()
            loss = criterion(out, y)

        if args.fault != "missing-zero-grad":
            optimizer.zero_grad()
        if args.fault != "missing-backward":
            loss.backward()
        if args.fault != "missing-optimizer-step":
            optimizer.step()
        if args.fault == "scheduler-step-misaligned":
            scheduler.step()

        if args.fault == "loss-tensor-leak":
            loss_val = loss
        else:
            loss_val = loss.item()
        losses.add(loss_val, x.size(0))

        t_step.add(time.time() - end)
        if i % args.log_interval == 0 or i == steps - 1:
            lr = sum(g["lr"] for g in optimizer.param_groups) / len(optimizer.param_groups)
            bs = x.size(0)
            log.info(
                f"Train: {epoch} [{i:>4d}/{steps} ({100.0 * (i + 1) / steps:>3.0f}%)]  "
                f"Loss: {losses.last:#.3g} ({losses.mean:#.3g})  "
                f"Time: {t_step.last:.3f}s, {bs / t_step.last:>7.2f}/s  "
                f"({t_step.mean:.3f}s, {bs / t_step.mean:>7.2f}/s)  "
                f"LR: {lr:.3e}  "
                f"Data: {t_data.last:.3f} ({t_data.mean:.3f})"
            )
        end = time.time()
    return float(losses.mean)


def evaluate(model, loader, args):
    if args.fault != "missing-eval-mode":
        model.eval()
    t_step, losses, acc1, acc5 = Tracker(), Tracker(), Tracker(), Tracker()
    last = len(loader) - 1
    end = time.time()
    with torch.no_grad():
        for i, (x, y) in enumerate(loader):
            out = model(x)
            loss = F.cross_entropy(out, y)
            a1, a5 = topk_hits(out, y)
            losses.add(loss.item(), x.size(0))
            acc1.add(a1, x.size(0))
            acc5.add(a5, x.size(0))
            t_step.add(time.time() - end)
            if i % args.log_interval == 0 or i == last:
                log.info(
                    f"Test: [{i:>4d}/{last}]  "
                    f"Time: {t_step.last:.3f} ({t_step.mean:.3f})  "
                    f"Loss: {losses.last:>7.3f} ({losses.mean:>6.3f})  "
                    f"Acc@1: {acc1.last:>7.3f} ({acc1.mean:>7.3f})  "
                    f"Acc@5: {acc5.last:>7.3f} ({acc5.mean:>7.3f})"
                )
            end = time.time()
    return {"loss": losses.mean, "top1": acc1.mean, "top5": acc5.mean}


def split_decay(model):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim <= 1 else decay).append(p)
    return decay, no_decay


def main():
    ap = argparse.ArgumentParser(description="tiny timm-style trainer")
    ap.add_argument("--fault", default="healthy", choices=FAULTS)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--warmup-epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--warmup-lr", type=float, default=5e-3)
    ap.add_argument("--min-lr", type=float, default=1e-5)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--smoothing", type=float, default=0.1)
    ap.add_argument("--drop", type=float, default=0.2)
    ap.add_argument("--log-interval", type=int, default=10)
    args = ap.parse_args()

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    log.info("Training with a single process on 1 device (cpu).")

    gen = torch.Generator().manual_seed(1000 + args.seed)
    tr_x, tr_y = render_split(180, gen)
    va_x, va_y = render_split(80, gen)
    perm = torch.randperm(va_y.numel(), generator=gen)
    va_x, va_y = va_x[perm], va_y[perm]
    mean = tr_x.mean(dim=(0, 2, 3))
    std = tr_x.std(dim=(0, 2, 3))

    model = TinyResNet(drop_rate=args.drop)
    model_name = "tinyresnet8"
    log.info(f"Model {model_name} created, param count:{sum(p.numel() for p in model.parameters())}")
    log.info("Data processing configuration for current model + dataset:")
    log.info(f"\tinput_size: (3, {IMG}, {IMG})")
    log.info("\tinterpolation: bilinear")
    log.info(f"\tmean: {tuple(round(v, 4) for v in mean.tolist())}")
    log.info(f"\tstd: {tuple(round(v, 4) for v in std.tolist())}")
    log.info("\tcrop_pct: 1.0")
    log.info("\tcrop_mode: center")

    decay, no_decay = split_decay(model)
    if args.fault == "frozen-parameters":
        groups = [{"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": args.weight_decay}]
    lr = args.lr * 100 if args.fault == "lr-too-high" else args.lr
    optimizer = torch.optim.SGD(groups, lr=lr, momentum=args.momentum, nesterov=True)
    log.info("AMP not enabled. Training in float32.")

    warm = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=args.warmup_lr / args.lr, end_factor=1.0, total_iters=args.warmup_epochs
    )
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=args.epochs - args.warmup_epochs, eta_min=args.min_lr
    )
    scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warm, cosine], milestones=[args.warmup_epochs]
    )
    log.info(f"Scheduled epochs: {args.epochs}. LR stepped per epoch.")

    train_set = TextureSet(tr_x, tr_y, mean, std, flip=True)
    val_set = TextureSet(va_x, va_y, mean, std)
    shuffle = args.fault != "no-shuffle"
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=shuffle, drop_last=True, num_workers=0)
    val_loader = DataLoader(val_set, batch_size=100, shuffle=False, num_workers=0)

    criterion = SmoothedXent(args.smoothing, fault=args.fault)

    best_metric, best_epoch = None, None
    for epoch in range(args.epochs):
        run_epoch(epoch, model, train_loader, criterion, optimizer, scheduler, args)
        metrics = evaluate(model, val_loader, args)
        if args.fault != "scheduler-step-misaligned":
            scheduler.step()
        if best_metric is None or metrics["top1"] > best_metric:
            best_metric, best_epoch = metrics["top1"], epoch

    if best_metric is not None:
        log.info(f"*** Best metric: {best_metric} (epoch {best_epoch})")


if __name__ == "__main__":
    main()
