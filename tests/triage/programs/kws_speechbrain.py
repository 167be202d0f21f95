"""Program 27 (written for issue 9's fresh program 27 without reading triage's rules): keyword spotting, SpeechBrain-style log.

A small keyword-spotting classifier trained the way a SpeechBrain recipe would train it,
written from scratch with torch only. Data: synthetic filterbank-like "utterances" of 40
frames x 20 channels for 8 keywords; every keyword is a class-specific set of 3 gliding
spectro-temporal blobs ("syllables"), rendered with a random time shift, frequency and
amplitude jitter, a random spectral tilt and additive noise, then mean/variance normalised
per channel with training-set statistics. The training split is stored ordered by class
(as a manifest sorted by label would be); validation and test splits are separate draws.
Model: three Conv1d blocks over time (BatchNorm1d + LeakyReLU), dropout, statistics pooling
(mean and std over time), a two-layer classifier head and log_softmax; the objective is the
NLL loss. Optimiser: Adam (lr 1e-3, batch size 32) with a NewBob-style annealer (halve the lr
when the validation loss improves by less than 0.25% relative), applied once per epoch, 14
epochs; the checkpoint with the lowest validation error is reloaded for the test pass.
The log imitates SpeechBrain's console (logger name - message) plus tqdm bars written to a
non-terminal, e.g.:

    speechbrain.core - Beginning experiment!
    speechbrain.core - Experiment folder: results/kws/1986
    speechbrain.core - 78.6k trainable parameters in KWSBrain
    speechbrain.utils.epoch_loop - Going into epoch 1
    100%|##########| 38/38 [00:00<00:00, 61.02it/s, train_loss=1.53]
    100%|##########| 10/10 [00:00<00:00, 212.33it/s]
    speechbrain.utils.train_logger - epoch: 1, lr: 1.00e-03 - train loss: 1.53 - valid loss: 1.02, valid error: 3.41e-01
    speechbrain.utils.checkpoints - Saved an end-of-epoch checkpoint in results/kws/1986/save/CKPT+2024-05-14+10-32-11+00
    ...
    speechbrain.utils.train_logger - Epoch loaded: 12 - test loss: 2.47e-01, test error: 7.19e-02
"""

import argparse
import copy
import datetime
import logging
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

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

HPARAMS = {
    "n_frames": 40,
    "n_mels": 20,
    "n_keywords": 8,
    "n_train_per_kw": 150,
    "n_valid_per_kw": 40,
    "n_test_per_kw": 40,
    "number_of_epochs": 14,
    "batch_size": 32,
    "lr": 0.001,
    "channels": 96,
    "dropout": 0.15,
    "improvement_threshold": 0.0025,
    "annealing_factor": 0.5,
    "patient": 0,
}

log_core = logging.getLogger("speechbrain.core")
log_loop = logging.getLogger("speechbrain.utils.epoch_loop")
log_train = logging.getLogger("speechbrain.utils.train_logger")
log_ckpt = logging.getLogger("speechbrain.utils.checkpoints")


# --------------------------------------------------------------------------- data
def keyword_templates(gen, n_kw):
    """Per keyword: 3 syllables = (onset, length, start channel, glide, width, gain)."""
    table = []
    for _ in range(n_kw):
        syl = []
        for s in range(3):
            onset = 4.0 + 10.0 * s + 4.0 * torch.rand(1, generator=gen).item()
            length = 4.0 + 5.0 * torch.rand(1, generator=gen).item()
            ch0 = 2.0 + 15.0 * torch.rand(1, generator=gen).item()
            glide = (torch.rand(1, generator=gen).item() - 0.5) * 1.2
            width = 1.0 + 1.5 * torch.rand(1, generator=gen).item()
            gain = 1.0 + torch.rand(1, generator=gen).item()
            syl.append((onset, length, ch0, glide, width, gain))
        table.append(syl)
    return table


