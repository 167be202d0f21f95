from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator, deleted_calls
from injector.operators.snippets import (
    HELPER_STEP_TRAINER,
    INPUT_GRADIENT,
    MICROBATCH_TRAINER,
    OPTIMIZERS_OBJECT,
    PYRO_SVI_STEP,
)
from injector.patterns import callee_name, dotted, handed_the_parameters, is_literal_bool


def _zeroed(source, call: cst.Call) -> str:
    """What a zero_grad call zeroes: its receiver (`optimizer.zero_grad()`), or the parameters a
    helper is handed (`zero_grad(self.model_params)`)."""
    if isinstance(call.func, cst.Attribute):
        return source.code(call.func.value)
    return source.code(call.args[0].value) if call.args else ""


_TEST_CLEARS_TOO = (
    "def train(loader, model, criterion, optimizer):\n"
    "    for x, y in loader:\n"
    "        optimizer.zero_grad()\n"
    "        criterion(model(x), y).backward()\n"
    "        optimizer.step()\n"
    "def test(loader, model, criterion):\n"
    "    for x, y in loader:\n"
    "        model.zero_grad()\n"
    "        print(criterion(model(x), y).item())\n"
)
_CLEARED_TWICE = (
    "class Trainer:\n"
    "    def batch_step(self, data, validation=False):\n"
    "        self.optim.zero_grad(set_to_none=True)\n"
    "        out = self.model(data)\n"
    "        if not validation:\n"
    "            loss = self.loss(out, data)\n"
    "            self.optim.zero_grad(set_to_none=True)\n"
    "            loss.backward()\n"
    "            self.optim.step()\n"
    "    def train(self):\n"
    "        for data in self.loader:\n"
    "            self.batch_step(data)\n"
)


_CLEARED_FIRST_AND_AFTER = (
    "for step, (image, gt) in enumerate(loader):\n"
    "    optimizer.zero_grad()\n"
    "    pred = model(image)\n"
    "    loss = criterion(pred, gt) / accum\n"
    "    if (step + 1) % accum == 0:\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "    else:\n"
    "        loss.backward()\n"
)


# A GAN solver's own helper that zeroes both optimizers, called before each backward (StarGAN's
# `reset_grad()`).
RESET_GRAD_SOLVER = (
    "class Solver(object):\n"
    "    def reset_grad(self):\n"
    "        self.g_optimizer.zero_grad()\n"
    "        self.d_optimizer.zero_grad()\n"
    "\n"
    "    def train(self, loader):\n"
    "        for x_real in loader:\n"
    "            d_loss = -torch.mean(self.D(x_real))\n"
    "            self.reset_grad()\n"
    "            d_loss.backward()\n"
    "            self.d_optimizer.step()\n"
)


