from __future__ import annotations

import libcst as cst

from injector.neighbours import bound_arguments
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    AUDIOTOOLS_STEP,
    MICROBATCH_TRAINER,
    PHASE_CONTEXT_STEP,
    SCALED_HELPER_BACKWARD,
    SCALER_HANDED_TO_CLIPPING,
)
from injector.patterns import (
    argument,
    callee_name,
    dotted,
    enclosing_class,
    last_name,
    method_on,
    needs_parens,
    statement_call,
)


def _hand_scaled(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The loss of a loss scaled by hand before its backward (`(loss * loss_scale).backward()`, as
    fp16 code without a GradScaler does), or None."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        for loss, scale in ((expr.left, expr.right), (expr.right, expr.left)):
            if "scale" in (last_name(scale) or "").lower() and "scale" not in (last_name(loss) or "").lower():
                return loss
    return None


def _scaled_expression(call: cst.Call) -> cst.BaseExpression:
    """Where `scaler.scale(loss)` stands in a backward call: its receiver (`scaler.scale(loss).backward()`)
    or the argument it is handed as (`self._backward(scaler.scale(loss))`, flair's trainer)."""
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.Call) and callee_name(value) == "cast" and value.args:
            value = value.args[-1].value
        if isinstance(value, cst.Call) and callee_name(value) == "scale" and isinstance(value.func, cst.Attribute):
            return arg.value
    return call.func.value if isinstance(call.func, cst.Attribute) else call.func


def _scaling_context(source, training, backward) -> tuple[cst.With, cst.BaseExpression] | None:
    """For `with amp.scale_loss(loss, optimizer) as scaled: scaled.backward()` (apex's scaler, a
    context that hands out the scaled loss and unscales the gradients on exit), the `with` and
    the loss it was handed; None for any other backward."""
    func = backward.call.func
    receiver = func.value if isinstance(func, cst.Attribute) else None
    if not isinstance(receiver, cst.Name):
        return None
    for ancestor in source.ancestors(backward.call):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return None
        if not isinstance(ancestor, cst.With):
            continue
        for item in ancestor.items:
            bound = item.asname.name if item.asname is not None else None
            if not (isinstance(bound, cst.Name) and bound.value == receiver.value and isinstance(item.item, cst.Call)):
                continue
            loss = argument(item.item, "loss", 0)
            if loss is not None and not loss.star and training.is_loss_value(loss.value, item.item):
                return ancestor, loss.value
    return None


