"""A small, real training setup for the guard checks' tests (the operators mutate this text).

It has what the catalogued faults need: a loader that shuffles and a distributed sampler told
its epoch, dropout, a softmax over classes, a loss on logits averaged over the batch, gradient
accumulation with a scaler, clipping and a scheduler, and an evaluation under no_grad.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))

    def forward(self, x):
        return self.body(x)

    def predict_proba(self, x):
        return F.softmax(self(x), dim=-1)


def dataset(seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=generator)
    return TensorDataset(x, x[:, :3].argmax(1))


def make_loader(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset(seed), batch_size=16, shuffle=True, generator=generator)


def make_training(seed=0, lr=0.05, amp=False):
    torch.manual_seed(seed)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    scaler = torch.amp.GradScaler("cpu", enabled=amp)
    return model, optimizer, scheduler, scaler


def train_epoch(model, loader, optimizer, scheduler, scaler, accum_steps=2):
    model.train()
    total = 0.0
    for step, (x, y) in enumerate(loader):
        logits = model(x)
        loss = F.cross_entropy(logits, y, reduction="mean")
        scaler.scale(loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            scheduler.step()
        total += loss.item()
    return total / len(loader)


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def make_sharded_loader(rank=0):
    sampler = DistributedSampler(dataset(), num_replicas=2, rank=rank, shuffle=True, seed=0)
    return DataLoader(dataset(), batch_size=16, sampler=sampler), sampler


def sampler_epochs(epochs=2):
    loader, sampler = make_sharded_loader()
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.append([y.tolist() for _, y in loader])
    return seen
