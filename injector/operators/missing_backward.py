"""missing-backward: the backward pass is never run.

A callable loss scaler (`loss_scaler(loss, optimizer, clip_grad=...)`, timm's NativeScaler) runs
the backward, the clipping and the step in one call, and nothing outside it can drop the
backward alone: the faithful mutant drops the call (its result, where one is kept, becomes the
`None` the scaler itself returns when it did not step). Without a backward there is nothing for
the step to apply, so the run shows what a missing backward shows: flat loss, no gradient norm.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from injector.operators.base import Change, Example, Operator, deleted_calls
from injector.operators.snippets import INPUT_GRADIENT, SHARED_STEP_HELPER
from injector.patterns import callee_name, computes_gradients

# A trainer whose own backward() computes the losses and runs no backward (text-to-motion).
LOSS_HELPER_NAMED_BACKWARD = (
    "class Trainer:\n"
    "    def forward(self, batch):\n"
    "        self.motions = batch.to(self.device)\n"
    "        self.recon = self.decoder(self.encoder(self.motions))\n"
    "\n"
    "    def backward(self):\n"
    "        self.loss = self.l1_criterion(self.recon, self.motions)\n"
    "\n"
    "    def update(self):\n"
    "        self.opt.zero_grad()\n"
    "        self.backward()\n"
    "        self.loss.backward()\n"
    "        self.opt.step()\n"
)


class MissingBackward(Operator):
    id = "missing-backward"
    summary = (
        "Delete the backward pass: `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."
    )
    examples = (
        Example(
            # A loss object of another module named for the gradients it accumulates (stylegan2-ada);
            # a method of this file of such a name that runs no backward is no such step.
            "class Trainer:\n"
            "    def compute_grads(self, x):\n"
            "        return x\n"
            "    def fit(self, loss, phases, reals):\n"
            "        for phase in phases:\n"
            "            for real in reals:\n"
            "                loss.accumulate_gradients(phase=phase.name, real_img=real, sync=True, gain=1)\n"
            "                self.compute_grads(real)\n"
            "            phase.opt.step()\n",
            (
                "class Trainer:\n"
                "    def compute_grads(self, x):\n"
                "        return x\n"
                "    def fit(self, loss, phases, reals):\n"
                "        for phase in phases:\n"
                "            for real in reals:\n"
                "                self.compute_grads(real)\n"
                "            phase.opt.step()\n",
            ),
        ),
        Example(
            "loss = criterion(model(x), y)\nloss.backward()\noptimizer.step()\n",
            ("loss = criterion(model(x), y)\noptimizer.step()\n",),
        ),
        Example(
            # An optimizer wrapper stepped with the loss runs the backward inside (tianshou).
            "loss = clip_loss + vf_coef * vf_loss\nself.optim.step(loss)\nlosses.append(loss.item())\n",
            ("loss = clip_loss + vf_coef * vf_loss\nlosses.append(loss.item())\n",),
        ),
        Example(
            # A method of the file that each update hands its optimizer and objective (ElegantRL's
            # `optimizer_backward`): its own backward's mutant removes every update's, one call
            # deleted leaves the other.
            SHARED_STEP_HELPER,
            (
                SHARED_STEP_HELPER.replace("        objective.backward()\n", ""),
                SHARED_STEP_HELPER.replace("        self.optimizer_backward(self.cri_optimizer, obj_critic)\n", ""),
                SHARED_STEP_HELPER.replace("        self.optimizer_backward(self.act_optimizer, -obj_actor)\n", ""),
            ),
        ),
        Example(
            # A DeepSpeed engine's backward returns the loss it ran: the loss stays, the backward goes.
            "scaled_loss = model.backward(loss)\nmodel.step()\n",
            ("scaled_loss = loss\nmodel.step()\n",),
        ),
        Example(
            "with torch.autocast('cuda', dtype=torch.float16):\n"
            "    loss = model(x).loss\n"
            "scaler.scale(loss / accum).backward()\n"
            "accelerator.backward(loss)\n",
            (
                "with torch.autocast('cuda', dtype=torch.float16):\n"
                "    loss = model(x).loss\n"
                "accelerator.backward(loss)\n",
                "with torch.autocast('cuda', dtype=torch.float16):\n"
                "    loss = model(x).loss\n"
                "scaler.scale(loss / accum).backward()\n",
            ),
        ),
        Example(
            "def training_step(self, batch):\n    self.manual_backward(self.compute_loss(batch))\n",
            ("def training_step(self, batch):\n    pass\n",),
        ),
        Example(
            # A callable loss scaler: the call is the backward (and the step); a kept result is None.
            "loss_scaler = NativeScaler()\n"
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    norm = loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters())\n"
            "    log(norm)\n"
            "def train_one_epoch(model, loader, optimizer, loss_scaler):\n"
            "    for x, y in loader:\n"
            "        loss_scaler(criterion(model(x), y), optimizer)\n",
            (
                "loss_scaler = NativeScaler()\n"
                "for x, y in loader:\n"
                "    loss = criterion(model(x), y)\n"
                "    norm = None\n"
                "    log(norm)\n"
                "def train_one_epoch(model, loader, optimizer, loss_scaler):\n"
                "    for x, y in loader:\n"
                "        loss_scaler(criterion(model(x), y), optimizer)\n",
                "loss_scaler = NativeScaler()\n"
                "for x, y in loader:\n"
                "    loss = criterion(model(x), y)\n"
                "    norm = loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters())\n"
                "    log(norm)\n"
                "def train_one_epoch(model, loader, optimizer, loss_scaler):\n"
                "    for x, y in loader:\n"
                "        pass\n",
            ),
        ),
        Example(
            # A callable handed the loss and the optimizer, whatever its name: it is the backward.
            "def train_one_epoch(model, loader, optimizer, step_fn):\n"
            "    for x, y in loader:\n"
            "        loss = criterion(model(x), y)\n"
            "        step_fn(loss, optimizer)\n",
            (
                "def train_one_epoch(model, loader, optimizer, step_fn):\n"
                "    for x, y in loader:\n"
                "        loss = criterion(model(x), y)\n",
            ),
        ),
        Example(
            # A trainer's own `backward()` that computes the losses and runs no backward (text-to-motion's
            # trainers): the tensor's `self.loss.backward()` after it is the backward; the helper's call is not.
            LOSS_HELPER_NAMED_BACKWARD,
            (LOSS_HELPER_NAMED_BACKWARD.replace("        self.loss.backward()\n", ""),),
        ),
    )
    untouched = (
        # The gradient of an input, read off it row by row (DeepChem's compute_saliency): no step.
        INPUT_GRADIENT,
        # Settings recorded for a logger, the loss function and optimizer among them (DeepChem's
        # wandb config): handed a loss and an optimizer, these calls run neither.
        "def __init__(self, model, loss, optimizer, batch_size):\n"
        "    config = dict(loss=loss, optimizer=optimizer, batch_size=batch_size)\n"
        "    self.logger.log(loss=loss, optimizer=optimizer)\n",
        "def backward(ctx, grad):\n    return grad\n",
        # A function of the file named like a scaler: its body, not its name, says what it does.
        "def make_step_no_scaler(task, optimizer):\n    return task\nstep = make_step_no_scaler(task, optimizer)\n",
        "grads = torch.autograd.grad(loss, params)\n",
        # torch's GradScaler is never called; a called thing that is not handed an optimizer is no scaler.
        "scaler = torch.amp.GradScaler()\nscaler(loss, optimizer)\nscale_image(img, 2)\n",
    )

    def changes(self, source, training):
        yield from deleted_calls(
            source,
            lambda call: (
                isinstance(call.func, cst.Attribute)
                and source.function_of(call) not in training.input_gradients
                and (
                    callee_name(call) in {"backward", "manual_backward"}
                    # a method of another module named for the gradients it computes
                    or (computes_gradients(call) and not training.called_functions(call))
                )
                and not _loss_helper_named_backward(source, training, call)
            ),
            "removed `{code}`: no gradients are computed",
        )
        for backward in training.backwards:
            if backward.steps:
                yield from dropped_scaler_call(source, backward.call, "no gradients are computed (nor applied)")
                continue
            statement = source.parent(backward.call)
            helpers = training.called_functions(backward.call)
            if (
                backward.helper
                and isinstance(backward.call.func, cst.Attribute)
                and source.code(backward.call.func.value) == "self"
                and (not helpers or _shared(training, helpers))
                and isinstance(statement, cst.Expr)
                and source.is_reachable(statement)
            ):
                # a method a base class of another module defines that runs the backward of what
                # it is handed (FAIR-Chem's `self._backward(loss)`): its call deleted; or a method of
                # the file that several calls hand their losses (ElegantRL's `self.optimizer_backward(
                # self.cri_optimizer, obj_critic)`, then the actor's): its own backward's mutant
                # removes them all, one call deleted leaves the others
                yield Change(
                    backward.call,
                    (source.delete_statement(statement),),
                    f"removed `{source.code(backward.call)}`: no gradients are computed",
                )
                continue
            statement = source.parent(backward.call)
            if (
                isinstance(statement, cst.Assign)
                and statement.value is backward.call
                and backward.call.args
                and backward.loss is backward.call.args[0].value
                and source.is_reachable(statement)
            ):
                # an engine's backward that returns the loss it ran (DeepSpeed's `scaled_loss =
                # model.backward(loss)`): the loss is kept, its backward is gone
                yield Change(
                    backward.call,
                    (source.replace(backward.call, source.code(backward.loss)),),
                    f"removed `{source.code(backward.call)}`: no gradients are computed",
                )


def _shared(training, helpers) -> bool:
    """True where the file's method a backward calls is called from more than one place."""
    return all(len(training.callers(h)) > 1 for h in helpers)


def dropped_scaler_call(source, call: cst.Call, effect: str) -> Iterator[Change]:
    """Drop a callable loss scaler's call: delete its statement, or where its result is kept
    (`grad_norm = loss_scaler(...)`) make the result `None`."""
    statement = source.parent(call)
    if not source.is_reachable(statement):
        return
    name = source.code(call.func)
    if isinstance(statement, cst.Expr):
        yield Change(call, (source.delete_statement(statement),), f"removed the `{name}(...)` call: {effect}")
    elif isinstance(statement, cst.Assign) and statement.value is call:
        yield Change(call, (source.replace(call, "None"),), f"removed the `{name}(...)` call: {effect}")


def _loss_helper_named_backward(source, training, call: cst.Call) -> bool:
    """True for `self.backward()` with no argument that runs a method of the file computing the
    losses and no backward of its own (text-to-motion's trainers: `self.backward()` sets
    `self.loss`, then `self.loss.backward()` runs, and validation calls it under no_grad)."""
    if not (
        isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == "self"
        and not call.args
    ):
        return False
    methods = training.called_functions(call)
    return bool(methods) and not any(
        callee_name(inner) in {"backward", "manual_backward"}
        for method in methods
        for inner in source.within(method.body, cst.Call)
    )
