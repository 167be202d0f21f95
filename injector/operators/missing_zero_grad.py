from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


def _zeroed(source, call: cst.Call) -> str:
    """What a zero_grad call zeroes: its receiver (`optimizer.zero_grad()`), or the parameters a
    helper is handed (`zero_grad(self.model_params)`)."""
    if isinstance(call.func, cst.Attribute):
        return source.code(call.func.value)
    return source.code(call.args[0].value) if call.args else ""


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
            ("for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    optimizer.step()\n",),
        ),
        Example(
            "def step(self, batch):\n    self.optimizers[0].zero_grad()  # reset\n",
            ("def step(self, batch):\n    pass  # reset\n",),
        ),
        Example(
            # Before the batch loop that zeroes the same optimizer after each update: only the
            # loop's zero_grad matters.
            "optimizer.zero_grad()\n"
            "for x, y in loader:\n"
            "    model(x, y).backward()\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n",
            ("optimizer.zero_grad()\nfor x, y in loader:\n    model(x, y).backward()\n    optimizer.step()\n",),
        ),
        Example(
            # Before a loop that zeroes another optimizer: the only zeroing of this one.
            "g_opt.zero_grad()\n"
            "for x, y in loader:\n"
            "    model(x, y).backward()\n"
            "    d_opt.step()\n"
            "    d_opt.zero_grad()\n",
            (
                "for x, y in loader:\n    model(x, y).backward()\n    d_opt.step()\n    d_opt.zero_grad()\n",
                "g_opt.zero_grad()\nfor x, y in loader:\n    model(x, y).backward()\n    d_opt.step()\n",
            ),
        ),
        Example(
            # A helper that zeroes the parameters it is handed (mixed-precision training code).
            "def forward_backward(self, batch):\n    zero_grad(self.model_params)\n    self.loss(batch).backward()\n",
            ("def forward_backward(self, batch):\n    self.loss(batch).backward()\n",),
        ),
        Example(
            # In a step function that the batch loop calls: the zeroing of that step, although the
            # loop's other branch zeroes the same optimizer itself.
            "def eager_step(batch):\n"
            "    optimizer.zero_grad()\n"
            "    model(batch).backward()\n"
            "    optimizer.step()\n"
            "for batch in loader:\n"
            "    if compiled:\n"
            "        optimizer.zero_grad()\n"
            "        step(batch)\n"
            "    else:\n"
            "        eager_step(batch)\n",
            (
                "def eager_step(batch):\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "for batch in loader:\n"
                "    if compiled:\n"
                "        optimizer.zero_grad()\n"
                "        step(batch)\n"
                "    else:\n"
                "        eager_step(batch)\n",
                "def eager_step(batch):\n"
                "    optimizer.zero_grad()\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "for batch in loader:\n"
                "    if compiled:\n"
                "        step(batch)\n"
                "    else:\n"
                "        eager_step(batch)\n",
            ),
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
        in_loops: dict[cst.Call, str] = {}
        looped: dict[str, list] = {}  # what the batch loops zero, and those loops
        for loop in training.training_loops:
            for call in source.within(loop.body, cst.Call):
                if callee_name(call) == "zero_grad":
                    in_loops[call] = _zeroed(source, call)
                    looped.setdefault(in_loops[call], []).append(loop)

        def wanted(call: cst.Call) -> bool:
            if callee_name(call) != "zero_grad":
                return False
            if call in in_loops:
                return True
            # Before a batch loop of the same function that zeroes the same optimizer after each
            # update: the gradients are still empty, or were zeroed after the last update, so
            # nothing accumulates. A zero_grad in a step function the loop calls is no such one.
            function = source.function_of(call)
            start = source.span(call)[0]
            return not any(
                source.function_of(loop) is function and start < source.span(loop)[0]
                for loop in looped.get(_zeroed(source, call), ())
            )

        return deleted_calls(source, wanted, "removed `{code}`: gradients now accumulate across steps")
