from __future__ import annotations

import builtins

import libcst as cst

from injector.mutants import Edit
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    APPENDED_SCHEDULER_CONFIG,
    CALLBACK_RUNNER,
    FORECASTING_OPTIMIZERS,
    GUARDED_SCHEDULER_LIST,
    MICROBATCH_TRAINER,
    SCHEDULER_LOOP_IN_BRANCH,
    STEP_FLAG_SCHEDULER,
)
from injector.patterns import (
    Training,
    bound_names,
    bound_values,
    callee_name,
    dotted,
    imported_name,
    is_literal_bool,
    last_name,
    names_evaluation,
)

HANDLE = "_trainwreck_scheduler"  # how a batch loop in another function reaches a local scheduler
UPDATE_UNDER_A_BOUNDARY = (
    "class Unit:\n"
    "    def train_step(self, state, batch):\n"
    "        self.loss(batch).backward()\n"
    "        if self.boundary(state):\n"
    "            self._update_weights(state)\n"
    "    def _update_weights(self, state):\n"
    "        none_throws(self.optimizer).step()\n"
    "        self._advance(state)\n"
    "    def _advance(self, state):\n"
    "        none_throws(self.lr_scheduler).step()\n"
)


# CogDL's train_step: each scheduler of a list stepped after the batch loop, under a guard.
_SCHEDULER_LIST_STEP = (
    "    if lr_schedulers is not None:\n        for lr_schedular in lr_schedulers:\n            lr_schedular.step()\n"
)
_SCHEDULER_LIST = (
    "def train_step(model, loader, optimizers, lr_schedulers):\n"
    "    for batch in loader:\n"
    "        model(batch).backward()\n"
    "        for optimizer in optimizers:\n"
    "            optimizer.step()\n" + _SCHEDULER_LIST_STEP + "    return model\n"
)


