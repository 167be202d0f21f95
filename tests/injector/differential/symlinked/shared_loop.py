"""Linked into the project as trainer/loop.py by the test (the link target lies outside it)."""

import torch


def fit(model, x, y, steps=50, lr=0.1):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        return torch.nn.functional.mse_loss(model(x), y).item()
