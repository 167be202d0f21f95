r"""Program 29 (written for issue 9's fresh program 29 without reading triage's rules): 2-D organ segmentation, MONAI-style log.

A 2-D medical-image segmentation model trained the way a MONAI user trains one
(`SupervisedTrainer` and `SupervisedEvaluator` engines with `StatsHandler`,
`LrScheduleHandler`, `ValidationHandler` and `CheckpointSaver`), written from scratch with
torch only: neither MONAI nor PyTorch-Ignite is imported, their engines, handlers and console
are imitated by small classes of this script's own.

Data: synthetic 32x32 single-channel "CT slices". Each synthetic patient has one to three
blob-shaped organs of 3 foreground classes (4 classes with the background) placed around the
body centre: ellipses with random axes and angle whose boundary is bent by random 2nd-4th
angular harmonics ("elastic" jitter), the cross-section growing and shrinking along the
patient's slices (an ellipsoid cut slice by slice), drifting a little from slice to slice, the
first organ present on every slice, the others on a contiguous run of slices. Intensities:
a background around 0.42 with a per-patient linear gradient and a smooth low-frequency field,
organ 1 at about 0.68 (smooth), organ 2 at about 0.88 with a striped texture, organ 3 at about
0.22 with speckle; per-patient offsets, partial-volume edges and Gaussian noise on everything,
so an organ's intensity alone overlaps the background's range. 40 training patients of 30
slices (1,200 slices, stored grouped by patient: sorted by patient id, so consecutive slices
look alike) and 8 other patients of 25 slices for validation (200). Augmentation: random
flips along both axes (`RandFlipd`, prob 0.5 each), training only.

Model: a small 2-D U-Net, MONAI's `UNet`-like (two down levels by strided convolutions, two up
levels by transposed convolutions with skip concatenation, each convolution followed by batch
norm and PReLU, dropout 0.1 in the bottleneck), widths 8/16/32, 4 output channels of logits.
Its encoder (the down path and the bottleneck) is initialised from "pretrained" weights: a
short self-supervised denoising pass over the training slices at start-up, whose encoder state
is loaded into the U-Net before training. Loss: `DiceCELoss(to_onehot_y=True, softmax=True)`
written out: a soft Dice loss per image and class (softmax over the class channel, one-hot
targets, smooth 1e-5 in numerator and denominator, background included) averaged over the
batch and the 4 classes, plus the pixel-averaged cross-entropy (MONAI's DiceCELoss adds the two
with weights 1.0).

Optimiser: Adam lr 1e-3, weight decay 1e-5, batch size 16 (75 iterations per epoch), 12
epochs; `CosineAnnealingLR(T_max=12)` stepped once per epoch by the `LrScheduleHandler`
(`epoch_level=True`), which logs the new rate. After every epoch a `ValidationHandler` runs
the evaluator (batch size 16): argmax of the logits, one-hot, `DiceMetric` over the 3
foreground classes (a class absent from an image's ground truth is left out of that image's
mean, as `ignore_empty=True` does), the key metric `val_mean_dice`; the evaluator's
`CheckpointSaver` keeps the best model (in memory here: the path is only printed), and the
trainer's saves the final one.

`detached-graph` and `no-grad-training` are left to crash as torch makes them crash: the loss
then has no graph, `loss.backward()` raises `RuntimeError: element 0 of tensors does not
require grad and does not have a grad_fn`, and the traceback ends the run with a non-zero
exit (nothing here catches it).

The log is Python's `logging` with MONAI's usual format (`%(asctime)s - %(levelname)s -
%(message)s`), after a `monai.config.print_config()`-style block printed to stdout; the order
of the lines is Ignite's: the evaluator's lines and the learning rate come from the trainer's
EPOCH_COMPLETED handlers, so they precede the trainer's `Epoch[k] Complete.` line; the
iteration and metric lines end in a space, as MONAI's `key_var_format` writes them (not shown
below). E.g.

    MONAI version: 1.3.0
    Numpy version: 1.26.4
    Pytorch version: 2.13.0+cpu
    ...
    2026-11-30 10:00:00,101 - INFO - Restored encoder variables from pretrained/ssl_encoder.pt
    2026-11-30 10:00:00,102 - INFO - Engine run resuming from iteration 0, epoch 0 until 12 epochs
    2026-11-30 10:00:00,402 - INFO - Epoch: 1/12, Iter: 10/75 -- train_loss: 1.6384
    ...
    2026-11-30 10:00:02,250 - INFO - Epoch: 1/12, Iter: 75/75 -- train_loss: 0.9176
    2026-11-30 10:00:02,251 - INFO - Current learning rate: 0.0009829629131445341
    2026-11-30 10:00:02,251 - INFO - Engine run resuming from iteration 0, epoch 0 until 1 epochs
    2026-11-30 10:00:02,400 - INFO - Epoch[1] Metrics -- val_mean_dice: 0.4123
    2026-11-30 10:00:02,400 - INFO - Key metric: val_mean_dice best value: 0.41234567761421204 at epoch: 1
    2026-11-30 10:00:02,401 - INFO - Epoch[1] Complete. Time taken: 00:00:00.149
    2026-11-30 10:00:02,401 - INFO - Engine run complete. Time taken: 00:00:00.150
    2026-11-30 10:00:02,402 - INFO - Epoch[1] Complete. Time taken: 00:00:02.300
    ...
    2026-11-30 10:00:30,000 - INFO - Train completed, saved final checkpoint: runs/model_final_iteration=900.pt
    2026-11-30 10:00:30,001 - INFO - Engine run complete. Time taken: 00:00:29.899
    best val_mean_dice: 0.8123 at epoch 11
"""