class SchedulerStepMisaligned(Operator):
    id = "scheduler-step-misaligned"
    summary = (
        "Move `scheduler.step()` out of the optimizer-step branch to every micro-step, or "
        "from once per epoch into the batch loop (following calls to it within the file)."
    )
    examples = (
        Example(
            # The scheduler's Lightning config written apart in configure_optimizers and merged with the
            # scheduler on return (Darts): its interval is the schedule's.
            FORECASTING_OPTIMIZERS,
            (FORECASTING_OPTIMIZERS.replace('"interval": "epoch"', '"interval": "step"'),),
        ),
        Example(
            # Stepped in a helper the optimizer-step branch calls, beside the step's own helper
            # (pytorch-accelerated's Trainer): the call leaves the branch.
            "class T:\n    def fit(self):\n        for i, x in enumerate(self.loader):\n"
            "            self.loss(x).backward()\n            if (i + 1) % self.accum == 0:\n"
            "                self.optimizer_step()\n                self.scheduler_step()\n"
            "    def optimizer_step(self):\n        self.opt.step()\n"
            "    def scheduler_step(self):\n        self.sched.step()\n",
            (
                "class T:\n    def fit(self):\n        for i, x in enumerate(self.loader):\n"
                "            self.loss(x).backward()\n            if (i + 1) % self.accum == 0:\n"
                "                self.optimizer_step()\n            self.scheduler_step()\n"
                "    def optimizer_step(self):\n        self.opt.step()\n"
                "    def scheduler_step(self):\n        self.sched.step()\n",
            ),
        ),
        Example(
            # Schedulers stepped in a loop over them beside the optimizers' steps in the accumulation branch (OpenPrompt).
            SCHEDULER_LOOP_IN_BRANCH,
            (
                SCHEDULER_LOOP_IN_BRANCH.replace(
                    "            for scheduler in self.schedulers:\n                scheduler.step()\n", ""
                ).replace(
                    "                optimizer.zero_grad()\n",
                    "                optimizer.zero_grad()\n        for scheduler in self.schedulers:\n            scheduler.step()\n",
                ),
            ),
        ),
        Example(
            # Stepped in a helper that the epoch calls after its batch loop: the call moves.
            "class T:\n    def update_lr(self):\n        self.sched.step()\n"
            "    def train(self):\n        for x in self.loader:\n            self.step(x)\n        self.update_lr()\n"
            "    def step(self, x):\n        self.opt.zero_grad()\n        self.loss(x).backward()\n"
            "        self.opt.step()\n",
            (
                "class T:\n    def update_lr(self):\n        self.sched.step()\n"
                "    def train(self):\n        for x in self.loader:\n            self.step(x)\n"
                "            self.update_lr()\n"
                "    def step(self, x):\n        self.opt.zero_grad()\n        self.loss(x).backward()\n"
                "        self.opt.step()\n",
            ),
        ),
        Example(
            # One optimizer step and one scheduler step after the micro-batch loop of the step.
            "def train_step(self, groups):\n"
            "    for micro in groups:\n"
            "        self.model(micro).backward()\n"
            "    self.optimizers.step()\n"
            "    self.lr_schedulers.step()\n",
            (
                "def train_step(self, groups):\n"
                "    for micro in groups:\n"
                "        self.model(micro).backward()\n"
                "        self.lr_schedulers.step()\n"
                "    self.optimizers.step()\n",
            ),
        ),
        Example(
            # A step helper called once per micro-step: its branch is the accumulation boundary.
            "def update(optimizer, scheduler, i, n):\n"
            "    if (i + 1) % n == 0:\n"
            "        optimizer.step()\n"
            "        scheduler.step()\n",
            (
                "def update(optimizer, scheduler, i, n):\n"
                "    if (i + 1) % n == 0:\n"
                "        optimizer.step()\n"
                "    scheduler.step()\n",
            ),
        ),
        Example(
            # A config held in a name, with Lightning's per-epoch default.
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            '        scheduler = {"scheduler": LambdaLR(opt, f), "frequency": 1}\n'
            "        return [opt], [scheduler]\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                '        scheduler = {"scheduler": LambdaLR(opt, f), "frequency": 1, "interval": "step"}\n'
                "        return [opt], [scheduler]\n",
            ),
        ),
        Example(
            # Lightning's scheduler config: the trainer steps it per epoch or per optimizer step.
            "config = {'optimizer': opt, 'lr_scheduler': {'scheduler': sched, 'interval': 'epoch', 'frequency': 1}}\n",
            (
                "config = {'optimizer': opt, 'lr_scheduler': {'scheduler': sched, 'interval': 'step', 'frequency': 1}}\n",
            ),
        ),
        Example(
            # A scheduler Lightning gets without a config: stepped once per epoch.
            "class M(LightningModule):\n    def configure_optimizers(self):\n        return [opt], [sched]\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                '        return [opt], [{"scheduler": sched, "interval": "step"}]\n',
            ),
        ),
        Example(
            "for i, (x, y) in enumerate(loader):\n"
            "    loss.backward()\n"
            "    if (i + 1) % accum == 0:\n"
            "        optimizer.step()\n"
            "        scheduler.step()\n"
            "        optimizer.zero_grad()\n",
            (
                "for i, (x, y) in enumerate(loader):\n"
                "    loss.backward()\n"
                "    if (i + 1) % accum == 0:\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n"
                "    scheduler.step()\n",
            ),
        ),
        Example(
            # Each scheduler of a list stepped after the batch loop (CogDL's train_step): the
            # loop over the schedulers, with its guard, moves into the batch loop.
            _SCHEDULER_LIST,
            (
                _SCHEDULER_LIST.replace(
                    _SCHEDULER_LIST_STEP, "".join(f"    {line}\n" for line in _SCHEDULER_LIST_STEP.splitlines())
                ),
            ),
        ),
        Example(
            "for epoch in range(epochs):\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "    lr_sched.step()\n"
            "    evaluate()\n",
            (
                "for epoch in range(epochs):\n"
                "    for x, y in loader:\n"
                "        loss = model(x, y)\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "        lr_sched.step()\n"
                "    evaluate()\n",
            ),
        ),
        Example(
            # A guard around the scheduler moves with it.
            "while step < total:\n"
            "    loss.backward()\n"
            "    if (step + 1) % accum == 0:\n"
            "        self.optimizer.step()\n"
            "        if self.lr_scheduler is not None:\n"
            "            self.lr_scheduler.step()\n"
            "    step += 1\n",
            (
                "while step < total:\n"
                "    loss.backward()\n"
                "    if (step + 1) % accum == 0:\n"
                "        self.optimizer.step()\n"
                "    if self.lr_scheduler is not None:\n"
                "        self.lr_scheduler.step()\n"
                "    step += 1\n",
            ),
        ),
        Example(
            # The batch loop is in another function: the scheduler follows the call there.
            "def train(model, loader, optimizer):\n"
            "    for x, y in loader:\n"
            "        model(x, y).backward()\n"
            "        optimizer.step()\n"
            "def main():\n"
            "    scheduler = StepLR(optimizer, 1)\n"
            "    for epoch in range(3):\n"
            "        train(model, loader, optimizer)\n"
            "        scheduler.step()\n",
            (
                "def train(model, loader, optimizer):\n"
                "    for x, y in loader:\n"
                "        model(x, y).backward()\n"
                "        optimizer.step()\n"
                "        _trainwreck_scheduler.step()\n"
                "def main():\n"
                "    scheduler = StepLR(optimizer, 1)\n"
                "    for epoch in range(3):\n"
                "        globals()['_trainwreck_scheduler'] = scheduler\n"
                "        train(model, loader, optimizer)\n",
            ),
        ),
        Example(
            # Schedulers appended to a list returned by name: all of them stepped per optimizer step.
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        optims, scheds = [], []\n"
            "        opt = Adam(self.parameters(), lr=1e-3)\n"
            "        optims.append(opt)\n"
            "        scheds.append(ExponentialLR(opt, gamma=0.95))\n"
            "        return optims, scheds\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                "        optims, scheds = [], []\n"
                "        opt = Adam(self.parameters(), lr=1e-3)\n"
                "        optims.append(opt)\n"
                "        scheds.append(ExponentialLR(opt, gamma=0.95))\n"
                '        return optims, [{"scheduler": s, "interval": "step"} for s in scheds]\n',
            ),
        ),
        Example(
            # A list that also gets configs: only the bare schedulers.
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        epoch_schedulers = []\n"
            "        for sched in self.schedulers:\n"
            "            if isinstance(sched, dict):\n"
            "                epoch_schedulers.append(sched)\n"
            "            else:\n"
            "                epoch_schedulers.append(sched)\n"
            "        return [self.optimizer], epoch_schedulers\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                "        epoch_schedulers = []\n"
                "        for sched in self.schedulers:\n"
                "            if isinstance(sched, dict):\n"
                "                epoch_schedulers.append(sched)\n"
                "            else:\n"
                '                epoch_schedulers.append({"scheduler": sched, "interval": "step"})\n'
                "        return [self.optimizer], epoch_schedulers\n",
            ),
        ),
        Example(
            # A list of configs whose scheduler config has no interval (Lightning's default: per epoch).
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        opt = SGD(self.parameters(), lr=0.1)\n"
            "        return [{'optimizer': opt, 'lr_scheduler': {'scheduler': StepLR(opt, 10)}}]\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                "        opt = SGD(self.parameters(), lr=0.1)\n"
                "        return [{'optimizer': opt, 'lr_scheduler': {'scheduler': StepLR(opt, 10), \"interval\": \"step\"}}]\n",
            ),
        ),
        Example(
            # A scheduler built in place in the returned list.
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        opt = SGD(self.parameters(), lr=0.1)\n"
            "        return [opt], [CosineAnnealingLR(opt, 100)]\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                "        opt = SGD(self.parameters(), lr=0.1)\n"
                '        return [opt], [{"scheduler": CosineAnnealingLR(opt, 100), "interval": "step"}]\n',
            ),
        ),
        Example(
            # A tuple of configs, one per optimizer.
            "class M(LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        return ({'optimizer': g, 'lr_scheduler': g_sched}, {'optimizer': d})\n",
            (
                "class M(LightningModule):\n"
                "    def configure_optimizers(self):\n"
                "        return ({'optimizer': g, 'lr_scheduler': {\"scheduler\": g_sched, \"interval\": \"step\"}}, {'optimizer': d})\n",
            ),
        ),
        Example(
            # The weights' update (step and schedule, through a helper) runs only on the
            # accumulation boundary of the step that calls it: the schedule moves out of it.
            UPDATE_UNDER_A_BOUNDARY,
            (
                "class Unit:\n"
                "    def train_step(self, state, batch):\n"
                "        self.loss(batch).backward()\n"
                "        if self.boundary(state):\n"
                "            self._update_weights(state)\n"
                "        self._advance(state)\n"
                "    def _update_weights(self, state):\n"
                "        none_throws(self.optimizer).step()\n"
                "    def _advance(self, state):\n"
                "        none_throws(self.lr_scheduler).step()\n",
            ),
        ),
        Example(
            # A per-epoch mode chosen in a callback that steps per batch in the other mode.
            CALLBACK_RUNNER,
            (CALLBACK_RUNNER.replace('self.mode = "epoch"', 'self.mode = "batch"'),),
        ),
        Example(
            # Schedulers stepped in a loop over them, per batch (into the micro-batch loop of the
            # step the batch loop calls) and per epoch (into the batch loop).
            MICROBATCH_TRAINER,
            (
                MICROBATCH_TRAINER.replace(
                    "                self._train_batch()\n"
                    "                if self._scheduler_step_frequency == TimeUnit.BATCH:\n"
                    "                    for scheduler in self.state.schedulers:\n"
                    "                        scheduler.step()\n",
                    "                self._train_batch()\n",
                ).replace(
                    "            self._train_microbatch()\n",
                    "            self._train_microbatch()\n"
                    "            if self._scheduler_step_frequency == TimeUnit.BATCH:\n"
                    "                for scheduler in self.state.schedulers:\n"
                    "                    scheduler.step()\n",
                ),
                MICROBATCH_TRAINER.replace(
                    "            if self._scheduler_step_frequency == TimeUnit.EPOCH:\n"
                    "                for scheduler in self.state.schedulers:\n"
                    "                    scheduler.step()\n",
                    "",
                ).replace(
                    "                        scheduler.step()\n    def _train_batch",
                    "                        scheduler.step()\n"
                    "                if self._scheduler_step_frequency == TimeUnit.EPOCH:\n"
                    "                    for scheduler in self.state.schedulers:\n"
                    "                        scheduler.step()\n    def _train_batch",
                ),
            ),
        ),
        Example(
            # Micro-steps skip the update with `continue` (s3prl's runner): the step moves before that skip.
            "import torch\n"
            "def train(self):\n"
            "    for step, batch in enumerate(loader):\n"
            "        loss = model(batch) / accumulate\n"
            "        loss.backward()\n"
            "        backward_steps += 1\n"
            "        if backward_steps % accumulate > 0:\n"
            "            continue\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
            "        if scheduler:\n"
            "            scheduler.step()\n",
            (
                "import torch\n"
                "def train(self):\n"
                "    for step, batch in enumerate(loader):\n"
                "        loss = model(batch) / accumulate\n"
                "        loss.backward()\n"
                "        backward_steps += 1\n"
                "        if scheduler:\n"
                "            scheduler.step()\n"
                "        if backward_steps % accumulate > 0:\n"
                "            continue\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n",
            ),
        ),
        Example(
            # A list of schedulers or a single one, stepped after the batch loop (PoinTr's runner):
            # the `if`/`else` that steps either moves whole.
            "def train(model, loader, optimizer, scheduler, epochs):\n"
            "    for epoch in range(epochs):\n"
            "        for x in loader:\n"
            "            model(x).backward()\n"
            "            optimizer.step()\n"
            "        if isinstance(scheduler, list):\n"
            "            for item in scheduler:\n"
            "                item.step()\n"
            "        else:\n"
            "            scheduler.step()\n",
            (
                "def train(model, loader, optimizer, scheduler, epochs):\n"
                "    for epoch in range(epochs):\n"
                "        for x in loader:\n"
                "            model(x).backward()\n"
                "            optimizer.step()\n"
                "            if isinstance(scheduler, list):\n"
                "                for item in scheduler:\n"
                "                    item.step()\n"
                "            else:\n"
                "                scheduler.step()\n",
            ),
        ),
        Example(
            # The loop over the schedulers is all its branch holds: the branch keeps a `pass`.
            "def train(model, loader, optimizer, schedulers, epochs):\n"
            "    for epoch in range(epochs):\n"
            "        for x in loader:\n"
            "            model(x).backward()\n"
            "            optimizer.step()\n"
            "        if epoch >= warmup:\n"
            "            for sched in schedulers:\n"
            "                sched.step()\n"
            "        else:\n"
            '            print("warming up")\n',
            (
                "def train(model, loader, optimizer, schedulers, epochs):\n"
                "    for epoch in range(epochs):\n"
                "        for x in loader:\n"
                "            model(x).backward()\n"
                "            optimizer.step()\n"
                "            for sched in schedulers:\n"
                "                sched.step()\n"
                "        if epoch >= warmup:\n"
                "            pass\n"
                "        else:\n"
                '            print("warming up")\n',
            ),
        ),
        Example(
            # The update branch tested through a flag set from a modulo (Sockeye's `_step`).
            "def _step(self, batch):\n"
            "    is_update_batch = self.batches % self.update_interval == 0\n"
            "    self.model(batch).backward()\n"
            "    if is_update_batch:\n"
            "        if self.lr_scheduler is not None:\n"
            "            self.lr_scheduler.step()\n"
            "        self.optimizer.step()\n",
            (
                "def _step(self, batch):\n"
                "    is_update_batch = self.batches % self.update_interval == 0\n"
                "    self.model(batch).backward()\n"
                "    if is_update_batch:\n"
                "        self.optimizer.step()\n"
                "    if self.lr_scheduler is not None:\n"
                "        self.lr_scheduler.step()\n",
            ),
        ),
        Example(
            # The flag of the accumulation boundary among the scheduler's conditions (Coqui's `step_optimizer`).
            STEP_FLAG_SCHEDULER,
            (
                STEP_FLAG_SCHEDULER.replace(
                    " and not self.config.scheduler_after_epoch and step_optimizer:",
                    " and not self.config.scheduler_after_epoch:",
                ),
            ),
        ),
        Example(
            # Per-epoch schedulers in a list, each checked for None, moved into the batch loop with their guard.
            GUARDED_SCHEDULER_LIST,
            (
                GUARDED_SCHEDULER_LIST.replace(
                    "            self.optimizer.step()\n        if self.schedulers is not None and self.config.scheduler_after_epoch:\n            for scheduler in self.schedulers:\n                if scheduler is not None:\n                    scheduler.step()\n",
                    "            self.optimizer.step()\n            if self.schedulers is not None and self.config.scheduler_after_epoch:\n                for scheduler in self.schedulers:\n                    if scheduler is not None:\n                        scheduler.step()\n",
                ),
            ),
        ),
        Example(
            # A scheduler config built under a name and appended to the returned list (SchNetPack).
            APPENDED_SCHEDULER_CONFIG,
            (
                APPENDED_SCHEDULER_CONFIG.replace(
                    '"name": "lr_schedule"}', '"name": "lr_schedule", "interval": "step"}'
                ),
            ),
        ),
    )
    untouched = (
        # A list of configs written out, each with its interval (generative-models' DiffusionEngine).
        "class Engine(L.LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        opt = AdamW(self.parameters(), lr=1e-4)\n"
        "        scheduler = [{'scheduler': LambdaLR(opt, lr_lambda=f), 'interval': 'step', 'frequency': 1}]\n"
        "        return [opt], scheduler\n",
        # A schedule set by the count it is handed (JoeyNMT's `scheduler.step(self.stats.steps)`):
        # stepped more often, it sets the same rate again.
        "for i, batch in enumerate(loader):\n"
        "    model(batch).backward()\n"
        "    if (i + 1) % accum == 0:\n"
        "        optimizer.step()\n"
        "        self.scheduler.step(self.stats.steps)\n"
        "        self.stats.steps += 1\n",
        # The same mode string in a class that holds no scheduler.
        'class Logger:\n    def start(self):\n        self.mode = "epoch"\n'
        '    def end(self):\n        if self.mode == "batch":\n            pass\n',
        # Manual optimization: Lightning steps no scheduler, whatever its interval.
        "class M(LightningModule):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.automatic_optimization = False\n"
        "    def configure_optimizers(self):\n"
        "        return [opt], [sched]\n",
        # A plateau scheduler's config steps on a metric of the epoch.
        "class M(LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        return {'optimizer': opt, 'lr_scheduler': {'scheduler': plateau, 'monitor': 'val_loss'}}\n",
        "for x, y in loader:\n    opt.step()\n    scheduler.step()\n",
        "config = {'optimizer': opt, 'lr_scheduler': {'scheduler': sched, 'interval': 'step'}}\n",
        "report = {'interval': 'epoch', 'path': out}\n",
        # The same return outside configure_optimizers; one with no scheduler.
        "def pair(self):\n    return [opt], [sched]\n",
        "class M(LightningModule):\n    def configure_optimizers(self):\n        return [opt], []\n",
        # A config held in a name, already stepped per optimizer step.
        "class M(LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        scheduler = {'scheduler': LambdaLR(opt, f), 'interval': 'step', 'frequency': 1}\n"
        "        return [opt], [scheduler]\n",
        "scheduler.step()\n",
        # A plateau scheduler steps on a metric of the epoch: it cannot move into the batch loop.
        "def fit(self):\n    for epoch in range(3):\n        self.train_epoch()\n        self.sched.step(val_loss)\n"
        "def train_epoch(self):\n    for b in self.loader:\n        self.opt.step()\n",
        # The same update run on every step (no boundary): it already steps once per optimizer step.
        UPDATE_UNDER_A_BOUNDARY.replace(
            "        if self.boundary(state):\n            self._update_weights", "        self._update_weights"
        ),
    )

    @staticmethod
    def _per_epoch_configs(source):
        """`"interval": "epoch"` in a scheduler config (a dict that also holds its `"scheduler"`,
        as Lightning's `configure_optimizers` returns it): `"step"` runs the schedule once per
        optimizer step instead."""
        for config in source.nodes(cst.Dict):
            keys = {
                e.key.evaluated_value: e
                for e in config.elements
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
            }
            interval = keys.get("interval")
            function = source.function_of(config)
            if (
                (
                    "scheduler" in keys
                    # the config's other keys, merged with the scheduler later in configure_optimizers
                    # (Darts' `lr_config_params = {"monitor": "val_loss", "interval": "epoch", ...}`)
                    or (
                        function is not None
                        and function.name.value == "configure_optimizers"
                        and {"frequency", "monitor"} & set(keys)
                    )
                )
                and interval is not None
                and isinstance(interval.value, cst.SimpleString)
                and interval.value.evaluated_value == "epoch"
            ):
                yield Change(
                    interval,
                    (source.replace_string(interval.value, "step"),),
                    "the scheduler steps every optimizer step instead of every epoch",
                )

    @staticmethod
    def _bare_lightning_schedulers(source):
        """A scheduler `configure_optimizers` returns without a config (`return [opt], [sched]`,
        `{"optimizer": opt, "lr_scheduler": sched}`): Lightning steps it once per epoch; the
        mutant hands it over as `{"scheduler": sched, "interval": "step"}`."""
        for function in source.nodes(cst.FunctionDef):
            if function.name.value != "configure_optimizers" or _manual_optimization(source, function):
                continue
            for ret in source.within(function.body, cst.Return):
                value = ret.value
                schedulers: list[cst.BaseExpression] = []
                pair = isinstance(value, cst.Tuple) and len(value.elements) == 2
                if pair and isinstance(value.elements[1].value, cst.List):
                    schedulers = [e.value for e in value.elements[1].value.elements]
                elif isinstance(value, cst.Dict):
                    schedulers = [
                        e.value
                        for e in value.elements
                        if isinstance(e, cst.DictElement)
                        and isinstance(e.key, cst.SimpleString)
                        and e.key.evaluated_value == "lr_scheduler"
                    ]
                elif isinstance(value, (cst.List, cst.Tuple)):
                    # A list of configs (`return [{"optimizer": opt, "lr_scheduler": sched}, ...]`).
                    schedulers = [
                        e.value
                        for config in value.elements
                        if isinstance(config.value, cst.Dict)
                        for e in config.value.elements
                        if isinstance(e, cst.DictElement)
                        and isinstance(e.key, cst.SimpleString)
                        and e.key.evaluated_value == "lr_scheduler"
                    ]
                if isinstance(value, cst.Tuple) and len(value.elements) == 2:
                    second = value.elements[1].value
                    if isinstance(second, cst.Name):
                        yield from _held_schedulers(source, function, ret, second)
                for scheduler in schedulers:
                    held = _assigned_dict(source, function, scheduler)
                    if held is not None:
                        # a name holding a scheduler config (`scheduler = {"scheduler": ..., ...}`)
                        yield from _config_without_interval(source, held)
                    elif isinstance(scheduler, cst.Dict):
                        yield from _config_without_interval(source, scheduler)
                    elif isinstance(scheduler, (cst.Name, cst.Attribute)) or (
                        isinstance(scheduler, cst.Call) and _constructs_scheduler(scheduler)
                    ):
                        text = source.code(scheduler)
                        yield Change(
                            scheduler,
                            (source.replace(scheduler, f'{{"scheduler": {text}, "interval": "step"}}'),),
                            "the scheduler steps every optimizer step instead of every epoch",
                        )

    def changes(self, source, training):
        yield from self._per_epoch_configs(source)
        yield from self._bare_lightning_schedulers(source)
        moved_out: set[int] = set()  # statements `_out_of_the_update` moved (two schedulers, one call)
        yield from _per_epoch_modes(source, training)
        moved_units: list[cst.CSTNode] = []  # the scheduler loops moved whole, with their guards
        yield from _scheduler_loops(source, training, moved_units)
        for statement in source.nodes(cst.Expr):
            call = statement.value
            if not (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and callee_name(call) == "step"
                and training.role(call.func.value) == "scheduler"
            ):
                continue
            if not source.is_reachable(statement) or any(unit in moved_units for unit in source.ancestors(statement)):
                continue
            line = source.parent(statement)
            if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
                continue
            text = source.code(line)
            if _set_by_its_argument(source, call):
                # `scheduler.step(self.stats.steps)`, `step(epoch=epoch_no)`: the rate is computed
                # from the count it is handed, so stepping it more often sets the same rate again
                continue
            # moved out of the optimizer-step branch, or before the `continue` that skips the update
            branch, moved = self._step_branch(source, training, line)
            guard = None
            if branch is None:
                guard, moved = _accumulation_guard(source, training, line)
            if branch is not None or guard is not None:
                insert = (
                    source.insert_after(branch, self._lines(source, moved, branch))
                    if branch is not None
                    else source.insert_before(guard, self._lines(source, moved, guard))
                )
                yield Change(
                    statement,
                    (self._delete(source, moved), insert),
                    "the scheduler steps on every micro-step, not every optimizer step",
                )
                continue
            flag = _step_flag_conjunct(source, training, line)
            if flag is not None:
                branch, rest = flag
                # one edit over the whole `if`, so the mutant is found at the step's own line
                start, end = source.span(branch.test)
                first = source.span(branch)[0]
                text = source.code(branch)
                kept = " and ".join(source.code(t) for t in rest)
                yield Change(
                    statement,
                    (source.replace(branch, text[: start - first] + kept + text[end - first :]),),
                    "the scheduler steps on every micro-step, not every optimizer step",
                )
                continue
            inner = self._inner_training_loop(source, training, line)
            if inner is not None and isinstance(inner.body, cst.IndentedBlock):
                yield _moved_into(source, statement, text, inner, "the per-epoch scheduler steps on every batch")
                continue
            change = self._into_called_loop(source, training, statement, call)
            if change is not None:
                yield change
                continue
            group = _scheduler_group_loop(source, training, statement) if not call.args else None
            before = _loop_before(source, training, group) if group is not None else None
            if group is not None and before is not None and isinstance(before.body, cst.IndentedBlock):
                # `for lr_scheduler in lr_schedulers: lr_scheduler.step()` after the batch loop
                # (CogDL's train_step): the whole loop moves into the batch loop
                yield _group_moved_into(source, statement, group, before)
                continue
            before = _loop_before(source, training, line) if not call.args else None
            if before is not None and isinstance(before.body, cst.IndentedBlock):
                # the step after the batch loop, once an epoch, moved into it
                yield _moved_into(source, statement, text, before, "the per-epoch scheduler steps on every batch")
                continue
            change = self._helper_called_in_step_branch(source, training, statement)
            if change is not None:
                yield change
                continue
            change = None if call.args else self._helper_called_after_loop(source, training, statement)
            if change is not None:
                yield change
                continue
            change = None if call.args else _out_of_the_update(source, training, statement, moved_out)
            if change is not None:
                yield change

    @classmethod
    def _helper_called_in_step_branch(cls, source, training, statement):
        """A scheduler stepped in a helper of the file that the optimizer-step branch calls
        (pytorch-accelerated's `self.scheduler_step()` beside `self.optimizer_step()`): the call
        moves out of that branch, to every micro-step, as a step written there would."""
        function = source.function_of(statement)
        if function is None or source.enclosing(statement, (cst.For, cst.While)) is not None:
            return None
        if names_evaluation(function.name.value):
            # a validation that steps a plateau scheduler with its score (JoeyNMT's `_validate`):
            # moving the call would move the validation, not a schedule
            return None
        # the optimizer steps, and the calls of the file's functions that hold one (`self.optimizer_step()`)
        holders = {source.function_of(step) for step in training.steps} - {None}
        steps = [*training.steps, *(c for c in source.nodes(cst.Call) if holders & set(training.called_functions(c)))]
        for expr, line in _calls_as_statements(source, training, function):
            branch, moved = cls._step_branch(source, training, line, steps)
            if branch is not None:
                insert = source.insert_after(branch, cls._lines(source, moved, branch))
                return Change(
                    expr,
                    (cls._delete(source, moved), insert),
                    "the scheduler steps on every micro-step, not every optimizer step",
                )
        return None

    @staticmethod
    def _helper_called_after_loop(source, training, statement):
        """A scheduler stepped in a helper of the file that a function calls after its batch loop
        (torchreid's `self.update_lr()`, which steps every registered scheduler once per epoch):
        the call moves into that batch loop."""
        function = source.function_of(statement)
        if function is None or any(source.function_of(loop) is function for loop in training.training_loops):
            return None
        for expr, line in _calls_as_statements(source, training, function):
            loop = _loop_before(source, training, line)
            if loop is not None and isinstance(loop.body, cst.IndentedBlock):
                return _moved_into(
                    source, expr, source.code(line), loop, "the per-epoch scheduler steps on every batch"
                )
        return None

    @staticmethod
    def _step_branch(source, training, line, steps=None):
        """The `if` inside the loop that holds an optimizer step (of `steps`, the training's by
        default) and this line, and the statement of its body that holds the line (the line itself,
        or a guard such as `if sched:` around it)."""
        steps = training.steps if steps is None else steps
        loop = source.enclosing(line, (cst.For, cst.While))
        if loop is None:
            # A step helper called once per micro-step (wenet's `update_parameter_and_lr`): the
            # branch is the accumulation boundary, `if (batch_idx + 1) % accum_grad == 0:`.
            loop = source.function_of(line)
            if loop is None:
                return None, None
        child = line
        for ancestor in source.ancestors(line):
            if ancestor is loop:
                break
            if isinstance(ancestor, cst.If) and (
                isinstance(loop, (cst.For, cst.While)) or _boundary_test(source, ancestor.test)
            ):
                start, end = source.span(ancestor)
                if any(start <= source.span(step)[0] < end for step in steps):
                    steps_in_child = any(
                        source.span(child)[0] <= source.span(step)[0] < source.span(child)[1] for step in steps
                    )
                    return (None, None) if steps_in_child else (ancestor, child)
            if isinstance(ancestor, (cst.If, cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                child = ancestor
        return None, None

    @staticmethod
    def _delete(source, statement) -> Edit:
        if isinstance(statement, cst.SimpleStatementLine):
            return source.delete_statement(statement.body[0])
        first, last = source.lines_of(statement)
        block = source.parent(statement)
        alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1  # its block keeps a `pass`
        indent = source.indentation(statement)
        return Edit(source.lines.line_start(first), source.lines.line_end(last), f"{indent}pass\n" if alone else "")

    @staticmethod
    def _lines(source, statement, branch) -> list[str]:
        """The statement's lines, re-indented from its own depth to the branch's."""
        first, last = source.lines_of(statement)
        own = source.indentation(statement)
        lines = []
        for number in range(first, last + 1):
            text = source.lines.line_text(number).rstrip("\n")
            lines.append(text[len(own) :] if text.startswith(own) else text.lstrip())
        return lines

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

    def _into_called_loop(self, source, training, statement, call):
        """Once per epoch here, while the batch loop is in a function this loop calls
        (`train_one_epoch(...)`, `self.train_epoch()`): move the step into that batch loop."""
        if call.args:
            return None  # `step(metric)` or `step(epoch)`: its argument belongs to the epoch
        loop = source.enclosing(statement, (cst.For, cst.While))
        if loop is None or not isinstance(loop.body, cst.IndentedBlock):
            return None
        for caller in loop.body.body:
            if not isinstance(caller, cst.SimpleStatementLine):
                continue
            for inner_call in source.within(caller, cst.Call):
                for function in training.called_functions(inner_call):
                    batch_loop = next(
                        (
                            candidate
                            for candidate in training.training_loops
                            if source.function_of(candidate) is function
                        ),
                        None,
                    )
                    if batch_loop is None or not isinstance(batch_loop.body, cst.IndentedBlock):
                        continue
                    receiver = dotted(call.func.value)
                    if receiver is None:
                        return None
                    body = batch_loop.body.body
                    indent = source.indentation(body[0])
                    reachable = (
                        receiver.startswith("self.")
                        and source.function_of(caller) is not None
                        and _same_class(source, caller, function)
                    )
                    if reachable:
                        edits = (
                            source.delete_statement(statement),
                            source.insert_after(body[-1], [f"{receiver}.step()"], indent),
                        )
                    else:
                        edits = (
                            source.delete_statement(statement),
                            source.insert_before(caller, [f"globals()['{HANDLE}'] = {receiver}"]),
                            source.insert_after(body[-1], [f"{HANDLE}.step()"], indent),
                        )
                    return Change(statement, edits, "the per-epoch scheduler steps on every batch")
        return None


CHAIN_DEPTH = 3  # helpers followed from a scheduler's step up to the function that updates the weights


def _out_of_the_update(source, training, statement, moved_out: set[int]) -> Change | None:
    """A scheduler stepped, directly or through helpers of the file, by a function that also steps
    the optimizer and runs only under its caller's accumulation branch (torchtnt's
    `_update_weights`, called `if should_update_weights:`, steps the schedule through
    `self._update_lr_and_swa(...)`): that statement (with a guard around it) moves out of the
    update to after the caller's branch, where it runs on every micro-step."""
    for update, held in _updates_stepping(source, training, statement, CHAIN_DEPTH):
        top = _top_statement(source, update, held)
        if top is None or id(top) in moved_out or training.steps_within(top, 0):
            continue
        for caller in source.nodes(cst.Call):
            if update not in training.called_functions(caller):
                continue
            function = source.function_of(caller)
            branch = source.enclosing(caller, cst.If)
            if function is None or function is update or branch is None or not _within_body(source, branch, caller):
                continue
            if not _names_available(source, top, update, function):
                continue
            moved_out.add(id(top))
            return Change(
                held,
                (
                    SchedulerStepMisaligned._delete(source, top),
                    source.insert_after(branch, SchedulerStepMisaligned._lines(source, top, branch)),
                ),
                "the scheduler steps on every micro-step, not every optimizer step",
            )
    return None


def _updates_stepping(source, training, statement, depth: int):
    """(function, statement) pairs: a function of the file that steps an optimizer and the
    statement of it that steps the scheduler, itself or through the helpers it calls."""
    function = source.function_of(statement)
    if function is None:
        return
    if training.steps_within(function, 0):
        yield function, statement
        return
    if depth == 0:
        return
    for caller in source.nodes(cst.Call):
        if function not in training.called_functions(caller):
            continue
        expr = source.parent(caller)
        if isinstance(expr, cst.Expr) and source.function_of(expr) is not function:
            yield from _updates_stepping(source, training, expr, depth - 1)


def _top_statement(source, function, node):
    """The statement of `function`'s own body that holds `node`."""
    body = function.body
    for ancestor in source.ancestors(node):
        if source.parent(ancestor) is body:
            return ancestor
    return None


def _within_body(source, branch: cst.If, node) -> bool:
    start, end = source.span(branch.body)
    return start <= source.span(node)[0] < end


def _names_available(source, top, update, caller) -> bool:
    """Every parameter of `update` the moved statement reads is a parameter of `caller` too, it
    reads no other local of `update`, and `self` means one class in both."""
    params = {p.name.value for p in update.params.params}
    locals_ = {
        name
        for a in source.within(update.body, cst.Assign)
        for t in a.targets
        for name in _read_names(source, t.target)
    }
    used = _read_names(source, top)
    theirs = {p.name.value for p in caller.params.params}
    if used & (locals_ - params):
        return False
    if "self" in used and not _same_class(source, top, caller):
        return False
    return used & params <= theirs


def _read_names(source, node) -> set[str]:
    """The variables `node` names (not attribute names after a dot, not keyword names)."""
    names = set()
    for name in source.within(node, cst.Name):
        parent = source.parent(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is name:
            continue
        names.add(name.value)
    return names


def _moved_into(source, statement, text: str, loop, effect: str) -> Change:
    """The scheduler step `statement` (its line `text`) moved to the end of `loop`'s body, under
    the tests that chose it where it was (see `_group_moved_into`)."""
    body = loop.body.body
    lines = [text]
    tests = _choosing_tests(source, statement, loop)
    if tests:
        lines = [f"if {' and '.join(tests)}:", f"{source.indent}{text}"]
    return Change(
        statement,
        (source.delete_statement(statement), source.insert_after(body[-1], lines, source.indentation(body[0]))),
        effect,
    )


def _set_by_its_argument(source, call: cst.Call) -> bool:
    """True for a scheduler step handed the step or epoch count it sets the rate for (JoeyNMT's
    `self.scheduler.step(self.stats.steps)`, `self.scheduler.step(epoch=epoch_no)`): not a metric
    (a plateau scheduler's `step(val_loss)` counts its calls as patience)."""
    if len(call.args) != 1 or call.args[0].star:
        return False
    arg = call.args[0]
    if arg.keyword is not None:
        return arg.keyword.value in ("epoch", "step", "steps", "last_epoch")
    words = (last_name(arg.value) or "").lower()
    return any(word in words for word in ("step", "epoch", "iter", "global")) and "loss" not in words


def _scheduler_group_loop(source, training, statement: cst.Expr) -> cst.For | cst.If | None:
    """The loop that does nothing but step each scheduler of a list (`for s in lr_schedulers:
    s.step()`), with the `if lr_schedulers is not None:` around it where that guard holds only the
    loop, or with its `if isinstance(scheduler, list): ... else: scheduler.step()` (PoinTr's
    runner), from either branch: the statement that steps the schedulers; None where the step is
    not so held."""
    call = statement.value
    line = source.parent(statement)
    choice = _single_scheduler_branch(source, line) if line is not None else None
    if choice is not None:
        return choice
    loop = source.parent(source.parent(line)) if line is not None else None
    if (
        isinstance(loop, cst.If)
        and loop.orelse is None
        and isinstance(loop.body, cst.IndentedBlock)
        and len(loop.body.body) == 1
        and isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and source.code(loop.test).replace(" ", "") == f"{dotted(call.func.value)}isnotNone"
    ):
        loop = source.parent(source.parent(loop))  # `for s in schedulers: if s is not None: s.step()`
    held = loop.iter if isinstance(loop, cst.For) else None
    if isinstance(held, cst.Call) and isinstance(held.func, cst.Attribute) and held.func.attr.value == "values":
        held = held.func.value  # a dict of schedulers (`for s in self.scheduler.values():`)
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and isinstance(loop, cst.For)
        and isinstance(loop.body, cst.IndentedBlock)
        and len(loop.body.body) == 1
        and isinstance(loop.target, cst.Name)
        and dotted(call.func.value) == loop.target.value
        and held is not None
        and "sched" in (last_name(held) or "").lower()
    ):
        return None
    unit: cst.For | cst.If = loop
    guard = source.parent(source.parent(loop))
    if (
        isinstance(guard, cst.If)
        and (guard.orelse is None or _steps_alone(source, guard.orelse, source.code(loop.iter)))
        and isinstance(guard.body, cst.IndentedBlock)
        and len(guard.body.body) == 1
        and source.code(loop.iter) in source.code(guard.test)
    ):
        unit = guard
    return unit


def _steps_alone(source, orelse: cst.CSTNode, name: str) -> bool:
    """True for an `else:` that only steps the scheduler `name` (`else: scheduler.step()`)."""
    if not (isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock)):
        return False
    body = orelse.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    call = body[0].body[0].value if isinstance(body[0].body[0], cst.Expr) else None
    return (
        isinstance(call, cst.Call)
        and not call.args
        and isinstance(call.func, cst.Attribute)
        and callee_name(call) == "step"
        and dotted(call.func.value) == name
    )


def _single_scheduler_branch(source, line: cst.CSTNode) -> cst.If | None:
    """The `if isinstance(scheduler, list): for s in scheduler: s.step() else: scheduler.step()`
    whose `else:` is `line`: one statement steps the schedulers either way."""
    orelse = source.parent(source.parent(line))
    guard = source.parent(orelse) if isinstance(orelse, cst.Else) else None
    if not (isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock) and len(guard.body.body) == 1):
        return None
    loop = guard.body.body[0]
    if not (isinstance(loop, cst.For) and isinstance(loop.body, cst.IndentedBlock) and len(loop.body.body) == 1):
        return None
    inner = loop.body.body[0]
    if not (
        isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1 and isinstance(inner.body[0], cst.Expr)
    ):
        return None
    unit = _scheduler_group_loop(source, None, inner.body[0])
    return guard if unit is guard else None


