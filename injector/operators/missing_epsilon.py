from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, assigned_alone, callee_name, is_functional, last_name, needs_parens

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
        Example(
            # A clamp held in a name that is divided by later; the `+ eps` after it guards nothing.
            "def nt_xent(pos, neg, eps=1e-6):\n"
            "    neg = torch.clamp(neg - row_sub, min=eps)\n"
            "    return -torch.log(pos / (neg + eps)).mean()\n",
            (
                "def nt_xent(pos, neg, eps=1e-6):\n"
                "    neg = neg - row_sub\n"
                "    return -torch.log(pos / (neg + eps)).mean()\n",
            ),
        ),
    )
    untouched = (
        "y = x + eps\n",
        "z = torch.log(x + 1.0)\n",
        "w = x / (y + 2)\n",
        "v = torch.sqrt(x.clamp(min=0.0, max=1.0))\n",
        # A clamp held in a name that nothing takes a log of or divides by.
        "d = torch.clamp(dist, min=eps)\nloss = d.mean()\n",
    )

    def changes(self, source, training):
        clamped = self._clamped_names(source)
        for binop in source.nodes(cst.BinaryOperation):
            if not isinstance(binop.operator, cst.Add) or not self._guards(source, binop):
                continue
            for kept, eps in ((binop.left, binop.right), (binop.right, binop.left)):
                if _is_epsilon(eps) and not _is_epsilon(kept):
                    if isinstance(kept, cst.Name) and (source.function_of(binop), kept.value) in clamped:
                        break  # clamped to eps already: the `+ eps` guards nothing (the clamp does)
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
            if lower is None or not _is_epsilon(lower.value):
                continue
            if not self._guards(source, call) and not self._guards_later(source, call):
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
            if needs_parens(kept) and not isinstance(source.parent(call), cst.Assign):
                text = f"({text})"
            yield Change(call, (source.replace(call, text),), f"`{name}` no longer keeps the value away from zero")

    @staticmethod
    def _assigned_name(source, call: cst.Call) -> str | None:
        """The name `call` is assigned to alone (`neg = torch.clamp(neg - s, min=eps)`), or None."""
        return assigned_alone(source.parent(call), call)

    def _clamped_names(self, source) -> set[tuple[cst.FunctionDef | None, str]]:
        """(function, name) of every name assigned a clamp to an epsilon."""
        out = set()
        for call in source.nodes(cst.Call):
            lower = argument(call, "min", 1 if is_functional(call) else 0) if callee_name(call) in CLAMPS else None
            name = self._assigned_name(source, call) if lower is not None and _is_epsilon(lower.value) else None
            if name is not None:
                out.add((source.function_of(call), name))
        return out

    def _guards_later(self, source, call: cst.Call) -> bool:
        """True if the name a clamp is assigned to is then taken a log, a root or divided by
        in the same function, directly or with an epsilon added (`pos / (neg + eps)`)."""
        name = self._assigned_name(source, call)
        function = source.function_of(call)
        if name is None:
            return False
        for use in source.nodes(cst.Name):
            if use.value != name or source.function_of(use) is not function or use.deep_equals(call):
                continue
            node = use
            parent = source.parent(node)
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
                node = parent
            if self._guards(source, node):
                return True
        return False

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