ZEROING_PPO = (
    "class PPO:\n"
    "    def _set_grads_to_none(self):\n"
    "        for pg in self.optimizer.param_groups:\n"
    '            for p in pg["params"]:\n'
    "                p.grad = None\n"
    "\n"
    "    def update(self, batch):\n"
    "        self._set_grads_to_none()\n"
    "        loss = self.loss_fn(batch)\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)


class MissingZeroGrad(Operator):
    id = "missing-zero-grad"
    summary = "Delete `optimizer.zero_grad()` / `model.zero_grad()`, whatever the receiver and arguments."
    examples = (
        Example(
            "for x, y in loader:\n"
            "    optimizer.zero_grad(set_to_none=True)\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            ("for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    optimizer.step()\n",),
        ),
        Example(
            # A project object holding the optimizers, zeroing some of them (nerfstudio's Optimizers): its method's call too.
            OPTIMIZERS_OBJECT,
            (
                OPTIMIZERS_OBJECT.replace("            self.optimizers[group].zero_grad()\n", "            pass\n"),
                OPTIMIZERS_OBJECT.replace('        self.optimizers.zero_grad_some(["fields"])\n', ""),
            ),
        ),
        Example(
            "def step(self, batch):\n    self.optimizers[0].zero_grad()  # reset\n",
            ("def step(self, batch):\n    pass  # reset\n",),
        ),
        Example(
            # Before the batch loop that zeroes the same optimizer after each update: only the
            # loop's zero_grad matters.
            "optimizer.zero_grad()\n"
            "for x, y in loader:\n"
            "    model(x, y).backward()\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n",
            ("optimizer.zero_grad()\nfor x, y in loader:\n    model(x, y).backward()\n    optimizer.step()\n",),
        ),
        Example(
            # Before a loop that zeroes another optimizer: the only zeroing of this one.
            "g_opt.zero_grad()\n"
            "for x, y in loader:\n"
            "    model(x, y).backward()\n"
            "    d_opt.step()\n"
            "    d_opt.zero_grad()\n",
            (
                "for x, y in loader:\n    model(x, y).backward()\n    d_opt.step()\n    d_opt.zero_grad()\n",
                "g_opt.zero_grad()\nfor x, y in loader:\n    model(x, y).backward()\n    d_opt.step()\n",
            ),
        ),
        Example(
            # Each step ends zeroing the one optimizer it steps, and every backward is in that
            # step: the zero_grad at the top of each epoch clears nothing (the step's does).
            "for epoch in range(epochs):\n"
            "    loss_model.zero_grad()\n"
            "    for x in loader:\n"
            "        loss_model(x).backward()\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n",
            (
                "for epoch in range(epochs):\n"
                "    loss_model.zero_grad()\n"
                "    for x in loader:\n"
                "        loss_model(x).backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # A step that can skip its zero_grad (`continue`): the one before the loop counts.
            "model.zero_grad()\n"
            "for x in loader:\n"
            "    model(x).backward()\n"
            "    if skip(x): continue\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n",
            (
                "for x in loader:\n"
                "    model(x).backward()\n"
                "    if skip(x): continue\n"
                "    optimizer.step()\n"
                "    optimizer.zero_grad()\n",
                "model.zero_grad()\n"
                "for x in loader:\n"
                "    model(x).backward()\n"
                "    if skip(x): continue\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A call of the class's own helper that zeroes every optimizer.
            "class Net:\n"
            "    def _zero_grad_optimizer(self):\n"
            "        for name in self._optimizers:\n"
            "            getattr(self, name + '_').zero_grad()\n"
            "    def step_fn(self):\n"
            "        self._zero_grad_optimizer()\n",
            (
                "class Net:\n"
                "    def _zero_grad_optimizer(self):\n"
                "        for name in self._optimizers:\n"
                "            pass\n"
                "    def step_fn(self):\n"
                "        self._zero_grad_optimizer()\n",
                "class Net:\n"
                "    def _zero_grad_optimizer(self):\n"
                "        for name in self._optimizers:\n"
                "            getattr(self, name + '_').zero_grad()\n"
                "    def step_fn(self):\n"
                "        pass\n",
            ),
        ),
        Example(
            # Gradients cleared by hand, parameter by parameter.
            "def _train_batch(self, X, y):\n"
            "    for param in self.network.parameters():\n"
            "        param.grad = None\n"
            "    self.compute_loss(self.network(X), y).backward()\n",
            (
                "def _train_batch(self, X, y):\n"
                "    for param in self.network.parameters():\n"
                "        pass\n"
                "    self.compute_loss(self.network(X), y).backward()\n",
            ),
        ),
        Example(
            "for p in model.parameters():\n    if p.grad is not None:\n        p.grad.detach_()\n        p.grad.zero_()\n",
            ("for p in model.parameters():\n    if p.grad is not None:\n        pass\n",),
        ),
        Example(
            # A step told by its flag to clear the gradients (sharpness-aware minimisation).
            "for x, y in loader:\n"
            "    loss_fn(model(x), y).backward()\n"
            "    optimizer.first_step(zero_grad=True)\n"
            "    loss_fn(model(x), y).backward()\n"
            "    optimizer.second_step(zero_grad=False)\n",
            (
                "for x, y in loader:\n"
                "    loss_fn(model(x), y).backward()\n"
                "    optimizer.first_step(zero_grad=False)\n"
                "    loss_fn(model(x), y).backward()\n"
                "    optimizer.second_step(zero_grad=False)\n",
            ),
        ),
        Example(
            # A helper that zeroes the parameters it is handed (mixed-precision training code).
            "def forward_backward(self, batch):\n    zero_grad(self.model_params)\n    self.loss(batch).backward()\n",
            ("def forward_backward(self, batch):\n    self.loss(batch).backward()\n",),
        ),
        Example(
            # In a step function that the batch loop calls: the zeroing of that step, although the
            # loop's other branch zeroes the same optimizer itself.
            "def eager_step(batch):\n"
            "    optimizer.zero_grad()\n"
            "    model(batch).backward()\n"
            "    optimizer.step()\n"
            "for batch in loader:\n"
            "    if compiled:\n"
            "        optimizer.zero_grad()\n"
            "        step(batch)\n"
            "    else:\n"
            "        eager_step(batch)\n",
            (
                "def eager_step(batch):\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "for batch in loader:\n"
                "    if compiled:\n"
                "        optimizer.zero_grad()\n"
                "        step(batch)\n"
                "    else:\n"
                "        eager_step(batch)\n",
                "def eager_step(batch):\n"
                "    optimizer.zero_grad()\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "for batch in loader:\n"
                "    if compiled:\n"
                "        step(batch)\n"
                "    else:\n"
                "        eager_step(batch)\n",
            ),
        ),
        Example(
            "if accumulate: model.zero_grad()\n",
            ("if accumulate: pass\n",),
        ),
        Example(
            # The model's and its optimizer's zero_grad before the same backward: deleting one
            # alone changes nothing, so one mutant deletes both.
            "for x, y in loader:\n"
            "    net.zero_grad()\n"
            "    loss = net(x, y)\n"
            "    optimizer.zero_grad()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            ("for x, y in loader:\n    loss = net(x, y)\n    loss.backward()\n    optimizer.step()\n",),
        ),
        Example(
            # Before an accumulation loop whose step follows it: the loop zeroes only when it
            # does not accumulate, so this is the zeroing of every accumulated update.
            "def accumulate(self, batches):\n"
            "    if self.accum > 1:\n"
            "        self.optim.zero_grad()\n"
            "    for batch in batches:\n"
            "        if self.accum == 1:\n"
            "            self.optim.zero_grad()\n"
            "        self.model(batch).backward()\n"
            "    self.optim.step()\n",
            (
                "def accumulate(self, batches):\n"
                "    if self.accum > 1:\n"
                "        pass\n"
                "    for batch in batches:\n"
                "        if self.accum == 1:\n"
                "            self.optim.zero_grad()\n"
                "        self.model(batch).backward()\n"
                "    self.optim.step()\n",
                "def accumulate(self, batches):\n"
                "    if self.accum > 1:\n"
                "        self.optim.zero_grad()\n"
                "    for batch in batches:\n"
                "        if self.accum == 1:\n"
                "            pass\n"
                "        self.model(batch).backward()\n"
                "    self.optim.step()\n",
            ),
        ),
        Example(
            # A step that clears its gradients first makes the clear before an evaluation redundant (OLMo).
            HELPER_STEP_TRAINER,
            (HELPER_STEP_TRAINER.replace("        self.optim.zero_grad(set_to_none=True)\n", "", 1),),
        ),
        Example(
            # Clears at an epoch's edges where every step clears its own gradients after it (SpeechBrain's Brain), and a non-finite gradient dropped: only the clear after the step is a site.
            "class Brain:\n"
            "    def optimizers_step(self):\n"
            "        self.scaler.step(self.optimizer)\n"
            "        self.optimizer.zero_grad(set_to_none=True)\n"
            "    def fit_batch(self, batch):\n"
            "        self.compute_loss(batch).backward()\n"
            "        self.optimizers_step()\n"
            "    def fit_epoch(self, loader):\n"
            "        self.optimizer.zero_grad()\n"
            "        for batch in loader:\n"
            "            self.fit_batch(batch)\n"
            "        self.optimizer.zero_grad(set_to_none=True)\n"
            "    def check_gradients(self):\n"
            "        for param in self.modules.parameters():\n"
            "            if not torch.isfinite(param.grad).all():\n"
            "                param.grad = None\n",
            (
                "class Brain:\n"
                "    def optimizers_step(self):\n"
                "        self.scaler.step(self.optimizer)\n"
                "    def fit_batch(self, batch):\n"
                "        self.compute_loss(batch).backward()\n"
                "        self.optimizers_step()\n"
                "    def fit_epoch(self, loader):\n"
                "        self.optimizer.zero_grad()\n"
                "        for batch in loader:\n"
                "            self.fit_batch(batch)\n"
                "        self.optimizer.zero_grad(set_to_none=True)\n"
                "    def check_gradients(self):\n"
                "        for param in self.modules.parameters():\n"
                "            if not torch.isfinite(param.grad).all():\n"
                "                param.grad = None\n",
            ),
        ),
        Example(
            # Cleared once before an accumulation loop that steps no optimizer (composer's micro-batches);
            # the clear before an out-of-memory retry is redundant with it.
            MICROBATCH_TRAINER,
            (
                MICROBATCH_TRAINER.replace(
                    "        for optimizer in self.state.optimizers:\n            optimizer.zero_grad(set_to_none=True)\n        for self.state",
                    "        for optimizer in self.state.optimizers:\n            pass\n        for self.state",
                ),
            ),
        ),
        Example(
            # A clear in an evaluation loop that runs no backward, where the batch loop clears on
            # every pass (SimCLR's linear evaluation): only the batch loop's clear is a site.
            _TEST_CLEARS_TOO,
            (_TEST_CLEARS_TOO.replace("        optimizer.zero_grad()\n", "", 1),),
        ),
        Example(
            # One optimizer cleared on entry and again before the backward in a block within
            # (NequIP's `batch_step`): either alone is redundant, so the pair is one mutant.
            _CLEARED_TWICE,
            (
                _CLEARED_TWICE.replace("        self.optim.zero_grad(set_to_none=True)\n", "", 1).replace(
                    "            self.optim.zero_grad(set_to_none=True)\n", "", 1
                ),
            ),
        ),
        Example(
            # Cleared first in each pass and again after each branch's step (MedSAM): the clear after
            # the step changes nothing, the next pass clears before its backward; the first one is
            # the site (without it, the accumulation branch's micro-steps keep their gradients).
            _CLEARED_FIRST_AND_AFTER,
            (_CLEARED_FIRST_AND_AFTER.replace("    optimizer.zero_grad()\n    pred", "    pred"),),
        ),
        Example(
            # A helper named for resetting gradients that zeroes both optimizers (StarGAN's
            # `reset_grad()`): each zero_grad in it, and each call of it.
            RESET_GRAD_SOLVER,
            (
                RESET_GRAD_SOLVER.replace("        self.g_optimizer.zero_grad()\n", ""),
                RESET_GRAD_SOLVER.replace("        self.d_optimizer.zero_grad()\n", ""),
                RESET_GRAD_SOLVER.replace("            self.reset_grad()\n", ""),
            ),
        ),
        Example(
            # A helper that sets each parameter's gradient to None by hand (habitat's PPO).
            ZEROING_PPO,
            (ZEROING_PPO.replace("        self._set_grads_to_none()\n        loss", "        loss"),),
        ),
        Example(
            # A library's function that zeroes the parameters' gradients (Pyro's SVI.step).
            PYRO_SVI_STEP,
            (PYRO_SVI_STEP.replace("        pyro.infer.util.zero_grads(params)\n", ""),),
        ),
    )
    untouched = (
        # The gradient of an input, read off it row by row (DeepChem's compute_saliency): no step.
        INPUT_GRADIENT,
        # A helper for clearing gradients: where it is called is the site.
        "def set_grad_none(model, targets):\n"
        "    for n, p in model.named_parameters():\n"
        "        if n in targets:\n"
        "            p.grad = None\n",
        "x = optimizer.zero_grad  # a reference, not a call\n",
        "def f():\n    return\n    optimizer.zero_grad()\n",
        "if False:\n    optimizer.zero_grad()\n",
    )

    def changes(self, source, training):
        in_loops: dict[cst.Call, str] = {}
        looped: dict[str, list] = {}  # what the batch loops that update zero, and those loops
        for loop in training.training_loops:
            updates = _updates(training, loop)
            for call in source.within(loop.body, cst.Call):
                if callee_name(call) == "zero_grad":
                    in_loops[call] = _zeroed(source, call)
                    if updates:
                        looped.setdefault(in_loops[call], []).append(loop)

        step_clears = _clears_in_each_step(source, training) if training.training_loops else set()

        def wanted(call: cst.Call) -> bool:
            if _zeroing_helper(source, training, call):
                return True  # a call of the file's own helper for it (skorch's `self._zero_grad_optimizer()`)
            if callee_name(call) in ("zero_grads", "zero_grad") and handed_the_parameters(source, call):
                return True  # a library's function handed the parameters (Pyro's `zero_grads(params)`)
            if callee_name(call) != "zero_grad" or _cleared_after_each_step(source, training, call):
                return False
            if (
                step_clears
                and call not in step_clears  # (it would be, were it in a step function)
                and not any(source.inside(call, loop.body) for loop in training.training_loops)
            ):
                # a clear between steps (SpeechBrain's `self.zero_grad()` at an epoch's edges,
                # OLMo's before saving or evaluating) where every step clears its own gradients:
                # nothing accumulates
                return False
            if call in in_loops:
                return not _cleared_first_next_pass(source, training, call)
            # Before a batch loop of the same function that zeroes the same optimizer after each
            # update: the gradients are still empty, or were zeroed after the last update, so
            # nothing accumulates. A zero_grad in a step function the loop calls is no such one.
            function = source.function_of(call)
            start = source.span(call)[0]
            return not any(
                source.function_of(loop) is function and start < source.span(loop)[0]
                for loop in looped.get(_zeroed(source, call), ())
            )

        description = "removed `{code}`: gradients now accumulate across steps"
        yield from _cleared_by_hand(source, training, description)
        yield from _cleared_by_flag(source)
        changes = list(deleted_calls(source, wanted, description))
        pairs = _same_gradients(source, training, [c.node for c in changes if isinstance(c.node, cst.Expr)])
        for change in changes:
            if change.node in pairs.values():
                continue  # deleted with its partner
            partner = pairs.get(change.node)
            if partner is None:
                yield change
                continue
            text = f"{source.code(change.node)}` and `{source.code(partner)}"
            yield Change(
                change.node,
                (*change.edits, source.delete_statement(partner)),
                description.format(code=text),
            )


def _clears_in_each_step(source, training) -> set[cst.Call]:
    """The zero_grad calls that clear each step's gradients: in a function that runs a backward
    or an optimizer step itself (outside its loops: OLMo's train_step clears before it), or after
    an optimizer step in the same function (SpeechBrain's optimizers_step, stepping each
    optimizer in a loop over them, clears each after)."""
    found = {call for call in source.nodes(cst.Call) if callee_name(call) == "zero_grad" and training.in_a_step(call)}
    for loop in training.training_loops:
        # a batch loop that clears on every pass before its backward, as a statement of its own
        # body (SimCLR's linear evaluation: `optimizer.zero_grad()` first in each batch)
        if not isinstance(loop.body, cst.IndentedBlock):
            continue
        backwards = [source.span(b.call)[0] for b in training.backwards]
        for line in loop.body.body:
            start, end = source.span(line)
            if not isinstance(line, cst.SimpleStatementLine) or any(start <= at < end for at in backwards):
                break
            found.update(call for call in source.within(line, cst.Call) if callee_name(call) == "zero_grad")
    for call in source.nodes(cst.Call):
        # a clear before an accumulation loop that steps no optimizer (composer's
        # `_train_microbatches` clears, then runs each micro-batch's backward through a method)
        function = source.function_of(call)
        if callee_name(call) != "zero_grad" or function is None:
            continue
        end = source.span(call)[1]
        if any(
            source.function_of(loop) is function and source.span(loop)[0] > end and not training.steps_within(loop)
            for loop in training.training_loops
        ):
            found.add(call)
    for step in training.steps:
        function = source.function_of(step)
        if function is None:
            continue
        end = source.span(step)[1]
        found.update(
            call
            for call in source.within(function.body, cst.Call)
            if callee_name(call) == "zero_grad" and source.span(call)[0] > end and source.function_of(call) is function
        )
    return found


def _cleared_by_flag(source):
    """A step told by its flag to clear the gradients after it (`optimizer.first_step(
    zero_grad=True)`, `optimizer.second_step(zero_grad=True)`: sharpness-aware minimisation's two
    steps): the flag turned off."""
    for call in source.nodes(cst.Call):
        flag = next((a for a in call.args if a.keyword is not None and a.keyword.value == "zero_grad"), None)
        if flag is not None and is_literal_bool(flag.value, True) and source.is_reachable(source.parent(call)):
            yield Change(
                call,
                (source.replace(flag.value, "False"),),
                f"`{source.code(call.func)}(zero_grad=False)`: gradients now accumulate across steps",
            )


def _clears_grad(small: cst.BaseSmallStatement) -> bool:
    """`p.grad = None`, `p.grad.zero_()`, `p.grad.data.zero_()`, `p.grad.detach_()`: one
    parameter's gradient cleared by hand."""
    if isinstance(small, cst.Assign):
        return (
            len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Attribute)
            and small.targets[0].target.attr.value == "grad"
            and isinstance(small.value, cst.Name)
            and small.value.value == "None"
        )
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("zero_", "detach_")
            and ".grad" in f".{dotted(func.value) or ''}."
            and (dotted(func.value) or "").split(".")[-1] in ("grad", "data")
        )
    return False


def _cleared_by_hand(source, training, description: str):
    """Gradients cleared parameter by parameter in a loop (`for param in model.parameters():
    param.grad = None`), outside a helper named for clearing them (`zero_grads`, `set_grad_none`)
    and outside a function that computes an input's gradient (`Training.input_gradients`: the
    input's gradient cleared between a Jacobian's rows)."""
    for loop in source.nodes(cst.For):
        function = source.function_of(loop)
        if function in training.input_gradients:
            continue
        named = function.name.value.lower() if function is not None else ""
        if "zero" in named or ("grad" in named and any(w in named for w in ("none", "clear", "reset"))):
            continue  # a helper for clearing gradients (`set_grad_none`): where it is called is the site
        clears = [
            small
            for line in source.within(loop.body, cst.SimpleStatementLine)
            for small in line.body
            if _clears_grad(small) and not _when_not_finite(source, small, loop)
        ]
        if clears and source.is_reachable(loop):
            edits = []
            for small in clears:
                line, siblings = source.block_of(small)
                whole = all(
                    isinstance(s, cst.SimpleStatementLine) and all(_clears_grad(x) for x in s.body) for s in siblings
                )
                # a block made only of clears keeps a `pass` in place of its first
                first = whole and isinstance(line, cst.SimpleStatementLine) and small is siblings[0].body[0]
                edits.append(source.replace(small, "pass") if first else source.delete_statement(small))
            yield Change(clears[0], tuple(edits), description.format(code=source.code(clears[0])))


def _when_not_finite(source, small: cst.CSTNode, loop: cst.For) -> bool:
    """True for a clear under a test of the gradient's own values (`if not torch.isfinite(
    param.grad).all(): param.grad = None`, SpeechBrain's check_gradients): it drops a bad
    gradient, it clears nothing each step."""
    for ancestor in source.ancestors(small):
        if ancestor is loop:
            return False
        if isinstance(ancestor, cst.If) and any(
            word in source.code(ancestor.test) for word in ("isfinite", "isnan", "isinf")
        ):
            return True
    return False


def _zeroing_helper(source, training, call: cst.Call) -> bool:
    """True for a call of a function of this file named for zeroing gradients whose body zeroes
    them (`def _zero_grad_optimizer(self): for name in ...: optimizer.zero_grad()`; StarGAN's
    `reset_grad()`, which zeroes both optimizers)."""
    name = (callee_name(call) or "").lower()
    named = "zero" in name or ("grad" in name and any(word in name for word in ("reset", "clear", "none")))
    if not named or name == "zero_grad":
        return False
    if any(
        any(callee_name(inner) == "zero_grad" for inner in source.within(function.body, cst.Call))
        or _sets_grads_to_none(source, function)
        for function in training.called_functions(call)
    ):
        return True
    # a method of a project object holding the optimizers (nerfstudio's `self.optimizers.zero_grad_some(groups)`)
    found = training.project_method(call)
    return found is not None and any(
        callee_name(inner) == "zero_grad" for inner in found[0].within(found[1].body, cst.Call)
    )


def _sets_grads_to_none(source, function: cst.FunctionDef) -> bool:
    """True for a body that sets each parameter's `.grad` to None by hand (habitat's
    `_set_grads_to_none`: `for pg in self.optimizer.param_groups: for p in pg["params"]: p.grad =
    None`)."""
    return any(
        isinstance(t.target, cst.Attribute)
        and t.target.attr.value == "grad"
        and isinstance(a.value, cst.Name)
        and a.value.value == "None"
        and source.enclosing(a, (cst.For,)) is not None
        for a in source.within(function.body, cst.Assign)
        for t in a.targets
    )


def _cleared_after_each_step(source, training, call: cst.Call) -> bool:
    """True for a zero_grad outside the block that runs every backward of its function, where
    that block ends each pass zeroing the one optimizer it steps, with no way out of the block
    before that: wherever else the zero_grad runs, the gradients are empty already (Sentence
    Transformers' `loss_model.zero_grad()` at the top of each epoch and after each evaluation)."""
    function = source.function_of(call)
    backwards = [b.call for b in training.backwards if source.function_of(b.call) is function]
    if not backwards or (isinstance(call.func, cst.Attribute) and training.role(call.func.value) == "optimizer"):
        # another optimizer's zero_grad (a GAN's `g_opt` beside `d_opt`) clears what the step's does not
        return False
    for clear in source.within(function or source.module, cst.Call):
        if clear is call or callee_name(clear) != "zero_grad" or not isinstance(source.parent(clear), cst.Expr):
            continue
        line, siblings = source.block_of(source.parent(clear))
        if line not in siblings or any(source.inside(call, s) for s in siblings):
            continue
        earlier = siblings[: siblings.index(line)]
        if not all(any(source.inside(b, s) for s in earlier) for b in backwards):
            continue
        if any(source.within(s, (cst.Continue, cst.Break, cst.Return, cst.Raise)) for s in earlier):
            continue
        stepped = {
            source.code(step.args[0].value) if step.args else source.code(step.func.value)
            for step in training.steps
            if any(source.inside(step, s) for s in earlier)
        }
        if stepped == {_zeroed(source, clear)}:
            return True
    return False


def _cleared_first_next_pass(source, training, call: cst.Call) -> bool:
    """True for a zero_grad after an optimizer step in a batch loop whose body clears the same
    optimizer first, before any backward (MedSAM clears at the top of each step and again after
    each branch's `optimizer.step()`): the next pass clears before its backward either way."""
    backwards = [source.span(b.call)[0] for b in training.backwards]
    steps = [source.span(step)[0] for step in training.steps]
    start = source.span(call)[0]
    for loop in training.training_loops:
        if not isinstance(loop.body, cst.IndentedBlock) or not source.inside(call, loop.body):
            continue
        for line in loop.body.body:
            first, end = source.span(line)
            if not isinstance(line, cst.SimpleStatementLine) or any(first <= at < end for at in backwards):
                break
            leading = [c for c in source.within(line, cst.Call) if callee_name(c) == "zero_grad"]
            if any(c is call for c in leading):
                return False
            if any(_zeroed(source, c) == _zeroed(source, call) for c in leading) and any(
                first < at < start for at in steps
            ):
                return True
    return False


def _updates(training, loop: cst.For | cst.While) -> bool:
    """True if the loop takes optimizer steps itself. An accumulation loop whose step comes after
    it (OpenNMT's `for k, batch in enumerate(true_batches)`) does not: a zero_grad before it is the
    only one of that update when the loop's own zero_grad is off (`if accum == 1:`)."""
    steppers = set(training.steps) | {b.call for b in training.backwards if b.steps}
    inside = training.training_calls(loop.body) + training.source.within(loop.body, cst.Call)
    return any(call in steppers for call in inside)


def _same_gradients(source, training, statements: list[cst.Expr]) -> dict[cst.Expr, cst.Expr]:
    """Pairs of zero_grad statements that clear the same gradients before the same backward: the
    model's (`net.zero_grad()`) and its optimizer's (`optimizer.zero_grad()`) in one block, or
    one optimizer's twice, the second in the first's block or a block within it (NequIP's
    `batch_step` clears on entry and again under `if not validation:` before its backward), with
    no backward between them. Deleting either alone changes nothing; the pair is one mutant."""
    backwards = [source.span(b.call)[0] for b in training.backwards]
    pairs: dict[cst.Expr, cst.Expr] = {}
    for first, second in zip(statements, statements[1:], strict=False):
        (line, siblings), (other, _) = source.block_of(first), source.block_of(second)
        receivers = [
            s.value.func.value
            for s in (first, second)
            if isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Attribute)
        ]
        if len(receivers) != 2 or source.function_of(first) is not source.function_of(second):
            continue
        start, end = source.span(first)[0], source.span(second)[0]
        if any(start < at < end for at in backwards):
            continue
        block = source.parent(line)
        if source.parent(other) is block and len(siblings) >= 3:
            roles = {training.role(receiver) for receiver in receivers}
            paired = roles == {"optimizer", None}
        else:
            # the same optimizer's again, within the first's block (every path to the second
            # passes the first)
            paired = (
                dotted(receivers[0]) is not None
                and dotted(receivers[0]) == dotted(receivers[1])
                and training.role(receivers[0]) == "optimizer"
                and source.inside(other, block)
            )
        if paired and first not in pairs.values():
            pairs[first] = second
    return pairs