import argparse
import copy
import logging
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FAULTS = (
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
    "double-softmax",
)

SIZE = 32
N_CLASSES = 4
MAX_EPOCHS = 12
BATCH = 16

logger = logging.getLogger("seg_monai")


# --------------------------------------------------------------------------- data
def _u(gen, shape, lo, hi):
    return lo + (hi - lo) * torch.rand(shape, generator=gen)


def smooth_field(n, gen, cells=4):
    """Low-frequency random field in about [-1, 1], (n, 32, 32)."""
    coarse = torch.randn(n, 1, cells, cells, generator=gen)
    return F.interpolate(coarse, size=(SIZE, SIZE), mode="bicubic", align_corners=True)[:, 0].clamp(-2, 2) / 2


def make_patients(n_patients, n_slices, gen):
    """Slices of n_patients synthetic patients, patient after patient: images (N,1,32,32), labels (N,32,32)."""
    P, S, K = n_patients, n_slices, 3
    N = P * S
    # ---- per patient: which organs, where, what shape
    n_org = torch.randint(1, K + 1, (P,), generator=gen)
    classes = torch.argsort(torch.rand(P, K, generator=gen), dim=1) + 1  # distinct classes 1..3
    present_p = torch.arange(K)[None, :] < n_org[:, None]
    rot = _u(gen, (P, 1), 0, 2 * math.pi)
    anchor = rot + 2 * math.pi * torch.arange(K)[None, :] / K
    dist = _u(gen, (P, K), 0.32, 0.50)
    cx = dist * torch.cos(anchor) + _u(gen, (P, K), -0.08, 0.08)
    cy = dist * torch.sin(anchor) + _u(gen, (P, K), -0.08, 0.08)
    ax = _u(gen, (P, K), 0.26, 0.44)
    ay = _u(gen, (P, K), 0.20, 0.36)
    ang = _u(gen, (P, K), 0, math.pi)
    amps = _u(gen, (P, K, 3), 0.0, 0.12) * torch.tensor([1.0, 0.8, 0.5])
    phs = _u(gen, (P, K, 3), 0, 2 * math.pi)
    drift = _u(gen, (P, K, 2), -0.12, 0.12)
    # slice extent of each organ: the first on every slice, the others on a run of >= 60% of them
    length = torch.where(
        torch.arange(K)[None, :] == 0, torch.full((P, K), S), torch.randint(int(0.6 * S), S + 1, (P, K), generator=gen)
    )
    start = (torch.rand(P, K, generator=gen) * (S - length + 1)).floor()
    # per-patient intensities
    bg_level = 0.42 + _u(gen, (P,), -0.05, 0.05)
    grad = _u(gen, (P, 2), -0.16, 0.16)
    cls_mean = torch.tensor([0.0, 0.68, 0.88, 0.22])[None, :] + _u(gen, (P, 4), -0.05, 0.05)
    stripe_dir = _u(gen, (P,), 0, math.pi)

    # ---- expand to slices
    pid = torch.arange(P).repeat_interleave(S)
    s = torch.arange(S).repeat(P).float()[:, None]  # (N,1)
    st, ln = start[pid], length[pid].float()
    t = (s - st - (ln - 1) / 2) / ((ln - 1) / 2 + 1e-6) * 0.95  # -0.95..0.95 inside the run
    inside_run = (s >= st) & (s < st + ln)
    present = present_p[pid] & inside_run  # (N,K)
    scale = torch.sqrt((1 - 0.7 * t**2).clamp(min=0.05))
    ocx = cx[pid] + drift[pid, :, 0] * t + 0.015 * torch.randn(N, K, generator=gen)
    ocy = cy[pid] + drift[pid, :, 1] * t + 0.015 * torch.randn(N, K, generator=gen)
    ophs = phs[pid] + 0.8 * t[..., None] + 0.3 * torch.randn(N, K, 3, generator=gen)
    oamps = (amps[pid] + 0.03 * torch.randn(N, K, 3, generator=gen)).clamp(min=0)

    lin = torch.linspace(-1, 1, SIZE)
    Y, X = torch.meshgrid(lin, lin, indexing="ij")
    X, Y = X[None, None], Y[None, None]  # (1,1,H,W)
    c, sn = torch.cos(ang[pid])[..., None, None], torch.sin(ang[pid])[..., None, None]
    dx, dy = X - ocx[..., None, None], Y - ocy[..., None, None]
    u = (dx * c + dy * sn) / ax[pid][..., None, None]
    v = (-dx * sn + dy * c) / ay[pid][..., None, None]
    r = torch.sqrt(u**2 + v**2)
    theta = torch.atan2(v, u)
    harm = torch.arange(2, 5).float()
    wobble = (
        oamps[..., None, None] * torch.cos(harm[None, None, :, None, None] * theta[:, :, None] + ophs[..., None, None])
    ).sum(2)
    boundary = scale[..., None, None] * (1 + wobble)  # (N,K,H,W)
    present4 = present[..., None, None]
    hard = (r < boundary) & present4
    soft = torch.sigmoid((boundary - r) / 0.07) * present4

    # ---- intensities
    img = bg_level[pid][:, None, None] + grad[pid, 0, None, None] * X[0, 0] + grad[pid, 1, None, None] * Y[0, 0]
    img = img + 0.10 * smooth_field(N, gen)
    label = torch.zeros(N, SIZE, SIZE, dtype=torch.long)
    sd = stripe_dir[pid][:, None, None]
    stripes = 0.07 * torch.sin(14 * (X[0, 0] * torch.cos(sd) + Y[0, 0] * torch.sin(sd)))
    speckle = 0.09 * torch.randn(N, SIZE, SIZE, generator=gen).clamp(-2, 2)
    for k in range(K):
        cls = classes[pid, k]  # (N,)
        level = cls_mean[pid, cls][:, None, None]
        texture = torch.where((cls == 2)[:, None, None], stripes, torch.zeros(()))
        texture = texture + torch.where((cls == 3)[:, None, None], speckle, torch.zeros(()))
        organ = level + texture + 0.03 * smooth_field(N, gen, cells=6)
        img = img * (1 - soft[:, k]) + organ * soft[:, k]
        label = torch.where(hard[:, k], cls[:, None, None], label)
    img = img + 0.07 * torch.randn(N, SIZE, SIZE, generator=gen)
    return img[:, None].float(), label, pid


