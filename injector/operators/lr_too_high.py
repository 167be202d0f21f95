from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, needs_parens

FACTOR = 100


class LrTooHigh(Operator):
    id = "lr-too-high"
    summary = f"Multiply the learning rate given to an optimizer by {FACTOR}."
    examples = (
        Example(
            "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)\n",
            ("optimizer = torch.optim.AdamW(model.parameters(), lr=0.03, weight_decay=0.01)\n",),
        ),
        Example(
            "opt = optim.SGD(net.parameters(), config.lr, momentum=0.9)\n"
            "opt2 = Adam(params, lr=base_lr * scale)\n",
            ("opt = optim.SGD(net.parameters(), config.lr * 100, momentum=0.9)\n"
             "opt2 = Adam(params, lr=base_lr * scale)\n",
             "opt = optim.SGD(net.parameters(), config.lr, momentum=0.9)\n"
             "opt2 = Adam(params, lr=(base_lr * scale) * 100)\n"),
        ),
    )
    untouched = (
        "optimizer = torch.optim.Adam(model.parameters())\n",
        "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)\n",
        "lr = 1e-3\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            if training.role_of_constructor(call) != "optimizer":
                continue
            lr = argument(call, "lr", 1)
            if lr is None:
                continue
            value = lr.value
            if isinstance(value, (cst.Float, cst.Integer)):
                text = f"{float(value.evaluated_value) * FACTOR:g}"
            else:
                code = source.module.code_for_node(value).strip()
                text = f"({code}) * {FACTOR}" if needs_parens(value) else f"{code} * {FACTOR}"
            yield Change(call, (source.replace(value, text),),
                         f"learning rate multiplied by {FACTOR}")
