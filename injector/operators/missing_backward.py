from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


class MissingBackward(Operator):
    id = "missing-backward"
    summary = (
        "Delete the backward pass: `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."
    )
    examples = (
        Example(
            "loss = criterion(model(x), y)\nloss.backward()\noptimizer.step()\n",
            ("loss = criterion(model(x), y)\noptimizer.step()\n",),
        ),
        Example(
            "with torch.autocast('cuda', dtype=torch.float16):\n"
            "    loss = model(x).loss\n"
            "scaler.scale(loss / accum).backward()\n"
            "accelerator.backward(loss)\n",
            (
                "with torch.autocast('cuda', dtype=torch.float16):\n"
                "    loss = model(x).loss\n"
                "accelerator.backward(loss)\n",
                "with torch.autocast('cuda', dtype=torch.float16):\n"
                "    loss = model(x).loss\n"
                "scaler.scale(loss / accum).backward()\n",
            ),
        ),
        Example(
            "def training_step(self, batch):\n    self.manual_backward(self.compute_loss(batch))\n",
            ("def training_step(self, batch):\n    pass\n",),
        ),
    )
    untouched = (
        "def backward(ctx, grad):\n    return grad\n",
        "grads = torch.autograd.grad(loss, params)\n",
    )

    def changes(self, source, training):
        return deleted_calls(
            source,
            lambda call: isinstance(call.func, cst.Attribute) and callee_name(call) in {"backward", "manual_backward"},
            "removed `{code}`: no gradients are computed",
        )
