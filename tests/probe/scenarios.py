"""Small training loops, each spelled as real code spells its step, run under the training probe.

    python scenarios.py FOLDER     # every scenario, each counted apart

The probe is installed before torch is imported (as our sitecustomize does in a process a run
starts), so the import hook is exercised too. Prints {scenario: counts, ...} as JSON, and the
healthy loop's losses under the probe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path

from trainwreck import probe

FOLDER = Path(sys.argv[1])
probe.install(FOLDER)

import torch  # noqa: E402  (after the probe, on purpose)
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)  # a process forked while a thread pool runs may hang in it (as in a campaign's slots)
STEPS = 6


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 8, generator=g), torch.randint(0, 3, (16,), generator=g)


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def healthy() -> list[float]:
    """Trains, then evaluates in eval mode under no_grad, as a validation loop does."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = batch()
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        net(x)
    net.train()
    return losses


def no_grad_step() -> None:
    """The step's forward under no_grad: backward raises, as it does in such a run."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = batch()
    opt.zero_grad()
    with torch.no_grad():
        loss = F.cross_entropy(net(x), y)
    with contextlib.suppress(RuntimeError):
        loss.backward()


# built before any scenario's count starts, as a session fixture or a module-level factory builds it
PREBUILT_NET = model()
PREBUILT_OPT = torch.optim.SGD(PREBUILT_NET.parameters(), lr=0.1)


def no_step_prebuilt() -> None:
    x, y = batch()
    for _ in range(STEPS):
        PREBUILT_OPT.zero_grad()
        F.cross_entropy(PREBUILT_NET(x), y).backward()


def no_backward() -> None:
    net = model()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = batch()
    for _ in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(net(x), y)
        opt.step()


def no_step() -> None:
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = batch()
    for _ in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()


def no_zero_grad() -> None:
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = batch()
    for _ in range(STEPS):
        F.cross_entropy(net(x), y).backward()
        opt.step()


def zeroed_in_place() -> None:
    """`zero_grad(set_to_none=False)` keeps the gradient tensors and zeroes them."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = batch()
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(net(x), y).backward()
        opt.step()


def accumulation() -> None:
    """Four micro-batches a step, cleared after each step through the model (HF Trainer's way)."""
    net = model()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    for step in range(STEPS):
        for micro in range(4):
            x, y = batch(step * 4 + micro)
            (F.cross_entropy(net(x), y) / 4).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        net.zero_grad()


def gan() -> None:
    """DCGAN's order: the generator's backward flows into the discriminator's gradients after
    its step; they are cleared (netD.zero_grad()) before the next discriminator backward."""
    torch.manual_seed(0)
    gen = torch.nn.Linear(4, 8)
    disc = torch.nn.Sequential(torch.nn.Linear(8, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    real = torch.randn(16, 8)
    ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
    for _ in range(STEPS):
        disc.zero_grad()
        fake = gen(torch.randn(16, 4))
        loss_d = F.binary_cross_entropy_with_logits(disc(real), ones) + F.binary_cross_entropy_with_logits(
            disc(fake.detach()), zeros
        )
        loss_d.backward()
        opt_d.step()
        gen.zero_grad()
        F.binary_cross_entropy_with_logits(disc(fake), ones).backward()
        opt_g.step()


def gradient_penalty_only() -> None:
    """`torch.autograd.grad` (a gradient penalty) and no optimizer at all."""
    net = model()
    x, _ = batch()
    x.requires_grad_(True)
    (grad,) = torch.autograd.grad(net(x).sum(), x, create_graph=True)
    grad.norm().backward()


def forked_rank() -> None:
    """A rank forked after the probe started (fork_ddp's shape): it counts from zero."""
    pid = os.fork()
    if pid == 0:
        try:
            healthy()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


SCENARIOS = [
    healthy,
    no_backward,
    no_step,
    no_step_prebuilt,
    no_grad_step,
    no_zero_grad,
    zeroed_in_place,
    accumulation,
    gan,
    gradient_penalty_only,
    forked_rank,
]


def main() -> None:
    counted: dict[str, object] = {}
    for scenario in SCENARIOS:
        probe.clear(FOLDER)
        scenario()
        counted[scenario.__name__] = dataclasses.asdict(probe.collect(FOLDER))
    probe.clear(FOLDER)
    with_probe = healthy()
    counted["losses"] = with_probe
    print(json.dumps(counted))


if __name__ == "__main__":
    main()
