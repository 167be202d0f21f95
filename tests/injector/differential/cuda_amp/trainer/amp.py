"""Mixed-precision training on the GPU, written the way most CUDA training scripts write it:
fp16 autocast, a GradScaler that unscales before clipping, and a class-weight tensor the module
puts on the GPU when it is imported (so every guard run initialises CUDA in its own process)."""

import torch
import torch.nn.functional as F

DEVICE = torch.device("cuda")
CLASS_WEIGHTS = torch.ones(4, device=DEVICE)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(64, 4)
        )

    def forward(self, x):
        return self.body(x)


def fit(model, batches, epochs=4, lr=0.05):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    for _ in range(epochs):
        model.train()
        for x, y in batches:
            x, y = x.to(DEVICE), y.to(DEVICE)
            optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y, weight=CLASS_WEIGHTS)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
        evaluate(model, batches[:1])
    return losses


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    correct = total = 0
    for x, y in batches:
        x, y = x.to(DEVICE), y.to(DEVICE)
        correct += (model(x).argmax(-1) == y).sum().item()
        total += len(y)
    return correct / total
