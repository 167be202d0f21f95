from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import argument, callee_name


def _is_eval(call: cst.Call) -> bool:
    if not isinstance(call.func, cst.Attribute):
        return False
    if callee_name(call) == "eval":
        return not call.args
    if callee_name(call) == "train":  # model.train(False) means eval mode
        mode = argument(call, "mode", 0)
        return mode is not None and isinstance(mode.value, cst.Name) and mode.value.value == "False"
    return False


class MissingEvalMode(Operator):
    id = "missing-eval-mode"
    summary = "Delete `model.eval()` (or `model.train(False)`) before evaluation."
    examples = (
        Example(
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",
            ("def evaluate(model, loader):\n"
             "    with torch.no_grad():\n"
             "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",),
        ),
        Example(
            "self.model.train(False)\nscore = run(self.model)\n",
            ("score = run(self.model)\n",),
        ),
    )
    untouched = (
        "result = eval('1 + 1')\n",
        "model.train()\n",
        "model.eval(deep=True)\n",
    )

    def changes(self, source, training):
        return deleted_calls(source, _is_eval, "removed `{code}`: evaluation runs in training mode")
