from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name, int_value, is_functional

FUNCTIONS = {"softmax", "log_softmax"}
MODULES = {"Softmax", "LogSoftmax"}


def other_axes(dim: int) -> list[int]:
    """The one axis to normalise over instead of `dim`: its neighbour on the same side.

    One mutant per call: `-1` and its alternatives `0` and `-2` name the same axis of 2-D
    logits, so two mutants there would be one fault counted twice. The neighbour is a different
    axis for every rank where `dim` is valid and the softmax is over more than one axis.
    """
    if dim < 0:
        return [dim - 1]
    return [1] if dim == 0 else [dim - 1]


class WrongSoftmaxDim(Operator):
    id = "wrong-softmax-dim"
    summary = "Normalise a softmax/log-softmax over the neighbouring axis (functional, method or `nn.Softmax`)."
    examples = (
        Example(
            "probs = F.softmax(logits, dim=-1)\n",
            ("probs = F.softmax(logits, dim=-2)\n",),
        ),
        Example(
            "attn = scores.softmax(-1)\nlogp = torch.log_softmax(out, 1)\n",
            (
                "attn = scores.softmax(-2)\nlogp = torch.log_softmax(out, 1)\n",
                "attn = scores.softmax(-1)\nlogp = torch.log_softmax(out, 0)\n",
            ),
        ),
        Example(
            "self.head = nn.Sequential(nn.Linear(8, 4), nn.LogSoftmax(dim=1))\n",
            ("self.head = nn.Sequential(nn.Linear(8, 4), nn.LogSoftmax(dim=0))\n",),
        ),
    )
    untouched = (
        "p = F.softmax(x, dim=self.dim)\n",
        "p = F.softmax(x)\n",
        "p = self.softmax(x)\n",
        "y = torch.sum(x, dim=-1)\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if name in FUNCTIONS:
                position = 1 if is_functional(call) else 0
            elif name in MODULES:
                position = 0
            else:
                continue
            dim = argument(call, "dim", position)
            value = None if dim is None else int_value(dim.value)
            if value is None:
                continue
            for axis in other_axes(value):
                yield Change(
                    call, (source.replace(dim.value, str(axis)),), f"{name} over dim {axis} instead of dim {value}"
                )
