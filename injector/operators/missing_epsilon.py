from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name, is_functional, last_name, needs_parens

GUARDED = {"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"}
CLAMPS = {"clamp", "clamp_min", "clip"}


def _is_epsilon(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Float):
        return 0 < float(expr.evaluated_value) <= 1e-3
    return "eps" in (last_name(expr) or "").lower()


class MissingEpsilon(Operator):
    id = "missing-epsilon"
    summary = "Drop the `+ eps` or `clamp(min=eps)` that keeps a `log`, `sqrt` or division finite."
    examples = (
        Example(
            "std = torch.sqrt(var + self.eps)\nnll = -torch.log(p + 1e-8)\n",
            (
                "std = torch.sqrt(var)\nnll = -torch.log(p + 1e-8)\n",
                "std = torch.sqrt(var + self.eps)\nnll = -torch.log(p)\n",
            ),
        ),
        Example(
            "x = x / (x.norm(dim=-1, keepdim=True) + eps)\nlogp = probs.clamp(min=EPS).log()\n",
            (
                "x = x / (x.norm(dim=-1, keepdim=True))\nlogp = probs.clamp(min=EPS).log()\n",
                "x = x / (x.norm(dim=-1, keepdim=True) + eps)\nlogp = probs.log()\n",
            ),
        ),
        Example(
            "ratio = a / torch.clamp(b - c, min=1e-6)\n",
            ("ratio = a / (b - c)\n",),
        ),
    )
    untouched = (
        "y = x + eps\n",
        "z = torch.log(x + 1.0)\n",
        "w = x / (y + 2)\n",
        "v = torch.sqrt(x.clamp(min=0.0, max=1.0))\n",
    )

    def changes(self, source, training):
        for binop in source.nodes(cst.BinaryOperation):
            if not isinstance(binop.operator, cst.Add) or not self._guards(source, binop):
                continue
            for kept, eps in ((binop.left, binop.right), (binop.right, binop.left)):
                if _is_epsilon(eps) and not _is_epsilon(kept):
                    text = source.module.code_for_node(kept).strip()
                    yield Change(
                        binop, (source.replace(binop, text),), f"`{source.code(eps)}` no longer guards against zero"
                    )
                    break
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if name not in CLAMPS or argument(call, "max", None) is not None:
                continue
            functional = is_functional(call) and isinstance(call.func, cst.Attribute)
            lower = argument(call, "min", 1 if functional else 0)
            if lower is None or not _is_epsilon(lower.value) or not self._guards(source, call):
                continue
            if functional:
                inner = argument(call, "input", 0)
                if inner is None or inner is lower:
                    continue
                kept = inner.value
            elif isinstance(call.func, cst.Attribute):
                kept = call.func.value
            else:
                continue
            text = source.module.code_for_node(kept).strip()
            if needs_parens(kept):
                text = f"({text})"
            yield Change(call, (source.replace(call, text),), f"`{name}` no longer keeps the value away from zero")

    @staticmethod
    def _guards(source, node) -> bool:
        """True if `node` is the argument of log/sqrt, the receiver of `.log()`, or a divisor."""
        parent = source.parent(node)
        if isinstance(parent, cst.Arg):
            call = source.parent(parent)
            return isinstance(call, cst.Call) and callee_name(call) in GUARDED and call.args[0] is parent
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = source.parent(parent)
            return isinstance(call, cst.Call) and parent.attr.value in GUARDED
        if isinstance(parent, cst.BinaryOperation) and parent.right is node:
            return isinstance(parent.operator, (cst.Divide, cst.FloorDivide))
        return False
