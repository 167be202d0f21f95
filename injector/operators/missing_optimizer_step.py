from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


class MissingOptimizerStep(Operator):
    id = "missing-optimizer-step"
    summary = "Delete `optimizer.step()` / `scaler.step(optimizer)`; scheduler steps are left alone."
    examples = (
        Example(
            "loss.backward()\nopt.step()\nscheduler.step()\n",
            ("loss.backward()\nscheduler.step()\n",),
        ),
        Example(
            "if (i + 1) % accum == 0:\n"
            "    scaler.step(self.optimizer)\n"
            "    scaler.update()\n",
            ("if (i + 1) % accum == 0:\n"
             "    scaler.update()\n",),
        ),
        Example(
            "d_opt = torch.optim.Adam(d.parameters())\n"
            "for x in data:\n"
            "    optimizers[1].step()\n"
            "    d_opt.step()\n",
            ("d_opt = torch.optim.Adam(d.parameters())\n"
             "for x in data:\n"
             "    d_opt.step()\n",
             "d_opt = torch.optim.Adam(d.parameters())\n"
             "for x in data:\n"
             "    optimizers[1].step()\n"),
        ),
    )
    untouched = (
        "lr_scheduler.step()\n",
        "env.step(action)\n",
        "sched.step(val_loss)\n",
    )

    def changes(self, source, training):
        def wanted(call: cst.Call) -> bool:
            return isinstance(call.func, cst.Attribute) and callee_name(call) == "step" and \
                training.role(call.func.value) in {"optimizer", "scaler"}
        return deleted_calls(source, wanted, "removed `{code}`: the parameters never change")
