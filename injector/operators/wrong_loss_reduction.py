from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import (LOSS_FUNCTIONS, LOSS_MODULES, argument, callee_name, is_functional,
                               under_no_grad, with_keyword)


class WrongLossReduction(Operator):
    id = "wrong-loss-reduction"
    summary = ("Sum a loss that was averaged: `reduction=\"mean\"` (explicit or default) → `\"sum\"`, "
               "and `.mean()` → `.sum()` where a loss is computed.")
    examples = (
        Example(
            "criterion = nn.CrossEntropyLoss(label_smoothing=0.1)\n",
            ("criterion = nn.CrossEntropyLoss(label_smoothing=0.1, reduction=\"sum\")\n",),
        ),
        Example(
            "loss = F.mse_loss(pred, target, reduction='mean')\n",
            ("loss = F.mse_loss(pred, target, reduction='sum')\n",),
        ),
        Example(
            "recon_loss = ((x_hat - x) ** 2).mean()\nloss = torch.mean(torch.abs(a - b))\n",
            ("recon_loss = ((x_hat - x) ** 2).sum()\nloss = torch.mean(torch.abs(a - b))\n",
             "recon_loss = ((x_hat - x) ** 2).mean()\nloss = torch.sum(torch.abs(a - b))\n"),
        ),
    )
    untouched = (
        "loss = F.cross_entropy(logits, y, reduction='none')\n",
        "eval_loss = torch.mean(losses)\n",
        "acc = (pred == y).float().mean()\n",
        "total = nn.MSELoss(reduction=\"sum\")\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if ((name in LOSS_FUNCTIONS and is_functional(call)) or name in LOSS_MODULES) and \
                    not under_no_grad(source, call):
                reduction = argument(call, "reduction", None)
                if reduction is None:
                    new = with_keyword(call, "reduction", cst.SimpleString('"sum"'))
                    yield Change(call, (source.replace_node(call, new),), f"`{name}` sums instead of averaging")
                elif isinstance(reduction.value, cst.SimpleString) and \
                        reduction.value.evaluated_value in {"mean", "batchmean"}:
                    quote = reduction.value.value[0]
                    yield Change(call, (source.replace(reduction.value, f"{quote}sum{quote}"),),
                                 f"`{name}` sums instead of averaging")
        for assign in source.nodes(cst.Assign):
            if not any(isinstance(t.target, cst.Name) and "loss" in t.target.value.lower() and
                       not t.target.value.lower().startswith(("eval", "val", "test"))
                       for t in assign.targets):
                continue  # a training loss, not a reported evaluation figure
            if under_no_grad(source, assign):
                continue
            value = assign.value
            if isinstance(value, cst.Call) and callee_name(value) == "mean" and \
                    isinstance(value.func, cst.Attribute):
                yield Change(value, (source.replace(value.func.attr, "sum"),),
                             "the loss is summed instead of averaged")

