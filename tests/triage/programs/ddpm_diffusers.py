"""Program 20 (written for issue 9's fresh program 20 without reading triage's rules): a diffusion model.

Denoising diffusion, where the programs before it classify, regress, reconstruct or contrast: a
tiny DDPM on synthetic 12x12 single-channel "shapes" (horizontal bars, vertical bars, soft blobs
and diagonal strokes, in [-1, 1]; the training set is stored family by family). The epsilon
predictor is a small U-Net as diffusers' `UNet2DModel` builds one: a sinusoidal timestep
embedding through a two-layer MLP, ResNet blocks with GroupNorm, SiLU, a timestep projection and
dropout 0.1, one strided-conv downsampling to 6x6, a middle block, nearest upsampling and skip
concatenations. The noise schedule is linear in beta over 200 steps, rescaled to a zero terminal
SNR (`rescale_betas_zero_snr`); the loss is the MSE between the predicted and the true noise,
per sample, weighted by Min-SNR (gamma 5, `--snr_gamma`) and averaged. AdamW (betas 0.95, 0.999)
with diffusers' `get_scheduler("cosine")` (linear warm-up, then cosine) stepped per optimizer
step, 2 micro-batches per optimizer step, clipping by norm 1.0, an EMA copy of the weights (as
diffusers' `EMAModel`, with its warm-up of the decay) updated after each optimizer step. Every 64
optimizer steps a validation on a fixed held-out set with fixed timesteps and noise, under
`torch.no_grad()` with the model in eval mode, once with the raw weights and once with the EMA
weights swapped in (`ema.store` / `copy_to` / `restore`). It logs as diffusers' example training
scripts (`train_unconditional.py`, `train_text_to_image.py`) do under accelerate (neither is
used): `logging` lines to stderr, the accelerate state, the `***** Running training *****` block,
and a tqdm progress bar rendered as tqdm does when stderr is not a terminal (every refresh a
`\\r`-prefixed update on one long line, so a log line written meanwhile lands after the last
refresh on that line):

    11/27/2026 10:00:01 - INFO - __main__ - Distributed environment: NO
    Num processes: 1
    ...
    11/27/2026 10:00:03 - INFO - __main__ - ***** Running training *****
    11/27/2026 10:00:03 - INFO - __main__ -   Num examples = 1024
    ...
    11/27/2026 10:00:03 - INFO - __main__ -   Total optimization steps = 256
    Steps:   6%|▋         | 16/256 [00:01<00:20, 11.86it/s, lr=0.00075, step_loss=0.419]
    11/27/2026 10:00:09 - INFO - __main__ - Step 64: train_loss=0.3075 val_loss=0.1533 ema_val_loss=0.1727 ema_decay=0.9558
    Steps: 100%|██████████| 256/256 [00:23<00:00, 11.02it/s, lr=0, step_loss=0.0957]
    11/27/2026 10:00:27 - INFO - __main__ - Saved state to /tmp/ddpm-shapes-.../checkpoint-256

(the `Step` lines every 64 optimizer steps: the mean training loss since the last one, the raw and
the EMA validation MSE, the EMA decay).

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import tempfile
import time
from numbers import Number

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(
    format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
    datefmt="%m/%d/%Y %H:%M:%S",
    level=logging.INFO,
)
logger = logging.getLogger(__name__)

RESOLUTION = 12


# ----------------------------------------------------------------------------- data


def _render(family: int, g: torch.Generator) -> torch.Tensor:
    """One 12x12 image in [0, 1] of the given family."""
    ys = torch.arange(RESOLUTION, dtype=torch.float32)[:, None].expand(RESOLUTION, RESOLUTION)
    xs = torch.arange(RESOLUTION, dtype=torch.float32)[None, :].expand(RESOLUTION, RESOLUTION)

    def u(lo: float, hi: float) -> float:
        return lo + (hi - lo) * torch.rand((), generator=g).item()

    if family == 0:  # one or two horizontal bars
        img = torch.zeros(RESOLUTION, RESOLUTION)
        for _ in range(int(torch.randint(1, 3, (), generator=g))):
            c, w = u(1.5, 10.5), u(0.8, 1.8)
            img = torch.maximum(img, torch.sigmoid(4.0 * (w - (ys - c).abs())))
    elif family == 1:  # one or two vertical bars
        img = torch.zeros(RESOLUTION, RESOLUTION)
        for _ in range(int(torch.randint(1, 3, (), generator=g))):
            c, w = u(1.5, 10.5), u(0.8, 1.8)
            img = torch.maximum(img, torch.sigmoid(4.0 * (w - (xs - c).abs())))
    elif family == 2:  # a soft round blob
        cy, cx, r = u(3.0, 9.0), u(3.0, 9.0), u(1.5, 3.5)
        img = torch.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * r * r))
    else:  # a diagonal stroke, either direction
        off, w = u(-4.0, 4.0), u(0.7, 1.5)
        d = (ys - xs - off) if torch.rand((), generator=g).item() < 0.5 else (ys + xs - 11.0 - off)
        img = torch.sigmoid(4.0 * (w - d.abs() / math.sqrt(2.0)))
    return img * u(0.7, 1.0)


class ShapesDataset(Dataset):
    """Synthetic shapes, stored family by family as an image folder per class would list them."""

    def __init__(self, per_family: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        images = [_render(k, g) for k in range(4) for _ in range(per_family)]
        # Normalize([0.5], [0.5]) as the diffusers examples' transforms do
        self.images = (torch.stack(images)[:, None] - 0.5) / 0.5

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int) -> dict:
        return {"input": self.images[i]}


# ----------------------------------------------------------------------------- model


def get_timestep_embedding(
    timesteps: torch.Tensor,
    embedding_dim: int,
    flip_sin_to_cos: bool = True,
    downscale_freq_shift: float = 0.0,
    max_period: int = 10000,
) -> torch.Tensor:
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(0, half_dim, dtype=torch.float32)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    return emb


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, temb_channels: int, groups: int = 8, dropout: float = 0.0):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels, eps=1e-6)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels, eps=1e-6)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, input_tensor: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(self.nonlinearity(self.norm1(input_tensor)))
        h = h + self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
        h = self.conv2(self.dropout(self.nonlinearity(self.norm2(h))))
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        return input_tensor + h


class UNet2DModel(nn.Module):
    def __init__(
        self,
        in_channels: int = 1,
        out_channels: int = 1,
        block_out_channels=(32, 48),
        dropout: float = 0.1,
        norm_num_groups: int = 8,
    ):
        super().__init__()
        c0, c1 = block_out_channels
        temb = c0 * 4
        self.time_proj_dim = c0
        self.time_embedding = nn.Sequential(nn.Linear(c0, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(in_channels, c0, 3, padding=1)
        self.down0 = ResnetBlock2D(c0, c0, temb, norm_num_groups, dropout)
        self.downsample = nn.Conv2d(c0, c0, 3, stride=2, padding=1)
        self.down1 = ResnetBlock2D(c0, c1, temb, norm_num_groups, dropout)
        self.mid = ResnetBlock2D(c1, c1, temb, norm_num_groups, dropout)
        self.up1 = ResnetBlock2D(c1 + c1, c1, temb, norm_num_groups, dropout)
        self.upsample_conv = nn.Conv2d(c1, c1, 3, padding=1)
        self.up0 = ResnetBlock2D(c1 + c0, c0, temb, norm_num_groups, dropout)
        self.conv_norm_out = nn.GroupNorm(norm_num_groups, c0, eps=1e-6)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(c0, out_channels, 3, padding=1)

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        emb = self.time_embedding(get_timestep_embedding(timestep, self.time_proj_dim))
        h0 = self.down0(self.conv_in(sample), emb)
        h1 = self.down1(self.downsample(h0), emb)
        h = self.mid(h1, emb)
        h = self.up1(torch.cat([h, h1], dim=1), emb)
        h = self.upsample_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        h = self.up0(torch.cat([h, h0], dim=1), emb)
        return self.conv_out(self.conv_act(self.conv_norm_out(h)))


# ----------------------------------------------------------------------------- scheduler, EMA


class DDPMScheduler:
    """The training half of diffusers' DDPMScheduler: a linear beta schedule and add_noise."""

    def __init__(
        self,
        num_train_timesteps: int = 200,
        beta_start: float = 5e-4,
        beta_end: float = 0.1,
        rescale_betas_zero_snr: bool = True,
    ):
        self.num_train_timesteps = num_train_timesteps
        betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        if rescale_betas_zero_snr:
            betas = self.rescale_zero_terminal_snr(betas)
        self.betas = betas
        self.alphas = 1.0 - betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)

    @staticmethod
    def rescale_zero_terminal_snr(betas: torch.Tensor) -> torch.Tensor:
        alphas_bar_sqrt = torch.cumprod(1.0 - betas, dim=0).sqrt()
        a0, aT = alphas_bar_sqrt[0].clone(), alphas_bar_sqrt[-1].clone()
        alphas_bar_sqrt = (alphas_bar_sqrt - aT) * a0 / (a0 - aT)
        alphas_bar = alphas_bar_sqrt**2
        alphas = torch.cat([alphas_bar[0:1], alphas_bar[1:] / alphas_bar[:-1]])
        return 1 - alphas

    def add_noise(self, original: torch.Tensor, noise: torch.Tensor, timesteps: torch.Tensor) -> torch.Tensor:
        sqrt_alpha_prod = self.alphas_cumprod[timesteps].sqrt().view(-1, 1, 1, 1)
        sqrt_one_minus_alpha_prod = (1 - self.alphas_cumprod[timesteps]).sqrt().view(-1, 1, 1, 1)
        return sqrt_alpha_prod * original + sqrt_one_minus_alpha_prod * noise


