from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import LOSS_FUNCTIONS, callee_name, dotted, method_on


class DetachedGraph(Operator):
    id = "detached-graph"
    summary = (
        "`.detach()` the model output passed to the loss (or the loss itself when it is not a "
        "loss call, or comes out of a tuple)."
    )
    examples = (
        Example(
            "logits = model(x)\nloss = F.cross_entropy(logits, y)\nloss.backward()\n",
            ("logits = model(x)\nloss = F.cross_entropy(logits.detach(), y)\nloss.backward()\n",),
        ),
        Example(
            "outputs = model(**batch)\nloss = outputs.loss\nscaler.scale(loss).backward()\n",
            ("outputs = model(**batch)\nloss = outputs.loss.detach()\nscaler.scale(loss).backward()\n",),
        ),
        Example(
            "loss = self.criterion(self.net(a) + b, y) / accum\n(loss).backward()\n",
            ("loss = (self.criterion(self.net(a) + b, y) / accum).detach()\n(loss).backward()\n",),
        ),
        Example(
            "def step(self, x, y):\n"
            "    logits, self.loss = self.model(x, y)\n"
            "    self.accelerator.backward(self.loss)\n",
            (
                "def step(self, x, y):\n"
                "    logits, self.loss = self.model(x, y)\n"
                "    self.loss = self.loss.detach()\n"
                "    self.accelerator.backward(self.loss)\n",
            ),
        ),
        Example(
            # Each branch computes the loss its own way: each gets the mutant.
            "out = model(x)\n"
            "if kind == 'eps':\n"
            "    loss = F.mse_loss(out, noise)\n"
            "else:\n"
            "    loss = (w * F.mse_loss(out, x, reduction='none')).mean()\n"
            "    loss = loss.mean()\n"
            "accelerator.backward(loss)\n",
            (
                "out = model(x)\n"
                "if kind == 'eps':\n"
                "    loss = F.mse_loss(out.detach(), noise)\n"
                "else:\n"
                "    loss = (w * F.mse_loss(out, x, reduction='none')).mean()\n"
                "    loss = loss.mean()\n"
                "accelerator.backward(loss)\n",
                "out = model(x)\n"
                "if kind == 'eps':\n"
                "    loss = F.mse_loss(out, noise)\n"
                "else:\n"
                "    loss = (w * F.mse_loss(out, x, reduction='none')).mean().detach()\n"
                "    loss = loss.mean()\n"
                "accelerator.backward(loss)\n",
            ),
        ),
        Example(
            # The loss reaches backward as a parameter of a nested function (timm's train loop).
            "def train_one_epoch(model, loader):\n"
            "    def _forward():\n"
            "        result = task(x, y)\n"
            "        _loss = result['loss']\n"
            "        return _loss, result\n"
            "    def _backward(_loss):\n"
            "        _loss.backward()\n"
            "    loss, result = _forward()\n"
            "    _backward(loss)\n",
            (
                "def train_one_epoch(model, loader):\n"
                "    def _forward():\n"
                "        result = task(x, y)\n"
                "        _loss = result['loss'].detach()\n"
                "        return _loss, result\n"
                "    def _backward(_loss):\n"
                "        _loss.backward()\n"
                "    loss, result = _forward()\n"
                "    _backward(loss)\n",
            ),
        ),
        Example(
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    if accum > 1:\n"
            "        loss = loss / accum\n"
            "    scaled = scaler.scale(loss)\n"
            "    scaled.backward()\n",
            (
                "for x, y in loader:\n"
                "    loss = model(x, y).detach()\n"
                "    if accum > 1:\n"
                "        loss = loss / accum\n"
                "    scaled = scaler.scale(loss)\n"
                "    scaled.backward()\n",
            ),
        ),
        Example(
            # The loss reaches the backward through a helper of the file that runs it.
            "def backward(total_loss, scaler):\n"
            "    if scaler is not None:\n"
            "        scaler.scale(total_loss).backward()\n"
            "    else:\n"
            "        total_loss.backward()\n"
            "for batch in loader:\n"
            "    losses = model(batch)\n"
            "    total_loss = losses['loss']\n"
            "    backward(total_loss, scaler)\n",
            (
                "def backward(total_loss, scaler):\n"
                "    if scaler is not None:\n"
                "        scaler.scale(total_loss).backward()\n"
                "    else:\n"
                "        total_loss.backward()\n"
                "for batch in loader:\n"
                "    losses = model(batch)\n"
                "    total_loss = losses['loss'].detach()\n"
                "    backward(total_loss, scaler)\n",
            ),
        ),
    )
    untouched = (
        "loss.backward()\n",
        "y = model(x).detach()\n",
        # The receiver of `accelerator.backward(loss)` is not the loss.
        "accelerator = Accelerator(cpu=True)\naccelerator.backward(compute())\n",
    )

    def changes(self, source, training):
        for backward in training.backwards:
            for assign in training.loss_alternatives(backward) or [training.loss_assignment(backward)]:
                yield from self._detached(source, training, backward, assign)

    def _detached(self, source, training, backward, assign):
        """The mutant of one assignment that computes the loss."""
        if assign is not None and assign.value is not None:
            targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
            if len(targets) != 1 or isinstance(targets[0], (cst.Tuple, cst.List)):
                name = dotted(backward.loss) if isinstance(backward.loss, (cst.Name, cst.Attribute)) else None
                if name is None:
                    return
                yield Change(
                    assign,
                    (source.insert_after(assign, [f"{name} = {name}.detach()"]),),
                    "the loss is cut off from the model's graph",
                )
                return
            value = assign.value
            if (
                isinstance(value, cst.Call)
                and value.args
                and value.args[0].keyword is None
                and not value.args[0].star
                and self._is_loss(training, value)
            ):
                target = value.args[0].value
            else:
                target = value
            yield Change(
                assign,
                (source.replace(target, method_on(source, target, "detach")),),
                "the loss is cut off from the model's graph",
            )

    @staticmethod
    def _is_loss(training, call: cst.Call) -> bool:
        name = (callee_name(call) or "").lower()
        return (
            name in LOSS_FUNCTIONS or training.role(call.func) == "loss-module" or "loss" in name or "criterion" in name
        )
