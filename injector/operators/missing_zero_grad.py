from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


class MissingZeroGrad(Operator):
    id = "missing-zero-grad"
    summary = "Delete `optimizer.zero_grad()` / `model.zero_grad()`, whatever the receiver and arguments."
    examples = (
        Example(
            "for x, y in loader:\n"
            "    optimizer.zero_grad(set_to_none=True)\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            ("for x, y in loader:\n"
             "    loss = model(x, y)\n"
             "    loss.backward()\n"
             "    optimizer.step()\n",),
        ),
        Example(
            "def step(self, batch):\n"
            "    self.optimizers[0].zero_grad()  # reset\n",
            ("def step(self, batch):\n"
             "    pass  # reset\n",),
        ),
        Example(
            "if accumulate: model.zero_grad()\n",
            ("if accumulate: pass\n",),
        ),
    )
    untouched = (
        "x = optimizer.zero_grad  # a reference, not a call\n",
        "def f():\n    return\n    optimizer.zero_grad()\n",
        "if False:\n    optimizer.zero_grad()\n",
    )

    def changes(self, source, training):
        return deleted_calls(
            source, lambda call: isinstance(call.func, cst.Attribute) and callee_name(call) == "zero_grad",
            "removed `{code}`: gradients now accumulate across steps")