def compute_snr(noise_scheduler: DDPMScheduler, timesteps: torch.Tensor) -> torch.Tensor:
    alphas_cumprod = noise_scheduler.alphas_cumprod
    alpha = alphas_cumprod[timesteps].sqrt()
    sigma = (1.0 - alphas_cumprod[timesteps]).sqrt()
    return (alpha / sigma) ** 2


class EMAModel:
    def __init__(
        self,
        parameters,
        decay: float = 0.9999,
        min_decay: float = 0.0,
        use_ema_warmup: bool = True,
        inv_gamma: float = 1.0,
        power: float = 3 / 4,
    ):
        self.shadow_params = [p.clone().detach() for p in parameters]
        self.decay, self.min_decay = decay, min_decay
        self.use_ema_warmup, self.inv_gamma, self.power = use_ema_warmup, inv_gamma, power
        self.optimization_step = 0
        self.cur_decay_value = None
        self.temp_stored_params = None

    def get_decay(self, optimization_step: int) -> float:
        step = max(0, optimization_step - 1)
        if step <= 0:
            return 0.0
        cur = 1 - (1 + step / self.inv_gamma) ** (-self.power) if self.use_ema_warmup else (1 + step) / (10 + step)
        return max(min(cur, self.decay), self.min_decay)

    @torch.no_grad()
    def step(self, parameters) -> None:
        self.optimization_step += 1
        decay = self.get_decay(self.optimization_step)
        self.cur_decay_value = decay
        one_minus_decay = 1 - decay
        for s_param, param in zip(self.shadow_params, parameters, strict=False):
            if param.requires_grad:
                s_param.sub_(one_minus_decay * (s_param - param))
            else:
                s_param.copy_(param)

    def store(self, parameters) -> None:
        self.temp_stored_params = [p.detach().clone() for p in parameters]

    def copy_to(self, parameters) -> None:
        for s_param, param in zip(self.shadow_params, parameters, strict=False):
            param.data.copy_(s_param.data)

    def restore(self, parameters) -> None:
        for c_param, param in zip(self.temp_stored_params, parameters, strict=False):
            param.data.copy_(c_param.data)
        self.temp_stored_params = None


