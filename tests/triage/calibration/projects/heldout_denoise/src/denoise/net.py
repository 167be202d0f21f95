import torch
from torch import nn


class ConvAutoencoder(nn.Module):
    """Conv encoder, transposed-conv decoder; batch norm and dropout in the bottleneck."""

    def __init__(self, channels: int = 8, dropout: float = 0.1):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Conv1d(1, channels, 5, padding=2, bias=False),
            nn.BatchNorm1d(channels),
            nn.ReLU(),
            nn.Conv1d(channels, channels, 5, padding=2, stride=2),
            nn.ReLU(),
        )
        self.dropout = nn.Dropout(dropout)
        self.decode = nn.Sequential(
            nn.ConvTranspose1d(channels, channels, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv1d(channels, 1, 5, padding=2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.dropout(self.encode(x)))


def snr_db(clean: torch.Tensor, estimate: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Signal-to-noise ratio of `estimate` against `clean`, in decibels."""
    noise = (clean - estimate).pow(2).mean(dim=-1)
    power = clean.pow(2).mean(dim=-1)
    return 10 * torch.log10(power / (noise + eps))
