from __future__ import annotations

import libcst as cst

from injector.mutants import Edit
from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, disables_grad, is_evaluation, last_name, statement_call


def _enables_by_value(expr: cst.BaseExpression) -> cst.Arg | None:
    """The argument of `torch.set_grad_enabled(is_training)`: grad on or off by a value."""
    if not isinstance(expr, cst.Call) or last_name(expr.func) != "set_grad_enabled":
        return None
    mode = argument(expr, "mode", 0)
    if mode is None or (isinstance(mode.value, cst.Name) and mode.value.value in {"True", "False"}):
        return None
    return mode


class MissingNoGradEval(Operator):
    id = "missing-no-grad-eval"
    summary = ("Remove the `with torch.no_grad()` / `inference_mode()` block or decorator around evaluation "
               "(`set_grad_enabled(False)` too); a `no_grad` that evaluates no model is left alone.")
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
            # fairseq's criteria run the model they are handed.
            "def valid_step(self, sample, model, criterion):\n"
            "    with torch.no_grad():\n"
            "        loss, size, logs = criterion(model, sample)\n"
            "    return loss\n",
            ("def valid_step(self, sample, model, criterion):\n"
             "    loss, size, logs = criterion(model, sample)\n"
             "    return loss\n",),
        ),
        Example(
            "with torch.no_grad(): val = model(x)\n",
            ("val = model(x)\n",),
        ),
        Example(
            "for phase in ['train', 'val']:\n"
            "    with torch.set_grad_enabled(phase == 'train'):\n"
            "        outputs = model(inputs)\n",
            ("for phase in ['train', 'val']:\n"
             "    with torch.set_grad_enabled(True):\n"
             "        outputs = model(inputs)\n",),
        ),
        Example(
            "def val_loop(self, model, loader):\n"
            "    torch.set_grad_enabled(False)\n"
            "    outs = [model.validation_step(b) for b in loader]\n"
            "    torch.set_grad_enabled(True)\n",
            ("def val_loop(self, model, loader):\n"
             "    outs = [model.validation_step(b) for b in loader]\n"
             "    torch.set_grad_enabled(True)\n",),
        ),
    )
    untouched = (
        "with torch.enable_grad():\n    y = f(x)\n",
        "with torch.inference_mode(False):\n    y = model(x)\n",
        "with open(path) as handle:\n    text = handle.read()\n",
        # Not evaluation: a metrics helper and a copy of weights under no_grad.
        "@torch.no_grad()\ndef accuracy(output, target):\n    return (output.argmax(1) == target).float().mean()\n",
        "with torch.no_grad():\n    for k, v in model.state_dict().items():\n        ema[k].copy_(v)\n",
    )

    def changes(self, source, training):
        for function in source.nodes(cst.FunctionDef):
            for decorator in function.decorators:
                if disables_grad(decorator.decorator) and is_evaluation(source, training, function.body):
                    first, last = source.lines_of(decorator)
                    yield Change(decorator, (Edit(source.lines.line_start(first), source.lines.line_end(last), ""),),
                                 f"`{function.name.value}` records autograd graphs")
        for block in source.nodes(cst.With):
            if not is_evaluation(source, training, block.body):
                continue
            for item in block.items:
                mode = _enables_by_value(item.item)
                if mode is not None:
                    yield Change(block, (source.replace(mode.value, "True"),),
                                 "evaluation records autograd graphs")
            kept = [item for item in block.items if not disables_grad(item.item)]
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
        for statement in source.nodes(cst.Expr):
            call = statement_call(statement)
            if call is None or last_name(call.func) != "set_grad_enabled" or not source.is_reachable(statement):
                continue
            mode = argument(call, "mode", 0)
            function = source.function_of(statement)
            if mode is not None and isinstance(mode.value, cst.Name) and mode.value.value == "False" and \
                    function is not None and is_evaluation(source, training, function.body):
                yield Change(statement, (source.delete_statement(statement),),
                             "evaluation records autograd graphs")

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
