"""Edits that break the program whatever data it runs on: no guard's verdict on them means anything.

An operator picks its sites by their syntax and names, and a name can mislead (`criterion =
nn.BCEWithLogitsLoss(...)` is no loss value, `lrs` may be a list of rates). A mutant that detaches
a module or a dict, or that repeats a list a hundred times where it meant to raise each rate, is
killed by any guard at all and counts as caught although it injected no fault. These checks read
only the replaced text and its replacement, so they hold for every operator.
"""

from __future__ import annotations

import ast

_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.DictComp, ast.ListComp, ast.SetComp, ast.JoinedStr)


def broken_edit(original: str, replacement: str) -> str | None:
    """Why replacing `original` by `replacement` breaks the program on any input, or None."""
    if replacement.endswith(".detach()") and _unwrapped(replacement[: -len(".detach()")], original):
        node = _expression(original)
        if isinstance(node, _DISPLAYS) or (isinstance(node, ast.Constant) and node.value is not None):
            return f"detaches a {type(node).__name__.lower()}, which has no detach()"
        if isinstance(node, ast.Call) and _constructs_an_object(node):
            return "detaches a module or an optimizer torch builds, which has no detach()"
    head, _, factor = replacement.rpartition(" * ")
    if (
        head
        and factor.strip().replace(".", "", 1).isdigit()
        and _unwrapped(head, original)
        and isinstance(_expression(original), (ast.List, ast.ListComp, ast.Tuple))
    ):
        return "repeats a sequence instead of scaling its values"
    return None


def _unwrapped(text: str, original: str) -> bool:
    """True where `text` is `original`, alone or in parentheses."""
    stripped = text.strip()
    if stripped.startswith("(") and stripped.endswith(")") and stripped[1:-1].strip() == original.strip():
        return True
    return stripped == original.strip()


def _expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(f"(\n{text}\n)", mode="eval").body
    except SyntaxError:
        return None


def _constructs_an_object(call: ast.Call) -> bool:
    """True for a module, an optimizer or a scheduler torch builds (`nn.BCEWithLogitsLoss(...)`,
    `torch.optim.Adam(...)`): none is a tensor. A project's own class may be one that detaches
    what it holds (Lightning 0.9's `TrainResult`), so only torch's namespaces are read."""
    name = _dotted(call.func)
    return name.startswith(("nn.", "torch.nn.", "optim.", "torch.optim.")) and name.rpartition(".")[2][:1].isupper()


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""
