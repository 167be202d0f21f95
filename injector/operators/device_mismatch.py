from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name, dotted, last_name

ACCELERATORS = ("cuda", "mps", "xpu", "npu", "hpu")


def _is_device(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value.split(":")[0] in ACCELERATORS  # type: ignore[union-attr]
    if isinstance(expr, cst.Call):
        return (dotted(expr.func) or "").endswith("device")
    name = (last_name(expr) or "").lower()
    return "device" in name or name in {"dev", "rank", "local_rank", "gpu"}


class DeviceMismatch(Operator):
    id = "device-mismatch"
    summary = "Drop a batch's `.to(device)` / `.cuda()` inside a loop, one mutant per transfer."
    examples = (
        Example(
            "for x, y in loader:\n"
            "    x, y = x.to(device), y.to(device, non_blocking=True)\n",
            ("for x, y in loader:\n"
             "    x, y = x, y.to(device, non_blocking=True)\n",
             "for x, y in loader:\n"
             "    x, y = x.to(device), y\n"),
        ),
        Example(
            "for batch in loader:\n"
            "    batch = {k: v.cuda() for k, v in batch.items()}\n",
            ("for batch in loader:\n"
             "    batch = {k: v for k, v in batch.items()}\n",),
        ),
    )
    untouched = (
        "model = Net().to(device)\n",
        "for x in xs:\n    x = x.to(torch.float16)\n",
        "for x in xs:\n    x = x.to(dtype=torch.bfloat16)\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            if not isinstance(call.func, cst.Attribute) or \
                    source.enclosing(call, (cst.For, cst.While)) is None:
                continue
            name = callee_name(call)
            if name == "to":
                target = argument(call, "device", 0)
                if target is None or not _is_device(target.value):
                    continue
            elif name != "cuda":
                continue
            tensor = source.module.code_for_node(call.func.value).strip()
            yield Change(call, (source.replace(call, tensor),),
                         f"`{tensor}` stays on the CPU")
