"""Fitting and scoring the autoencoder on synthetic noisy sine waves."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from denoise.net import ConvAutoencoder, snr_db


def sine_waves(n: int, length: int = 64, noise: float = 0.3, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 1, length)
    freq = 1 + 4 * torch.rand(n, 1, generator=g)
    phase = 6.28 * torch.rand(n, 1, generator=g)
    clean = torch.sin(6.28 * freq * t + phase).unsqueeze(1)
    noisy = clean + noise * torch.randn(clean.shape, generator=g)
    return TensorDataset(noisy, clean)


def fit(model: ConvAutoencoder, data: TensorDataset, epochs: int = 5, lr: float = 0.05,
        batch_size: int = 32, verbose: bool = True) -> list[float]:
    """Train with SGD + momentum and a step decay; returns the mean loss of every epoch."""
    loader = DataLoader(data, batch_size=batch_size, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    decay = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    epoch_losses = []
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for noisy, clean in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(noisy), clean)
            loss.backward()
            optimizer.step()
            total += loss.item()
        decay.step()
        epoch_losses.append(total / len(loader))
        if verbose:
            print(f"[epoch {epoch + 1}/{epochs}] train_loss: {epoch_losses[-1]:.5f} lr: {decay.get_last_lr()[0]:.4f}")
    return epoch_losses


def score(model: ConvAutoencoder, data: TensorDataset) -> float:
    """Mean SNR (dB) of the model's output on `data`."""
    model.eval()
    with torch.inference_mode():
        noisy, clean = data.tensors
        result = snr_db(clean, model(noisy)).mean().item()
    return result