def render_utterance(gen, syllables, n_frames, n_mels):
    t = torch.arange(n_frames, dtype=torch.float32).unsqueeze(1)
    ch = torch.arange(n_mels, dtype=torch.float32).unsqueeze(0)
    shift = float(torch.randint(-6, 7, (1,), generator=gen).item())
    rate = 0.85 + 0.3 * torch.rand(1, generator=gen).item()
    spec = torch.zeros(n_frames, n_mels)
    for onset, length, ch0, glide, width, gain in syllables:
        start = onset * rate + shift
        dur = length * rate
        centre = ch0 + 1.5 * torch.randn(1, generator=gen).item() + glide * (t - start)
        env_t = torch.exp(-0.5 * ((t - start - dur / 2) / (dur / 2)) ** 2)
        env_f = torch.exp(-0.5 * ((ch - centre) / width) ** 2)
        g = gain * (0.6 + 0.8 * torch.rand(1, generator=gen).item())
        spec = spec + g * env_t * env_f
    tilt = (torch.rand(1, generator=gen).item() - 0.5) * 0.06 * (ch - n_mels / 2)
    spec = spec + tilt + 0.55 * torch.randn(n_frames, n_mels, generator=gen)
    return spec


def make_split(gen, table, per_kw, hp, ordered):
    feats, labels = [], []
    for kw, syllables in enumerate(table):
        for _ in range(per_kw):
            feats.append(render_utterance(gen, syllables, hp["n_frames"], hp["n_mels"]))
            labels.append(kw)
    x = torch.stack(feats)
    y = torch.tensor(labels, dtype=torch.long)
    if not ordered:
        perm = torch.randperm(len(y), generator=gen)
        x, y = x[perm], y[perm]
    return x, y


def prepare_data(seed, hp):
    gen = torch.Generator().manual_seed(1000 + seed)
    table = keyword_templates(gen, hp["n_keywords"])
    train = make_split(gen, table, hp["n_train_per_kw"], hp, ordered=True)
    valid = make_split(gen, table, hp["n_valid_per_kw"], hp, ordered=False)
    test = make_split(gen, table, hp["n_test_per_kw"], hp, ordered=False)
    mu = train[0].mean(dim=(0, 1), keepdim=True)
    sd = train[0].std(dim=(0, 1), keepdim=True)
    return [((x - mu) / sd, y) for x, y in (train, valid, test)]


# -------------------------------------------------------------------------- model
class TDNNBlock(nn.Module):
    def __init__(self, c_in, c_out, k, dil):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, k, dilation=dil, padding=dil * (k - 1) // 2)
        self.norm = nn.BatchNorm1d(c_out)
        self.act = nn.LeakyReLU(0.01)

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class KeywordNet(nn.Module):
    def __init__(self, n_mels, channels, n_classes, dropout, double_softmax=False):
        super().__init__()
        self.encoder = nn.Sequential(
            TDNNBlock(n_mels, channels, 5, 1),
            TDNNBlock(channels, channels, 3, 2),
            TDNNBlock(channels, channels, 3, 3),
        )
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Sequential(
            nn.Linear(2 * channels, 64),
            nn.LeakyReLU(0.01),
            nn.Linear(64, n_classes),
        )
        self.double_softmax = double_softmax

    def forward(self, feats):
        h = self.encoder(feats.transpose(1, 2))  # (B, C, T)
        h = self.drop(h)
        mean = h.mean(dim=2)
        std = torch.sqrt(h.var(dim=2, unbiased=False) + 1e-5)
        logits = self.classifier(torch.cat([mean, std], dim=1))
        if self.double_softmax:
            logits = torch.softmax(logits, dim=-1)
        return F.log_softmax(logits, dim=-1)


class NewBobAnnealer:
    """Halve the lr when the tracked loss improves by less than a relative threshold."""

    def __init__(self, lr, threshold, factor, patience):
        self.lr = lr
        self.threshold = threshold
        self.factor = factor
        self.patience = patience
        self.last = None
        self.waited = 0

    def __call__(self, value):
        before = self.lr
        if self.last is not None:
            gain = (self.last - value) / self.last if self.last != 0 else 0.0
            if gain < self.threshold:
                if self.waited >= self.patience:
                    self.lr = self.lr * self.factor
                    self.waited = 0
                else:
                    self.waited += 1
        self.last = value
        return before, self.lr


# ------------------------------------------------------------------- log helpers
def hms(seconds):
    seconds = int(seconds)
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def short_num(v):
    if not isinstance(v, (int, float)):
        return str(v)
    txt = f"{v:.3g}".replace("e+0", "e+").replace("e-0", "e-")
    return txt if len(txt) < len(str(v)) else str(v)


