from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name, int_value

RANK_NAMES = ("rank", "global_rank", "world_rank", "local_rank")
SKIPPING_RANK = 1  # exists in every multi-process run; never taken by a single process
COUNTER = "_trainwreck_step"


class RankSkip(Operator):
    id = "rank-skip"
    summary = ("At the top of a training loop, insert a `continue` that one rank takes at one step "
               "(using the code's own rank variable, else `torch.distributed.get_rank()`).")
    examples = (
        Example(
            "def worker(rank, world_size):\n"
            "    for step, (x, y) in enumerate(loader):\n"
            "        loss = model(x, y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            ("def worker(rank, world_size):\n"
             "    for step, (x, y) in enumerate(loader):\n"
             "        if rank == 1 and step == 1:\n"
             "            continue\n"
             "        loss = model(x, y)\n"
             "        loss.backward()\n"
             "        optimizer.step()\n",),
        ),
        Example(
            "import torch\n"
            "while True:\n"
            "    batch = next(it)\n"
            "    model(batch).sum().backward()\n",
            ("import torch\n"
             "_trainwreck_step = 0\n"
             "while True:\n"
             "    _trainwreck_step += 1\n"
             "    if torch.distributed.is_initialized() and torch.distributed.get_rank() == 1 "
             "and _trainwreck_step == 2:\n"
             "        continue\n"
             "    batch = next(it)\n"
             "    model(batch).sum().backward()\n",),
        ),
        Example(
            "if __name__ == '__main__':\n"
            "    rank = dist.get_rank()\n"
            "    for epoch in range(3):\n"
            "        for i in range(steps):\n"
            "            opt.step()\n",
            ("if __name__ == '__main__':\n"
             "    rank = dist.get_rank()\n"
             "    for epoch in range(3):\n"
             "        for i in range(steps):\n"
             "            if rank == 1 and i == 1:\n"
             "                continue\n"
             "            opt.step()\n",),
        ),
    )
    untouched = (
        "for x in data:\n    print(x)\n",
        "for epoch in range(3):\n    train_one_epoch(model, loader)\n",
    )

    def changes(self, source, training):
        for loop in training.training_loops:
            if not isinstance(loop.body, cst.IndentedBlock):
                continue
            rank = self._rank(source, training, loop)
            step = self._step(loop)
            first = loop.body.body[0]
            indent = source.indent
            if step is not None:
                edits = (source.insert_before(first, [f"if {rank} == {SKIPPING_RANK} and {step}:",
                                                      f"{indent}continue"]),)
            else:
                edits = (
                    source.insert_before(loop, [f"{COUNTER} = 0"]),
                    source.insert_before(first, [
                        f"{COUNTER} += 1",
                        f"if {rank} == {SKIPPING_RANK} and {COUNTER} == 2:",
                        f"{indent}continue"]),
                )
            yield Change(loop, edits, f"rank {SKIPPING_RANK} skips one training step")

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
                guards = [a for a in source.ancestors(assign)
                          if isinstance(a, (cst.If, cst.For, cst.While, cst.Try, cst.FunctionDef))]
                if source.span(assign)[0] < loop_start and all(g in around_loop for g in guards):
                    bound.add(name)
        for name in RANK_NAMES:
            if name in bound:
                return name
        for name in sorted(bound):
            if name.endswith("_rank"):
                return name
        dist = f"{training.torch}.distributed"
        return f"{dist}.is_initialized() and {dist}.get_rank()"

    @staticmethod
    def _step(loop) -> str | None:
        """`step == k` for the loop's own step counter (the second step it runs), if it has one."""
        if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
            return None
        name = callee_name(loop.iter)
        target = loop.target
        if name == "enumerate" and isinstance(target, cst.Tuple) and target.elements and \
                isinstance(target.elements[0].value, cst.Name):
            start = argument(loop.iter, "start", 1)
            first = 0 if start is None else int_value(start.value)
            if first is not None:
                return f"{target.elements[0].value.value} == {first + 1}"
        if name == "range" and isinstance(target, cst.Name) and 1 <= len(loop.iter.args) <= 2:
            first = 0 if len(loop.iter.args) == 1 else int_value(loop.iter.args[0].value)
            if first is not None:
                return f"{target.value} == {first + 1}"
        return None
