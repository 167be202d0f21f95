"""Program 11 (written for issue 9's fresh program 11 without reading triage's rules): a text classifier.

Synthetic token sequences (a vocabulary of 320 ids, id 0 the padding) whose five classes draw
their words from class-dependent distributions over a shared background, of varying length, a
few of them empty (all padding). An embedding, a 1-D convolution over the tokens, a masked mean
over the real (non-padding) positions, dropout and a linear head. Plain SGD without momentum,
with weight decay, a MultiStepLR schedule stepped once per epoch, cross-entropy with label
smoothing. The script logs through `logging` configured as Hydra's job logging does:

    [2026-11-27 10:00:00,123][textcls.train][INFO] - epoch 1 | iter 25/100 | loss 1.2034 | lr 0.5000
    [2026-11-27 10:00:01,456][textcls.eval][INFO] - epoch 1 validation: loss=0.9876 accuracy=0.612 macro_f1=0.598

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PAD, VOCAB, CLASSES, MAX_LEN = 0, 320, 5, 48

log = logging.getLogger("textcls")
train_log = logging.getLogger("textcls.train")
eval_log = logging.getLogger("textcls.eval")

CONFIG = {
    "data": {"vocab_size": VOCAB, "num_classes": CLASSES, "max_len": MAX_LEN, "n_train": 3200, "n_val": 600},
    "model": {"embed_dim": 48, "channels": 64, "kernel_size": 3, "dropout": 0.4},
    "optim": {"name": "sgd", "lr": 0.5, "momentum": 0.0, "weight_decay": 1e-4},
    "scheduler": {"name": "multistep", "milestones": [9, 13], "gamma": 0.2},
    "trainer": {"epochs": 15, "batch_size": 32, "log_every": 25, "label_smoothing": 0.1},
}


def to_yaml(cfg: dict, indent: int = 0) -> str:
    lines = []
    for key, value in cfg.items():
        if isinstance(value, dict):
            lines.append(" " * indent + f"{key}:")
            lines.append(to_yaml(value, indent + 2))
        elif isinstance(value, list):
            lines.append(" " * indent + f"{key}:")
            lines.extend(" " * indent + f"- {v}" for v in value)
        else:
            lines.append(" " * indent + f"{key}: {value}")
    return "\n".join(lines)


def corpus(n: int, g: torch.Generator, topics: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """n padded documents and their classes; each class mixes its own topic words into a background."""
    y = torch.randint(0, CLASSES, (n,), generator=g)
    background = torch.ones(VOCAB)
    background[PAD] = 0.0
    # Zipf-like background over the real ids
    background[1:] = 1.0 / torch.arange(1, VOCAB, dtype=torch.float32) ** 0.8
    lengths = torch.randint(6, MAX_LEN + 1, (n,), generator=g)
    x = torch.full((n, MAX_LEN), PAD, dtype=torch.long)
    for i in range(n):
        probs = background + topics[y[i]]
        words = torch.multinomial(probs, int(lengths[i]), replacement=True, generator=g)
        x[i, : int(lengths[i])] = words
    x[::71] = PAD  # an empty document now and then: nothing but padding
    return x, y


class TokenConvClassifier(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        m = CONFIG["model"]
        self.fault = fault
        self.embed = nn.Embedding(VOCAB, m["embed_dim"], padding_idx=PAD)
        self.conv = nn.Conv1d(m["embed_dim"], m["channels"], m["kernel_size"], padding=m["kernel_size"] // 2)
        self.drop = nn.Dropout(m["dropout"])
        self.head = nn.Linear(m["channels"], CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = (tokens != PAD).unsqueeze(1).float()  # (B, 1, L)
        h = self.embed(tokens).transpose(1, 2)  # (B, E, L)
        h = F.relu(self.conv(h)) * mask
        if self.fault == "shape-mismatch":
            pooled = h.flatten(1)  # every position's features straight into the head
        else:
            count = mask.sum(dim=2)  # real tokens per document; an empty one has none
            if self.fault != "missing-epsilon":
                count = count.clamp(min=1.0)
            pooled = h.sum(dim=2) / count
        return self.head(self.drop(pooled))


def macro_f1(pred: torch.Tensor, y: torch.Tensor) -> float:
    scores = []
    for c in range(CLASSES):
        tp = ((pred == c) & (y == c)).sum().item()
        fp = ((pred == c) & (y != c)).sum().item()
        fn = ((pred != c) & (y == c)).sum().item()
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return sum(scores) / CLASSES


def evaluate(model: nn.Module, loader: DataLoader, smoothing: float) -> tuple[float, float, float]:
    model.eval()
    total, n, preds, golds = 0.0, 0, [], []
    with torch.no_grad():
        for tokens, labels in loader:
            logits = model(tokens)
            total += F.cross_entropy(logits, labels, label_smoothing=smoothing).item() * len(labels)
            n += len(labels)
            preds.append(logits.argmax(1))
            golds.append(labels)
    pred, gold = torch.cat(preds), torch.cat(golds)
    return total / n, (pred == gold).float().mean().item(), macro_f1(pred, gold)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    logging.basicConfig(
        level=logging.INFO,
        format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s",
        stream=sys.stdout,
    )
    cfg = CONFIG
    log.info("Config:\nseed: %d\n%s", a.seed, to_yaml(cfg))
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(9000 + a.seed)

    # each class favours its own 24 topic words, drawn once per seed
    topics = torch.zeros(CLASSES, VOCAB)
    for c in range(CLASSES):
        words = torch.randperm(VOCAB - 1, generator=g)[:24] + 1
        topics[c, words] = 0.12
    x, y = corpus(cfg["data"]["n_train"], g, topics)
    vx, vy = corpus(cfg["data"]["n_val"], g, topics)
    log.info("data: %d train / %d val documents, vocab %d, %d classes", len(x), len(vx), VOCAB, CLASSES)
    if a.fault == "label-out-of-range":
        y = y + 1  # the label file numbers its classes from 1
        vy = vy + 1
    if a.fault == "dtype-mismatch":
        y = y.float()  # labels read back as floats from the CSV
        vy = vy.float()

    tc = cfg["trainer"]
    train_set = TensorDataset(x, y)
    if a.fault == "no-shuffle":
        order = torch.argsort(y, stable=True)  # the export lists documents grouped by class
        train_set = TensorDataset(x[order], y[order])
        train_loader = DataLoader(train_set, batch_size=tc["batch_size"], shuffle=False)
    else:
        train_loader = DataLoader(
            train_set, batch_size=tc["batch_size"], shuffle=True, generator=torch.Generator().manual_seed(a.seed)
        )
    val_loader = DataLoader(TensorDataset(vx, vy), batch_size=128)

    model = TokenConvClassifier(a.fault)
    if a.fault == "frozen-parameters":
        for name, prm in model.named_parameters():
            prm.requires_grad = name == "head.bias"  # meant: keep only the embedding fixed
    total = sum(q.numel() for q in model.parameters())
    trainable = sum(q.numel() for q in model.parameters() if q.requires_grad)
    log.info("model: TokenConvClassifier | %s params (%s trainable)", f"{total:,}", f"{trainable:,}")

    oc = cfg["optim"]
    lr = oc["lr"] * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.SGD(
        [q for q in model.parameters() if q.requires_grad],
        lr=lr,
        momentum=oc["momentum"],
        weight_decay=oc["weight_decay"],
    )
    sc = cfg["scheduler"]
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=sc["milestones"], gamma=sc["gamma"])

    iters = len(train_loader)
    best_acc, best_epoch = 0.0, 0
    model.train()
    for epoch in range(1, tc["epochs"] + 1):
        if a.fault != "missing-train-mode":
            model.train()
        t0 = time.perf_counter()
        running, seen = 0.0, 0
        for it, (tokens, labels) in enumerate(train_loader, start=1):
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            if a.fault == "no-grad-training":
                with torch.no_grad():
                    logits = model(tokens)
                    loss = F.cross_entropy(logits, labels, label_smoothing=tc["label_smoothing"])
            else:
                logits = model(tokens)
                if a.fault == "detached-graph":
                    logits = logits.detach()
                loss = F.cross_entropy(logits, labels, label_smoothing=tc["label_smoothing"])
            if a.fault != "missing-backward":
                loss.backward()
            if a.fault != "missing-optimizer-step":
                opt.step()
            if a.fault == "scheduler-step-misaligned":
                sched.step()
            running += loss.item() * len(labels)
            seen += len(labels)
            if it % tc["log_every"] == 0 or it == iters:
                train_log.info(
                    "epoch %d | iter %d/%d | loss %.4f | lr %.4f",
                    epoch,
                    it,
                    iters,
                    loss.item(),
                    opt.param_groups[0]["lr"],
                )
        if a.fault != "scheduler-step-misaligned":
            sched.step()
        train_log.info("epoch %d done: mean loss %.4f in %.1fs", epoch, running / seen, time.perf_counter() - t0)
        vloss, vacc, vf1 = evaluate(model, val_loader, tc["label_smoothing"])
        eval_log.info("epoch %d validation: loss=%.4f accuracy=%.3f macro_f1=%.3f", epoch, vloss, vacc, vf1)
        if vacc > best_acc:
            best_acc, best_epoch = vacc, epoch
            log.info("new best validation accuracy %.3f", vacc)
    log.info("training finished: best validation accuracy %.3f at epoch %d", best_acc, best_epoch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