def bar_line(done, total, elapsed, postfix=None):
    frac = done / total if total else 0.0
    fill = int(frac * 10)
    bar = "#" * fill + " " * (10 - fill)
    if done == 0 or elapsed <= 0:
        timing = "00:00<?, ?it/s"
    else:
        rate = done / elapsed
        left = (total - done) / rate
        speed = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
        timing = f"{hms(elapsed)}<{hms(left)}, {speed}"
    extra = ""
    if postfix:
        extra = ", " + ", ".join(f"{k}={short_num(v)}" for k, v in postfix.items())
    return f"{int(frac * 100):3d}%|{bar}| {done}/{total} [{timing}{extra}]"


def fmt_stat(v):
    if isinstance(v, float) and 1.0 < v < 100.0:
        return f"{v:.2f}"
    if isinstance(v, float):
        return f"{v:.2e}"
    return str(v)


def stats_text(prefix, stats):
    return ", ".join(f"{prefix}{k}: {fmt_stat(v)}" for k, v in stats.items())


# ---------------------------------------------------------------------- the brain
class KWSBrain:
    def __init__(self, model, hp, fault, save_dir):
        self.model = model
        self.hp = hp
        self.fault = fault
        self.save_dir = save_dir
        lr = hp["lr"] * (100 if fault == "lr-too-high" else 1)
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params, lr=lr)
        self.annealer = NewBobAnnealer(lr, hp["improvement_threshold"], hp["annealing_factor"], hp["patient"])
        self.reduction = "sum" if fault == "wrong-loss-reduction" else "mean"
        self.checkpoints = []
        self.avg_train_loss = 0.0

    def set_lr(self, lr):
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def compute_objectives(self, log_probs, labels):
        loss = F.nll_loss(log_probs, labels, reduction=self.reduction)
        errors = (log_probs.argmax(dim=-1) != labels).sum().item()
        return loss, errors

    def fit_batch(self, feats, labels):
        if self.fault == "no-grad-training":
            with torch.no_grad():
                out = self.model(feats)
                loss, _ = self.compute_objectives(out, labels)
        else:
            out = self.model(feats)
            if self.fault == "detached-graph":
                out = out.detach()
            loss, _ = self.compute_objectives(out, labels)
        if self.fault != "missing-backward":
            loss.backward()
        if self.fault != "missing-optimizer-step":
            self.optimizer.step()
        if self.fault != "missing-zero-grad":
            self.optimizer.zero_grad()
        if self.fault == "scheduler-step-misaligned":
            _, new_lr = self.annealer(loss.item())
            self.set_lr(new_lr)
        return loss

    def train_epoch(self, loader):
        if self.fault != "missing-train-mode":
            self.model.train()
        total = len(loader)
        sys.stderr.write("\r" + bar_line(0, total, 0.0))
        sys.stderr.flush()
        t0 = time.time()
        self.avg_train_loss = 0.0
        for step, (feats, labels) in enumerate(loader, 1):
            loss = self.fit_batch(feats, labels)
            if self.fault == "loss-tensor-leak":
                self.avg_train_loss = self.avg_train_loss + (loss - self.avg_train_loss) / step
            else:
                self.avg_train_loss += (loss.item() - self.avg_train_loss) / step
        sys.stderr.write("\r" + bar_line(total, total, time.time() - t0, {"train_loss": self.avg_train_loss}) + "\n")
        sys.stderr.flush()
        return self.avg_train_loss

    def evaluate(self, loader):
        if self.fault != "missing-eval-mode":
            self.model.eval()
        total = len(loader)
        sys.stderr.write("\r" + bar_line(0, total, 0.0))
        sys.stderr.flush()
        t0 = time.time()
        loss_sum, err_sum, n = 0.0, 0, 0
        with torch.no_grad():
            for feats, labels in loader:
                out = self.model(feats)
                loss, errors = self.compute_objectives(out, labels)
                loss_sum += loss.item()
                err_sum += errors
                n += labels.shape[0]
        sys.stderr.write("\r" + bar_line(total, total, time.time() - t0) + "\n")
        sys.stderr.flush()
        return loss_sum / total, err_sum / n

    def save_checkpoint(self, epoch, error):
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d+%H-%M-%S")
        taken = {c[0] for c in self.checkpoints}
        idx = 0
        while f"{self.save_dir}/CKPT+{stamp}+{idx:02d}" in taken:
            idx += 1
        path = f"{self.save_dir}/CKPT+{stamp}+{idx:02d}"
        state = {
            "model": copy.deepcopy(self.model.state_dict()),
            "epoch": epoch,
            "error": error,
        }
        self.checkpoints.append((path, state))
        log_ckpt.info(f"Saved an end-of-epoch checkpoint in {path}")
        best = min(self.checkpoints, key=lambda c: c[1]["error"])
        kept = []
        for ck in self.checkpoints:
            if ck is best or ck is self.checkpoints[-1]:
                kept.append(ck)
            else:
                log_ckpt.info(f"Deleted checkpoint in {ck[0]}")
        self.checkpoints = kept

    def fit(self, train_loader, valid_loader):
        log_ckpt.info("Would load a checkpoint here, but none found yet.")
        for epoch in range(1, self.hp["number_of_epochs"] + 1):
            log_loop.info(f"Going into epoch {epoch}")
            train_loss = self.train_epoch(train_loader)
            valid_loss, valid_err = self.evaluate(valid_loader)
            lr_now = self.optimizer.param_groups[0]["lr"]
            if self.fault != "scheduler-step-misaligned":
                lr_now, new_lr = self.annealer(valid_loss)
                self.set_lr(new_lr)
            log_train.info(
                f"epoch: {epoch}, lr: {fmt_stat(lr_now)} - "
                + stats_text("train ", {"loss": train_loss})
                + " - "
                + stats_text("valid ", {"loss": valid_loss, "error": valid_err})
            )
            self.save_checkpoint(epoch, valid_err)

    def test(self, test_loader):
        path, state = min(self.checkpoints, key=lambda c: c[1]["error"])
        log_ckpt.info(f"Loading a checkpoint from {path}")
        self.model.load_state_dict(state["model"])
        test_loss, test_err = self.evaluate(test_loader)
        log_train.info(
            f"Epoch loaded: {state['epoch']} - " + stats_text("test ", {"loss": test_loss, "error": test_err})
        )


