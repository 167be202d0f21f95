from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import callee_name

STORING_METHODS = {"append", "extend", "update"}


class LossTensorLeak(Operator):
    id = "loss-tensor-leak"
    summary = "Drop `.item()` (or `float(...)`) where a loss is summed or stored, keeping its graph alive."
    examples = (
        Example(
            "running_loss += loss.item() * x.size(0)\n",
            ("running_loss += loss * x.size(0)\n",),
        ),
        Example(
            "history.append(loss.detach().item())\nmeter.update(float(val_loss), n)\n",
            ("history.append(loss.detach())\nmeter.update(float(val_loss), n)\n",
             "history.append(loss.detach().item())\nmeter.update(val_loss, n)\n"),
        ),
    )
    untouched = (
        "print(f'loss={loss.item():.3f}')\n",
        "total += acc.item()\n",
        "if loss.item() > 10:\n    stop()\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if name == "item" and isinstance(call.func, cst.Attribute) and not call.args:
                value = call.func.value
            elif name == "float" and isinstance(call.func, cst.Name) and len(call.args) == 1:
                value = call.args[0].value
            else:
                continue
            if "loss" not in source.code(value).lower() or not self._stored(source, call):
                continue
            yield Change(call, (source.replace(call, source.module.code_for_node(value).strip()),),
                         "the loss is kept as a tensor, with its graph")

    @staticmethod
    def _stored(source, call) -> bool:
        """True if the value ends up summed into a variable or kept in a container."""
        for ancestor in source.ancestors(call):
            if isinstance(ancestor, cst.AugAssign):
                return True
            if isinstance(ancestor, cst.Call) and callee_name(ancestor) in STORING_METHODS \
                    and isinstance(ancestor.func, cst.Attribute):
                return True
            if isinstance(ancestor, cst.Assign):
                return any(isinstance(t.target, cst.Subscript) for t in ancestor.targets)
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
        return False