def get_cosine_schedule_with_warmup(
    optimizer, num_warmup_steps: int, num_training_steps: int, num_cycles: float = 0.5
) -> LambdaLR:
    def lr_lambda(current_step: int) -> float:
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return LambdaLR(optimizer, lr_lambda)


# ----------------------------------------------------------------------------- progress bar


class ProgressBar:
    """What tqdm writes to a file that is not a terminal: `\\r` + the bar at each refresh, no newline."""

    def __init__(self, total: int, desc: str, file=sys.stderr, mininterval: float = 0.1, smoothing: float = 0.3):
        self.total, self.desc, self.file = total, desc, file
        self.mininterval, self.smoothing = mininterval, smoothing
        self.n = self.last_print_n = 0
        self.start_t = self.last_print_t = time.time()
        self.miniters = 0
        self._ema_dn = [0.0, 0]
        self._ema_dt = [0.0, 0]
        self.postfix = ""
        self.last_len = 0
        self.display()

    def _ema(self, acc: list, x: float | None) -> float:
        if x is not None:
            acc[0] = self.smoothing * x + (1 - self.smoothing) * acc[0]
            acc[1] += 1
        return acc[0] / (1 - (1 - self.smoothing) ** acc[1]) if acc[1] else acc[0]

    @staticmethod
    def format_num(n) -> str:
        f = f"{n:.3g}".replace("+0", "+").replace("-0", "-")
        n = str(n)
        return f if len(f) < len(n) else n

    @staticmethod
    def format_interval(t: float) -> str:
        mins, s = divmod(int(t), 60)
        h, m = divmod(mins, 60)
        return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"

    def set_postfix(self, **kwargs) -> None:
        items = []
        for key in sorted(kwargs):
            v = kwargs[key]
            items.append(f"{key}={(self.format_num(v) if isinstance(v, Number) else str(v)).strip()}")
        self.postfix = ", ".join(items)

    def format_meter(self, rate: float | None) -> str:
        elapsed = time.time() - self.start_t
        if rate is None and elapsed:
            rate = self.n / elapsed
        frac = self.n / self.total
        nsyms = 8
        charset = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))
        bar_length, frac_bar_length = divmod(int(frac * 10 * nsyms), nsyms)
        bar = charset[-1] * bar_length
        if bar_length < 10:
            bar = bar + charset[frac_bar_length] + charset[0] * (10 - bar_length - 1)
        if rate:
            rate_fmt = f"{1 / rate:5.2f}s/it" if 1 / rate > 1 else f"{rate:5.2f}it/s"
            remaining = self.format_interval((self.total - self.n) / rate)
        else:
            rate_fmt, remaining = "?it/s", "?"
        postfix = ", " + self.postfix if self.postfix else ""
        return (
            f"{self.desc}: {frac * 100:3.0f}%|{bar}| {self.n}/{self.total} "
            f"[{self.format_interval(elapsed)}<{remaining}, {rate_fmt}{postfix}]"
        )

    def display(self, rate: float | None = None) -> None:
        s = self.format_meter(rate)
        self.file.write("\r" + s + " " * max(self.last_len - len(s), 0))
        self.file.flush()
        self.last_len = len(s)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.n - self.last_print_n >= self.miniters:
            cur_t = time.time()
            dt = cur_t - self.last_print_t
            if dt >= self.mininterval:
                dn = self.n - self.last_print_n
                self._ema(self._ema_dn, dn)
                self._ema(self._ema_dt, dt)
                dt_avg = self._ema(self._ema_dt, None)
                self.display(self._ema(self._ema_dn, None) / dt_avg if dt_avg else None)
                self.miniters = self.smoothing * dn * (self.mininterval / dt) + (1 - self.smoothing) * self.miniters
                self.last_print_n, self.last_print_t = self.n, cur_t

    def close(self) -> None:
        self.display(None)  # leave=True: the overall rate, not the smoothed one
        self.file.write("\n")
        self.file.flush()