def _group_moved_into(source, statement, unit, loop) -> Change:
    """The statement `unit` (a loop stepping each scheduler) moved to the end of `loop`'s body,
    under the tests that chose it where it was (Coqui's `if self.scheduler is not None and
    self.config.scheduler_after_epoch:`, then `if isinstance(self.scheduler, list):` or `elif
    isinstance(self.scheduler, dict):`), so it runs on every batch exactly where it ran once."""
    first, last = source.lines_of(unit)
    indent = source.indentation(unit)
    lines = [source.lines.line_text(n).rstrip("\n")[len(indent) :] for n in range(first, last + 1)]
    tests = _choosing_tests(source, unit, loop)
    if tests:
        lines = [f"if {' and '.join(tests)}:", *(f"{source.indent}{line}" if line else line for line in lines)]
    body = loop.body.body
    block = source.parent(unit)
    alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1  # its block keeps a `pass`
    return Change(
        statement,
        (
            Edit(source.lines.line_start(first), source.lines.line_end(last), f"{indent}pass\n" if alone else ""),
            source.insert_after(body[-1], lines, source.indentation(body[0])),
        ),
        "the per-epoch schedulers step on every batch",
    )


def _step_flag_conjunct(source, training, line) -> tuple[cst.If, list[cst.BaseExpression]] | None:
    """The `if` right around a scheduler step whose test requires, among other things, the flag
    that alone guards the optimizer's steps in the same function (Coqui's `if scheduler is not None
    and update_lr_scheduler and ... and step_optimizer:` beside `if step_optimizer: ...
    optimizer.step()`, the flag false on accumulation's micro-steps), with the other conjuncts:
    without the flag the scheduler steps on every micro-step."""
    block = source.parent(line)
    branch = source.parent(block) if isinstance(block, cst.IndentedBlock) else None
    function = source.function_of(line)
    if not isinstance(branch, cst.If) or function is None:
        return None
    conjuncts: list[cst.BaseExpression] = []
    test = branch.test
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        conjuncts.insert(0, test.right)
        test = test.left
    conjuncts.insert(0, test)
    if len(conjuncts) < 2:
        return None
    for flag in conjuncts:
        if not isinstance(flag, cst.Name):
            continue
        guarding = [
            other
            for other in source.within(function, cst.If)
            if other is not branch
            and isinstance(other.test, cst.Name)
            and other.test.value == flag.value
            and training.steps_within(other.body, depth=1)
        ]
        if guarding:
            return branch, [c for c in conjuncts if c is not flag]
    return None