def load_data(seed):
    gen = torch.Generator().manual_seed(9000 + seed)
    x_tr, y_tr, pid_tr = make_patients(40, 30, gen)
    x_va, y_va, _ = make_patients(8, 25, gen)
    # the training list is read from a CSV sorted by patient id: slices of a patient stay together
    order = torch.sort(pid_tr, stable=True).indices
    return (x_tr[order], y_tr[order]), (x_va, y_va)


def rand_flip(x, y, gen):
    """RandFlipd(spatial_axis=0, prob=0.5) then RandFlipd(spatial_axis=1, prob=0.5), per sample."""
    for axis in (-2, -1):
        f = torch.rand(len(x), generator=gen) < 0.5
        x = torch.where(f[:, None, None, None], x.flip(axis), x)
        y = torch.where(f[:, None, None], y.flip(axis), y)
    return x, y


class DataLoader:
    def __init__(self, data, batch_size, shuffle, augment, gen):
        self.x, self.y = data
        self.batch_size, self.shuffle, self.augment, self.gen = batch_size, shuffle, augment, gen

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __iter__(self):
        n = len(self.x)
        idx = torch.randperm(n, generator=self.gen) if self.shuffle else torch.arange(n)
        for start in range(0, n, self.batch_size):
            b = idx[start : start + self.batch_size]
            x, y = self.x[b], self.y[b]
            if self.augment:
                x, y = rand_flip(x, y, self.gen)
            yield {"image": x, "label": y}