# ----------------------------------------------------------------------------- training


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    cli = p.parse_args()
    torch.set_num_threads(1)

    args = argparse.Namespace(
        fault=cli.fault,
        seed=cli.seed,
        resolution=RESOLUTION,
        train_batch_size=16,
        eval_batch_size=64,
        num_epochs=8,
        gradient_accumulation_steps=2,
        learning_rate=1e-3,
        lr_scheduler="cosine",
        lr_warmup_steps=20,
        adam_beta1=0.95,
        adam_beta2=0.999,
        adam_weight_decay=1e-6,
        adam_epsilon=1e-08,
        max_grad_norm=1.0,
        use_ema=True,
        ema_inv_gamma=1.0,
        ema_power=3 / 4,
        ema_max_decay=0.9999,
        snr_gamma=5.0,
        ddpm_num_steps=200,
        validation_steps=64,
        mixed_precision="no",
    )
    torch.manual_seed(args.seed)

    logger.info(
        "Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\n"
        "Device: cpu\n\nMixed precision type: no\n"
    )

    model = UNet2DModel(in_channels=1, out_channels=1, block_out_channels=(16, 32), dropout=0.1)
    if args.fault == "frozen-parameters":
        model.requires_grad_(False)
        model.conv_out.requires_grad_(True)
    ema_model = EMAModel(
        model.parameters(),
        decay=args.ema_max_decay,
        use_ema_warmup=True,
        inv_gamma=args.ema_inv_gamma,
        power=args.ema_power,
    )
    noise_scheduler = DDPMScheduler(
        num_train_timesteps=args.ddpm_num_steps, beta_start=5e-4, beta_end=0.1, rescale_betas_zero_snr=True
    )

    learning_rate = args.learning_rate
    if args.fault == "lr-too-high":
        learning_rate = args.learning_rate * 100
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=learning_rate,
        betas=(args.adam_beta1, args.adam_beta2),
        weight_decay=args.adam_weight_decay,
        eps=args.adam_epsilon,
    )

    dataset = ShapesDataset(per_family=256, seed=1234)
    shuffle = True
    if args.fault == "no-shuffle":
        shuffle = False
    train_dataloader = DataLoader(dataset, batch_size=args.train_batch_size, shuffle=shuffle, num_workers=0)

    # a fixed held-out set, with fixed timesteps and noise
    val_images = ShapesDataset(per_family=64, seed=4321).images
    g_val = torch.Generator().manual_seed(999)
    val_noise = torch.randn(val_images.shape, generator=g_val)
    val_timesteps = torch.randint(0, args.ddpm_num_steps, (val_images.shape[0],), generator=g_val)

    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    max_train_steps = args.num_epochs * num_update_steps_per_epoch
    lr_scheduler = get_cosine_schedule_with_warmup(
        optimizer,
        num_warmup_steps=args.lr_warmup_steps * 1,
        num_training_steps=max_train_steps * 1,
    )

    def evaluate() -> float:
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, val_images.shape[0], args.eval_batch_size):
                clean = val_images[i : i + args.eval_batch_size]
                noise = val_noise[i : i + args.eval_batch_size]
                ts = val_timesteps[i : i + args.eval_batch_size]
                pred = model(noise_scheduler.add_noise(clean, noise, ts), ts)
                total += F.mse_loss(pred.float(), noise.float(), reduction="sum").item()
                count += noise.numel()
        return total / count

    total_batch_size = args.train_batch_size * 1 * args.gradient_accumulation_steps
    logger.info("***** Running training *****")
    logger.info(f"  Num examples = {len(dataset)}")
    logger.info(f"  Num Epochs = {args.num_epochs}")
    logger.info(f"  Instantaneous batch size per device = {args.train_batch_size}")
    logger.info(f"  Total train batch size (w. parallel, distributed & accumulation) = {total_batch_size}")
    logger.info(f"  Gradient Accumulation steps = {args.gradient_accumulation_steps}")
    logger.info(f"  Total optimization steps = {max_train_steps}")

    global_step = 0
    progress_bar = ProgressBar(max_train_steps, desc="Steps")
    loss_history = []

    model.train()
    for _epoch in range(args.num_epochs):
        for step, batch in enumerate(train_dataloader):
            clean_images = batch["input"]
            noise = torch.randn_like(clean_images)
            bsz = clean_images.shape[0]
            timesteps = torch.randint(0, noise_scheduler.num_train_timesteps, (bsz,), device=clean_images.device).long()
            noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)

            if args.fault == "no-grad-training":
                with torch.no_grad():
                    model_pred = model(noisy_images, timesteps)
            else:
                model_pred = model(noisy_images, timesteps)
            if args.fault == "detached-graph":
                model_pred = model_pred.detach()
            target = noise

            # Compute loss-weights as per Section 3.4 of https://arxiv.org/abs/2303.09556.
            snr = compute_snr(noise_scheduler, timesteps)
            mse_loss_weights = torch.stack([snr, args.snr_gamma * torch.ones_like(timesteps)], dim=1).min(dim=1)[0]
            if args.fault == "missing-epsilon":
                mse_loss_weights = mse_loss_weights / snr
            else:
                mse_loss_weights = mse_loss_weights / (snr + 1e-8)
            loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
            loss = loss.mean(dim=list(range(1, len(loss.shape)))) * mse_loss_weights
            loss = loss.sum() if args.fault == "wrong-loss-reduction" else loss.mean()

            if args.fault != "missing-backward":
                (loss / args.gradient_accumulation_steps).backward()
            if args.fault == "loss-tensor-leak":
                loss_history.append(loss)
            else:
                loss_history.append(loss.item())

            if args.fault == "scheduler-step-misaligned":
                lr_scheduler.step()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                if args.fault != "missing-optimizer-step":
                    optimizer.step()
                if args.fault != "scheduler-step-misaligned":
                    lr_scheduler.step()
                if args.fault != "missing-zero-grad":
                    optimizer.zero_grad()

                ema_model.step(model.parameters())
                progress_bar.update(1)
                global_step += 1

                if global_step % args.validation_steps == 0 or global_step == max_train_steps:
                    if args.fault != "missing-eval-mode":
                        model.eval()
                    val_loss = evaluate()
                    ema_model.store(model.parameters())
                    ema_model.copy_to(model.parameters())
                    ema_val_loss = evaluate()
                    ema_model.restore(model.parameters())
                    if args.fault != "missing-train-mode":
                        model.train()
                    window = loss_history[-args.validation_steps * args.gradient_accumulation_steps :]
                    train_loss = sum(window) / len(window)
                    logger.info(
                        f"Step {global_step}: train_loss={train_loss:.4f} val_loss={val_loss:.4f} "
                        f"ema_val_loss={ema_val_loss:.4f} ema_decay={ema_model.cur_decay_value:.4f}"
                    )

            logs = {"step_loss": loss.detach().item(), "lr": lr_scheduler.get_last_lr()[0]}
            progress_bar.set_postfix(**logs)
            if global_step >= max_train_steps:
                break

    progress_bar.close()

    with tempfile.TemporaryDirectory(prefix="ddpm-shapes-") as output_dir:
        save_path = os.path.join(output_dir, f"checkpoint-{global_step}")
        os.makedirs(save_path)
        ema_model.copy_to(model.parameters())
        torch.save(model.state_dict(), os.path.join(save_path, "diffusion_pytorch_model.bin"))
        torch.save(optimizer.state_dict(), os.path.join(save_path, "optimizer.bin"))
        logger.info(f"Saved state to {save_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