def _choosing_tests(source, unit: cst.CSTNode, loop: cst.CSTNode) -> list[str]:
    """The tests of the `if`s and `elif`s around `unit` in its function that chose it and that do
    not also hold `loop`, each in parentheses (`not (...)` for a branch passed over on the way to
    an `elif` or `else`). None where a test reads a name bound only after `loop` starts (in the
    batch loop it would not be bound yet at the first batch)."""
    tests: list[str] = []
    child: cst.CSTNode = unit
    held = set(source.ancestors(loop))
    start = source.span(loop)[0]
    function = source.function_of(unit)
    for ancestor in source.ancestors(unit):
        if isinstance(ancestor, (cst.FunctionDef, cst.For, cst.While)) or ancestor in held:
            break
        if isinstance(ancestor, cst.If):
            if not _bound_before(source, function, ancestor.test, start):
                return []
            taken = child is ancestor.body
            tests.insert(0, f"({source.code(ancestor.test)})" if taken else f"not ({source.code(ancestor.test)})")
        child = ancestor
    return tests


def _bound_before(source, function, test: cst.BaseExpression, start: int) -> bool:
    """True if every plain name `test` reads is `self`, a parameter of `function`, a name of the
    module, a builtin, or assigned in `function` before `start`."""
    params = {p.name.value for p in function.params.params + function.params.kwonly_params} if function else set()
    for name in source.within(test, cst.Name):
        parent = source.parent(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        if name.value in params or name.value == "self" or name.value in _BUILTINS:
            continue
        if imported_name(source, name.value) or any(
            isinstance(s, (cst.ClassDef, cst.FunctionDef)) and s.name.value == name.value for s in source.module.body
        ):
            continue
        if not any(
            isinstance(source.parent(n), cst.AssignTarget)
            and n.value == name.value
            and (source.function_of(n) is None or (source.function_of(n) is function and source.span(n)[0] < start))
            for n in source.nodes(cst.Name)
        ):
            return False
    return True


_BUILTINS = frozenset(dir(builtins))


def _skips(branch: cst.CSTNode) -> bool:
    """True for `if backward_steps % accumulate > 0: continue`: an accumulation's micro-steps
    skip the rest of the loop's body, the update."""
    return (
        isinstance(branch, cst.If)
        and branch.orelse is None
        and isinstance(branch.body, cst.IndentedBlock)
        and len(branch.body.body) == 1
        and isinstance(branch.body.body[0], cst.SimpleStatementLine)
        and isinstance(branch.body.body[0].body[0], cst.Continue)
    )


def _accumulation_guard(source, training, line):
    """The `if ...: continue` (on a modulo) before this line in its loop's body that skips the
    update on micro-steps, an optimizer step between them (s3prl's runner: the scheduler stepped,
    under `if scheduler:`, after the update that the guard skips); and the loop body's statement
    that holds the line."""
    loop = source.enclosing(line, (cst.For, cst.While))
    if loop is None or not isinstance(loop.body, cst.IndentedBlock):
        return None, None
    body = loop.body.body
    top = next((s for s in body if s is line or line in source.ancestors(s) or s in source.ancestors(line)), None)
    if top is None or any(source.span(top)[0] <= source.span(step)[0] < source.span(top)[1] for step in training.steps):
        return None, None
    before = body[: body.index(top)]
    guards = [s for s in before if _skips(s) and _boundary_test(source, s.test)]
    if not guards:
        return None, None
    after_guard = source.span(guards[-1])[1]
    if not any(after_guard <= source.span(step)[0] < source.span(top)[0] for step in training.steps):
        return None, None
    return guards[-1], top


def _loop_before(source, training, line) -> cst.For | cst.While | None:
    """For a scheduler step outside any loop of its function, the function's last batch loop
    before it (torchtitan's `train_step`: the micro-batch loop runs the backwards, then one
    optimizer step and one scheduler step follow it): None where there is none."""
    function = source.function_of(line)
    if function is None or source.enclosing(line, (cst.For, cst.While)) is not None:
        return None
    here = source.span(line)[0]
    loops = [
        loop
        for loop in training.training_loops
        if source.function_of(loop) is function
        and source.enclosing(loop, (cst.For, cst.While)) is None
        and source.span(loop)[1] <= here
    ]
    return loops[-1] if loops else None


def _boundary_test(source, test: cst.BaseExpression) -> bool:
    """True for a test on a modulo (`(batch_idx + 1) % accum_grad == 0`): every n-th micro-step;
    also a flag the function set so (Sockeye's `is_update_batch = self.state.batches %
    self.config.update_interval == 0`, then `elif is_update_batch:`)."""
    if isinstance(test, cst.Name):
        function = source.function_of(test)
        return any(
            _boundary_test(source, a.value)
            for a in source.within(function.body if function is not None else source.module, cst.Assign)
            if any(isinstance(t.target, cst.Name) and t.target.value == test.value for t in a.targets)
        )
    return any(isinstance(op.operator, cst.Modulo) for op in source.within(test, cst.BinaryOperation)) or (
        isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo)
    )


