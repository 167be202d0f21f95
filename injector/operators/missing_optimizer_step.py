"""missing-optimizer-step: the optimizer never applies the gradients.

A callable loss scaler (`loss_scaler(loss, optimizer, ...)`, timm's NativeScaler) takes the step
inside the call, after the backward. The faithful mutant keeps the backward and only stops the
step: the scaler's own switch for it set to `False` (`update_grad=` in Swin's scaler,
`need_update=` in timm's, or the like-named parameter of a scaler class of the file); where the
call has no such switch, the optimizer's `step` is made a no-op just before the call, which is
what the scaler ends up calling.
"""

from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator, deleted_calls, inherited_method
from injector.operators.snippets import (
    AUDIOTOOLS_STEP,
    ENGINE_CLOSURE_STEP,
    LBFGS_STEP,
    MODEL_OWN_UPDATE,
    OPTIMIZERS_OBJECT,
    PYRO_SVI_STEP,
    TRIAL_LIBRARY,
)
from injector.patterns import (
    TWO_PHASE_UPDATES,
    argument,
    callee_name,
    dotted,
    enclosing_class,
    handed_the_parameters,
    is_literal_bool,
    last_name,
    names_a_model,
    with_keyword,
)
from injector.source import walk_children

STEP_SWITCH_WORDS = ("update", "step")


# Words of a helper that is handed the optimizer for something other than updating with it.
_NOT_AN_UPDATE = frozenset({"lr", "zero", "grad", "save", "load", "checkpoint", "log", "state", "sharded", "edges"})


def _step_helper(source, training, call: cst.Call) -> bool:
    """True for a helper handed the optimizer (or a list of them) after the step's backward and
    named for the update: score_sde's `optimize_fn(optimizer, model.parameters(), step=...)`,
    a trainer's `self.step([self.opt_encoder, self.opt_decoder])`. Deleting the call leaves
    every parameter it would update where it was. A helper of the file whose own step has a
    mutant still gets this one: deleting one call leaves the other callers' steps (t2m's four
    trainers, each calling its own `self.step([...])`)."""
    name = (callee_name(call) or "").lower()
    words = set(name.split("_"))
    if not ({"step", "update"} & words or "optim" in name) or "sched" in name or words & _NOT_AN_UPDATE:
        return False
    if _project_step(source, training, call):
        return True
    if isinstance(call.func, cst.Attribute) and training.role(call.func.value) is not None:
        return False  # an optimizer's, a scaler's or a scheduler's own method
    handed = [a.value for a in call.args if not a.star]
    handed += [e.value for v in handed if isinstance(v, (cst.List, cst.Tuple)) for e in v.elements]
    if not any(training.role(v) == "optimizer" and not (last_name(v) or "").isupper() for v in handed):
        return False
    function = source.function_of(call)
    return any(
        source.function_of(b.call) is function and source.span(b.call)[1] <= source.span(call)[0]
        for b in training.backwards
    )


def _project_step(source, training, call: cst.Call) -> bool:
    """True for a method of a project object holding the optimizers, called after the step's
    backward, whose body steps them (nerfstudio's `self.optimizers.optimizer_scaler_step_some(
    self.grad_scaler, groups)`, whose body runs `grad_scaler.step(optimizer)`)."""
    found = training.project_method(call)
    if found is None:
        return False
    module, method = found
    if not any(
        callee_name(inner) == "step" and "sched" not in (dotted(inner.func) or "").lower()
        for inner in module.within(method.body, cst.Call)
    ):
        return False
    function = source.function_of(call)
    return any(
        source.function_of(b.call) is function and source.span(b.call)[1] <= source.span(call)[0]
        for b in training.backwards
    )


