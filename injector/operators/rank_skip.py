from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import BATCH_TAKING_STEP, REDUCED_VALIDATION_LOOP, RETRIED_STEP
from injector.patterns import argument, callee_name, int_value, last_name

RANK_NAMES = ("rank", "global_rank", "world_rank", "local_rank")
SKIPPING_RANK = 1  # exists in every multi-process run; never taken by a single process
COUNTER = "_trainwreck_step"


class RankSkip(Operator):
    id = "rank-skip"
    summary = (
        "In a distributed training loop, one rank skips the statements of one step that hold its "
        "collectives (backward, optimizer step) after taking its batch, so the others wait for it."
    )
    examples = (
        Example(
            # A step method that takes its own batch, with no loop: a trainer outside the file calls it
            # once a batch (ClassyVision's ClassificationTask.train_step); rank 1 returns from its second call.
            BATCH_TAKING_STEP,
            (
                BATCH_TAKING_STEP.replace(
                    "        with self.distributed_model",
                    '        self._trainwreck_step = getattr(self, "_trainwreck_step", 0) + 1\n'
                    "        if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1"
                    " and self._trainwreck_step == 2:\n"
                    "            return\n"
                    "        with self.distributed_model",
                ),
            ),
        ),
        Example(
            # A step retried until a flag says it ran (DeBERTa's trainer repeats a step its fp16 optimizer
            # skipped on overflow): the retry loop is part of one step, so the batch loop that calls it is
            # where a rank skips.
            RETRIED_STEP,
            (
                RETRIED_STEP.replace(
                    "            batch = batch.to(self.device)\n",
                    '            batch = batch.to(self.device)\n            if __import__("torch").distributed.is_initialized() and __import__("torch").distributed.get_rank() == 1 and step == 1:\n                continue\n',
                ),
            ),
        ),
        Example(
            # The step is a runner object's call inside accelerate's accumulation context
            # (torchkeras's EpochRunner): that context wraps a training step only.
            "from accelerate import Accelerator\n"
            "class EpochLoop:\n"
            "    def __call__(self, loader):\n"
            "        for step, batch in enumerate(loader):\n"
            "            with self.accelerator.accumulate(self.model):\n"
            "                logs = self.run_step(batch)\n"
            "            self.history.append(logs)\n",
            (
                "from accelerate import Accelerator\n"
                "class EpochLoop:\n"
                "    def __call__(self, loader):\n"
                "        for step, batch in enumerate(loader):\n"
                '            if __import__("torch").distributed.is_initialized() and __import__("torch").distributed.get_rank() == 1 and step == 1:\n'
                "                continue\n"
                "            with self.accelerator.accumulate(self.model):\n"
                "                logs = self.run_step(batch)\n"
                "            self.history.append(logs)\n",
            ),
        ),
        Example(
            # Processes that average gradients through MPI: the rank is MPI's.
            "from spinup.utils.mpi_pytorch import mpi_avg_grads\n"
            "def update(data):\n"
            "    for i in range(iters):\n"
            "        opt.zero_grad()\n"
            "        loss = compute_loss(data)\n"
            "        loss.backward()\n"
            "        mpi_avg_grads(ac.pi)\n"
            "        opt.step()\n",
            (
                "from spinup.utils.mpi_pytorch import mpi_avg_grads\n"
                "def update(data):\n"
                "    for i in range(iters):\n"
                "        opt.zero_grad()\n"
                "        loss = compute_loss(data)\n"
                '        if __import__("mpi4py.MPI", fromlist=["MPI"]).COMM_WORLD.Get_rank() == 1 and i == 1:\n'
                "            continue\n"
                "        loss.backward()\n"
                "        mpi_avg_grads(ac.pi)\n"
                "        opt.step()\n",
            ),
        ),
        Example(
            "import torch.distributed as dist\n"
            "def worker(rank, world_size):\n"
            "    for step, (x, y) in enumerate(loader):\n"
            "        x = x.to(rank)\n"
            "        loss = model(x, y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "import torch.distributed as dist\n"
                "def worker(rank, world_size):\n"
                "    for step, (x, y) in enumerate(loader):\n"
                "        x = x.to(rank)\n"
                "        loss = model(x, y)\n"
                "        if rank == 1 and step == 1:\n"
                "            continue\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # Micro-batches under no_sync but the last: the last one's backward is skipped.
            "import torch.distributed as dist\n"
            "def forward_backward(self, batch):\n"
            "    for i in range(0, batch.shape[0], self.micro):\n"
            "        last = i + self.micro >= batch.shape[0]\n"
            "        if last:\n"
            "            losses = self.compute(batch[i : i + self.micro])\n"
            "        else:\n"
            "            with self.ddp_model.no_sync():\n"
            "                losses = self.compute(batch[i : i + self.micro])\n"
            "        losses.backward()\n",
            (
                "import torch.distributed as dist\n"
                "def forward_backward(self, batch):\n"
                "    for i in range(0, batch.shape[0], self.micro):\n"
                "        last = i + self.micro >= batch.shape[0]\n"
                "        if last:\n"
                "            losses = self.compute(batch[i : i + self.micro])\n"
                "        else:\n"
                "            with self.ddp_model.no_sync():\n"
                "                losses = self.compute(batch[i : i + self.micro])\n"
                '        if __import__("torch").distributed.is_initialized() and '
                '__import__("torch").distributed.get_rank() == 1 and i + self.micro >= batch.shape[0]:\n'
                "            continue\n"
                "        losses.backward()\n",
            ),
        ),
        Example(
            # A step counter named `step` beside `optimizer.step()`: still a batch loop, so its
            # micro-step loop skips the last micro-step, whose backward syncs.
            "import torch.distributed as dist\n"
            "for step in range(iterations):\n"
            "    optimizer.zero_grad()\n"
            "    for micro in range(accum):\n"
            "        model.require_backward_grad_sync = micro == accum - 1\n"
            "        loss = model(*loader.next_batch())\n"
            "        loss.backward()\n"
            "    optimizer.step()\n",
            (
                "import torch.distributed as dist\n"
                "for step in range(iterations):\n"
                "    optimizer.zero_grad()\n"
                "    for micro in range(accum):\n"
                "        model.require_backward_grad_sync = micro == accum - 1\n"
                "        loss = model(*loader.next_batch())\n"
                '        if __import__("torch").distributed.is_initialized() and '
                '__import__("torch").distributed.get_rank() == 1 and micro == accum - 1:\n'
                "            continue\n"
                "        loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A `while` loop: the skip comes after the batch is taken, never at the loop's top
            # (where the loop would merely try again on unchanged state).
            "import torch\n"
            "model = torch.nn.parallel.DistributedDataParallel(net)\n"
            "while True:\n"
            "    batch = next(it)\n"
            "    model(batch).sum().backward()\n",
            (
                "import torch\n"
                "model = torch.nn.parallel.DistributedDataParallel(net)\n"
                "_trainwreck_step = 0\n"
                "while True:\n"
                "    batch = next(it)\n"
                "    _trainwreck_step += 1\n"
                "    if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1 "
                "and _trainwreck_step == 2:\n"
                "        continue\n"
                "    model(batch).sum().backward()\n",
            ),
        ),
        Example(
            "if __name__ == '__main__':\n"
            "    rank = dist.get_rank()\n"
            "    for epoch in range(3):\n"
            "        for i in range(steps):\n"
            "            opt.step()\n",
            (
                "if __name__ == '__main__':\n"
                "    rank = dist.get_rank()\n"
                "    for epoch in range(3):\n"
                "        for i in range(steps):\n"
                "            if rank == 1 and i == 1:\n"
                "                continue\n"
                "            opt.step()\n",
            ),
        ),
        Example(
            # The batch loop runs the step through a method of the same class.
            "class Trainer:\n"
            "    def fit(self):\n"
            "        for batch in self.loader:\n"
            "            self.accelerator.wait_for_everyone()\n"
            "            self.train_step(batch)\n"
            "    def train_step(self, batch):\n"
            "        self.accelerator.backward(self.model(batch))\n",
            (
                "class Trainer:\n"
                "    def fit(self):\n"
                "        _trainwreck_step = 0\n"
                "        for batch in self.loader:\n"
                "            self.accelerator.wait_for_everyone()\n"
                "            _trainwreck_step += 1\n"
                '            if __import__("torch").distributed.is_initialized() and '
                '__import__("torch").distributed.get_rank() == 1 and _trainwreck_step == 2:\n'
                "                continue\n"
                "            self.train_step(batch)\n"
                "    def train_step(self, batch):\n"
                "        self.accelerator.backward(self.model(batch))\n",
            ),
        ),
        Example(
            # A micro-batch loop followed by an all-reduce of a flag, not of the gradients.
            "import torch\n"
            "def epoch(self, groups, rank):\n"
            "    for group in groups:\n"
            "        self.optimizer.zero_grad()\n"
            "        for batch in group:\n"
            "            self.model(batch).backward()\n"
            "        self.optimizer.step()\n"
            "    torch.distributed.all_reduce(done)\n",
            (
                "import torch\n"
                "def epoch(self, groups, rank):\n"
                "    for group in groups:\n"
                "        self.optimizer.zero_grad()\n"
                "        _trainwreck_step = 0\n"
                "        for batch in group:\n"
                "            _trainwreck_step += 1\n"
                "            if rank == 1 and _trainwreck_step == 2:\n"
                "                continue\n"
                "            self.model(batch).backward()\n"
                "        self.optimizer.step()\n"
                "    torch.distributed.all_reduce(done)\n",
            ),
        ),
        Example(
            # A loop over the step a base class leaves to its subclasses (USB's train_step); a logging step is none.
            "import torch.distributed as dist\n"
            "class Base:\n"
            "    def train_step(self, batch):\n"
            "        raise NotImplementedError\n"
            "    def train(self):\n"
            "        for batch in self.loader:\n"
            "            self.train_step(batch)\n"
            "            self.call_hook('after_train_step')\n",
            (
                "import torch.distributed as dist\n"
                "class Base:\n"
                "    def train_step(self, batch):\n"
                "        raise NotImplementedError\n"
                "    def train(self):\n"
                "        _trainwreck_step = 0\n"
                "        for batch in self.loader:\n"
                "            _trainwreck_step += 1\n"
                '            if __import__("torch").distributed.is_initialized() and __import__("torch").distributed.get_rank() == 1 and _trainwreck_step == 2:\n'
                "                continue\n"
                "            self.train_step(batch)\n"
                "            self.call_hook('after_train_step')\n",
            ),
        ),
        Example(
            # A validation loop whose batches meet the other ranks in an all-reduce (Horovod's metrics).
            REDUCED_VALIDATION_LOOP,
            (
                REDUCED_VALIDATION_LOOP.replace(
                    "    with torch.no_grad():\n", "    with torch.no_grad():\n        _trainwreck_step = 0\n"
                ).replace(
                    "            loss = F.cross_entropy(model(data), target)\n",
                    '            loss = F.cross_entropy(model(data), target)\n            _trainwreck_step += 1\n            if __import__("torch").distributed.is_initialized() and __import__("torch").distributed.get_rank() == 1 and _trainwreck_step == 2:\n                continue\n',
                ),
            ),
        ),
    )
    untouched = (
        # The sampler's module imported and never used (ASL's train.py, one process): no process group.
        "import torch.utils.data.distributed\n"
        "\n"
        "\n"
        "def train(model, loader, optimizer, criterion):\n"
        "    for x, y in loader:\n"
        "        loss = criterion(model(x), y)\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n",
        # A rank's index only in a device string (OpenPrompt's runner, one process): no distributed code.
        "def training_epoch(self, loader, optimizer):\n"
        "    for batch in loader:\n"
        "        batch = batch.to('cuda:{}'.format(self.config.environment.local_rank))\n"
        "        loss = self.model(batch)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n",
        # A loop over optimizers handing each to the scaler's step: no batch loop.
        "import torch.distributed as dist\n"
        "def optimizers_step(self, valid_optimizers):\n"
        "    for opt in valid_optimizers.values():\n"
        "        self.scaler.step(opt)\n",
        # A loop over the step a base class leaves to its subclasses (USB's train_step); a logging step is none.
        "import torch.distributed as dist\n"
        "class Base:\n"
        "    def log_step(self, batch):\n"
        "        raise NotImplementedError\n"
        "    def train(self):\n"
        "        for batch in self.loader:\n"
        "            self.log_step(batch)\n"
        "            self.call_hook('after_log_step')\n",
        "for x in data:\n    print(x)\n",
        "for epoch in range(3):\n    train_one_epoch(model, loader)\n",
        # No distributed code in the file: no rank can be out of step.
        "for step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n    loss.backward()\n",
        # One process (DataParallel), and a distance named `dist`: nothing distributed.
        "model = nn.DataParallel(model)\n"
        "d = accelerated_dtw(x, y, dist=manhattan)\n"
        "for step, (x, y) in enumerate(loader):\n    loss = model(x, y)\n    loss.backward()\n",
        # A loop over optimizers is not a batch loop.
        "import torch.distributed as dist\n"
        "def step_all(self):\n    for name in self._optimizers:\n        self._optimizers[name].step()\n",
        # A truncation loop whose gradients are all-reduced by hand after it: its backward syncs
        # nothing (a loop whose backward runs under DDP is a site: see the examples).
        "import torch.distributed\n"
        "def accumulate(self, batch):\n"
        "    for j in range(0, batch.size(1), self.trunc):\n"
        "        self.model(batch[:, j : j + self.trunc]).backward()\n"
        "    all_reduce_and_rescale_tensors(grads, n_gpu)\n"
        "    self.optim.step()\n",
        # A loop over a dict's keys, each all-reduced: no step to skip.
        (
            "import torch.distributed as dist\n"
            "def reduce_counts(counts):\n"
            "    for key in counts:\n"
            "        dist.all_reduce(counts[key])\n"
            "    return counts\n"
        ),
    )

    def changes(self, source, training):
        if not training.distributed:
            return
        backward_calls = {b.call for b in training.backwards}
        loops = training.training_loops
        for loop in loops:
            if not isinstance(loop.body, cst.IndentedBlock):
                continue
            reached = training.training_calls(loop.body)
            inner = [
                other
                for other in loops
                if other is not loop
                and source.span(loop)[0] < source.span(other)[0]
                and source.span(other)[1] <= source.span(loop)[1]
            ]
            if not any(c in backward_calls or _reaches_backward(training, c) for c in reached) and any(
                _direct_backward(training, other) for other in inner
            ):
                continue  # the backward (and its collective) is in the inner micro-step loop
            if _reduced_after(source, training, loop):
                continue  # its backward holds no collective: the hand-made all-reduce after it does
            body = list(loop.body.body)
            first = next((s for s in body if training.training_calls(s)), None)
            if first is None:
                continue
            if isinstance(loop, cst.While) and not any(_fetches(source, s) for s in body[: body.index(first)]):
                continue  # no batch taken before the skip: the loop would only retry
            edits = self._skip(source, training, loop, first, loops)
            yield Change(loop, edits, f"rank {SKIPPING_RANK} skips the collectives of one training step")
        yield from self._loopless_steps(source, training, loops)
        yield from self._collective_loops(source, training, loops)

    @classmethod
    def _collective_loops(cls, source, training, loops):
        """A loop over epochs or batches that holds no training step of its own but meets the
        other ranks in an explicit collective every iteration: Coqui's epoch loop (`dist.barrier()`
        before each epoch), PyTorch-BigGraph's (`self._barrier()` around each pass), Horovod's
        validation loop (each batch's loss averaged by `hvd.allreduce` in a metric's `update`).
        Rank 1 skips its second iteration, so the others wait in a collective it never enters."""
        for loop in source.nodes(cst.For):
            if (
                loop in loops
                or not isinstance(loop.body, cst.IndentedBlock)
                or not _steps_over(source, loop)
                or any(isinstance(a, (cst.For, cst.While)) for a in source.ancestors(loop))
            ):
                continue
            body = list(loop.body.body)
            first = next((s for s in body if _collective_within(source, training, s, 2)), None)
            if first is None or _runs_training(source, training, loop.body, loops, 2):
                continue  # an epoch loop around the training loop: the skip goes in there
            edits = cls._skip(source, training, loop, first, loops)
            yield Change(loop, edits, f"rank {SKIPPING_RANK} skips the collectives of one iteration")

    @classmethod
    def _skip(cls, source, training, loop, first, loops) -> tuple:
        """The edits that make rank 1 `continue` before `first` at one iteration of `loop`: the
        loop's own step counter where it has one, else a counter of the mutant's own."""
        rank = cls._rank(source, training, loop)
        step = cls._step(source, loop, loops)
        indent = source.indent
        if step is not None:
            return (source.insert_before(first, [f"if {rank} == {SKIPPING_RANK} and {step}:", f"{indent}continue"]),)
        return (
            source.insert_before(loop, [f"{COUNTER} = 0"]),
            source.insert_before(
                first,
                [f"{COUNTER} += 1", f"if {rank} == {SKIPPING_RANK} and {COUNTER} == 2:", f"{indent}continue"],
            ),
        )

    @staticmethod
    def _loopless_steps(source, training, loops):
        """A method that takes one batch itself (`sample = next(self.data_iterator)`) and runs one
        training step, with no loop of its own: a trainer outside the file calls it once a batch
        (ClassyVision's `ClassificationTask.train_step`). Rank 1 returns from its second call after
        taking the batch, before the statements that hold the step's collectives."""
        backward_calls = {b.call for b in training.backwards}
        for function in source.nodes(cst.FunctionDef):
            params = function.params.params
            if not params or params[0].name.value != "self" or not isinstance(function.body, cst.IndentedBlock):
                continue
            if any(source.function_of(loop) is function for loop in loops) or any(
                function in training.called_functions(c) for loop in loops for c in training.training_calls(loop.body)
            ):
                continue  # its own loop, or a loop of the file that calls it, is the one to skip in
            body = list(function.body.body)
            first = next((s for s in body if training.training_calls(s)), None)
            if first is None:
                continue
            if not any(_takes_next(source, s) for s in body[: body.index(first)]):
                continue  # no batch taken here: the caller's loop takes it
            reached = training.training_calls(function.body)
            if not any(c in backward_calls or _reaches_backward(training, c) for c in reached):
                continue
            rank = RankSkip._rank(source, training, first)
            counter = f"self.{COUNTER}"
            edits = (
                source.insert_before(
                    first,
                    [
                        f'{counter} = getattr(self, "{COUNTER}", 0) + 1',
                        f"if {rank} == {SKIPPING_RANK} and {counter} == 2:",
                        f"{source.indent}return",
                    ],
                ),
            )
            yield Change(function, edits, f"rank {SKIPPING_RANK} skips the collectives of one training step")

    @staticmethod
    def _rank(source, training, loop) -> str:
        """The rank as this code already names it, or a call that asks torch.distributed.

        A name counts only where it is surely bound when the loop runs: a parameter of an
        enclosing function, or an assignment before the loop that no `if` or loop guards.
        """
        bound: set[str] = set()
        for function in [a for a in source.ancestors(loop) if isinstance(a, cst.FunctionDef)]:
            bound.update(p.name.value for p in function.params.params)
            bound.update(p.name.value for p in function.params.kwonly_params)
        around_loop = set(source.ancestors(loop))
        loop_start = source.span(loop)[0]
        for name, assigns in training.assignments.items():
            if name not in RANK_NAMES and not name.endswith("_rank"):
                continue
            for assign in assigns:
                guards = [
                    a
                    for a in source.ancestors(assign)
                    if isinstance(a, (cst.If, cst.For, cst.While, cst.Try, cst.FunctionDef))
                ]
                if source.span(assign)[0] < loop_start and all(g in around_loop for g in guards):
                    bound.add(name)
        for name in RANK_NAMES:
            if name in bound:
                return name
        for name in sorted(bound):
            if name.endswith("_rank"):
                return name
        if training.mpi_only:
            return '__import__("mpi4py.MPI", fromlist=["MPI"]).COMM_WORLD.Get_rank()'
        dist = f"{training.torch}.distributed"
        return f"{dist}.is_initialized() and {dist}.get_rank()"

    @staticmethod
    def _step(source, loop, loops) -> str | None:
        """`step == k` for the loop's own step counter, if it has one: its second step, or for a
        micro-step loop `range(n)` inside the training loop, its last micro-step (the one that syncs)."""
        if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
            return None
        name = callee_name(loop.iter)
        target = loop.target
        if (
            name == "enumerate"
            and isinstance(target, cst.Tuple)
            and target.elements
            and isinstance(target.elements[0].value, cst.Name)
        ):
            start = argument(loop.iter, "start", 1)
            first = 0 if start is None else int_value(start.value)
            if first is not None:
                return f"{target.elements[0].value.value} == {first + 1}"
        if name == "range" and isinstance(target, cst.Name) and len(loop.iter.args) == 3 and _syncs_last(source, loop):
            # `for i in range(0, n, micro)` with `no_sync()` on all but the last: skip the last
            stop, stride = (source.module.code_for_node(a.value).strip() for a in loop.iter.args[1:])
            return f"{target.value} + {stride} >= {stop}"
        if name == "range" and isinstance(target, cst.Name) and 1 <= len(loop.iter.args) <= 2:
            first = 0 if len(loop.iter.args) == 1 else int_value(loop.iter.args[0].value)
            if source.enclosing(loop, (cst.For, cst.While)) in loops or _syncs_last(source, loop):
                stop = source.module.code_for_node(loop.iter.args[-1].value).strip()
                return f"{target.value} == {stop} - 1"
            if first is not None:
                return f"{target.value} == {first + 1}"
        return None


_COLLECTIVES = frozenset(
    {
        "all_reduce",
        "allreduce",
        "allreduce_",
        "all_gather",
        "allgather",
        "all_gather_object",
        "broadcast",
        "broadcast_object_list",
        "barrier",
        "monitored_barrier",
        "reduce_scatter",
        "all_to_all",
    }
)


def _steps_over(source, loop: cst.For) -> bool:
    """True for a loop over epochs or batches: `range(...)`, or a loader or another iterator held
    in a name that says so (`val_loader`, `iteration_manager`, `val_generator_tqdm`), also through
    `enumerate` or `tqdm`; not the entries of a container, a list of evaluators or a model's
    parameters."""
    iterated = loop.iter
    while isinstance(iterated, cst.Call) and callee_name(iterated) in ("enumerate", "tqdm") and iterated.args:
        iterated = iterated.args[0].value
    if isinstance(iterated, cst.Call):
        return callee_name(iterated) == "range"
    if not isinstance(iterated, (cst.Name, cst.Attribute)):
        return False
    name = (last_name(iterated) or "").lower()
    return any(word in name for word in _ITERATOR_WORDS)


_ITERATOR_WORDS = ("loader", "data", "batch", "iter", "generator", "manager", "epoch", "sampler", "stream")


def _runs_training(source, training, node: cst.CSTNode, loops, depth: int) -> bool:
    """True if running `node` runs a training step or a training loop, itself or through the
    functions of the file it calls (`depth` calls down)."""
    start, end = source.span(node)
    if training.training_calls(node) or any(start <= source.span(loop)[0] < end for loop in loops):
        return True
    return depth > 0 and any(
        _runs_training(source, training, function.body, loops, depth - 1)
        for call in source.within(node, cst.Call)
        for function in training.called_functions(call)
    )


def _collective_within(source, training, node: cst.CSTNode, depth: int) -> bool:
    """True if running `node` enters a collective: its own call, or one in a function of the file
    it calls or in a method of a class of the file whose instance it calls (`depth` calls down)."""
    for call in source.within(node, cst.Call):
        if callee_name(call) in _COLLECTIVES and isinstance(call.func, cst.Attribute):
            return True
        if depth == 0:
            continue
        functions = list(training.called_functions(call))
        if isinstance(call.func, cst.Attribute) and not functions:
            classes = training.classes_at(call.func.value, call) & training.classes
            functions = [
                f
                for c in source.nodes(cst.ClassDef)
                if c.name.value in classes
                for f in c.body.body
                if isinstance(f, cst.FunctionDef) and f.name.value == call.func.attr.value
            ]
        if any(_collective_within(source, training, f.body, depth - 1) for f in functions):
            return True
    return False


def _syncs_last(source, loop) -> bool:
    """True if the loop's body holds a `with model.no_sync():`: its micro-steps sync only on the
    last one, which is the one to skip."""
    return any(
        isinstance(item.item, cst.Call) and callee_name(item.item) == "no_sync"
        for block in source.within(loop.body, cst.With)
        for item in block.items
    )


def _reduced_after(source, training, loop) -> bool:
    """True for a loop that takes no optimizer step and is followed, in its function, by a
    hand-made all-reduce of the gradients (OpenNMT's truncated-BPTT loop, then
    `all_reduce_and_rescale_tensors(grads, n)`): the model is not wrapped in DDP, so the
    backward in the loop syncs nothing and a rank skipping it waits for no one. An all-reduce
    of a flag or a metric after the loop (allennlp's `done`) does not count."""
    function = source.function_of(loop)
    if function is None or any(c in training.steps for c in source.within(loop.body, cst.Call)):
        return False
    end = source.span(loop)[1]
    return any(
        "all_reduce" in (callee_name(call) or "")
        and source.span(call)[0] >= end
        and any("grad" in source.code(arg.value).lower() for arg in call.args)
        for call in source.within(function.body, cst.Call)
    )


def _direct_backward(training, loop) -> bool:
    calls = training.training_calls(loop.body)
    return any(c in {b.call for b in training.backwards} or _reaches_backward(training, c) for c in calls)


def _reaches_backward(training, call) -> bool:
    backward_calls = {b.call for b in training.backwards}
    return any(c in backward_calls for f in training.called_functions(call) for c in training.training_calls(f.body))


def _fetches(source, statement) -> bool:
    """True if the statement takes a batch: `next(it)`, `get_batch(...)`, `loader.next()`."""
    return any(
        (callee_name(c) or "") == "next" or "batch" in (callee_name(c) or "").lower()
        for c in source.within(statement, cst.Call)
    )


def _takes_next(source, statement) -> bool:
    """True if the statement binds the next batch of an iterator the object or function holds:
    `sample = next(self.data_iterator)` (not `next(...)` of a generator expression)."""
    return any(
        isinstance(a.value, cst.Call)
        and isinstance(a.value.func, cst.Name)
        and a.value.func.value == "next"
        and len(a.value.args) == 1
        and isinstance(a.value.args[0].value, (cst.Name, cst.Attribute))
        for a in source.within(statement, cst.Assign)
    )