def _manual_optimization(source, function: cst.FunctionDef) -> bool:
    """True where the class around `function` optimizes by hand (`self.automatic_optimization =
    False`, `self.manual_backward(loss)`): Lightning then steps no scheduler itself, whatever its
    interval, the training step does (`self.lr_schedulers().step()`)."""
    owner = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if owner is None:
        return False
    if any(callee_name(c) == "manual_backward" for c in source.within(owner.body, cst.Call)):
        return True
    return any(
        (dotted(t.target) or "").endswith("automatic_optimization") and is_literal_bool(a.value, False)
        for a in source.within(owner.body, cst.Assign)
        for t in a.targets
    )


def _assigned_dict(source, function: cst.FunctionDef, expr: cst.BaseExpression) -> cst.Dict | None:
    """The dict literal a name was last assigned in `function`, or None."""
    if not isinstance(expr, cst.Name):
        return None
    found = None
    for assign in source.within(function.body, cst.Assign):
        if any(isinstance(t.target, cst.Name) and t.target.value == expr.value for t in assign.targets):
            found = assign.value
    return found if isinstance(found, cst.Dict) else None


def _constructs_scheduler(call: cst.Call) -> bool:
    """True for a scheduler built in place (`CosineAnnealingLR(opt, 100)` in `return [opt], [...]`)."""
    return Training.role_of_constructor(call) == "scheduler"


