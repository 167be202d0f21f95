"""Program 14 (written for issue 9's fresh program 14 without reading triage's rules): SimCLR.

Self-supervised contrastive learning, where the programs before it learn from labels or
reconstruct: a SimCLR-style model on synthetic 12x12 grayscale images of five stroke-shape
families (bars, corners, tees, plus signs, hollow boxes) in four orientations, at random
positions, sizes and intensities, over faint background speckle; now and then a frame was dropped
and is blank. The images are stored family by family. Each sample gives two random views (shift,
intensity scaling, rotation by quarter turns, flip, and at random a 3x3 Gaussian blur and Gaussian
noise). A small convolutional encoder with batch norm, a two-layer projection head, the NT-Xent
loss at temperature 0.2 over the 2N views of a batch, SGD with momentum 0.9 and weight decay, a
linear warm-up then a cosine learning rate stepped every iteration. The labels are never used to
train: after every epoch a weighted k-NN (k=20) over the encoder's features of the un-augmented
training set classifies a held-out labelled split. It logs as MMEngine's runner and text logger do
(mmengine itself is not used):

    2026/11/27 10:00:01 - mmengine - INFO - Epoch(train)  [3][20/31]  lr: 2.7337e-01  eta: 0:00:09  time: 0.0300 ...
    2026/11/27 10:00:05 - mmengine - INFO - Epoch(val) [3][10/10]    knn_top1: 45.6000  data_time: ...  time: ...

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import platform
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

SIZE, FAMILIES = 12, ("bar", "corner", "tee", "plus", "box")
CLASSES = len(FAMILIES)

logger = logging.getLogger("mmengine")


def setup_logger() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s", datefmt="%Y/%m/%d %H:%M:%S")
    )
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def render(family: int, g: torch.Generator) -> torch.Tensor:
    """One 1x12x12 image of the given family, in [0, 1], in one of four orientations."""
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    r0, c0 = (int(v) for v in torch.randint(3, SIZE - 3, (2,), generator=g))
    arm = int(torch.randint(2, 4, (1,), generator=g))
    dy, dx = yy - r0, xx - c0
    h_arm = (dy == 0) & (dx.abs() <= arm)
    if family == 0:  # bar
        img = h_arm
    elif family == 1:  # corner
        img = ((dy == 0) & (dx >= 0) & (dx <= arm)) | ((dx == 0) & (dy >= 0) & (dy <= arm))
    elif family == 2:  # tee
        img = h_arm | ((dx == 0) & (dy >= 0) & (dy <= arm))
    elif family == 3:  # plus
        img = h_arm | ((dx == 0) & (dy.abs() <= arm))
    else:  # hollow box
        half = arm - 1 + int(torch.randint(0, 2, (1,), generator=g))
        img = (dy.abs() <= half) & (dx.abs() <= half) & ~((dy.abs() < half) & (dx.abs() < half))
    img = torch.rot90(img, int(torch.randint(0, 4, (1,), generator=g)))
    level = 0.5 + 0.5 * float(torch.rand(1, generator=g))
    out = img.float() * level
    # background clutter: its density and brightness vary from image to image
    density = 0.03 * float(torch.rand(1, generator=g))
    bright = 0.3 + 0.5 * float(torch.rand(1, generator=g))
    speckle = (torch.rand(SIZE, SIZE, generator=g) < density).float() * bright
    return torch.maximum(out, speckle)[None]


def make_split(per_family: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Images stored family by family, as the generator writes them; a dropped frame is blank."""
    xs, ys = [], []
    for family in range(CLASSES):
        for _ in range(per_family):
            img = render(family, g)
            if float(torch.rand(1, generator=g)) < 0.002:
                img = torch.zeros_like(img)
            xs.append(img)
            ys.append(family)
    return torch.stack(xs), torch.tensor(ys)


BLUR = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16


