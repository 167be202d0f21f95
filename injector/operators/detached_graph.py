from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import LOSS_FUNCTIONS, callee_name, method_on


class DetachedGraph(Operator):
    id = "detached-graph"
    summary = "`.detach()` the model output passed to the loss (or the loss itself when it is not a loss call)."
    examples = (
        Example(
            "logits = model(x)\nloss = F.cross_entropy(logits, y)\nloss.backward()\n",
            ("logits = model(x)\nloss = F.cross_entropy(logits.detach(), y)\nloss.backward()\n",),
        ),
        Example(
            "outputs = model(**batch)\nloss = outputs.loss\nscaler.scale(loss).backward()\n",
            ("outputs = model(**batch)\nloss = outputs.loss.detach()\nscaler.scale(loss).backward()\n",),
        ),
        Example(
            "loss = self.criterion(self.net(a) + b, y) / accum\n(loss).backward()\n",
            ("loss = (self.criterion(self.net(a) + b, y) / accum).detach()\n(loss).backward()\n",),
        ),
    )
    untouched = ("loss.backward()\n", "y = model(x).detach()\n")

    def changes(self, source, training):
        for backward in training.backwards:
            assign = training.loss_assignment(backward)
            if assign is None:
                continue
            value = assign.value
            if isinstance(value, cst.Call) and value.args and value.args[0].keyword is None and \
                    not value.args[0].star and self._is_loss(training, value):
                target = value.args[0].value
            else:
                target = value
            yield Change(assign, (source.replace(target, method_on(source, target, "detach")),),
                         "the loss is cut off from the model's graph")

    @staticmethod
    def _is_loss(training, call: cst.Call) -> bool:
        name = (callee_name(call) or "").lower()
        return name in LOSS_FUNCTIONS or training.role(call.func) == "loss-module" or \
            "loss" in name or "criterion" in name