class MissingGradScaler(Operator):
    id = "missing-grad-scaler"
    summary = (
        "Remove the GradScaler from a training step: `scaler.scale(loss).backward()` → "
        "`loss.backward()`, `scaler.step(opt)` → `opt.step()`, drop `update()`/`unscale_()`."
    )
    examples = (
        Example(
            # A scaler an object handed to the class's methods holds, stepped in another method;
            # the step's other arguments stay with the optimizer's own step (VISSL's `where=`).
            PHASE_CONTEXT_STEP,
            (
                PHASE_CONTEXT_STEP.replace("task.amp_grad_scaler.scale(loss).backward()", "loss.backward()").replace(
                    "        task.amp_grad_scaler.step(task.optimizer, where=task.where)\n"
                    "        task.amp_grad_scaler.update()\n",
                    "        task.optimizer.step(where=task.where)\n",
                ),
            ),
        ),
        Example(
            # An engine that scales what its backward is handed and holds the scaler (DAC over
            # audiotools): the plain backward, the optimizer's own step, no unscale, no update.
            AUDIOTOOLS_STEP,
            (
                AUDIOTOOLS_STEP.replace("    accel.backward(output['loss'])\n", "    output['loss'].backward()\n")
                .replace("    accel.scaler.unscale_(state.optimizer_g)\n", "")
                .replace("    accel.step(state.optimizer_g)\n", "    state.optimizer_g.step()\n")
                .replace("    accel.update()\n", ""),
            ),
        ),
        Example(
            # An fp16 optimizer's own backward, which scales the loss (PyText's, fairseq's).
            "def backprop(state, loss):\n    state.optimizer.backward(loss)\n    state.optimizer.step()\n",
            ("def backprop(state, loss):\n    loss.backward()\n    state.optimizer.step()\n",),
        ),
        Example(
            # A scaler kept on the object, its backward in one method and its step in another
            # (JoeyNMT's TrainManager): one mutant over the class.
            "class T:\n"
            "    def _train_step(self, batch):\n"
            "        loss = self.model(batch)\n"
            "        self.scaler.scale(loss).backward()\n"
            "    def train(self, loader):\n"
            "        for batch in loader:\n"
            "            self._train_step(batch)\n"
            "            self.scaler.step(self.optimizer)\n"
            "            self.scaler.update()\n",
            (
                "class T:\n"
                "    def _train_step(self, batch):\n"
                "        loss = self.model(batch)\n"
                "        loss.backward()\n"
                "    def train(self, loader):\n"
                "        for batch in loader:\n"
                "            self._train_step(batch)\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # the scaled loss handed to the trainer's own backward method (flair's ModelTrainer)
            SCALED_HELPER_BACKWARD
            + "        scaler.unscale_(self.optimizer)\n"
            + "        scaler.step(self.optimizer)\n"
            + "        scaler.update()\n",
            (SCALED_HELPER_BACKWARD.replace("scaler.scale(loss)", "loss") + "        self.optimizer.step()\n",),
        ),
        Example(
            "def train_step(model, x, y, optimizer, scaler):\n"
            "    with torch.autocast('cuda', dtype=torch.float16):\n"
            "        loss = F.cross_entropy(model(x), y)\n"
            "    scaler.scale(loss).backward()\n"
            "    scaler.unscale_(optimizer)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(optimizer)\n"
            "    scaler.update()\n",
            (
                "def train_step(model, x, y, optimizer, scaler):\n"
                "    with torch.autocast('cuda', dtype=torch.float16):\n"
                "        loss = F.cross_entropy(model(x), y)\n"
                "    loss.backward()\n"
                "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            "for i, batch in enumerate(loader):\n"
            "    self.scaler.scale(loss / accum_steps).backward()\n"
            "    if (i + 1) % accum_steps == 0:\n"
            "        self.scaler.step(self.optimizer)\n"
            "        self.scaler.update()\n",
            (
                "for i, batch in enumerate(loader):\n"
                "    (loss / accum_steps).backward()\n"
                "    if (i + 1) % accum_steps == 0:\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # The scaled loss through `typing.cast`, and through a variable.
            "cast(Tensor, scaler.scale(loss)).backward()\n"
            "def step(scaler, loss):\n"
            "    scaled = scaler.scale(loss)\n"
            "    scaled.backward()\n",
            (
                "loss.backward()\ndef step(scaler, loss):\n    scaled = scaler.scale(loss)\n    scaled.backward()\n",
                "cast(Tensor, scaler.scale(loss)).backward()\n"
                "def step(scaler, loss):\n"
                "    scaled = scaler.scale(loss)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # apex's scaler: a context hands out the scaled loss (and unscales on exit).
            "loss = criterion(model(x), y)\n"
            "with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
            "    scaled_loss.backward()\n",
            (
                "loss = criterion(model(x), y)\n"
                "with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # fp16 training that scales the loss by hand.
            "loss_scale = 2 ** self.lg_loss_scale\n(loss * loss_scale).backward()\n",
            ("loss_scale = 2 ** self.lg_loss_scale\n(loss).backward()\n",),
        ),
        Example(
            # A scaler kept on the object whose scaled backward runs in another file's callback.
            "class T:\n"
            "    def clip(self):\n"
            "        self._scaler.unscale_(self.optimizer)\n"
            "        clip_grad_norm_(self.params, 1.0)\n"
            "    def step(self):\n"
            "        self.clip()\n"
            "        self._scaler.step(self.optimizer)\n"
            "        self._scaler.update()\n",
            (
                "class T:\n"
                "    def clip(self):\n"
                "        clip_grad_norm_(self.params, 1.0)\n"
                "    def step(self):\n"
                "        self.clip()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # An engine's unscale before clipping (catalyst's backward callback over accelerate).
            "runner.engine.backward(loss)\nrunner.engine.unscale_gradients()\nclip(model.parameters())\n",
            ("runner.engine.backward(loss)\nclip(model.parameters())\n",),
        ),
        Example(
            # Scaled under the loss's own name, through `cast` (composer's micro-batch).
            MICROBATCH_TRAINER,
            (
                MICROBATCH_TRAINER.replace(
                    "cast(torch.Tensor, self.state.scaler.scale(microbatch_loss))",
                    "cast(torch.Tensor, microbatch_loss)",
                ),
            ),
        ),
        Example(
            # The scaler handed to a clipping helper that unscales first (Coqui's `_grad_clipping`): dropped with it.
            SCALER_HANDED_TO_CLIPPING,
            (
                SCALER_HANDED_TO_CLIPPING.replace("            scaler.unscale_(optimizer)\n", "            pass\n")
                .replace("        scaler.scale(loss).backward()\n", "        loss.backward()\n")
                .replace("        scaler.step(optimizer)\n        scaler.update()\n", "        optimizer.step()\n"),
            ),
        ),
    )
    untouched = (
        # An unscale whose value is kept is no statement of its own.
        "ok = accelerator.unscale_gradients() or True\n",
        # A scaler attribute that is only read for its state.
        "def save(self):\n    return self._scaler.state_dict()\n",
        "loss.backward()\noptimizer.step()\n",
        "(loss * weight).backward()\n(loss + aux_scale).backward()\n",
        "scaler = torch.amp.GradScaler('cuda')\n",
        # A context that does not hand out the loss it was given.
        "loss = criterion(model(x), y)\nwith accelerator.accumulate(model) as ctx:\n    loss.backward()\n",
    )

    def changes(self, source, training):
        done: set[tuple] = set()
        for backward in training.backwards:
            receiver = backward.call.func.value if isinstance(backward.call.func, cst.Attribute) else None
            loss = _hand_scaled(receiver) if backward.scaler is None and receiver is not None else None
            if loss is not None:
                # Scaled by hand: the backward of the unscaled loss, while the code still divides
                # the gradients by the scale afterwards, as GradScaler's step would.
                yield Change(
                    backward.call,
                    (source.replace(receiver, source.code(loss)),),
                    "the loss is no longer scaled before its fp16 backward",
                )
                continue
            context = _scaling_context(source, training, backward) if backward.scaler is None else None
            if context is not None:
                block, unscaled = context
                # One edit over the whole `with`, so the mutant is found at the context's line.
                start, end = source.span(receiver)
                first = source.span(block)[0]
                text = source.code(block)
                loss_text = source.code(unscaled)
                rewritten = text[: start - first] + loss_text + text[end - first :]
                yield Change(
                    block,
                    (source.replace(block, rewritten),),
                    "the backward runs on the unscaled loss (the scaler's context still unscales the gradients)",
                )
                continue
            if backward.scaler is None:
                continue
            scaler = source.code(backward.scaler)
            # a scaler kept on the object is stepped where the class steps its optimizer, often in
            # another method than the scaled backward (JoeyNMT's `_train_step` and `train_and_validate`)
            scope = (
                # also one an object handed to the class's methods holds (VISSL's
                # `task.amp_grad_scaler`, stepped in `run_optimizer_step(task)`)
                enclosing_class(source, backward.call) or source.function_of(backward.call)
                if "." in scaler
                else source.function_of(backward.call)
            )
            if (scope, scaler) in done:
                continue
            done.add((scope, scaler))
            scaled = _scaled_expression(backward.call)  # the `scaler.scale(loss)` call
            if backward.helper and scaled is backward.call.func.value:
                # a helper handed a loss scaled the line before (FAIR-Chem's `loss =
                # self.scaler.scale(loss) if self.scaler else loss`, then `self._backward(loss)`)
                handed = next((a.value for a in backward.call.args if isinstance(a.value, cst.Name)), None)
                found = training.scaled_value(handed, backward.call) if handed is not None else None
                if found is None:
                    continue
                scaled = found
            if isinstance(scaled, cst.Name) and source.code(backward.loss) == scaled.value:
                # scaled under the loss's own name, `loss = cast(Tensor, scaler.scale(loss))` before
                # `loss.backward()` (composer's): the scaling goes where it was assigned
                scaled = training.scaled_value(scaled, backward.call) or scaled
            loss = source.module.code_for_node(backward.loss).strip()
            edits = [source.replace(scaled, f"({loss})" if needs_parens(backward.loss) else loss)]
            for call in source.nodes(cst.Call):
                name = callee_name(call)
                if (
                    name not in {"step", "update", "unscale_"}
                    or not isinstance(call.func, cst.Attribute)
                    or source.code(call.func.value) != scaler
                    or (source.function_of(call) is not scope and enclosing_class(source, call) is not scope)
                ):
                    continue
                optimizer = argument(call, "optimizer", 0)
                if name == "step" and optimizer is not None:
                    # the step's other arguments go to the optimizer's own step (VISSL's `where=`)
                    rest = [source.code(a).strip().rstrip(",") for a in call.args if a is not optimizer]
                    stepped = method_on(source, optimizer.value, "step")
                    if rest:
                        stepped = f"{stepped[:-1]}{', '.join(rest)})"
                    edits.append(source.replace(call, stepped))
                elif name in {"update", "unscale_"}:
                    statement = source.parent(call)
                    if statement_call(statement) is call:
                        edits.append(source.delete_statement(statement))
            edits += _handed_scaler_calls(source, training, scope, scaler)
            yield Change(backward.call, tuple(edits), f"the training step no longer uses the GradScaler `{scaler}`")
        yield from self._scaled_elsewhere(source, training, {scaler for _, scaler in done})
        yield from self._engine_scalers(source, training)
        for backward in training.backwards:
            func = backward.call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "backward"
                and backward.loss is not func.value
                and not backward.helper
                and training.role(func.value) == "optimizer"
            ):
                # an fp16 optimizer's own backward, which scales the loss (PyText's and fairseq's
                # `optimizer.backward(loss)`): the plain backward of the unscaled loss instead
                yield Change(
                    backward.call,
                    (source.replace(backward.call, method_on(source, backward.loss, "backward")),),
                    "the loss is no longer scaled by the fp16 optimizer's backward",
                )
        for call in source.nodes(cst.Call):
            # an engine's unscale before clipping (accelerate's `accelerator.unscale_gradients()`,
            # which its backward scaled under fp16): the clip then bounds the scaled gradients
            if callee_name(call) == "unscale_gradients" and isinstance(call.func, cst.Attribute):
                statement = source.parent(call)
                if statement_call(statement) is call:
                    yield Change(
                        call,
                        (source.delete_statement(statement),),
                        "the gradients are clipped while still scaled: `unscale_gradients()` removed",
                    )

    @staticmethod
    def _engine_scalers(source, training):
        """An engine that scales what its own backward is handed and holds the GradScaler the file
        reaches through it (audiotools' `accel.backward(loss)`, `accel.scaler.unscale_(opt)`,
        `accel.step(opt)`, `accel.update()`): one mutant per function, each backward made plain,
        each step the optimizer's own, the unscale and the scale's update gone."""
        # engines whose scaler the file unscales or updates itself (not one it only saves)
        held = {
            source.code(call.func.value.value)
            for call in source.nodes(cst.Call)
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value in {"unscale_", "update"}
            and isinstance(call.func.value, cst.Attribute)
            and call.func.value.attr.value == "scaler"
            and dotted(call.func.value.value) not in (None, "self")
        }
        by_scope: dict[tuple, list] = {}
        for backward in training.backwards:
            func = backward.call.func
            if not isinstance(func, cst.Attribute) or backward.loss is func.value or backward.helper:
                continue
            engine = source.code(func.value)
            if engine in held:
                by_scope.setdefault((source.function_of(backward.call), engine), []).append(backward)
        for (scope, engine), backwards in by_scope.items():
            if scope is None:
                continue
            edits = [source.replace(b.call, method_on(source, b.loss, "backward")) for b in backwards]
            for call in source.within(scope, cst.Call):
                if not isinstance(call.func, cst.Attribute):
                    continue
                owner, name = source.code(call.func.value), call.func.attr.value
                statement = source.parent(call)
                if owner == engine and name == "step" and len(call.args) == 1:
                    edits.append(source.replace(call, method_on(source, call.args[0].value, "step")))
                elif (
                    (owner == engine and name == "update" and not call.args)
                    or (owner == f"{engine}.scaler" and name in {"unscale_", "update"})
                ) and statement_call(statement) is call:
                    edits.append(source.delete_statement(statement))
            yield Change(
                backwards[0].call, tuple(edits), f"the training step no longer uses the GradScaler `{engine}` holds"
            )

    @staticmethod
    def _scaled_elsewhere(source, training, handled: set[str]):
        """A GradScaler kept on the object (`self._scaler.step(self.optimizer)`,
        `self._scaler.update()`, `self._scaler.unscale_(...)`) whose `scale(loss).backward()` runs
        in another file (a backward callback): the optimizer steps on the scaled gradients and the
        scale never adapts. One mutant per scaler, over the whole class."""
        steps: dict[str, list[cst.Call]] = {}
        for call in source.nodes(cst.Call):
            if (
                callee_name(call) in {"step", "update", "unscale_"}
                and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Attribute)
                and training.role(call.func.value) == "scaler"
            ):
                steps.setdefault(source.code(call.func.value), []).append(call)
        for scaler, calls in steps.items():
            if scaler in handled or not scaler.startswith("self.") or "step" not in {callee_name(c) for c in calls}:
                continue
            edits = []
            for call in calls:
                optimizer = argument(call, "optimizer", 0)
                statement = source.parent(call)
                if callee_name(call) == "step" and optimizer is not None:
                    edits.append(source.replace(call, method_on(source, optimizer.value, "step")))
                elif callee_name(call) != "step" and statement_call(statement) is call:
                    edits.append(source.delete_statement(statement))
            first = next(c for c in calls if callee_name(c) == "step")
            yield Change(first, tuple(edits), f"the training step no longer uses the GradScaler `{scaler}`")


def _handed_scaler_calls(source, training, scope, scaler: str) -> list:
    """The `unscale_` and `update` of the scaler in the functions of the file that `scope` hands
    it to (Coqui's `self._grad_clipping(grad_clip=grad_clip, optimizer=optimizer, scaler=scaler)`,
    whose `if scaler: scaler.unscale_(optimizer)` comes before the clip), each dropped with the
    scaler: left in, it would divide the unscaled gradients by the scale."""
    edits = []
    for call in source.within(scope if scope is not None else source.module, cst.Call):
        for function in training.called_functions(call):
            bound = bound_arguments(function, call) or {}
            names = [p for p, value in bound.items() if source.code(value) == scaler]
            for name in names:
                for inner in source.within(function, cst.Call):
                    statement = source.parent(inner)
                    if (
                        callee_name(inner) in {"unscale_", "update"}
                        and isinstance(inner.func, cst.Attribute)
                        and source.code(inner.func.value) == name
                        and statement_call(statement) is inner
                    ):
                        edits.append(source.delete_statement(statement))
    return edits
