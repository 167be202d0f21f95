"""A user's pytest guard of one training step, with one of three faults that all raise the same
autograd error; run by `quoted_code.py` under pytest's long tracebacks, which quote the body of
each function on the way to the error.

    FAULT=detached-graph python -m pytest tests/triage/programs/guard_step.py --tb=long

Not collected by the suite (its name does not start with `test_`).
"""

from __future__ import annotations

import os

import torch
from torch import nn


def make_model(frozen: bool) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    if frozen:
        for p in model.parameters():
            p.requires_grad = False
    return model


def step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def step_no_grad(model, opt, x, y):
    opt.zero_grad()
    with torch.no_grad():
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    opt.step()


def step_detached(model, opt, x, y):
    opt.zero_grad()
    logits = model(x).detach()
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    opt.step()


STEPS = {"no-grad-training": step_no_grad, "detached-graph": step_detached}


def test_one_step_lowers_the_loss():
    fault = os.environ.get("FAULT", "healthy")
    model = make_model(fault == "frozen-parameters")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 6)
    y = torch.randint(0, 3, (32,))
    before = nn.functional.cross_entropy(model(x), y).item()
    STEPS.get(fault, step)(model, opt, x, y)
    assert nn.functional.cross_entropy(model(x), y).item() < before
