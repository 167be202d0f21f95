from __future__ import annotations

import libcst as cst

from injector.operators.base import Example, Operator, deleted_calls
from injector.operators.snippets import MICROBATCH_TRAINER
from injector.patterns import callee_name, names_evaluation


class MissingSetEpoch(Operator):
    id = "missing-set-epoch"
    summary = "Delete `sampler.set_epoch(epoch)`, so every epoch repeats one shuffle order."
    examples = (
        Example(
            # A batch sampler reseeded with the epoch (JoeyNMT's TrainManager).
            "for epoch_no in range(epochs):\n"
            "    self.train_iter.batch_sampler.set_seed(self.seed + epoch_no)\n"
            "    run_epoch(self.train_iter)\n",
            ("for epoch_no in range(epochs):\n    run_epoch(self.train_iter)\n",),
        ),
        Example(
            # A sampler told the epoch by a method of its own (NequIP's PartialSampler).
            "for self.iepoch in range(epochs):\n    self.dl_train_sampler.step_epoch(self.iepoch)\n    run_epoch(self.dl_train)\n",
            ("for self.iepoch in range(epochs):\n    run_epoch(self.dl_train)\n",),
        ),
        Example(
            "for epoch in range(epochs):\n    train_loader.sampler.set_epoch(epoch)\n    run_epoch(train_loader)\n",
            ("for epoch in range(epochs):\n    run_epoch(train_loader)\n",),
        ),
        Example(
            # A dataset told the epoch to reshuffle by (OLMo's IterableDataset).
            "for epoch in range(epochs):\n    run_epoch(loader)\n    self.dataset.reshuffle(self.epoch)\n",
            ("for epoch in range(epochs):\n    run_epoch(loader)\n",),
        ),
        Example(
            # A loader object that seeds its samplers with the epoch (mmf's MultiDataModule).
            "while self.num_updates < self.max_updates:\n"
            "    self.current_epoch += 1\n"
            "    self.dataset_loader.seed_sampler('train', self.current_epoch)\n"
            "    self.run_epoch()\n",
            ("while self.num_updates < self.max_updates:\n    self.current_epoch += 1\n    self.run_epoch()\n",),
        ),
        Example(
            # The training loop's sampler; an evaluation loop's is none.
            MICROBATCH_TRAINER,
            (
                MICROBATCH_TRAINER.replace(
                    "            self.state.dataloader.sampler.set_epoch(int(self.state.timestamp.epoch))\n", ""
                ),
            ),
        ),
        Example(
            # A loader helper that tells the sampler the epoch (SlowFast); for a reloaded chunk's
            # loader it is called again right after, so only the epoch's own call is the site.
            "for cur_epoch in range(start_epoch, max_epoch):\n"
            "    if reload:\n"
            "        train_loader = loader.construct_loader(cfg, 'train')\n"
            "        loader.shuffle_dataset(train_loader, cur_epoch)\n"
            "    loader.shuffle_dataset(train_loader, cur_epoch)\n"
            "    train_epoch(train_loader, model, optimizer)\n",
            (
                "for cur_epoch in range(start_epoch, max_epoch):\n"
                "    if reload:\n"
                "        train_loader = loader.construct_loader(cfg, 'train')\n"
                "        loader.shuffle_dataset(train_loader, cur_epoch)\n"
                "    train_epoch(train_loader, model, optimizer)\n",
            ),
        ),
    )
    untouched = (
        # a sampler built, or seeded once, without the epoch
        "sampler = build_sampler(dataset, epochs=epochs)\n",
        "loader.seed_sampler('train', seed)\n",
        "set_epoch(epoch)\n",
        "sampler.set_epoch\n",
        # a sampler's epoch hook handed no epoch (it counts them itself)
        "train_sampler.step_epoch()\n",
        # a reshuffle not told the epoch (a buffer shuffled in place)
        "replay_buffer.reshuffle()\n",
    )

    def changes(self, source, training):
        calls = [
            call
            for call in source.nodes(cst.Call)
            if isinstance(call.func, cst.Attribute)
            and (
                callee_name(call) == "set_epoch"
                # a dataset that shuffles itself, told the epoch (OLMo's `dataset.reshuffle(epoch)`),
                # or a loader helper that tells the sampler (SlowFast's `loader.shuffle_dataset(
                # train_loader, cur_epoch)`, mmf's `dataset_loader.seed_sampler("train", epoch)`)
                or (
                    any(word in (callee_name(call) or "") for word in ("shuffle", "sampler"))
                    and any("epoch" in source.code(a.value) for a in call.args)
                )
                # a sampler reseeded with the epoch (JoeyNMT's `self.train_iter.batch_sampler.
                # set_seed(self.seed + epoch_no)`), or told it by a method of another name
                # (NequIP's `self.dl_train_sampler.step_epoch(self.iepoch)`)
                or (
                    (callee_name(call) in ("set_seed", "seed", "manual_seed") or "epoch" in (callee_name(call) or ""))
                    and "sampler" in source.code(call.func.value).lower()
                    and any("epoch" in source.code(a.value) for a in call.args)
                )
            )
            and not _repeated_later(source, call)
        ]
        return deleted_calls(
            source,
            lambda call: call in calls and not _for_evaluation(source, call),
            "removed `{code}`: the sampler reuses one order every epoch",
        )


def _for_evaluation(source, call: cst.Call) -> bool:
    """True for an evaluation loader's sampler: in an evaluation function (composer's `_eval_loop`)
    or in a loop over evaluators; the order of evaluation changes no metric."""
    function = source.function_of(call)
    if function is not None and names_evaluation(function.name.value) and "train" not in function.name.value:
        return True
    return any(
        names_evaluation(source.code(loop.iter))
        for loop in source.ancestors(call)
        if isinstance(loop, cst.For) and source.function_of(loop) is function
    )


def _repeated_later(source, call: cst.Call) -> bool:
    """True where the same call, word for word, runs again later in the enclosing loop's own body,
    unconditionally (SlowFast calls `shuffle_dataset` for a reloaded chunk's loader, then again for
    the epoch): without the first the second still tells the sampler the epoch."""
    loop = source.enclosing(call, (cst.For, cst.While))
    if loop is None:
        return False
    text, end = source.code(call), source.span(call)[1]
    return any(
        isinstance(statement, cst.SimpleStatementLine)
        and source.span(statement)[0] > end
        and any(source.code(c) == text for c in source.within(statement, cst.Call))
        for statement in loop.body.body
    )
