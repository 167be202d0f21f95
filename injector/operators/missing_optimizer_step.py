from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


class MissingOptimizerStep(Operator):
    id = "missing-optimizer-step"
    summary = (
        "Delete `optimizer.step()` / `scaler.step(optimizer)` / `xm.optimizer_step(...)` or a manual "
        "`p.data.add_(p.grad, alpha=-lr)` update; scheduler steps are left alone."
    )
    examples = (
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
            # An engine that takes the loss takes the optimizer step too (DeepSpeed).
            "model_engine.backward(loss)\nmodel_engine.step()\n",
            ("model_engine.backward(loss)\n",),
        ),
    )
    untouched = (
        "lr_scheduler.step()\n",
        "total.add_(x, alpha=2)\n",
        "env.step(action)\n",
        "sched.step(val_loss)\n",
        "model_engine.step()\n",
    )

    def changes(self, source, training):
        def wanted(call: cst.Call) -> bool:
            if not isinstance(call.func, cst.Attribute):
                return False
            name = callee_name(call)
            if name == "step":
                return call in training.steps
            if name == "optimizer_step":
                return True  # torch_xla's `xm.optimizer_step(optimizer)`
            # A manual update: `p.data.add_(p.grad, alpha=-lr)`, `p.sub_(lr * p.grad)`.
            return name in {"add_", "sub_"} and any(".grad" in source.code(a.value) for a in call.args)

        return deleted_calls(source, wanted, "removed `{code}`: the parameters never change")
