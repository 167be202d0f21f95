"""Training: the loop, evaluation and a command line.

    python -m demo_train.train --epochs 3
    torchrun --nproc-per-node 2 -m demo_train.train     # DDP over gloo, on CPU
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from demo_train.data import make_datasets, make_loaders
from demo_train.model import SequenceClassifier


@dataclass
class TrainConfig:
    """Everything a run needs; the defaults train to about 90% accuracy in a few seconds."""

    # data
    num_classes: int = 4
    seq_len: int = 8
    n_features: int = 8
    n_train: int = 512
    n_eval: int = 128
    batch_size: int = 32
    # model
    d_model: int = 32
    dropout: float = 0.1
    # optimisation
    epochs: int = 3
    lr: float = 3e-3
    weight_decay: float = 0.01
    accum_steps: int = 1
    max_grad_norm: float = 1.0
    use_amp: bool = False
    # run
    seed: int = 0
    device: str = "cpu"
    log_every: int = 0  # optimizer steps between log lines on rank 0; 0 logs nothing


def build_model(config: TrainConfig) -> SequenceClassifier:
    """The classifier `config` describes, freshly initialised."""
    return SequenceClassifier(config.n_features, config.num_classes, config.d_model, config.dropout)


def train(config: TrainConfig, model: nn.Module | None = None) -> dict[str, list[float]]:
    """Train `model` (a new one when None) and return per-epoch losses and accuracy.

    Runs data-parallel when a process group is already initialised (one process per rank).
    """
    distributed = dist.is_available() and dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world_size = dist.get_world_size() if distributed else 1
    device = torch.device(config.device)
    torch.manual_seed(config.seed)

    train_set, eval_set = make_datasets(
        config.n_train, config.n_eval, num_classes=config.num_classes, seq_len=config.seq_len,
        n_features=config.n_features, seed=config.seed,
    )
    train_loader, eval_loader, sampler = make_loaders(
        train_set, eval_set, config.batch_size, seed=config.seed, rank=rank, world_size=world_size
    )

    if model is None:
        model = build_model(config)
    model = model.to(device)
    if distributed:
        device_ids = [device.index] if device.type == "cuda" else None
        model = DistributedDataParallel(model, device_ids=device_ids)

    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    total_steps = config.epochs * max(1, len(train_loader) // config.accum_steps)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
    # bf16 needs no loss scaling, but one code path for CPU (bf16) and CUDA (fp16) keeps the
    # scaler exercised by the CPU tests.
    scaler = torch.amp.GradScaler(device.type, enabled=config.use_amp)

    history: dict[str, list[float]] = {"train_loss": [], "eval_loss": [], "eval_accuracy": []}
    for epoch in range(config.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train_loss = train_one_epoch(
            model, train_loader, optimizer, scheduler, scaler, config,
            epoch=epoch, rank=rank, device=device,
        )
        eval_loss, eval_accuracy = evaluate(model, eval_loader, device)
        history["train_loss"].append(train_loss)
        history["eval_loss"].append(eval_loss)
        history["eval_accuracy"].append(eval_accuracy)
    return history


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    config: TrainConfig,
    *,
    epoch: int,
    rank: int,
    device: torch.device,
) -> float:
    """One pass over `loader` with gradient accumulation; returns the mean training loss."""
    amp_dtype = torch.bfloat16 if device.type == "cpu" else torch.float16
    accum_steps = config.accum_steps
    model.train()
    optimizer.zero_grad(set_to_none=True)
    running_loss = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=config.use_amp):
            logits = model(x)
            loss = F.cross_entropy(logits, y, reduction="mean")
        scaler.scale(loss / accum_steps).backward()

        if (step + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()

            optimizer_step = epoch * (len(loader) // accum_steps) + (step + 1) // accum_steps
            if rank == 0 and config.log_every and optimizer_step % config.log_every == 0:
                print(
                    f"epoch {epoch + 1}/{config.epochs} | step {optimizer_step} "
                    f"| loss={loss.item():.4f} | lr={scheduler.get_last_lr()[0]:.2e} "
                    f"| grad_norm={grad_norm:.3f}",
                    flush=True,
                )
        running_loss += loss.item()
    return running_loss / max(1, len(loader))


def evaluate(model: nn.Module, loader: DataLoader, device: torch.device) -> tuple[float, float]:
    """Mean loss and accuracy of `model` over `loader`."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total_loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(dim=-1) == y).sum().item()
            count += y.numel()
    return total_loss / count, correct / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the demo sequence classifier.")
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--lr", type=float, default=TrainConfig.lr)
    parser.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    parser.add_argument("--accum-steps", type=int, default=TrainConfig.accum_steps)
    parser.add_argument("--amp", action="store_true", help="bf16 autocast on CPU, fp16 on CUDA")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--log-every", type=int, default=1)
    args = parser.parse_args(argv)
    config = TrainConfig(
        epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, accum_steps=args.accum_steps,
        use_amp=args.amp, device=args.device, seed=args.seed, log_every=args.log_every,
    )

    # Under torchrun every process joins one group and trains its shard of the data.
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world_size > 1:
        if config.device == "cuda":
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            config.device = f"cuda:{local_rank}"
        dist.init_process_group("nccl" if config.device.startswith("cuda") else "gloo")
    try:
        history = train(config)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    if rank == 0:
        print(
            f"done | eval_loss={history['eval_loss'][-1]:.4f} "
            f"| eval_accuracy={history['eval_accuracy'][-1]:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
