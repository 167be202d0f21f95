from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.patterns import callee_name


class MissingSetEpoch(Operator):
    id = "missing-set-epoch"
    summary = "Delete `sampler.set_epoch(epoch)`, so every epoch repeats one shuffle order."
    examples = (
        Example(
            "for epoch in range(epochs):\n    train_loader.sampler.set_epoch(epoch)\n    run_epoch(train_loader)\n",
            ("for epoch in range(epochs):\n    run_epoch(train_loader)\n",),
        ),
        Example(
            # A dataset told the epoch to reshuffle by (OLMo's IterableDataset).
            "for epoch in range(epochs):\n    run_epoch(loader)\n    self.dataset.reshuffle(self.epoch)\n",
            ("for epoch in range(epochs):\n    run_epoch(loader)\n",),
        ),
    )
    untouched = (
        "set_epoch(epoch)\n",
        "sampler.set_epoch\n",
        # a reshuffle not told the epoch (a buffer shuffled in place)
        "replay_buffer.reshuffle()\n",
    )

    def changes(self, source, training):
        return deleted_calls(
            source,
            lambda call: (
                isinstance(call.func, cst.Attribute)
                and (
                    callee_name(call) == "set_epoch"
                    # a dataset that shuffles itself, told the epoch (OLMo's `dataset.reshuffle(epoch)`)
                    or (callee_name(call) == "reshuffle" and any("epoch" in source.code(a.value) for a in call.args))
                )
            ),
            "removed `{code}`: the sampler reuses one order every epoch",
        )