# -------------------------------------------------------------------------- model
def conv(cin, cout, stride=1, dropout=0.0):
    """MONAI Convolution with adn_ordering 'NDA': conv, norm, dropout, PReLU."""
    layers = [nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.BatchNorm2d(cout)]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.PReLU())
    return nn.Sequential(*layers)


class UNet(nn.Module):
    def __init__(self, in_channels=1, out_channels=N_CLASSES, channels=(8, 16, 32), dropout=0.1):
        super().__init__()
        c1, c2, c3 = channels
        self.encoder = nn.ModuleDict(
            {
                "level1": nn.Sequential(conv(in_channels, c1), conv(c1, c1)),
                "level2": nn.Sequential(conv(c1, c2, stride=2), conv(c2, c2)),
                "bottom": nn.Sequential(conv(c2, c3, stride=2), conv(c3, c3, dropout=dropout)),
            }
        )
        self.up2 = nn.ConvTranspose2d(c3, c2, 2, stride=2)
        self.dec2 = nn.Sequential(conv(2 * c2, c2), conv(c2, c2))
        self.up1 = nn.ConvTranspose2d(c2, c1, 2, stride=2)
        self.dec1 = nn.Sequential(conv(2 * c1, c1), conv(c1, c1))
        self.head = nn.Conv2d(c1, out_channels, 1)

    def encode(self, x):
        s1 = self.encoder["level1"](x)
        s2 = self.encoder["level2"](s1)
        return s1, s2, self.encoder["bottom"](s2)

    def forward(self, x):
        s1, s2, b = self.encode(x)
        d2 = self.dec2(torch.cat([self.up2(b), s2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], 1))
        return self.head(d1)


class UNetProbs(UNet):
    """The network as exported for the deployment bundle: it ends in a softmax."""

    def forward(self, x):
        return torch.softmax(super().forward(x), dim=1)


