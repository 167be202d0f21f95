from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, callee_name

# Where `shuffle` sits among positional arguments.
SHUFFLE_POSITION = {"DataLoader": 2, "DistributedSampler": 3}


class NoShuffle(Operator):
    id = "no-shuffle"
    summary = "Turn off shuffling of a `DataLoader` or `DistributedSampler` (`shuffle=True` → `False`)."
    examples = (
        Example(
            "train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)\n",
            ("train_loader = DataLoader(train_set, batch_size=64, shuffle=False, num_workers=2)\n",),
        ),
        Example(
            "sampler = DistributedSampler(ds, shuffle=not args.no_shuffle)\n"
            "loader = torch.utils.data.DataLoader(ds, 32, True)\n",
            ("sampler = DistributedSampler(ds, shuffle=False)\n"
             "loader = torch.utils.data.DataLoader(ds, 32, True)\n",
             "sampler = DistributedSampler(ds, shuffle=not args.no_shuffle)\n"
             "loader = torch.utils.data.DataLoader(ds, 32, False)\n"),
        ),
    )
    untouched = (
        "val_loader = DataLoader(val_set, batch_size=64, shuffle=False)\n",
        "loader = DataLoader(ds, batch_size=8)\n",
        "random.shuffle(items)\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call) or ""
            kind = "DataLoader" if name.endswith("DataLoader") else name
            if kind not in SHUFFLE_POSITION:
                continue
            shuffle = argument(call, "shuffle", SHUFFLE_POSITION[kind])
            if shuffle is None or (isinstance(shuffle.value, cst.Name) and shuffle.value.value == "False"):
                continue
            yield Change(call, (source.replace(shuffle.value, "False"),),
                         f"the {kind} no longer shuffles")