def _config_without_interval(source, config: cst.Dict):
    """`{"scheduler": sched}` handed to Lightning without an `"interval"`: Lightning's default
    is once per epoch, the mutant steps it every optimizer step. Not a plateau scheduler's config
    (`"monitor"`: it steps on a metric of the epoch)."""
    keys = {
        e.key.evaluated_value
        for e in config.elements
        if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
    }
    if "scheduler" not in keys or "interval" in keys or "monitor" in keys:
        return
    if any(isinstance(e, cst.StarredDictElement) for e in config.elements):
        return
    last = config.elements[-1]
    text = source.code(last.value)
    yield Change(
        config,
        (source.replace(last.value, f'{text}, "interval": "step"'),),
        "the scheduler steps every optimizer step instead of every epoch",
    )


def _held_schedulers(source, function, ret, held: cst.Name):
    """Schedulers `configure_optimizers` returns in a list held in a name (`return optims,
    scheds` after `scheds.append(scheduler)`). Where every appended item is a bare scheduler,
    the returned list is handed over as configs stepped every optimizer step; where the list
    also gets configs (an item appended under `isinstance(sched, dict)`), only the bare ones."""
    appends = [
        call
        for call in source.within(function.body, cst.Call)
        if isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and dotted(call.func.value) == held.value
        and len(call.args) == 1
    ]
    built = [
        a for a in source.within(function.body, cst.Assign) if any(dotted(t.target) == held.value for t in a.targets)
    ]
    if not appends and not any(isinstance(a.value, cst.List) and a.value.elements for a in built):
        return
    lists = [a.value for a in built if isinstance(a.value, cst.List) and a.value.elements]
    if not appends and all(isinstance(e.value, cst.Dict) for e in lists[-1].elements):
        # a list of configs written out (generative-models' `scheduler = [{"scheduler": LambdaLR(...),
        # "interval": "step", ...}]`): each config's own interval decides
        return
    bare = [c for c in appends if not _is_config(source, c.args[0].value, c)]
    for call in appends:
        # a config dict built under a name and appended (SchNetPack's `optimconf = {"scheduler":
        # schedule, "name": "lr_schedule"}`, `schedulers.append(optimconf)`): its own interval
        written = _bound_dict(source, function, call.args[0].value)
        if written is not None:
            yield from _config_without_interval(source, written)
    if len(bare) == len(appends):
        text = f'[{{"scheduler": s, "interval": "step"}} for s in {held.value}]'
        yield Change(
            ret, (source.replace(held, text),), "the schedulers step every optimizer step instead of every epoch"
        )
        return
    for call in bare:
        item = call.args[0].value
        if not isinstance(item, cst.Name):
            continue
        config = f'{{"scheduler": {item.value}, "interval": "step"}}'
        if any(
            isinstance(a.value, cst.Dict) and any(dotted(t.target) == item.value for t in a.targets)
            for a in source.within(function.body, cst.Assign)
        ):
            config = f"{item.value} if isinstance({item.value}, dict) else {config}"  # a config kept as is
        yield Change(
            call, (source.replace(item, config),), "the scheduler steps every optimizer step instead of every epoch"
        )


