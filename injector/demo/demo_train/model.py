"""A tiny causal transformer that classifies whole sequences."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm(nn.Module):
    """LayerNorm over the last axis, with an optional bias."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        x = (x - mean) / torch.sqrt(var + self.eps)
        x = x * self.weight
        return x + self.bias if self.bias is not None else x


class CausalSelfAttention(nn.Module):
    """Single-head self-attention in which a position sees only itself and earlier ones."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        future = torch.triu(
            torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device), diagonal=1
        )
        scores = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.proj(self.dropout(weights) @ v)


class Block(nn.Module):
    """Pre-norm transformer block: attention, then a ReLU feed-forward, each residual."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, dropout)
        self.norm2 = LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        h = F.relu(self.fc1(self.norm2(x)))
        x = x + self.dropout(self.fc2(h))
        return x


class SequenceClassifier(nn.Module):
    """Embeds a (batch, seq_len, n_features) sequence, runs one block, pools, classifies."""

    def __init__(self, n_features: int, num_classes: int, d_model: int = 32,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Linear(n_features, d_model)
        self.block = Block(d_model, dropout)
        self.norm = LayerNorm(d_model)
        self.head = nn.Sequential(
            nn.Linear(d_model, d_model),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(d_model, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        x = self.block(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        """Class probabilities, shape (batch, num_classes)."""
        logits = self(x)
        return F.softmax(logits, dim=-1)