class TwoViewDataset(Dataset):
    """Returns two random views of each image (its label is kept for the k-NN monitor only)."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, fault: str) -> None:
        self.images, self.labels, self.fault = images, labels, fault

    def __len__(self) -> int:
        return len(self.images)

    def blur(self, v: torch.Tensor) -> torch.Tensor:
        if self.fault == "dataloader-bottleneck":
            padded = F.pad(v, (1, 1, 1, 1))
            out = torch.empty_like(v)
            for i in range(SIZE):
                for j in range(SIZE):
                    out[0, i, j] = (padded[0, i : i + 3, j : j + 3] * BLUR).sum()
            return out
        return F.conv2d(v[None], BLUR[None, None], padding=1)[0]

    def view(self, img: torch.Tensor) -> torch.Tensor:
        dy, dx = (int(d) for d in torch.randint(0, 5, (2,)))
        v = F.pad(img, (2, 2, 2, 2))[:, dy : dy + SIZE, dx : dx + SIZE]
        v = v * (0.6 + 0.8 * torch.rand(1))
        v = torch.rot90(v, int(torch.randint(0, 4, (1,))), dims=(1, 2))
        if torch.rand(1) < 0.5:
            v = v.flip(2)
        if torch.rand(1) < 0.4:
            v = self.blur(v)
        if torch.rand(1) < 0.8:
            v = v + 0.1 * torch.randn_like(v)
        return v

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        img = self.images[i]
        return self.view(img), self.view(img), int(self.labels[i])


class SimCLR(nn.Module):
    def __init__(self, fault: str, feat_dim: int = 64, proj_dim: int = 32) -> None:
        super().__init__()
        self.fault = fault
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.Conv2d(64, feat_dim, 3, stride=2, padding=1),
            nn.BatchNorm2d(feat_dim),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.neck = nn.Sequential(
            nn.Linear(feat_dim, feat_dim), nn.BatchNorm1d(feat_dim), nn.ReLU(), nn.Linear(feat_dim, proj_dim)
        )

    def preprocess(self, x: torch.Tensor) -> torch.Tensor:
        # standardise each image on its own (the data preprocessor)
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        std = x.std(dim=(1, 2, 3), keepdim=True)
        if self.fault == "missing-epsilon":
            return (x - mean) / std
        return (x - mean) / (std + 1e-6)

    def extract_feat(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(self.preprocess(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.neck(self.extract_feat(x))


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float, fault: str) -> tuple[torch.Tensor, torch.Tensor]:
    """NT-Xent over the 2N views: each view's positive against its 2N-2 negatives."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n2 = z.shape[0]
    sim = z @ z.t()
    self_mask = torch.eye(n2, dtype=torch.bool)
    pos_mask = self_mask.roll(n2 // 2, dims=1)
    positives = sim[pos_mask].view(n2, 1)
    negatives = sim[~(self_mask | pos_mask)].view(n2, n2 - 2)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    # the positive sits in column 0
    if fault == "wrong-softmax-dim":
        loss = -F.log_softmax(logits, dim=0)[:, 0].mean()
    else:
        loss = -F.log_softmax(logits, dim=1)[:, 0].mean()
    top1 = (logits.argmax(dim=1) == 0).float().mean() * 100
    return loss, top1


def knn_predict(
    query: torch.Tensor, bank: torch.Tensor, bank_labels: torch.Tensor, k: int = 20, t: float = 0.07
) -> torch.Tensor:
    sim = query @ bank.t()
    w, idx = sim.topk(k, dim=1)
    w = (w / t).exp()
    votes = torch.zeros(len(query), CLASSES)
    votes.scatter_add_(1, bank_labels[idx], w)
    return votes.argmax(dim=1)


def fmt_eta(seconds: float) -> str:
    return str(datetime.timedelta(seconds=int(seconds)))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fault = a.fault
    setup_logger()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(4321 + a.seed)

    cfg = dict(
        max_epochs=10,
        batch_size=64,
        lr=0.3,
        momentum=0.9,
        weight_decay=5e-4,
        warmup_iters=40,
        temperature=0.2,
        log_interval=10,
        knn_k=20,
    )
    logger.info(
        "\n------------------------------------------------------------\n"
        "System environment:\n"
        f"    sys.platform: {sys.platform}\n"
        f"    Python: {platform.python_version()}\n"
        f"    CUDA available: {torch.cuda.is_available()}\n"
        f"    seed: {a.seed}\n"
        f"    PyTorch: {torch.__version__}\n"
        "------------------------------------------------------------\n"
    )
    logger.info(
        "Config:\n"
        "model = dict(\n"
        "    type='SimCLR',\n"
        "    data_preprocessor=dict(type='PerImageStandardize'),\n"
        "    backbone=dict(type='SmallConvNet', in_channels=1, out_channels=64, norm_cfg=dict(type='BN')),\n"
        "    neck=dict(type='NonLinearNeck', in_channels=64, hid_channels=64, out_channels=32, with_bias=True),\n"
        f"    head=dict(type='ContrastiveHead', loss=dict(type='CrossEntropyLoss'), temperature={cfg['temperature']}))\n"
        f"train_dataloader = dict(batch_size={cfg['batch_size']}, num_workers=0,\n"
        "    sampler=dict(type='DefaultSampler', shuffle=True),\n"
        "    dataset=dict(type='SyntheticShapes', size=12, num_views=2, pipeline=[\n"
        "        dict(type='RandomShift', max_shift=2), dict(type='RandomIntensity', range=(0.6, 1.4)),\n"
        "        dict(type='RandomRotate90'), dict(type='RandomFlip', prob=0.5, direction='horizontal'),\n"
        "        dict(type='RandomApply', transforms=[dict(type='GaussianBlur', kernel_size=3)], prob=0.4),\n"
        "        dict(type='RandomApply', transforms=[dict(type='GaussianNoise', std=0.1)], prob=0.8)]))\n"
        f"optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='SGD', lr={cfg['lr']}, "
        f"momentum={cfg['momentum']}, weight_decay={cfg['weight_decay']}))\n"
        "param_scheduler = [\n"
        f"    dict(type='LinearLR', start_factor=1e-4, by_epoch=False, begin=0, end={cfg['warmup_iters']}),\n"
        "    dict(type='CosineAnnealingLR', by_epoch=False, eta_min=0.0)]\n"
        f"train_cfg = dict(by_epoch=True, max_epochs={cfg['max_epochs']}, val_interval=1)\n"
        f"val_evaluator = dict(type='KNNAccuracy', topk=(1,), k={cfg['knn_k']})\n"
        f"default_hooks = dict(logger=dict(type='LoggerHook', interval={cfg['log_interval']}))\n"
        f"randomness = dict(seed={a.seed})\n"
    )

    train_x, train_y = make_split(400, g)
    val_x, val_y = make_split(100, g)
    train_set = TwoViewDataset(train_x, train_y, fault)
    loader = DataLoader(
        train_set, batch_size=cfg["batch_size"], shuffle=fault != "no-shuffle", num_workers=0, drop_last=True
    )
    logger.info(
        f"Distributed training is not used, all seeds are set to {a.seed}; "
        f"{len(train_set)} unlabelled training images, {len(val_x)} labelled validation images"
    )

    model = SimCLR(fault)
    n_params = sum(q.numel() for q in model.parameters())
    logger.info(f"Model SimCLR: {n_params} parameters ({n_params / 1e6:.3f} M)")
    lr = cfg["lr"] * (100 if fault == "lr-too-high" else 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=cfg["momentum"], weight_decay=cfg["weight_decay"])
    iters = len(loader)
    total_iters = cfg["max_epochs"] * iters
    warmup = cfg["warmup_iters"]

    def lr_factor(step: int) -> float:
        if step < warmup:
            return 1e-4 + (1 - 1e-4) * step / warmup
        progress = (step - warmup) / max(1, total_iters - warmup)
        return 0.5 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    temperature = cfg["temperature"]
    log_interval = cfg["log_interval"]
    loss_history = []

    def evaluate(epoch: int) -> float:
        model.eval()
        if fault == "missing-eval-mode":
            model.train()
        with torch.no_grad():
            bank = torch.cat([model.extract_feat(train_x[k : k + 100]) for k in range(0, len(train_x), 100)])
            bank = F.normalize(bank, dim=1)
            correct, times, data_times = 0, [], []
            t_end = time.perf_counter()
            for k in range(0, len(val_x), 50):
                x, y = val_x[k : k + 50], val_y[k : k + 50]
                data_times.append(time.perf_counter() - t_end)
                feat = F.normalize(model.extract_feat(x), dim=1)
                pred = knn_predict(feat, bank, train_y, k=cfg["knn_k"])
                correct += int((pred == y).sum())
                t_now = time.perf_counter()
                times.append(t_now - t_end)
                t_end = t_now
        acc = 100.0 * correct / len(val_x)
        n_val = len(times)
        logger.info(
            f"Epoch(val) [{epoch}][{n_val}/{n_val}]    knn_top1: {acc:.4f}  "
            f"data_time: {sum(data_times) / n_val:.4f}  time: {sum(times) / n_val:.4f}"
        )
        return acc

    logger.info("Checkpoints will be saved to ./work_dirs/simclr_shapes.")
    best, best_epoch, step = -1.0, 0, 0
    t_start = time.perf_counter()
    max_epochs = cfg["max_epochs"]
    for epoch in range(1, max_epochs + 1):
        if fault != "missing-train-mode":
            model.train()
        win_time, win_data, win_loss, win_top1 = [], [], [], []
        t_end = time.perf_counter()
        for it, (v1, v2, _) in enumerate(loader, start=1):
            data_time = time.perf_counter() - t_end
            cur_lr = opt.param_groups[0]["lr"]
            if fault != "missing-zero-grad":
                opt.zero_grad()
            if fault == "no-grad-training":
                with torch.no_grad():
                    z1, z2 = model(v1), model(v2)
                    loss, top1 = nt_xent(z1, z2, temperature, fault)
            else:
                z1, z2 = model(v1), model(v2)
                if fault == "detached-graph":
                    z2 = z2.detach()
                loss, top1 = nt_xent(z1, z2, temperature, fault)
            if fault != "missing-backward":
                loss.backward()
            if fault != "missing-optimizer-step":
                opt.step()
            if fault != "scheduler-step-misaligned":
                sched.step()
            step += 1
            loss_history.append(loss if fault == "loss-tensor-leak" else loss.item())
            t_now = time.perf_counter()
            win_time.append(t_now - t_end)
            win_data.append(data_time)
            win_loss.append(loss.item())
            win_top1.append(top1.item())
            t_end = t_now
            if it % log_interval == 0 or it == iters:
                avg_iter = (t_now - t_start) / step
                eta = avg_iter * (total_iters - step)
                n = len(win_time)
                logger.info(
                    f"Epoch(train){f'[{epoch}]':>{len(str(max_epochs)) + 3}}[{it:>{len(str(iters))}}/{iters}]  "
                    f"lr: {cur_lr:.4e}  eta: {fmt_eta(eta)}  time: {sum(win_time) / n:.4f}  "
                    f"data_time: {sum(win_data) / n:.4f}  memory: {rss_mb()}  "
                    f"loss: {sum(win_loss) / n:.4f}  top1_contrast: {sum(win_top1) / n:.4f}"
                )
                win_time, win_data, win_loss, win_top1 = [], [], [], []
        if fault == "scheduler-step-misaligned":
            sched.step()
        logger.info(f"Saving checkpoint at {epoch} epochs")
        acc = evaluate(epoch)
        if acc > best:
            best, best_epoch = acc, epoch
            logger.info(f"The best checkpoint with {acc:.4f} knn_top1 at {epoch} epoch is saved to best_knn_top1.pth.")
    logger.info(f"Best knn_top1 {best:.2f} at epoch {best_epoch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
