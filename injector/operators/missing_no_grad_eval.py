from __future__ import annotations

import libcst as cst

from injector.mutants import Edit
from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, last_name

CONTEXTS = {"no_grad", "inference_mode"}


def _disables_grad(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call):
        if last_name(expr.func) not in CONTEXTS:
            return False
        mode = argument(expr, "mode", 0)
        return mode is None or not (isinstance(mode.value, cst.Name) and mode.value.value == "False")
    return last_name(expr) in CONTEXTS


class MissingNoGradEval(Operator):
    id = "missing-no-grad-eval"
    summary = "Remove the `with torch.no_grad()` / `inference_mode()` block or decorator around evaluation."
    examples = (
        Example(
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        # accuracy\n"
            "        for x, y in loader:\n"
            "            correct += (model(x).argmax(1) == y).sum()\n"
            "    return correct\n",
            ("def evaluate(model, loader):\n"
             "    model.eval()\n"
             "    # accuracy\n"
             "    for x, y in loader:\n"
             "        correct += (model(x).argmax(1) == y).sum()\n"
             "    return correct\n",),
        ),
        Example(
            "@torch.inference_mode()\n"
            "def validate(model, batch):\n"
            "    with torch.no_grad(), torch.autocast('cuda'): out = model(batch)\n"
            "    return out\n",
            ("def validate(model, batch):\n"
             "    with torch.no_grad(), torch.autocast('cuda'): out = model(batch)\n"
             "    return out\n",
             "@torch.inference_mode()\n"
             "def validate(model, batch):\n"
             "    with torch.autocast('cuda'): out = model(batch)\n"
             "    return out\n"),
        ),
        Example(
            "with torch.no_grad(): val = model(x)\n",
            ("val = model(x)\n",),
        ),
    )
    untouched = (
        "with torch.enable_grad():\n    y = f(x)\n",
        "with torch.inference_mode(False):\n    y = f(x)\n",
        "with open(path) as handle:\n    text = handle.read()\n",
    )

    def changes(self, source, training):
        for function in source.nodes(cst.FunctionDef):
            for decorator in function.decorators:
                if _disables_grad(decorator.decorator):
                    first, last = source.lines_of(decorator)
                    yield Change(decorator, (Edit(source.lines.line_start(first), source.lines.line_end(last), ""),),
                                 f"`{function.name.value}` records autograd graphs")
        for block in source.nodes(cst.With):
            kept = [item for item in block.items if not _disables_grad(item.item)]
            if len(kept) == len(block.items):
                continue
            description = "evaluation records autograd graphs"
            if kept:
                start = source.span(block.items[0])[0]
                end = source.span(block.items[-1])[1]
                text = ", ".join(source.module.code_for_node(
                    item.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for item in kept)
                yield Change(block, (Edit(start, end, text),), description)
            elif isinstance(block.body, cst.SimpleStatementSuite):
                yield Change(block, (Edit(source.span(block)[0], source.span(block.body.body[0])[0], ""),),
                             description)
            elif not source.has_multiline_string(block):
                yield Change(block, (self._unwrap(source, block),), description)

    @staticmethod
    def _unwrap(source, block: cst.With) -> Edit:
        """Delete the `with` header and dedent its body by one level."""
        header_last = source.lines_of(block.items[-1])[1]
        first, last = source.lines_of(block)
        outer = source.indentation(block)
        inner = source.indentation(block.body.body[0])
        lines = []
        for number in range(header_last + 1, last + 1):
            text = source.lines.line_text(number)
            if text.startswith(inner):
                text = outer + text[len(inner):]
            lines.append(text)
        return Edit(source.lines.line_start(first), source.lines.line_end(last), "".join(lines))
