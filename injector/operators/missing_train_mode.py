from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator, removed_mode_switches
from injector.patterns import argument, helper_owned, is_literal_bool, sets_mode


def _is_train(call: cst.Call) -> bool:
    if not sets_mode(call):
        return False  # `trainer.train()` runs a whole training, it does not set a mode
    mode = argument(call, "mode", 0)
    return mode is None or is_literal_bool(mode.value, True)


def _train_by_value(call: cst.Call) -> cst.Arg | None:
    """The argument of `module.train(training)`: the mode comes from a value."""
    if not sets_mode(call):
        return None
    mode = argument(call, "mode", 0)
    return None if mode is None or is_literal_bool(mode.value) else mode


class MissingTrainMode(Operator):
    id = "missing-train-mode"
    summary = ("Delete `model.train()` (also `model = model.train()` and a helper's `set_training(True)`), "
               "or make `model.train(flag)` never switch to training, so training after the first "
               "evaluation runs in eval mode.")
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
        Example(
            # Through a value: the mode argument, an assignment, a helper of the class.
            "class Runner:\n"
            "    def _set_training(self, flag):\n"
            "        self.model.train(flag)\n"
            "    def run(self, phase):\n"
            "        self.encoder = self.encoder.train()\n"
            "        self._set_training(True)\n",
            (             "class Runner:\n"
             "    def _set_training(self, flag):\n"
             "        self.model.train(flag)\n"
             "    def run(self, phase):\n"
             "        self.encoder = self.encoder\n"
             "        self._set_training(True)\n",
             "class Runner:\n"
             "    def _set_training(self, flag):\n"
             "        self.model.train(flag)\n"
             "    def run(self, phase):\n"
             "        self.encoder = self.encoder.train()\n"),
        ),
        Example(
            "for phase in ('train', 'val'):\n    model.train(mode=phase == 'train')\n",
            ("for phase in ('train', 'val'):\n    model.train(mode=False)\n",),
        ),
    )
    untouched = (
        "trainer.train()\n",
        "model.train(False)\n",
        "train(model)\n",
        "recipe.train()\n",
        "class R:\n    def _set_training(self, flag):\n        self.model.train(flag)\n"
        "    def evaluate(self):\n        self._set_training(False)\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            mode = _train_by_value(call)
            if mode is not None and not helper_owned(source, training, call):
                yield Change(call, (source.replace(mode.value, "False"),),
                             f"`{source.code(call)}` never switches to training mode")
        yield from removed_mode_switches(source, training, _is_train, True, "training continues in eval mode")