class MissingOptimizerStep(Operator):
    id = "missing-optimizer-step"
    summary = (
        "Delete `optimizer.step()` / `scaler.step(optimizer)` / `xm.optimizer_step(...)` or a manual "
        "`p.data.add_(p.grad, alpha=-lr)` update, or the call of a helper named for the update that is handed "
        "the optimizer after the backward (`optimize_fn(optimizer, ...)`); scheduler steps are left alone."
    )
    examples = (
        Example(
            # The optimizer a state mapping holds under a named key, stepped with a closure
            # (torchbearer's `state[torchbearer.OPTIMIZER].step(lambda: self.closure(state))`).
            TRIAL_LIBRARY,
            (
                TRIAL_LIBRARY.replace(
                    "        for batch in state[torchbearer.GENERATOR]:\n"
                    "            state[torchbearer.OPTIMIZER].step(lambda: self.closure(state))\n",
                    "        for batch in state[torchbearer.GENERATOR]:\n            pass\n",
                ),
            ),
        ),
        Example(
            # An engine that takes the loss steps the optimizer it is handed (DAC over audiotools).
            AUDIOTOOLS_STEP,
            (AUDIOTOOLS_STEP.replace("    accel.step(state.optimizer_g)\n", ""),),
        ),
        Example(
            # A project object holding the optimizers, stepping some through the scaler (nerfstudio's Optimizers).
            OPTIMIZERS_OBJECT,
            (
                OPTIMIZERS_OBJECT.replace(
                    "            grad_scaler.step(self.optimizers[group])\n", "            pass\n"
                ),
                OPTIMIZERS_OBJECT.replace(
                    '        self.optimizers.optimizer_scaler_step_some(self.grad_scaler, ["fields"])\n', ""
                ),
            ),
        ),
        Example(
            # A closure step whose loss is kept (MACE's LBFGS): the closure still runs, nothing is updated.
            LBFGS_STEP,
            (LBFGS_STEP.replace("    loss = optimizer.step(closure)\n", "    loss = closure()\n"),),
        ),
        Example(
            # The optimizers a trainer holds in a dict, stepped in a loop over its items.
            "class Trainer:\n"
            "    def step_all(self):\n"
            "        for k, v in self.optimizers.items():\n"
            "            v.step()\n"
            "\n"
            "    def fit(self, loader):\n"
            "        for batch in loader:\n"
            "            self.loss(batch).backward()\n"
            "            self.step_all()\n",
            (
                "class Trainer:\n"
                "    def step_all(self):\n"
                "        for k, v in self.optimizers.items():\n"
                "            pass\n"
                "\n"
                "    def fit(self, loader):\n"
                "        for batch in loader:\n"
                "            self.loss(batch).backward()\n"
                "            self.step_all()\n",
            ),
        ),
        Example(
            "loss.backward()\nopt.step()\nscheduler.step()\n",
            ("loss.backward()\nscheduler.step()\n",),
        ),
        Example(
            "if (i + 1) % accum == 0:\n    scaler.step(self.optimizer)\n    scaler.update()\n",
            ("if (i + 1) % accum == 0:\n    scaler.update()\n",),
        ),
        Example(
            "d_opt = torch.optim.Adam(d.parameters())\nfor x in data:\n    optimizers[1].step()\n    d_opt.step()\n",
            (
                "d_opt = torch.optim.Adam(d.parameters())\nfor x in data:\n    d_opt.step()\n",
                "d_opt = torch.optim.Adam(d.parameters())\nfor x in data:\n    optimizers[1].step()\n",
            ),
        ),
        Example(
            # XLA's step, and a hand-written SGD update (the optimizer step of code without one).
            "xm.optimizer_step(optimizer)\n"
            "with torch.no_grad():\n"
            "    for p in model.parameters():\n"
            "        p.data.add_(p.grad, alpha=-lr)\n",
            (
                "with torch.no_grad():\n    for p in model.parameters():\n        p.data.add_(p.grad, alpha=-lr)\n",
                "xm.optimizer_step(optimizer)\nwith torch.no_grad():\n    for p in model.parameters():\n        pass\n",
            ),
        ),
        Example(
            # A two-phase optimizer (sharpness-aware minimisation): its second step is the update,
            # inside its own closure-taking `step` too; the first only climbs to the perturbed point.
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.first_step(zero_grad=True)\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.second_step(zero_grad=True)\n"
            "class SAM(torch.optim.Optimizer):\n"
            "    def step(self, closure=None):\n"
            "        self.first_step(zero_grad=True)\n"
            "        closure()\n"
            "        self.second_step()\n",
            (
                "for x, y in loader:\n"
                "    criterion(model(x), y).backward()\n"
                "    optimizer.first_step(zero_grad=True)\n"
                "    criterion(model(x), y).backward()\n"
                "class SAM(torch.optim.Optimizer):\n"
                "    def step(self, closure=None):\n"
                "        self.first_step(zero_grad=True)\n"
                "        closure()\n"
                "        self.second_step()\n",
                "for x, y in loader:\n"
                "    criterion(model(x), y).backward()\n"
                "    optimizer.first_step(zero_grad=True)\n"
                "    criterion(model(x), y).backward()\n"
                "    optimizer.second_step(zero_grad=True)\n"
                "class SAM(torch.optim.Optimizer):\n"
                "    def step(self, closure=None):\n"
                "        self.first_step(zero_grad=True)\n"
                "        closure()\n",
            ),
        ),
        Example(
            # An engine that takes the loss takes the optimizer step too (DeepSpeed).
            "model_engine.backward(loss)\nmodel_engine.step()\n",
            ("model_engine.backward(loss)\n",),
        ),
        Example(
            # A callable loss scaler: its step switch turned off, or the step made a no-op.
            "loss_scaler = NativeScaler()\n"
            "for i, (x, y) in enumerate(loader):\n"
            "    norm = loss_scaler(loss_fn(model(x), y), optimizer, update_grad=(i + 1) % accum == 0)\n"
            "    loss_scaler(loss_fn(model(x), y), self.opt, clip_grad=1.0)\n",
            (
                "loss_scaler = NativeScaler()\n"
                "for i, (x, y) in enumerate(loader):\n"
                "    norm = loss_scaler(loss_fn(model(x), y), optimizer, update_grad=False)\n"
                "    loss_scaler(loss_fn(model(x), y), self.opt, clip_grad=1.0)\n",
                "loss_scaler = NativeScaler()\n"
                "for i, (x, y) in enumerate(loader):\n"
                "    norm = loss_scaler(loss_fn(model(x), y), optimizer, update_grad=(i + 1) % accum == 0)\n"
                "    self.opt.step = lambda *args, **kwargs: None\n"
                "    loss_scaler(loss_fn(model(x), y), self.opt, clip_grad=1.0)\n",
            ),
        ),
        Example(
            # A scaler class of the file: its `__call__` names the switch.
            "class Scaler:\n"
            "    def __call__(self, loss, optimizer, need_update=True):\n"
            "        self._scaler.scale(loss).backward()\n"
            "        if need_update:\n"
            "            self._scaler.step(optimizer)\n"
            "scaler = Scaler()\n"
            "scaler(loss, optimizer)\n",
            (
                "class Scaler:\n"
                "    def __call__(self, loss, optimizer, need_update=True):\n"
                "        self._scaler.scale(loss).backward()\n"
                "        if need_update:\n"
                "            pass\n"
                "scaler = Scaler()\n"
                "scaler(loss, optimizer)\n",
                "class Scaler:\n"
                "    def __call__(self, loss, optimizer, need_update=True):\n"
                "        self._scaler.scale(loss).backward()\n"
                "        if need_update:\n"
                "            self._scaler.step(optimizer)\n"
                "scaler = Scaler()\n"
                "scaler(loss, optimizer, need_update=False)\n",
            ),
        ),
        Example(
            # FastSpeech's wrapper that writes the rate into the groups, then steps Adam: a
            # scheduled optimizer (the word that comes last names it), in either branch
            "scheduled_optim = ScheduledOptim(optimizer, hp.decoder_dim, hp.n_warm_up_step, args.restore_step)\n"
            "for i, batchs in enumerate(training_loader):\n"
            "    for j, db in enumerate(batchs):\n"
            "        scheduled_optim.zero_grad()\n"
            '        loss = criterion(model(db["text"]), db["mel_target"])\n'
            "        loss.backward()\n"
            "        if args.frozen_learning_rate:\n"
            "            scheduled_optim.step_and_update_lr_frozen(args.learning_rate_frozen)\n"
            "        else:\n"
            "            scheduled_optim.step_and_update_lr()\n",
            (
                "scheduled_optim = ScheduledOptim(optimizer, hp.decoder_dim, hp.n_warm_up_step, args.restore_step)\n"
                "for i, batchs in enumerate(training_loader):\n"
                "    for j, db in enumerate(batchs):\n"
                "        scheduled_optim.zero_grad()\n"
                '        loss = criterion(model(db["text"]), db["mel_target"])\n'
                "        loss.backward()\n"
                "        if args.frozen_learning_rate:\n"
                "            pass\n"
                "        else:\n"
                "            scheduled_optim.step_and_update_lr()\n",
                "scheduled_optim = ScheduledOptim(optimizer, hp.decoder_dim, hp.n_warm_up_step, args.restore_step)\n"
                "for i, batchs in enumerate(training_loader):\n"
                "    for j, db in enumerate(batchs):\n"
                "        scheduled_optim.zero_grad()\n"
                '        loss = criterion(model(db["text"]), db["mel_target"])\n'
                "        loss.backward()\n"
                "        if args.frozen_learning_rate:\n"
                "            scheduled_optim.step_and_update_lr_frozen(args.learning_rate_frozen)\n"
                "        else:\n"
                "            pass\n",
            ),
        ),
        Example(
            # A helper named for the update that is handed the optimizer after the backward (score_sde's
            # `optimize_fn`, passed in): deleted, nothing is stepped.
            "def train_step(state, batch, optimize_fn):\n"
            "    model, optimizer = state['model'], state['optimizer']\n"
            "    optimizer.zero_grad()\n"
            "    loss = model(batch).mean()\n"
            "    loss.backward()\n"
            "    optimize_fn(optimizer, model.parameters(), step=state['step'])\n",
            (
                "def train_step(state, batch, optimize_fn):\n"
                "    model, optimizer = state['model'], state['optimizer']\n"
                "    optimizer.zero_grad()\n"
                "    loss = model(batch).mean()\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A step whose success a test reads (DeBERTa's fp16 optimizer retries after an overflow).
            "for batch in loader:\n"
            "    while True:\n"
            "        optimizer.zero_grad()\n"
            "        loss_scale, _ = optimizer.backward(model(batch).mean())\n"
            "        if not optimizer.step(bs_scale, loss_scale):\n"
            "            continue\n"
            "        break\n",
            (
                "for batch in loader:\n"
                "    while True:\n"
                "        optimizer.zero_grad()\n"
                "        loss_scale, _ = optimizer.backward(model(batch).mean())\n"
                "        if not True:\n"
                "            continue\n"
                "        break\n",
            ),
        ),
        Example(
            # An optimizer wrapper called with the parameters (Pyro's SVI.step).
            PYRO_SVI_STEP,
            (PYRO_SVI_STEP.replace("        self.optim(params)\n", ""),),
        ),
        Example(
            # An engine's step handed the optimizer and its closure (Ludwig's L-BFGS path).
            ENGINE_CLOSURE_STEP,
            (ENGINE_CLOSURE_STEP.replace("        self.distributed.step(self.optimizer, closure)\n", ""),),
        ),
        Example(
            # The model's own update after its backward, in a loop that steps no optimizer (DGL-KE).
            MODEL_OWN_UPDATE,
            (MODEL_OWN_UPDATE.replace("        model.update(gpu_id)\n", ""),),
        ),
    )
    untouched = (
        # A helper handed the optimizer after the backward to save it, not to update with it.
        "def train_step(model, optimizer, batch):\n"
        "    model(batch).mean().backward()\n"
        "    save_optimizer_checkpoint(model, optimizer, epoch=0)\n",
        # Settings recorded for a logger, the loss function and optimizer among them (DeepChem's
        # wandb config): handed a loss and an optimizer, these calls run neither.
        "def __init__(self, model, loss, optimizer, batch_size):\n"
        "    config = dict(loss=loss, optimizer=optimizer, batch_size=batch_size)\n"
        "    self.logger.log(loss=loss, optimizer=optimizer)\n",
        "lr_scheduler.step()\n",
        "total.add_(x, alpha=2)\n",
        "env.step(action)\n",
        "sched.step(val_loss)\n",
        "model_engine.step()\n",
        # a second step of something that is no optimizer
        "env.second_step(action)\n",
        # Already told not to step.
        "loss_scaler = NativeScaler()\nloss_scaler(loss, optimizer, update_grad=False)\n",
    )

    def changes(self, source, training):
        def wanted(call: cst.Call) -> bool:
            if not isinstance(call.func, cst.Attribute):
                return False
            name = call.func.attr.value
            if name == "step" or name.startswith("step_") or name in TWO_PHASE_UPDATES:
                return call in training.steps
            if name == "optimizer_step":
                return True  # torch_xla's `xm.optimizer_step(optimizer)`
            if name in ("optim", "optimizer") and handed_the_parameters(source, call):
                return True  # an optimizer wrapper called with the parameters (Pyro's `self.optim(params)`)
            if _model_update(source, training, call):
                return True  # the model's own update after the backward (DGL-KE's `model.update(gpu_id)`)
            # A manual update: `p.data.add_(p.grad, alpha=-lr)`, `p.sub_(lr * p.grad)`.
            return name in {"add_", "sub_"} and any(".grad" in source.code(a.value) for a in call.args)

        yield from deleted_calls(source, wanted, "removed `{code}`: the parameters never change")
        yield from deleted_calls(
            source,
            lambda call: not wanted(call) and _step_helper(source, training, call),
            "removed `{code}`: the optimizer is never stepped",
        )
        for call in training.steps:
            # a step whose result a test reads (DeBERTa's fp16 optimizer: `if not
            # self.optimizer.step(bs_scale, loss_scale):` retries after an overflow): skipped, it
            # reports success
            test = source.parent(call)
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test = source.parent(test)
            if isinstance(test, (cst.If, cst.While)) and callee_name(call) == "step" and source.is_reachable(test):
                yield Change(
                    call,
                    (source.replace(call, "True"),),
                    f"`{source.code(call)}` never runs: the parameters never change",
                )
        for call in training.steps:
            # a step handed a closure whose loss is kept (LBFGS: `loss = optimizer.step(closure)`):
            # the closure still runs (forward, backward), the parameters never change
            closure = argument(call, "closure", 0)
            holder = source.parent(call)
            if (
                closure is not None
                and len(call.args) == 1
                and (
                    isinstance(closure.value, cst.Lambda)
                    or (
                        isinstance(closure.value, cst.Name)
                        and any(f.name.value == closure.value.value for f in source.nodes(cst.FunctionDef))
                    )
                )
                and callee_name(call) == "step"
                and isinstance(holder, cst.Assign)
                and holder.value is call
                and source.is_reachable(holder)
            ):
                code = source.code(closure.value)
                yield Change(
                    call,
                    (source.replace(call, f"({code})()" if not isinstance(closure.value, cst.Name) else f"{code}()"),),
                    f"`{source.code(call)}` only runs its closure: the parameters never change",
                )
        yield from deleted_calls(
            source,
            lambda call: _inherited_step(source, training, call),
            "removed `{code}`: the optimizer is never stepped",
        )
        for backward in training.backwards:
            if backward.steps and source.is_reachable(source.parent(backward.call)):
                yield from self._scaler_without_step(source, training, backward.call)

    @staticmethod
    def _scaler_without_step(source, training, call: cst.Call):
        effect = "the gradients are computed but the parameters never change"
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if any(w in keyword.lower() for w in STEP_SWITCH_WORDS):
                if not is_literal_bool(arg.value, False):
                    yield Change(call, (source.replace(arg.value, "False"),), f"`{keyword}=False`: {effect}")
                return
        method = training.scaler_classes.get(training.constructors.get(dotted(call.func) or "", ""))
        if method is not None:
            for param in method.params.params:
                if any(w in param.name.value.lower() for w in STEP_SWITCH_WORDS):
                    new = with_keyword(call, param.name.value, cst.Name("False"))
                    yield Change(call, (source.replace_node(call, new),), f"`{param.name.value}=False`: {effect}")
                    return
        optimizer = argument(call, "optimizer", 1)
        name = dotted(optimizer.value) if optimizer is not None else None
        if name is not None:
            yield Change(
                call,
                (source.insert_before(source.parent(call), [f"{name}.step = lambda *args, **kwargs: None"]),),
                f"`{name}.step` does nothing: {effect}",
            )


def _inherited_step(source, training, call: cst.Call) -> bool:
    """True for `self.m()` where `m` is a method the class inherits from a base class another
    module of the project defines, and that steps an optimizer (efficientvit's `Trainer.after_step`,
    which runs `self.scaler.step(self.optimizer)`)."""
    if not (isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self" and not call.args):
        return False
    owner = enclosing_class(source, call)
    if owner is None or training.called_functions(call):
        return False  # a method of this file: its own steps get their mutants
    method = inherited_method(training, source, owner, call.func.attr.value, 0)
    return method is not None and any(
        isinstance(c, cst.Call)
        and callee_name(c) == "step"
        and isinstance(c.func, cst.Attribute)
        and any(w in (last_name(c.func.value) or "").lower() for w in ("optim", "scaler"))
        for c in walk_children(method.body)
    )


_MODEL_UPDATES = frozenset({"update", "push_gradient", "apply_gradients", "update_parameters"})


def _model_update(source, training, call: cst.Call) -> bool:
    """True for a model's own update after a backward in a loop that steps no optimizer (DGL-KE's
    `loss.backward()`, then `model.update(gpu_id)`, its sparse embeddings' hand-written Adagrad, or
    `model.push_gradient(client)` to the kvstore servers that update them)."""
    if not (
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in _MODEL_UPDATES
        and names_a_model(call.func.value)
        and not any(w in (last_name(call.func.value) or "").lower() for w in ("ema", "avg", "average", "swa"))
        and not any(names_a_model(a.value) for a in call.args)  # an average updated from the model (DeiT's EMA)
    ):
        return False
    loop = source.enclosing(call, (cst.For, cst.While))
    if loop is None:
        return False
    calls = set(source.within(loop, cst.Call))
    if any(step in calls for step in training.steps):
        return False
    start = source.span(call)[0]
    return any(
        source.span(b.call)[0] < start and source.enclosing(b.call, (cst.For, cst.While)) is loop
        for b in training.backwards
    )
