"""Program 26 (written for issue 9's fresh program 26 without reading triage's rules): YOLO-style classify log.

A small image classifier trained on CPU whose console output imitates the format of
Ultralytics YOLO's classification mode (`yolo classify train`).  The model is a compact
CNN written here: a stride-2 stem, two more stride-2 Conv2d + BatchNorm2d + SiLU blocks each
followed by a residual pair of 3x3 blocks, and a stride-1 widening block, then a head of a 1x1
conv block, global average pooling, dropout (p=0.2) and a linear layer over the classes.
The data are synthetic 24x24 RGB images of 6 classes (filled disk, ring, square,
horizontal stripes, vertical stripes, diagonal stripes) with random placement, size, colour
jitter and Gaussian noise, generated from --seed; 200 training images per class are stored
ordered by class, 50 per class form the held-out validation split.  Training uses SGD with
momentum 0.937 and three parameter groups (conv/linear weights with weight decay 5e-4,
batch-norm weights and all biases without), a nominal batch of 64 reached by accumulating
two batches of 32, a per-iteration linear warm-up over the first 3 epochs (learning rate up
from 0, bias learning rate down from 0.1, momentum up from 0.8), then a linear decay to
lrf * lr0 applied once per epoch through LambdaLR, and mean cross-entropy (label smoothing
0.0) for 12 epochs.  Each epoch prints the progress header, one non-terminal progress line
with the running mean loss and a validation block with top-1/top-5 accuracy, e.g.

          Epoch    GPU_mem       loss  Instances       Size
           1/12         0G      1.734         16         24: 100%|##########| 38/38 [00:01<00:00, 25.3it/s]
                   classes   top1_acc   top5_acc: 100%|##########| 5/5 [00:00<00:00, 60.2it/s]
                       all      0.512       0.96

and the run ends with "12 epochs completed in 0.004 hours.", a validation of the best
weights and "Results saved to runs/classify/train".

Usage: python cls_ultralog.py --fault FAULT --seed N
"""

import argparse
import copy
import math
import os
import platform
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

FAULTS = (
    "missing-zero-grad",
    "lr-too-high",
    "missing-backward",
    "missing-optimizer-step",
    "no-shuffle",
    "frozen-parameters",
    "missing-train-mode",
    "missing-eval-mode",
    "loss-tensor-leak",
    "scheduler-step-misaligned",
    "detached-graph",
    "no-grad-training",
    "wrong-loss-reduction",
    "double-softmax",
)

CLASS_NAMES = ["disk", "ring", "square", "hstripes", "vstripes", "dstripes"]
SAVE_DIR = "runs/classify/train"
VERSION = "8.3.40"


# ----------------------------------------------------------------------------- data
def _draw_image(kind, gen, size=24):
    """Render one noisy RGB picture of the given class index as a 3xHxW float tensor."""

    def u(lo, hi):
        return lo + (hi - lo) * torch.rand((), generator=gen).item()

    ys = torch.arange(size, dtype=torch.float32).view(-1, 1).expand(size, size)
    xs = torch.arange(size, dtype=torch.float32).view(1, -1).expand(size, size)
    cy, cx = u(7, 17), u(7, 17)
    if kind == 0:  # filled disk
        r = u(4.5, 8.0)
        mask = ((ys - cy) ** 2 + (xs - cx) ** 2) <= r * r
    elif kind == 1:  # ring
        r = u(5.0, 8.5)
        w = u(1.0, 1.6)
        d = ((ys - cy) ** 2 + (xs - cx) ** 2).sqrt()
        mask = (d - r).abs() <= w * 0.5 + 0.3
    elif kind == 2:  # square
        h = u(4.0, 7.5)
        mask = ((ys - cy).abs() <= h) & ((xs - cx).abs() <= h)
    else:  # stripes in three orientations
        period = u(3.5, 7.0)
        phase = u(0, 2 * math.pi)
        coord = {3: ys, 4: xs, 5: (xs + ys) / math.sqrt(2)}[kind]
        mask = torch.sin(2 * math.pi * coord / period + phase) > u(-0.3, 0.3)
    fg = torch.rand(3, 1, 1, generator=gen)
    bg = torch.rand(3, 1, 1, generator=gen)
    # keep the two colours at least somewhat apart so the pattern is there
    while (fg - bg).abs().sum() < 0.45:
        bg = torch.rand(3, 1, 1, generator=gen)
    img = torch.where(mask.unsqueeze(0), fg, bg)
    img = img * u(0.7, 1.3) + u(-0.15, 0.15)  # brightness / contrast jitter
    img = img + 0.15 * torch.randn(3, size, size, generator=gen)
    return img.clamp(0.0, 1.0)


