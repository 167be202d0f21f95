from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import callee_name


class SchedulerStepMisaligned(Operator):
    id = "scheduler-step-misaligned"
    summary = ("Move `scheduler.step()` out of the optimizer-step branch to every micro-step, or "
               "from once per epoch into the batch loop.")
    examples = (
        Example(
            "for i, (x, y) in enumerate(loader):\n"
            "    loss.backward()\n"
            "    if (i + 1) % accum == 0:\n"
            "        optimizer.step()\n"
            "        scheduler.step()\n"
            "        optimizer.zero_grad()\n",
            ("for i, (x, y) in enumerate(loader):\n"
             "    loss.backward()\n"
             "    if (i + 1) % accum == 0:\n"
             "        optimizer.step()\n"
             "        optimizer.zero_grad()\n"
             "    scheduler.step()\n",),
        ),
        Example(
            "for epoch in range(epochs):\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    lr_sched.step()\n"
            "    evaluate()\n",
            ("for epoch in range(epochs):\n"
             "    for x, y in loader:\n"
             "        loss = model(x, y)\n"
             "        loss.backward()\n"
             "        opt.step()\n"
             "        lr_sched.step()\n"
             "    evaluate()\n",),
        ),
    )
    untouched = (
        "for x, y in loader:\n    opt.step()\n    scheduler.step()\n",
        "scheduler.step()\n",
    )

    def changes(self, source, training):
        for statement in source.nodes(cst.Expr):
            call = statement.value
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and
                    callee_name(call) == "step" and training.role(call.func.value) == "scheduler"):
                continue
            if not source.is_reachable(statement):
                continue
            line = source.parent(statement)
            if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
                continue
            text = source.code(line)
            branch = self._step_branch(source, training, line)
            if branch is not None:
                yield Change(statement, (source.delete_statement(statement),
                                         source.insert_after(branch, [text])),
                             "the scheduler steps on every micro-step, not every optimizer step")
                continue
            inner = self._inner_training_loop(source, training, line)
            if inner is not None and isinstance(inner.body, cst.IndentedBlock):
                body = inner.body.body
                yield Change(statement, (source.delete_statement(statement),
                                         source.insert_after(body[-1], [text], source.indentation(body[0]))),
                             "the per-epoch scheduler steps on every batch")

    @staticmethod
    def _step_branch(source, training, line):
        """The `if` that holds both this line and an optimizer step, inside a loop."""
        block = source.parent(line)
        branch = source.parent(block) if block is not None else None
        if not isinstance(branch, cst.If) or source.enclosing(branch, (cst.For, cst.While)) is None:
            return None
        start, end = source.span(branch)
        if any(start <= source.span(step)[0] < end for step in training.steps):
            return branch
        return None

    @staticmethod
    def _inner_training_loop(source, training, line):
        """A training loop nested in the loop that runs this line (but not running it)."""
        outer = source.enclosing(line, (cst.For, cst.While))
        if outer is None:
            return None
        for loop in training.training_loops:
            if loop is not outer and source.enclosing(loop, (cst.For, cst.While)) is outer:
                return loop
        return None
