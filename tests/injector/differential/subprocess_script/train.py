"""A classifier trained from the command line; prints one JSON line of results."""

import argparse
import json

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))

    def forward(self, x):
        return self.body(x)


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        first = model(x)
        second = model(x)
    accuracy = (first.argmax(1) == y).float().mean().item()
    return accuracy, torch.equal(first, second)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    x = torch.randn(96, 6)
    y = x[:, :3].argmax(1)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    losses = []
    for step in range(args.steps):
        model.train()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 20 == 19:
            accuracy, deterministic = evaluate(model, x, y)
    print(json.dumps({"first": losses[0], "last": losses[-1], "accuracy": accuracy,
                      "deterministic": deterministic}))


if __name__ == "__main__":
    main()
