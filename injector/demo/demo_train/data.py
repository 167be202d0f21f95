"""Synthetic sequence-classification data and the loaders that feed training.

Each class has a prototype sequence; a sample is its class's prototype plus Gaussian noise. The
samples are stored sorted by class, the way data exported one class at a time usually arrives,
so the training loader has to shuffle.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_datasets(
    n_train: int,
    n_eval: int,
    *,
    num_classes: int,
    seq_len: int,
    n_features: int,
    noise: float = 1.0,
    seed: int = 0,
) -> tuple[TensorDataset, TensorDataset]:
    """Return (train, eval) datasets drawn from the same class prototypes."""
    generator = torch.Generator().manual_seed(seed)
    prototypes = torch.randn(num_classes, seq_len, n_features, generator=generator)

    def draw(n: int) -> TensorDataset:
        labels = torch.arange(n) * num_classes // n  # 0 0 0 ... 1 1 1 ... sorted by class
        x = prototypes[labels] + noise * torch.randn(n, seq_len, n_features, generator=generator)
        return TensorDataset(x, labels)

    return draw(n_train), draw(n_eval)


def make_loaders(
    train_set: TensorDataset,
    eval_set: TensorDataset,
    batch_size: int,
    *,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
) -> tuple[DataLoader, DataLoader, DistributedSampler | None]:
    """Return the training loader, the evaluation loader and the distributed sampler (or None).

    With more than one process each rank reads its own shard through a DistributedSampler,
    which the training loop must tell the epoch so that the shuffle changes between epochs.
    """
    if world_size > 1:
        sampler = DistributedSampler(
            train_set, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=True
        )
        train_loader = DataLoader(train_set, batch_size=batch_size, sampler=sampler, drop_last=True)
    else:
        sampler = None
        generator = torch.Generator().manual_seed(seed)
        train_loader = DataLoader(
            train_set, batch_size=batch_size, shuffle=True, generator=generator, drop_last=True
        )
    eval_loader = DataLoader(eval_set, batch_size=max(batch_size, 64), shuffle=False)
    return train_loader, eval_loader, sampler