def make_split(n_per_class, gen):
    """Images stored class after class, the way a folder-per-class dataset is read."""
    images, labels = [], []
    for c in range(len(CLASS_NAMES)):
        for _ in range(n_per_class):
            images.append(_draw_image(c, gen))
            labels.append(c)
    return torch.stack(images), torch.tensor(labels, dtype=torch.long)


class ShapesFolder(Dataset):
    def __init__(self, images, labels, augment, seed):
        self.images = images
        self.labels = labels
        self.augment = augment
        self.flip_gen = torch.Generator().manual_seed(seed + 7)
        self.mean = torch.tensor([0.5, 0.5, 0.5]).view(3, 1, 1)
        self.std = torch.tensor([0.25, 0.25, 0.25]).view(3, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        x = self.images[idx]
        if self.augment and torch.rand((), generator=self.flip_gen).item() < 0.5:
            x = x.flip(-1)
        return (x - self.mean) / self.std, self.labels[idx]


# ----------------------------------------------------------------------------- model
class ConvBNAct(nn.Module):
    def __init__(self, cin, cout, k=3, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class ResidualPair(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = ConvBNAct(c, c, 3, 1)
        self.b = ConvBNAct(c, c, 3, 1)

    def forward(self, x):
        return x + self.b(self.a(x))


class ClassifyHead(nn.Module):
    def __init__(self, cin, hidden, nc, p_drop):
        super().__init__()
        self.conv = ConvBNAct(cin, hidden, 1, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(p=p_drop)
        self.linear = nn.Linear(hidden, nc)

    def forward(self, x):
        x = self.pool(self.conv(x)).flatten(1)
        return self.linear(self.drop(x))


class ShapesClassifier(nn.Module):
    def __init__(self, nc, p_drop):
        super().__init__()
        self.backbone = nn.Sequential(
            ConvBNAct(3, 16, 3, 2),
            ConvBNAct(16, 32, 3, 2),
            ResidualPair(32),
            ConvBNAct(32, 64, 3, 2),
            ResidualPair(64),
            ConvBNAct(64, 128, 3, 1),
        )
        self.head = ClassifyHead(128, 256, nc, p_drop)

    def forward(self, x):
        return self.head(self.backbone(x))


def count_flops(model, imgsz):
    """Multiply-accumulates of conv and linear layers for one image, times two, in GFLOPs."""
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            kh, kw = mod.kernel_size
            total[0] += out.numel() * (mod.in_channels // mod.groups) * kh * kw
        elif isinstance(mod, nn.Linear):
            total[0] += out.numel() * mod.in_features

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 3, imgsz, imgsz))
    model.train(was_training)
    for h in handles:
        h.remove()
    return 2 * total[0] / 1e9


def model_summary(model, name, imgsz, fused=False):
    n_p = sum(p.numel() for p in model.parameters())
    n_g = sum(p.numel() for p in model.parameters() if p.requires_grad)
    layers = len(list(model.modules()))
    if fused:  # batch norm folded into the preceding conv: BN modules gone, conv gains a bias
        bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
        layers -= len(bns)
        n_p -= sum(m.num_features for m in bns)
        n_g = n_p
    gf = count_flops(model, imgsz)
    tag = " (fused)" if fused else ""
    return f"{name} summary{tag}: {layers} layers, {n_p:,} parameters, {n_g:,} gradients, {gf:.1f} GFLOPs"


def layer_table(model):
    rows = ["", f"{'':>3}{'from':>20}{'n':>3}{'params':>10}  {'module':<45}{'arguments':<30}"]
    specs = []
    for i, m in enumerate(model.backbone):
        if isinstance(m, ConvBNAct):
            c = m.conv
            args = [c.in_channels, c.out_channels, c.kernel_size[0], c.stride[0]]
        else:
            args = [m.a.conv.in_channels]
        specs.append((i, m, args))
    h = model.head
    specs.append((len(specs), h, [h.conv.conv.in_channels, h.linear.out_features]))
    for i, m, args in specs:
        n_params = sum(p.numel() for p in m.parameters())
        rows.append(f"{i:>3}{-1:>20}{1:>3}{n_params:10.0f}  {'models.shapes.' + type(m).__name__:<45}{str(args):<30}")
    return rows


# ----------------------------------------------------------------------------- logging helpers
def fmt_clock(sec):
    sec = int(sec)
    return f"{sec // 60:02d}:{sec % 60:02d}"


def bar(n, total, elapsed):
    frac = n / total
    filled = int(10 * frac)
    rate = n / elapsed if elapsed > 0 else 0.0
    rate_s = f"{rate:.1f}it/s" if rate >= 1 else f"{1 / rate:.2f}s/it" if rate > 0 else "?it/s"
    return (
        f"{int(100 * frac):3d}%|{'#' * filled}{' ' * (10 - filled)}| {n}/{total} [{fmt_clock(elapsed)}<00:00, {rate_s}]"
    )


def log(msg=""):
    print(msg, flush=True)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


# ----------------------------------------------------------------------------- optimisation
def build_optimizer(model, lr, momentum, decay, fault):
    no_decay_w, decay_w, biases = [], [], []
    for pname, p in model.named_parameters():
        if pname.endswith(".bias"):
            biases.append(p)
        elif p.ndim == 1:  # batch-norm scale
            no_decay_w.append(p)
        else:
            decay_w.append(p)
    if fault == "lr-too-high":
        lr = lr * 100
    opt = torch.optim.SGD(biases, lr=lr, momentum=momentum, nesterov=True)
    opt.add_param_group({"params": decay_w, "weight_decay": decay})
    opt.add_param_group({"params": no_decay_w, "weight_decay": 0.0})
    return opt, (len(no_decay_w), len(decay_w), len(biases))


def validate(model, loader, fault):
    if fault != "missing-eval-mode":
        model.eval()
    n_seen = correct1 = correct5 = 0
    t0 = time.time()
    with torch.no_grad():
        for xb, yb in loader:
            probs = model(xb).softmax(1)
            top = probs.topk(min(5, probs.shape[1]), dim=1).indices
            hit = top == yb.unsqueeze(1)
            correct1 += hit[:, 0].sum().item()
            correct5 += hit.any(1).sum().item()
            n_seen += yb.numel()
    elapsed = time.time() - t0
    top1, top5 = correct1 / n_seen, correct5 / n_seen
    log(("%22s" + "%11s" * 2) % ("classes", "top1_acc", "top5_acc") + ": " + bar(len(loader), len(loader), elapsed))
    log(("%22s" + "%11.3g" * 2) % ("all", top1, top5))
    return top1, top5, elapsed / max(n_seen, 1)


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    ap.add_argument("--seed", type=int, default=0)
    cli = ap.parse_args()
    fault = cli.fault

    cfg = dict(
        task="classify",
        mode="train",
        model="shapes-cls.yaml",
        data="/datasets/shapes6",
        epochs=12,
        time=None,
        patience=100,
        batch=32,
        imgsz=24,
        save=True,
        save_period=-1,
        cache=False,
        device="cpu",
        workers=0,
        project=None,
        name="train",
        exist_ok=False,
        pretrained=False,
        optimizer="SGD",
        verbose=True,
        seed=cli.seed,
        deterministic=True,
        single_cls=False,
        rect=False,
        cos_lr=False,
        close_mosaic=10,
        resume=False,
        amp=False,
        fraction=1.0,
        profile=False,
        freeze=None,
        dropout=0.2,
        val=True,
        split="val",
        plots=True,
        lr0=0.01,
        lrf=0.01,
        momentum=0.937,
        weight_decay=0.0005,
        warmup_epochs=3.0,
        warmup_momentum=0.8,
        warmup_bias_lr=0.1,
        label_smoothing=0.0,
        nbs=64,
        hsv_h=0.0,
        hsv_s=0.0,
        hsv_v=0.0,
        degrees=0.0,
        translate=0.0,
        scale=0.0,
        fliplr=0.5,
        auto_augment=None,
        erasing=0.0,
        save_dir=SAVE_DIR,
    )
    torch.manual_seed(cli.seed)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    log(
        f"Ultralytics {VERSION} \U0001f680 Python-{platform.python_version()} torch-{torch.__version__} CPU ({cpu_name()})"
    )
    log("engine/trainer: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))

    gen = torch.Generator().manual_seed(1000 + cli.seed)
    tr_x, tr_y = make_split(200, gen)
    va_x, va_y = make_split(50, gen)
    nc = len(CLASS_NAMES)
    log(f"train: {cfg['data']}/train... found {len(tr_y)} images in {nc} classes \u2705 ")
    log(f"val: {cfg['data']}/val... found {len(va_y)} images in {nc} classes \u2705 ")
    log("test: None...")

    model = ShapesClassifier(nc, cfg["dropout"])
    for p in model.parameters():
        p.requires_grad = True
    if fault == "frozen-parameters":
        model.backbone.requires_grad_(False)
    for line in layer_table(model):
        log(line)
    log(model_summary(model, "shapes-cls", cfg["imgsz"]))

    train_ds = ShapesFolder(tr_x, tr_y, augment=True, seed=cli.seed)
    val_ds = ShapesFolder(va_x, va_y, augment=False, seed=cli.seed)
    loader_gen = torch.Generator().manual_seed(cli.seed)
    train_loader = DataLoader(
        train_ds, batch_size=cfg["batch"], shuffle=(fault != "no-shuffle"), num_workers=0, generator=loader_gen
    )
    val_loader = DataLoader(val_ds, batch_size=cfg["batch"] * 2, shuffle=False, num_workers=0)
    log(
        f"train: Scanning {cfg['data']}/train... {len(tr_y)} images, 0 corrupt: 100%|##########| {len(tr_y)}/{len(tr_y)} [00:00<?, ?it/s]"
    )
    log(
        f"val: Scanning {cfg['data']}/val... {len(va_y)} images, 0 corrupt: 100%|##########| {len(va_y)}/{len(va_y)} [00:00<?, ?it/s]"
    )

    accumulate = max(round(cfg["nbs"] / cfg["batch"]), 1)
    decay = cfg["weight_decay"] * cfg["batch"] * accumulate / cfg["nbs"]
    optimizer, (n_bn, n_w, n_b) = build_optimizer(model, cfg["lr0"], cfg["momentum"], decay, fault)
    log(
        f"optimizer: SGD(lr={cfg['lr0']}, momentum={cfg['momentum']}) with parameter groups "
        f"{n_bn} weight(decay=0.0), {n_w} weight(decay={decay}), {n_b} bias(decay=0.0)"
    )

    epochs = cfg["epochs"]

    def lr_factor(e):
        frac = min(e / epochs, 1.0)
        return 1.0 - frac * (1.0 - cfg["lrf"])

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lr_factor)
    nb = len(train_loader)
    n_warm = round(cfg["warmup_epochs"] * nb)

    log(f"Image sizes {cfg['imgsz']} train, {cfg['imgsz']} val")
    log("Using 0 dataloader workers")
    log(f"Logging results to {SAVE_DIR}")
    log(f"Starting training for {epochs} epochs...")

    t_start = time.time()
    best_fit, best_state = -1.0, None
    it = 0
    optimizer.zero_grad()
    for epoch in range(epochs):
        if fault != "missing-train-mode":
            model.train()
        log(("\n" + "%11s" * 5) % ("Epoch", "GPU_mem", "loss", "Instances", "Size"))
        t_epoch = time.time()
        running = 0.0
        n_inst = 0
        for i, (xb, yb) in enumerate(train_loader):
            if it <= n_warm:
                prog = it / max(n_warm, 1)
                for gi, g in enumerate(optimizer.param_groups):
                    target = g["initial_lr"] * lr_factor(epoch)
                    start = cfg["warmup_bias_lr"] if gi == 0 else 0.0
                    g["lr"] = start + (target - start) * prog
                    g["momentum"] = cfg["warmup_momentum"] + (cfg["momentum"] - cfg["warmup_momentum"]) * prog

            if fault == "no-grad-training":
                with torch.no_grad():
                    logits = model(xb)
                    loss = F.cross_entropy(logits, yb, label_smoothing=cfg["label_smoothing"])
            else:
                logits = model(xb)
                if fault == "detached-graph":
                    logits = logits.detach()
                if fault == "double-softmax":
                    loss = F.cross_entropy(F.softmax(logits, dim=-1), yb, label_smoothing=cfg["label_smoothing"])
                elif fault == "wrong-loss-reduction":
                    loss = F.cross_entropy(logits, yb, reduction="sum", label_smoothing=cfg["label_smoothing"])
                else:
                    loss = F.cross_entropy(logits, yb, reduction="mean", label_smoothing=cfg["label_smoothing"])

            if fault != "missing-backward":
                loss.backward()

            if (i + 1) % accumulate == 0 or i + 1 == nb:
                if fault != "missing-optimizer-step":
                    optimizer.step()
                if fault != "missing-zero-grad":
                    optimizer.zero_grad()
            if fault == "scheduler-step-misaligned":
                scheduler.step()

            if fault == "loss-tensor-leak":
                running = (running * i + loss) / (i + 1)
            else:
                running = (running * i + loss.item()) / (i + 1)
            n_inst = yb.shape[0]
            it += 1

        mem = "0G"
        log(
            ("%11s" * 2 + "%11.4g" * 3) % (f"{epoch + 1}/{epochs}", mem, running, n_inst, cfg["imgsz"])
            + ": "
            + bar(nb, nb, time.time() - t_epoch)
        )
        if fault != "scheduler-step-misaligned":
            scheduler.step()

        top1, top5, _ = validate(model, val_loader, fault)
        fitness = (top1 + top5) / 2
        if fitness > best_fit:
            best_fit = fitness
            best_state = copy.deepcopy(model.state_dict())

    hours = (time.time() - t_start) / 3600
    log(f"\n{epochs} epochs completed in {hours:.3f} hours.")
    n_params = sum(p.numel() for p in model.parameters())
    size_mb = n_params * 2 / 1e6 + 0.05
    log(f"Optimizer stripped from {SAVE_DIR}/weights/last.pt, {size_mb:.1f}MB")
    log(f"Optimizer stripped from {SAVE_DIR}/weights/best.pt, {size_mb:.1f}MB")
    log(f"\nValidating {SAVE_DIR}/weights/best.pt...")
    log(
        f"Ultralytics {VERSION} \U0001f680 Python-{platform.python_version()} torch-{torch.__version__} CPU ({cpu_name()})"
    )
    model.load_state_dict(best_state)
    log(model_summary(model, "shapes-cls", cfg["imgsz"], fused=True))
    _, _, per_img = validate(model, val_loader, fault)
    log(f"Speed: 0.0ms preprocess, {per_img * 1000:.1f}ms inference, 0.0ms loss, 0.0ms postprocess per image")
    log(f"Results saved to {SAVE_DIR}")


if __name__ == "__main__":
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")
    main()