def pretrained_encoder(train_data, seed, iterations=60):
    """The self-supervised checkpoint's encoder: a denoising autoencoder over the training slices."""
    torch.manual_seed(500 + seed)
    net = UNet()
    decoder = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.PReLU(), nn.ConvTranspose2d(16, 1, 2, stride=2))
    opt = torch.optim.Adam([*net.encoder.parameters(), *decoder.parameters()], lr=2e-3)
    x_all = train_data[0]
    gen = torch.Generator().manual_seed(600 + seed)
    for _ in range(iterations):
        x = x_all[torch.randint(0, len(x_all), (BATCH,), generator=gen)]
        noisy = x + 0.2 * torch.randn(x.shape, generator=gen)
        loss = F.mse_loss(decoder(net.encode(noisy)[2]), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return copy.deepcopy(net.encoder.state_dict())


# --------------------------------------------------------------------------- loss
class DiceCELoss(nn.Module):
    """DiceCELoss(to_onehot_y=True, softmax=True, smooth_nr=1e-5, smooth_dr=1e-5)."""

    def __init__(self, reduction="mean", smooth=1e-5):
        super().__init__()
        self.reduction = reduction
        self.smooth = smooth
        self.ce = nn.CrossEntropyLoss(reduction=reduction)

    def forward(self, logits, target):
        probs = torch.softmax(logits, dim=1)
        onehot = F.one_hot(target, N_CLASSES).permute(0, 3, 1, 2).float()
        inter = (probs * onehot).sum((2, 3))
        denom = probs.sum((2, 3)) + onehot.sum((2, 3))
        dice = 1.0 - (2.0 * inter + self.smooth) / (denom + self.smooth)  # (B, C)
        dice = dice.sum() if self.reduction == "sum" else dice.mean()
        return dice + self.ce(logits, target)


def mean_dice(pred_logits, target):
    """DiceMetric(include_background=False, reduction='mean') on argmax one-hot predictions.

    Returns (sum of per-image means, number of images with any foreground class)."""
    pred = F.one_hot(pred_logits.argmax(1), N_CLASSES).permute(0, 3, 1, 2)[:, 1:].float()
    gt = F.one_hot(target, N_CLASSES).permute(0, 3, 1, 2)[:, 1:].float()
    inter = (pred * gt).sum((2, 3))
    g, p = gt.sum((2, 3)), pred.sum((2, 3))
    valid = g > 0  # ignore_empty: a class absent from the ground truth is nan, left out
    dice = torch.where(valid, 2 * inter / (g + p).clamp(min=1), torch.zeros(()))
    n_valid = valid.sum(1)
    per_image = dice.sum(1) / n_valid.clamp(min=1)
    has = n_valid > 0
    return per_image[has].sum().item(), int(has.sum())


# ------------------------------------------------------------------ the engines
def hms(seconds):
    hours, rem = divmod(seconds, 3600)
    mins, secs = divmod(rem, 60)
    return f"{int(hours):02}:{int(mins):02}:{secs:06.3f}"


class SupervisedEvaluator:
    def __init__(self, network, loader, key_metric="val_mean_dice", fault="healthy"):
        self.network, self.loader = network, loader
        self.key_metric_name = key_metric
        self.best_metric, self.best_metric_epoch = -1.0, -1
        self.best_state = None
        self.fault = fault

    def run(self, global_epoch):
        logger.info(f"Engine run resuming from iteration 0, epoch {global_epoch - 1} until {global_epoch} epochs")
        t0 = time.time()
        if self.fault != "missing-eval-mode":
            self.network.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for batch in self.loader:
                pred = self.network(batch["image"])
                s, n = mean_dice(pred, batch["label"])
                total, count = total + s, count + n
        metric = total / count if count else float("nan")
        # key metric comparison, then the handlers (StatsHandler, CheckpointSaver)
        if metric > self.best_metric:
            self.best_metric, self.best_metric_epoch = metric, global_epoch
            self.best_state = copy.deepcopy(self.network.state_dict())  # CheckpointSaver(save_key_metric=True)
        logger.info(f"Epoch[{global_epoch}] Metrics -- {self.key_metric_name}: {metric:.4f} ")
        logger.info(
            f"Key metric: {self.key_metric_name} best value: {self.best_metric} at epoch: {self.best_metric_epoch}"
        )
        took = time.time() - t0
        logger.info(f"Epoch[{global_epoch}] Complete. Time taken: {hms(took)}")
        logger.info(f"Engine run complete. Time taken: {hms(time.time() - t0)}")
        return metric


class SupervisedTrainer:
    def __init__(self, network, optimizer, loss_function, loader, lr_scheduler, evaluator, max_epochs, fault):
        self.network, self.optimizer, self.loss_function = network, optimizer, loss_function
        self.loader, self.lr_scheduler, self.evaluator = loader, lr_scheduler, evaluator
        self.max_epochs, self.fault = max_epochs, fault
        self.iteration = 0
        self.epoch_losses = []

    def _iteration(self, batch):
        inputs, targets = batch["image"], batch["label"]
        if self.fault != "missing-zero-grad":
            self.optimizer.zero_grad(set_to_none=True)
        if self.fault == "no-grad-training":
            with torch.no_grad():
                pred = self.network(inputs)
                loss = self.loss_function(pred, targets).mean()
        else:
            pred = self.network(inputs)
            if self.fault == "detached-graph":
                pred = pred.detach()
            loss = self.loss_function(pred, targets).mean()
        if self.fault != "missing-backward":
            loss.backward()
        if self.fault != "missing-optimizer-step":
            self.optimizer.step()
        return {"pred": pred, "label": targets, "loss": loss}

    def run(self):
        logger.info(f"Engine run resuming from iteration 0, epoch 0 until {self.max_epochs} epochs")
        t_run = time.time()
        n_iter = len(self.loader)
        if self.fault == "missing-train-mode":
            self.network.train()
        for epoch in range(1, self.max_epochs + 1):
            t_epoch = time.time()
            self.epoch_losses = []
            for i, batch in enumerate(self.loader, start=1):
                if self.fault != "missing-train-mode":
                    self.network.train()
                output = self._iteration(batch)
                self.iteration += 1
                if self.fault == "loss-tensor-leak":
                    self.epoch_losses.append(output["loss"])
                else:
                    self.epoch_losses.append(output["loss"].item())
                if self.fault == "scheduler-step-misaligned":
                    # LrScheduleHandler(epoch_level=False): stepped on ITERATION_COMPLETED
                    self.lr_scheduler.step()
                # StatsHandler(tag_name="train_loss", output_transform=from_engine(["loss"], first=True))
                if i % 10 == 0 or i == n_iter:
                    logger.info(
                        f"Epoch: {epoch}/{self.max_epochs}, Iter: {i}/{n_iter} -- train_loss: {output['loss'].item():.4f} "
                    )
            # EPOCH_COMPLETED handlers: LrScheduleHandler(print_lr=True), ValidationHandler(interval=1)
            self.train_loss_avg = float(sum(self.epoch_losses) / len(self.epoch_losses))
            if self.fault != "scheduler-step-misaligned":
                self.lr_scheduler.step()
            logger.info(f"Current learning rate: {self.lr_scheduler.get_last_lr()[0]}")
            self.evaluator.run(epoch)
            logger.info(f"Epoch[{epoch}] Complete. Time taken: {hms(time.time() - t_epoch)}")
        # COMPLETED: CheckpointSaver(save_final=True)
        self.final_state = copy.deepcopy(self.network.state_dict())
        logger.info(f"Train completed, saved final checkpoint: runs/model_final_iteration={self.iteration}.pt")
        logger.info(f"Engine run complete. Time taken: {hms(time.time() - t_run)}")


def print_config():
    print(
        f"""MONAI version: 1.3.0
Numpy version: 1.26.4
Pytorch version: {torch.__version__}
MONAI flags: HAS_EXT = False, USE_COMPILED = False, USE_META_DICT = False
MONAI rev id: 865972f7a791bf7b42efbcd87c8402bd865b329e
MONAI __file__: /opt/venv/lib/python3.{sys.version_info.minor}/site-packages/monai/__init__.py

Optional dependencies:
Pytorch Ignite version: 0.4.11
ITK version: NOT INSTALLED or UNKNOWN VERSION.
Nibabel version: 5.2.0
scikit-image version: NOT INSTALLED or UNKNOWN VERSION.
scipy version: 1.11.4
Pillow version: 10.2.0
Tensorboard version: NOT INSTALLED or UNKNOWN VERSION.
gdown version: NOT INSTALLED or UNKNOWN VERSION.
TorchVision version: NOT INSTALLED or UNKNOWN VERSION.
tqdm version: 4.66.1
lmdb version: NOT INSTALLED or UNKNOWN VERSION.
psutil version: 5.9.7
pandas version: NOT INSTALLED or UNKNOWN VERSION.
einops version: NOT INSTALLED or UNKNOWN VERSION.
transformers version: NOT INSTALLED or UNKNOWN VERSION.
mlflow version: NOT INSTALLED or UNKNOWN VERSION.
pynrrd version: NOT INSTALLED or UNKNOWN VERSION.
clearml version: NOT INSTALLED or UNKNOWN VERSION.

For details about installing the optional dependencies, please visit:
    https://docs.monai.io/en/latest/installation.html#installing-the-recommended-dependencies
""",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description="2-D organ segmentation with a MONAI-style U-Net")
    parser.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fault = args.fault

    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s - %(levelname)s - %(message)s")
    print_config()
    train_data, val_data = load_data(args.seed)
    encoder_state = pretrained_encoder(train_data, args.seed)

    torch.manual_seed(args.seed)  # set_determinism(seed)
    net = (UNetProbs if fault == "double-softmax" else UNet)()
    net.encoder.load_state_dict(encoder_state)
    logger.info("Restored encoder variables from pretrained/ssl_encoder.pt")
    if fault == "frozen-parameters":
        net.encoder.requires_grad_(False)  # left from the linear-probe experiment

    gen = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(train_data, BATCH, shuffle=fault != "no-shuffle", augment=True, gen=gen)
    val_loader = DataLoader(val_data, BATCH, shuffle=False, augment=False, gen=None)
    lr = 1e-3 * (100 if fault == "lr-too-high" else 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=1e-5)
    lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=MAX_EPOCHS)
    loss_function = DiceCELoss(reduction="sum" if fault == "wrong-loss-reduction" else "mean")

    evaluator = SupervisedEvaluator(net, val_loader, fault=fault)
    trainer = SupervisedTrainer(net, optimizer, loss_function, train_loader, lr_scheduler, evaluator, MAX_EPOCHS, fault)
    trainer.run()
    print(f"best val_mean_dice: {evaluator.best_metric:.4f} at epoch {evaluator.best_metric_epoch}")


if __name__ == "__main__":
    main()
