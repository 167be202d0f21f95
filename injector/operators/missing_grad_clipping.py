from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name, statement_call

LIMIT = {"clip_grad_norm_": "max_norm", "clip_grad_norm": "max_norm", "clip_grad_value_": "clip_value"}


class MissingGradClipping(Operator):
    id = "missing-grad-clipping"
    summary = ("Delete `clip_grad_norm_` / `clip_grad_value_`; where its result is used, keep the "
               "call but clip at infinity.")
    examples = (
        Example(
            "loss.backward()\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
            "optimizer.step()\n",
            ("loss.backward()\noptimizer.step()\n",),
        ),
        Example(
            "grad_norm = clip_grad_norm_(params, args.clip)\nlog(grad_norm=grad_norm)\n",
            ("grad_norm = clip_grad_norm_(params, float(\"inf\"))\nlog(grad_norm=grad_norm)\n",),
        ),
    )
    untouched = ("max_norm = 1.0\n", "clip(x, 0, 1)\n")

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if name not in LIMIT:
                continue
            statement = source.parent(call)
            if statement_call(statement) is call:
                if source.is_reachable(statement):
                    yield Change(call, (source.delete_statement(statement),), f"removed `{name}`")
                continue
            limit = argument(call, LIMIT[name], 1)
            if limit is not None:
                yield Change(call, (source.replace(limit.value, 'float("inf")'),),
                             f"`{name}` clips at infinity (its norm is still computed)")
