"""A small, real model and training step for the guard checks of faults in model code (the
operators mutate this text).

It has what those faults need: an RMS norm kept finite by an epsilon, a self-attention that
masks padding, a causal one, a gated residual block whose activations must not overwrite values
read again, and a training step that moves each batch to the model's device and sets the
optimizer's learning rate.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class PaddedAttention(nn.Module):
    """Bidirectional: every position sees every position that is not padding."""

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x, pad):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale
        scores = scores.masked_fill(pad[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class CausalAttention(nn.Module):
    """A position sees itself and the positions before it."""

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) * self.scale
        causal = torch.ones(x.size(1), x.size(1), dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class GatedResidual(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.ReLU()

    def forward(self, x):
        gate = x * torch.sigmoid(x)
        h = self.fc(x)
        x = x + self.act(h) + h
        return x * gate


class TinyLM(nn.Module):
    def __init__(self, features=6, dim=16, classes=3):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        self.norm = RMSNorm(dim)
        self.encode = PaddedAttention(dim)
        self.decode = CausalAttention(dim)
        self.block = GatedResidual(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x, pad):
        h = self.embed(x)
        h = self.encode(self.norm(h), pad) + h
        h = self.decode(h) + h
        return self.head(self.block(h))


def batches(n=4, seed=0):
    """(x, pad, y): 8-step sequences; the first sequences of each batch end in padding."""
    generator = torch.Generator().manual_seed(seed)
    found = []
    for _ in range(n):
        x = torch.randn(4, 8, 6, generator=generator)
        pad = torch.zeros(4, 8, dtype=torch.bool)
        pad[:2, 6:] = True
        found.append((x, pad, x[..., :3].argmax(-1)))
    return found


def make_training(seed=0, lr=0.01, device="cpu"):
    torch.manual_seed(seed)
    model = TinyLM().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return model, optimizer


def train_steps(model, optimizer, data, device="cpu"):
    model.train()
    losses = []
    for x, pad, y in data:
        x, pad, y = x.to(device), pad.to(device), y.to(device)
        optimizer.zero_grad()
        logits = model(x, pad)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="mean")
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
