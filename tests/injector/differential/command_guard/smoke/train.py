"""Smoke training: a few steps on synthetic data; exits non-zero when training looks wrong."""

import argparse
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

from smoke.model import TinyClassifier


def run(steps):
    torch.manual_seed(0)
    x = torch.randn(128, 8)
    y = x[:, :4].argmax(1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = TinyClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    criterion = torch.nn.CrossEntropyLoss()
    losses = []
    while len(losses) < steps:
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    probabilities = model.probabilities(x[:5])
    return losses, probabilities


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    losses, probabilities = run(args.steps)
    if not torch.allclose(probabilities.sum(dim=1), torch.ones(5), atol=1e-5):
        sys.exit("probabilities do not sum to one over classes")
    if losses[-1] > 0.6 * losses[0]:
        sys.exit(f"loss did not drop enough: {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"ok: loss {losses[0]:.3f} -> {losses[-1]:.3f}")


if __name__ == "__main__":
    main()
