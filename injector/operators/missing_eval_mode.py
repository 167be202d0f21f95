from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator, removed_mode_switches
from injector.patterns import (
    argument,
    callee_name,
    helper_owned,
    is_criterion,
    is_literal_bool,
    only_times_model,
    sets_mode,
)


def _is_eval(call: cst.Call) -> bool:
    if not isinstance(call.func, cst.Attribute) or is_criterion(call.func.value):
        return False
    if callee_name(call) == "eval":
        return not call.args
    if callee_name(call) == "train":  # model.train(False) means eval mode
        mode = argument(call, "mode", 0)
        return mode is not None and isinstance(mode.value, cst.Name) and mode.value.value == "False"
    return False


class MissingEvalMode(Operator):
    id = "missing-eval-mode"
    summary = (
        "Delete `model.eval()` (or `model.train(False)`, `model = model.eval()`, a helper's "
        "`set_training(False)`) before evaluation, or make `model.train(flag)` never switch to eval."
    )
    examples = (
        Example(
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",
            (
                "def evaluate(model, loader):\n"
                "    with torch.no_grad():\n"
                "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",
            ),
        ),
        Example(
            "self.model.train(False)\nscore = run(self.model)\n",
            ("score = run(self.model)\n",),
        ),
        Example(
            # Through a value: an assignment and a helper of the class.
            "class Runner:\n"
            "    def _set_training(self, flag):\n"
            "        self.model.train(flag)\n"
            "    def validate(self):\n"
            "        self.encoder = self.encoder.eval()\n"
            "        self._set_training(False)\n",
            (
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def validate(self):\n"
                "        self.encoder = self.encoder\n"
                "        self._set_training(False)\n",
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def validate(self):\n"
                "        self.encoder = self.encoder.eval()\n",
            ),
        ),
        Example(
            "for phase in ('train', 'val'):\n    model.train(mode=phase == 'train')\n",
            ("for phase in ('train', 'val'):\n    model.train(mode=True)\n",),
        ),
    )
    untouched = (
        # A criterion's mode: no dropout or batch-norm in it.
        "criterion.eval()\n",
        "result = eval('1 + 1')\n",
        "model.train()\n",
        "model.eval(deep=True)\n",
        # A throughput benchmark: the outputs are dropped, so the mode changes no number.
        "def throughput(model, images):\n    model.eval()\n    for i in range(30):\n        model(images)\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            if sets_mode(call):
                mode = argument(call, "mode", 0)
                if mode is not None and not is_literal_bool(mode.value) and not helper_owned(source, training, call):
                    yield Change(
                        call,
                        (source.replace(mode.value, "True"),),
                        f"`{source.code(call)}` never switches to eval mode",
                    )

        def is_switch(call: cst.Call) -> bool:
            function = source.function_of(call)
            return _is_eval(call) and not (function is not None and only_times_model(source, training, function.body))

        yield from removed_mode_switches(source, training, is_switch, False, "evaluation runs in training mode")