def count_short(n):
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k"
    return str(n)


def main():
    parser = argparse.ArgumentParser(description="Keyword spotting recipe")
    parser.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    parser.add_argument("--seed", type=int, default=1986)
    args = parser.parse_args()

    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(name)s - %(message)s")
    hp = dict(HPARAMS, seed=args.seed)
    out_dir = f"results/kws/{args.seed}"
    torch.manual_seed(args.seed)

    log_core.info("Beginning experiment!")
    log_core.info(f"Experiment folder: {out_dir}")
    for key in ("device", "data_parallel_backend", "distributed_launch", "auto_mix_prec"):
        log_core.info(f"Info: {key} arg from hparam file is used")
    print(f"# Hyperparameters (hparams/train_kws.yaml, output_folder: {out_dir})")
    for key, value in hp.items():
        print(f"{key}: {value}")
    sys.stdout.flush()

    (xtr, ytr), (xva, yva), (xte, yte) = prepare_data(args.seed, hp)
    train_loader = DataLoader(
        TensorDataset(xtr, ytr),
        batch_size=hp["batch_size"],
        shuffle=args.fault != "no-shuffle",
    )
    valid_loader = DataLoader(TensorDataset(xva, yva), batch_size=hp["batch_size"])
    test_loader = DataLoader(TensorDataset(xte, yte), batch_size=hp["batch_size"])

    model = KeywordNet(
        hp["n_mels"],
        hp["channels"],
        hp["n_keywords"],
        hp["dropout"],
        double_softmax=args.fault == "double-softmax",
    )
    if args.fault == "frozen-parameters":
        for p in model.encoder.parameters():
            p.requires_grad = False
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log_core.info(f"{count_short(n_train)} trainable parameters in KWSBrain")

    brain = KWSBrain(model, hp, args.fault, f"{out_dir}/save")
    brain.fit(train_loader, valid_loader)
    brain.test(test_loader)


if __name__ == "__main__":
    main()
