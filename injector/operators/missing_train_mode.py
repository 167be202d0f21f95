from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import argument, callee_name, last_name


def _is_train(call: cst.Call) -> bool:
    if not isinstance(call.func, cst.Attribute) or callee_name(call) != "train":
        return False
    if "trainer" in (last_name(call.func.value) or "").lower():
        return False  # `trainer.train()` runs a whole training, it does not set a mode
    mode = argument(call, "mode", 0)
    return mode is None or (isinstance(mode.value, cst.Name) and mode.value.value == "True")


class MissingTrainMode(Operator):
    id = "missing-train-mode"
    summary = "Delete `model.train()`, so training after the first evaluation runs in eval mode."
    examples = (
        Example(
            "for epoch in range(epochs):\n"
            "    model.train()\n"
            "    train_one_epoch(model, loader)\n"
            "    evaluate(model, val_loader)\n",
            ("for epoch in range(epochs):\n"
             "    train_one_epoch(model, loader)\n"
             "    evaluate(model, val_loader)\n",),
        ),
        Example(
            "def on_epoch_start(self):\n    self.net.train(mode=True)\n",
            ("def on_epoch_start(self):\n    pass\n",),
        ),
    )
    untouched = (
        "trainer.train()\n",
        "model.train(False)\n",
        "train(model)\n",
    )

    def changes(self, source, training):
        return deleted_calls(source, _is_train, "removed `{code}`: training continues in eval mode")
