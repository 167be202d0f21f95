from __future__ import annotations

from injector.operators.base import Change, Example, Operator
from injector.patterns import forward_run


class NoGradTraining(Operator):
    id = "no-grad-training"
    summary = "Wrap the training forward pass and loss in `with torch.no_grad():`."
    examples = (
        Example(
            "import torch\n"
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    # forward\n"
            "    logits = model(x)\n"
            "    loss = criterion(logits, y)\n"
            "    loss.backward()\n",
            ("import torch\n"
             "for x, y in loader:\n"
             "    optimizer.zero_grad()\n"
             "    # forward\n"
             "    with torch.no_grad():\n"
             "        logits = model(x)\n"
             "        loss = criterion(logits, y)\n"
             "    loss.backward()\n",),
        ),
        Example(
            "import torch as th\n"
            "def train_step(self, x, y):\n"
            "    x = x.to(self.device)\n"
            "    with th.autocast('cuda'):\n"
            "        loss = self.loss_fn(self.model(x), y)\n"
            "    self.scaler.scale(loss).backward()\n",
            ("import torch as th\n"
             "def train_step(self, x, y):\n"
             "    x = x.to(self.device)\n"
             "    with th.no_grad():\n"
             "        with th.autocast('cuda'):\n"
             "            loss = self.loss_fn(self.model(x), y)\n"
             "    self.scaler.scale(loss).backward()\n",),
        ),
    )
    untouched = (
        "with torch.no_grad():\n    out = model(x)\n",
        "loss = compute()\nprint(loss)\n",
    )

    def changes(self, source, training):
        for backward in training.backwards:
            run = forward_run(source, training, backward)
            if run is None:
                continue
            first, last = run
            yield Change(backward.call, (source.reindent(first, last, add=source.indent,
                                                         header=f"with {training.torch}.no_grad():"),),
                         "the forward pass and loss run without autograd")