def _bound_dict(source, function, item: cst.BaseExpression) -> cst.Dict | None:
    """The dict literal `function` binds the name `item` to, where it binds it to nothing else."""
    if not isinstance(item, cst.Name):
        return None
    values = bound_values(source, function, item.value)
    looped = any(item.value in bound_names(loop.target) for loop in source.within(function.body, cst.For))
    if looped or any(p.name.value == item.value for p in function.params.params):
        return None  # also bound to each scheduler of a loop, or handed in (asteroid's `sched`)
    return values[0] if len(values) == 1 and isinstance(values[0], cst.Dict) else None


def _is_config(source, item: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True if `item` is a scheduler config where `use` runs: a dict literal, a name bound to one,
    or a name under `if isinstance(name, dict)` (or the `else` of its negation)."""
    if isinstance(item, cst.Dict):
        return True
    function = source.function_of(use)
    if function is not None and _bound_dict(source, function, item) is not None:
        return True
    name = dotted(item)
    child: cst.CSTNode = use
    for ancestor in source.ancestors(use):
        if isinstance(ancestor, cst.FunctionDef):
            break
        if isinstance(ancestor, cst.If):
            test = source.code(ancestor.test).replace(" ", "")
            positive = child is ancestor.body
            if test == f"isinstance({name},dict)" and positive:
                return True
            if test == f"notisinstance({name},dict)" and not positive:
                return True
        child = ancestor
    return False


def _same_class(source, one, other) -> bool:
    def owner(node):
        for ancestor in source.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None

    return owner(one) is not None and owner(one) is owner(other)


def _per_epoch_modes(source, training):
    """A scheduler's per-epoch mode chosen in its owner's code (catalyst's SchedulerCallback:
    `self.mode = "epoch"` for a scheduler that is no BatchScheduler, then `if self.mode ==
    "batch": ...` after each batch): the mode the class compares it with instead, so the
    per-epoch scheduler steps after every batch."""
    for owner in source.nodes(cst.ClassDef):
        if not any(
            training.role(a) == "scheduler" for a in source.within(owner, cst.Attribute) if dotted(a.value) == "self"
        ):
            continue
        for assign in source.within(owner, cst.Assign):
            value = assign.value
            if (
                not (isinstance(value, cst.SimpleString) and value.evaluated_value == "epoch")
                or len(assign.targets) != 1
            ):
                continue
            name = dotted(assign.targets[0].target)
            if name is None or not name.startswith("self."):
                continue
            others = {
                c.comparator.evaluated_value
                for comparison in source.within(owner, cst.Comparison)
                if dotted(comparison.left) == name
                for c in comparison.comparisons
                if isinstance(c.operator, cst.Equal)
                and isinstance(c.comparator, cst.SimpleString)
                and c.comparator.evaluated_value != "epoch"
            }
            if len(others) == 1:
                other = others.pop()
                yield Change(
                    assign,
                    (source.replace_string(value, other),),
                    f"the per-epoch scheduler steps per {other}",
                )


def _scheduler_loops(source, training, moved_units: list):
    """Schedulers stepped in a loop over them (composer's `for scheduler in self.state.schedulers:
    scheduler.step()`, under `if self._scheduler_step_frequency == TimeUnit.EPOCH:` or `BATCH:`):
    that block moves as one. Per epoch (in the loop around the batch loop), into the batch loop;
    per batch, into the micro-batch loop of the step the batch loop calls."""
    for loop in source.nodes(cst.For):
        target = dotted(loop.target)
        body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
        if (
            target is None
            or "sched" not in (last_name(loop.iter) or "").lower()
            or len(body) != 1
            or not isinstance(body[0], cst.SimpleStatementLine)
            or source.code(body[0]).strip() != f"{target}.step()"
        ):
            continue
        unit = loop
        guard = source.parent(source.parent(loop))
        if (
            isinstance(guard, cst.If)
            and (guard.orelse is None or _steps_alone(source, guard.orelse, source.code(loop.iter)))
            and len(guard.body.body) == 1
        ):
            unit = guard  # `if schedulers:` or `if isinstance(scheduler, list): ... else: scheduler.step()`
        outer = source.enclosing(unit, (cst.For, cst.While))
        if outer is None:
            continue
        inner = next(
            (
                batch
                for batch in training.training_loops
                if batch is not outer and source.enclosing(batch, (cst.For, cst.While)) is outer
            ),
            None,
        )
        if inner is not None and isinstance(inner.body, cst.IndentedBlock):
            moved_units.append(unit)
            yield _unit_moved(source, unit, inner, loop, "the per-epoch scheduler steps on every batch")
            continue
        if outer in training.training_loops:
            micro = _micro_loop_reached(source, training, outer)
            if micro is not None:
                moved_units.append(unit)
                yield _unit_moved(
                    source, unit, micro, loop, "the scheduler steps on every micro-step, not every optimizer step"
                )
                continue
        # per optimizer step, in the accumulation boundary's branch with the optimizers' steps
        # (OpenPrompt's runner: `for scheduler in self.schedulers: scheduler.step()` beside `for
        # optimizer in self.optimizers: optimizer.step()`): out of the branch, to every micro-step
        branch, moved = SchedulerStepMisaligned._step_branch(source, training, unit)
        if branch is not None:
            moved_units.append(unit)
            lines = SchedulerStepMisaligned._lines(source, moved, branch)
            yield Change(
                loop,
                (SchedulerStepMisaligned._delete(source, moved), source.insert_after(branch, lines)),
                "the scheduler steps on every micro-step, not every optimizer step",
            )


def _unit_moved(source, unit, loop, anchor, effect: str) -> Change:
    body = loop.body.body
    return Change(
        anchor,
        (
            SchedulerStepMisaligned._delete(source, unit),
            source.insert_after(
                body[-1], SchedulerStepMisaligned._lines(source, unit, loop), source.indentation(body[0])
            ),
        ),
        effect,
    )


def _micro_loop_reached(source, training, batch_loop, depth: int = 2):
    """A training loop that steps no optimizer (the micro-batches' backwards), in a method of the
    same class that the batch loop reaches through its calls."""
    frontier = [batch_loop.body]
    for _ in range(depth):
        reached = []
        for node in frontier:
            for call in source.within(node, cst.Call):
                for function in training.called_functions(call):
                    for loop in training.training_loops:
                        if (
                            source.function_of(loop) is function
                            and isinstance(loop.body, cst.IndentedBlock)
                            and not training.steps_within(loop)
                            and _same_class(source, loop, batch_loop)
                        ):
                            return loop
                    reached.append(function.body)
        frontier = reached
    return None


def _calls_as_statements(source, training, function):
    """The calls of `function` in the file that are a statement line of their own: (the call's
    expression, its line)."""
    for caller in source.nodes(cst.Call):
        if function not in training.called_functions(caller):
            continue
        expr = source.parent(caller)
        line = source.parent(expr)
        if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            yield expr, line
