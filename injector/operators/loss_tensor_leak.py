from __future__ import annotations

import re

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    APEX_CONTEXT_STEP,
    ELEGANTRL_UPDATE,
    GATHERED_EPOCH_LOSS,
    LOGGED_STEP,
    LOSS_AVERAGE_ENTRY,
    RETURNED_STATS_RECORD,
)
from injector.patterns import LOSS_FUNCTIONS, argument, assigned_alone, callee_name, dotted, last_name, under_no_grad

# Methods that keep what they are given: containers, meters, histories.
# An object that keeps running averages of what is assigned to its attributes (LeRobot's
# MetricsTracker: `train_metrics.loss = ...` updates an AverageMeter).
_TRACKER = re.compile(r"tracker|meter|metrics")
STORING_PREFIXES = (
    "append",
    "extend",
    "update",
    "record",
    "store",
    "push",
    "accumulate",
    "track",
    "insert",
    "logkv_mean",
)  # the OpenAI baselines logger's running mean keeps every value


_AVERAGERS = (
    "aves = {k: utils.Averager() for k in ['tl', 'vl']}\n"
    "for data, label in train_loader:\n"
    "    loss = F.cross_entropy(model(data), label)\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    aves['tl'].add(loss.item())\n"
    "for data, label in val_loader:\n"
    "    with torch.no_grad():\n"
    "        loss = F.cross_entropy(model(data), label)\n"
    "    aves['vl'].add(loss.item())\n"
)


_ENTROPY_STEP = (
    "for batch in loader:\n"
    "    values, log_probs, entropy = model.evaluate(batch)\n"
    "    value_loss = (values - batch.returns).pow(2).mean()\n"
    "    optimizer.zero_grad()\n"
    "    (value_loss - 0.01 * entropy).backward()\n"
    "    optimizer.step()\n"
    "    value_total += value_loss.item()\n"
    "    entropy_total += entropy.item()\n"
)


# A loss read out in a step method and added into a total by its caller: returned alone
# (pykeen's `_forward_pass`), or in a tuple the caller unpacks (JoeyNMT's `_train_step`).
_RETURNED_ALONE = (
    "class T:\n"
    "    def _forward_pass(self, batch):\n"
    "        loss = self.model(batch)\n"
    "        loss.backward()\n"
    "        current_epoch_loss = loss.item()\n"
    "        return current_epoch_loss\n"
    "    def _train_epoch(self, loader):\n"
    "        current_epoch_loss = 0.0\n"
    "        for batch in loader:\n"
    "            batch_loss = self._forward_pass(batch)\n"
    "            current_epoch_loss += batch_loss\n"
)
_RETURNED_IN_TUPLE = (
    "class T:\n"
    "    def _train_step(self, batch):\n"
    "        loss = self.model(batch)\n"
    "        loss.backward()\n"
    "        loss = loss.item()\n"
    "        return loss, batch.ntokens\n"
    "    def train(self, loader):\n"
    "        total = 0\n"
    "        for batch in loader:\n"
    "            batch_loss, ntokens = self._train_step(batch)\n"
    "            total += batch_loss\n"
)


_RETURNED_DICT = (
    "def step(model, x, optimizer):\n"
    "    losses = {}\n"
    "    loss = model(x)\n"
    "    losses['loss'] = loss.item()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    return losses\n"
    "def main(model, loader, optimizer, history):\n"
    "    for x in loader:\n"
    "        losses = step(model, x, optimizer)\n"
    "        for k, v in sorted(losses.items()):\n"
    "            history[k].append(v)\n"
)


_DETACHED_INTO_TOTALS = (
    "def train_epoch(model, loader, optimizer, meter):\n"
    "    total_loss = 0\n"
    "    losses = []\n"
    "    for x, y in loader:\n"
    "        loss, acc = model(x, y)\n"
    "        total_loss += loss.detach().float()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "        losses.append(loss.detach().cpu())\n"
    "        meter.add([loss.detach(), acc])\n"
    "    return total_loss / len(loader), losses\n"
)


class LossTensorLeak(Operator):
    id = "loss-tensor-leak"
    summary = (
        "Drop `.item()` (or `float(...)`, or the `.detach()` before a total or a list kept across "
        "steps) where a loss is summed or stored, keeping its graph alive; not where no graph is "
        "recorded (`no_grad`), nor where the total is emptied at every update."
    )
    examples = (
        Example(
            # A project's helper that detaches a whole log, kept for the epoch's end (pytorch-forecasting).
            LOGGED_STEP,
            (LOGGED_STEP.replace("append(detach(log))", "append(log)"),),
        ),
        Example(
            # The read-outs an update returns, which the caller unpacks and appends to its histories
            # (ElegantRL): the critic's objective, kept whole, holds every update's graph.
            ELEGANTRL_UPDATE,
            (
                ELEGANTRL_UPDATE.replace(
                    "return obj_critic.item(), obj_surrogate.item()", "return obj_critic, obj_surrogate.item()"
                ),
            ),
        ),
        Example(
            # A running meter the file builds and calls with each step's value (UNITER's RunningMeter).
            APEX_CONTEXT_STEP,
            (APEX_CONTEXT_STEP.replace("running_loss(loss.item())", "running_loss(loss)"),),
        ),
        Example(
            # The loss detached before it is added into the epoch's total or kept in a list or a
            # meter (Accelerate's `total_loss += loss.detach().float()`, DiffDock's meter).
            _DETACHED_INTO_TOTALS,
            (
                _DETACHED_INTO_TOTALS.replace("total_loss += loss.detach().float()", "total_loss += loss.float()"),
                _DETACHED_INTO_TOTALS.replace("losses.append(loss.detach().cpu())", "losses.append(loss.cpu())"),
                _DETACHED_INTO_TOTALS.replace("meter.add([loss.detach(), acc])", "meter.add([loss, acc])"),
            ),
        ),
        Example(
            # The loss read out under a name returned alone, which the caller adds into a total
            # (pykeen's `_forward_pass`).
            _RETURNED_ALONE,
            (_RETURNED_ALONE.replace("current_epoch_loss = loss.item()", "current_epoch_loss = loss"),),
        ),
        Example(
            # The loss read out under a name returned in a tuple, which the caller unpacks and adds
            # into a total (JoeyNMT's `_train_step`).
            _RETURNED_IN_TUPLE,
            (_RETURNED_IN_TUPLE.replace("loss = loss.item()", "loss = loss"),),
        ),
        Example(
            # A running average kept across steps (fastMRI's `train_epoch`): the step's read-out is the
            # site; the first step's, which starts it, keeps one graph, not one a step.
            "def train_epoch(loader):\n"
            "    avg_loss = 0.\n"
            "    for i, x in enumerate(loader):\n"
            "        loss = model(x)\n"
            "        loss.backward()\n"
            "        avg_loss = 0.99 * avg_loss + 0.01 * loss.item() if i > 0 else loss.item()\n",
            (
                "def train_epoch(loader):\n"
                "    avg_loss = 0.\n"
                "    for i, x in enumerate(loader):\n"
                "        loss = model(x)\n"
                "        loss.backward()\n"
                "        avg_loss = 0.99 * avg_loss + 0.01 * loss if i > 0 else loss.item()\n",
            ),
        ),
        Example(
            # A running total started on the first step and summed after it (RecBole's trainer):
            # the sum's read-out is the site; the first step's alone would keep one graph, not one a step.
            "def train_epoch(loader):\n"
            "    total = None\n"
            "    for x in loader:\n"
            "        loss = model(x)\n"
            "        total = loss.item() if total is None else total + loss.item()\n"
            "        loss.backward()\n",
            (
                "def train_epoch(loader):\n"
                "    total = None\n"
                "    for x in loader:\n"
                "        loss = model(x)\n"
                "        total = loss.item() if total is None else total + loss\n"
                "        loss.backward()\n",
            ),
        ),
        Example(
            # A loss made from a detached input still has the discriminator's graph.
            "def d_step():\n    d_loss = loss_fn(disc(fake.detach()), ones)\n    history.append(d_loss.item())\n",
            ("def d_step():\n    d_loss = loss_fn(disc(fake.detach()), ones)\n    history.append(d_loss)\n",),
        ),
        Example(
            # A helper's loss unpacked from its tuple, read into a number, and kept by a logger later.
            "def update():\n"
            "    pi_l_old, pi_info_old = compute_loss_pi(data)\n"
            "    pi_l_old = pi_l_old.item()\n"
            "    logger.store(LossPi=pi_l_old)\n",
            (
                "def update():\n"
                "    pi_l_old, pi_info_old = compute_loss_pi(data)\n"
                "    pi_l_old = pi_l_old\n"
                "    logger.store(LossPi=pi_l_old)\n",
            ),
        ),
        Example(
            # A dict made before the loop keeps every step's entry.
            "def fit(model, loader):\n"
            "    history = {}\n"
            "    for step, (x, y) in enumerate(loader):\n"
            "        history[step] = F.mse_loss(model(x), y).item()\n",
            (
                "def fit(model, loader):\n"
                "    history = {}\n"
                "    for step, (x, y) in enumerate(loader):\n"
                "        history[step] = F.mse_loss(model(x), y)\n",
            ),
        ),
        Example(
            "running_loss += loss.item() * x.size(0)\n",
            ("running_loss += loss * x.size(0)\n",),
        ),
        Example(
            # The same method called with autograd on.
            "class T:\n"
            "    def _validate(self):\n"
            "        for b in self.loader:\n"
            "            self.total += self.criterion(self.model(b), b).item()\n"
            "    def fit(self):\n"
            "        self._validate()\n",
            (
                "class T:\n"
                "    def _validate(self):\n"
                "        for b in self.loader:\n"
                "            self.total += self.criterion(self.model(b), b)\n"
                "    def fit(self):\n"
                "        self._validate()\n",
            ),
        ),
        Example(
            # Read into a name, then summed.
            "for x, y in loader:\n    loss = criterion(model(x), y)\n    batch_loss = loss.item()\n    total += batch_loss\n",
            (
                "for x, y in loader:\n    loss = criterion(model(x), y)\n    batch_loss = loss\n    total += batch_loss\n",
            ),
        ),
        Example(
            # A loss module's loss, not its attributes.
            "for batch in loader:\n"
            "    loss = self.train_loss(batch, out)\n"
            "    total += self.train_loss(batch, out).item()\n",
            (
                "for batch in loader:\n"
                "    loss = self.train_loss(batch, out)\n"
                "    total += self.train_loss(batch, out)\n",
            ),
        ),
        Example(
            # A detached loss keeps no graph (its `.item()` is no site); `float(...)` of a loss is.
            "history.append(loss.detach().item())\nmeter.update(float(val_loss), n)\n",
            ("history.append(loss.detach().item())\nmeter.update(val_loss, n)\n",),
        ),
        Example(
            # An array read out of the loss, into a meter that sums what it is added
            # (segmentation_models.pytorch's epoch loop): the fault keeps the loss itself.
            "for x, y in iterator:\n"
            "    loss, y_pred = self.batch_update(x, y)\n"
            "    loss_value = loss.cpu().detach().numpy()\n"
            "    loss_meter.add(loss_value)\n",
            (
                "for x, y in iterator:\n"
                "    loss, y_pred = self.batch_update(x, y)\n"
                "    loss_value = loss\n"
                "    loss_meter.add(loss_value)\n",
            ),
        ),
        Example(
            # A meter keeps what it is handed (timm's AverageMeter, positional values).
            "loss_meter.update(loss.item(), targets.size(0))\n",
            ("loss_meter.update(loss, targets.size(0))\n",),
        ),
        Example(
            # Values of a loop over losses, into a running-mean logger.
            "def log_loss_dict(losses):\n"
            "    for key, values in losses.items():\n"
            "        logger.logkv_mean(key, values.mean().item())\n",
            (
                "def log_loss_dict(losses):\n"
                "    for key, values in losses.items():\n"
                "        logger.logkv_mean(key, values.mean())\n",
            ),
        ),
        Example(
            # A loss without "loss" in its text, and a store through another method.
            "for x, y in loader:\n"
            "    err = criterion(model(x), y)\n"
            "    err.backward()\n"
            "    total += criterion(model(x), y).item()\n"
            "    history.record_batch('train', err.item())\n",
            (
                "for x, y in loader:\n"
                "    err = criterion(model(x), y)\n"
                "    err.backward()\n"
                "    total += criterion(model(x), y)\n"
                "    history.record_batch('train', err.item())\n",
                "for x, y in loader:\n"
                "    err = criterion(model(x), y)\n"
                "    err.backward()\n"
                "    total += criterion(model(x), y).item()\n"
                "    history.record_batch('train', err)\n",
            ),
        ),
        Example(
            # What a function of this file returns with its graph, copied into a buffer made here.
            "def main():\n"
            "    def update(batch):\n"
            "        loss = criterion(model(batch), batch)\n"
            "        loss.backward()\n"
            "        return loss\n"
            "    losses = torch.zeros(10)\n"
            "    for j in range(10):\n"
            "        losses[j].copy_(update(next(it)))\n"
            "    metrics.update({'loss': losses.mean().item()})\n",
            (
                "def main():\n"
                "    def update(batch):\n"
                "        loss = criterion(model(batch), batch)\n"
                "        loss.backward()\n"
                "        return loss\n"
                "    losses = torch.zeros(10)\n"
                "    for j in range(10):\n"
                "        losses[j].copy_(update(next(it)))\n"
                "    metrics.update({'loss': losses.mean()})\n",
            ),
        ),
        Example(
            # An evaluation helper's loss unpacked from its tuple, summed with its graph there.
            "def evaluate(model, loader):\n"
            "    total = 0.0\n"
            "    for x, y in loader:\n"
            "        total += criterion(model(x), y)\n"
            "    return torch.exp(total / len(loader)), total / len(loader)\n"
            "def fit(model, loader):\n"
            "    ppl, val_loss = evaluate(model, loader)\n"
            "    history.append(float(val_loss))\n",
            (
                "def evaluate(model, loader):\n"
                "    total = 0.0\n"
                "    for x, y in loader:\n"
                "        total += criterion(model(x), y)\n"
                "    return torch.exp(total / len(loader)), total / len(loader)\n"
                "def fit(model, loader):\n"
                "    ppl, val_loss = evaluate(model, loader)\n"
                "    history.append(val_loss)\n",
            ),
        ),
        Example(
            # A running-mean logger keeps every value.
            "for data in buffer:\n"
            "    loss = policy_loss + value_loss\n"
            "    self.logger.record_mean('train/loss', loss.item())\n",
            (
                "for data in buffer:\n"
                "    loss = policy_loss + value_loss\n"
                "    self.logger.record_mean('train/loss', loss)\n",
            ),
        ),
        Example(
            # A parameter every caller hands a loss its method returned detached (SpeechBrain's update_average); handed the loss itself, it keeps the graph.
            "class Brain:\n"
            "    def fit_batch(self, batch):\n"
            "        loss = self.compute_loss(batch)\n"
            "        loss.backward()\n"
            "        return loss\n"
            "    def fit(self, loader):\n"
            "        avg = 0.0\n"
            "        for batch in loader:\n"
            "            loss = self.fit_batch(batch)\n"
            "            avg = self.update_average(loss, avg)\n"
            "    def update_average(self, loss, avg_loss):\n"
            "        avg_loss += float(loss) / self.step\n"
            "        return avg_loss\n",
            (
                "class Brain:\n"
                "    def fit_batch(self, batch):\n"
                "        loss = self.compute_loss(batch)\n"
                "        loss.backward()\n"
                "        return loss\n"
                "    def fit(self, loader):\n"
                "        avg = 0.0\n"
                "        for batch in loader:\n"
                "            loss = self.fit_batch(batch)\n"
                "            avg = self.update_average(loss, avg)\n"
                "    def update_average(self, loss, avg_loss):\n"
                "        avg_loss += loss / self.step\n"
                "        return avg_loss\n",
            ),
        ),
        Example(
            # A loss read into a number inside a tuple, then kept by a meter (SlowFast).
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    loss, grad_norm = (loss.item(), grad_norm.item())\n"
            "    train_meter.update_stats(loss, grad_norm)\n",
            (
                "for x, y in loader:\n"
                "    loss = criterion(model(x), y)\n"
                "    loss.backward()\n"
                "    loss, grad_norm = (loss, grad_norm.item())\n"
                "    train_meter.update_stats(loss, grad_norm)\n",
            ),
        ),
        Example(
            # A loss assigned to a metrics tracker's attribute, whose setter updates a running
            # average (LeRobot's MetricsTracker); a plain attribute replaced each step keeps nothing.
            "def update_policy(train_metrics, policy, batch, optimizer):\n"
            "    loss, _ = policy(batch)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    train_metrics.loss = loss.item()\n"
            "    self.last = loss.item()\n",
            (
                "def update_policy(train_metrics, policy, batch, optimizer):\n"
                "    loss, _ = policy(batch)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n"
                "    train_metrics.loss = loss\n"
                "    self.last = loss.item()\n",
            ),
        ),
        Example(
            # A term of the loss backward runs on, with no "loss" in its name (PPO's entropy).
            _ENTROPY_STEP,
            (
                _ENTROPY_STEP.replace("value_total += value_loss.item()", "value_total += value_loss"),
                _ENTROPY_STEP.replace("entropy_total += entropy.item()", "entropy_total += entropy"),
            ),
        ),
        Example(
            # An array read out of the loss and added into a figure that starts as a number: the fault
            # keeps the loss itself there (a numpy accumulator is in this operator's untouched snippets).
            "import numpy as np\n"
            "def train(loader, model, criterion, optimizer):\n"
            "    logs = {}\n"
            "    for x, y in loader:\n"
            "        losses = criterion(model(x), y)\n"
            "        losses.sum().backward()\n"
            "        optimizer.step()\n"
            '        if "loss" not in logs:\n'
            '            logs["loss"] = 0.0\n'
            '        logs["loss"] += losses.mean(dim=0).detach().cpu().numpy()\n',
            (
                "import numpy as np\n"
                "def train(loader, model, criterion, optimizer):\n"
                "    logs = {}\n"
                "    for x, y in loader:\n"
                "        losses = criterion(model(x), y)\n"
                "        losses.sum().backward()\n"
                "        optimizer.step()\n"
                '        if "loss" not in logs:\n'
                '            logs["loss"] = 0.0\n'
                '        logs["loss"] += losses.mean(dim=0)\n',
            ),
        ),
        Example(
            # A step function returns the loss's item, and its caller adds what it returns into a running
            # total (wavenet_vocoder's train loop).
            "import torch\n"
            "def train_step(model, optimizer, x, y):\n"
            "    optimizer.zero_grad()\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    return loss.item()\n"
            "def train_loop(model, optimizer, loader):\n"
            "    running_loss = 0.\n"
            "    for x, y in loader:\n"
            "        running_loss += train_step(model, optimizer, x, y)\n"
            "    return running_loss / len(loader)\n",
            (
                "import torch\n"
                "def train_step(model, optimizer, x, y):\n"
                "    optimizer.zero_grad()\n"
                "    loss = criterion(model(x), y)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n"
                "    return loss\n"
                "def train_loop(model, optimizer, loader):\n"
                "    running_loss = 0.\n"
                "    for x, y in loader:\n"
                "        running_loss += train_step(model, optimizer, x, y)\n"
                "    return running_loss / len(loader)\n",
            ),
        ),
        Example(
            # PyTorch 0.3's read-out, `.data[0]`, dropped from a running sum (ssd.pytorch); a
            # printed one is not kept.
            "def train(net, loader, criterion, optimizer):\n"
            "    loc_loss = 0\n"
            "    for images, targets in loader:\n"
            "        optimizer.zero_grad()\n"
            "        loss_l, loss_c = criterion(net(images), targets)\n"
            "        loss = loss_l + loss_c\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        loc_loss += loss_l.data[0]\n"
            '        print("loss %.4f" % loss.data[0])\n',
            (
                "def train(net, loader, criterion, optimizer):\n"
                "    loc_loss = 0\n"
                "    for images, targets in loader:\n"
                "        optimizer.zero_grad()\n"
                "        loss_l, loss_c = criterion(net(images), targets)\n"
                "        loss = loss_l + loss_c\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        loc_loss += loss_l\n"
                '        print("loss %.4f" % loss.data[0])\n',
            ),
        ),
        Example(
            # A read-out chosen by the torch version: the old branch (`.data[0]`) never runs on a
            # new torch.
            "import torch\n"
            "\n"
            "version = torch.__version__\n"
            "\n"
            "\n"
            "def train(model, loader, criterion, optimizer):\n"
            "    running_loss = 0.0\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        if int(version[0]) > 0 or int(version[2]) > 3:\n"
            "            running_loss += loss.item() * x.size(0)\n"
            "        else:\n"
            "            running_loss += loss.data[0] * x.size(0)\n",
            (
                "import torch\n"
                "\n"
                "version = torch.__version__\n"
                "\n"
                "\n"
                "def train(model, loader, criterion, optimizer):\n"
                "    running_loss = 0.0\n"
                "    for x, y in loader:\n"
                "        optimizer.zero_grad()\n"
                "        loss = criterion(model(x), y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        if int(version[0]) > 0 or int(version[2]) > 3:\n"
                "            running_loss += loss * x.size(0)\n"
                "        else:\n"
                "            running_loss += loss.data[0] * x.size(0)\n",
            ),
        ),
        Example(
            # A step's dict of read-outs whose values the caller appends to a history (Social GAN).
            _RETURNED_DICT,
            (_RETURNED_DICT.replace("losses['loss'] = loss.item()", "losses['loss'] = loss"),),
        ),
        Example(
            # Running averages the file builds, one per key (Meta-Baseline's `utils.Averager()`): its
            # `add` keeps a mean of every value; the validation's, under no_grad, holds no graph.
            _AVERAGERS,
            (_AVERAGERS.replace("aves['tl'].add(loss.item())", "aves['tl'].add(loss)"),),
        ),
        Example(
            # The read-out scaled back by the accumulation steps, then kept (a music separator's log of losses).
            "for i, (x, y) in enumerate(loader):\n"
            "    loss = criterion(model(x), y) / accumulation_steps\n"
            "    loss.backward()\n"
            "    li = loss.item() * accumulation_steps\n"
            "    all_losses.append(li)\n",
            (
                "for i, (x, y) in enumerate(loader):\n"
                "    loss = criterion(model(x), y) / accumulation_steps\n"
                "    loss.backward()\n"
                "    li = loss * accumulation_steps\n"
                "    all_losses.append(li)\n",
            ),
        ),
        Example(
            # The loss's values without its graph, added up whole (ENAS' `total_loss += loss.data`).
            "raw_total_loss = 0\n"
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    raw_total_loss += loss.data\n"
            "    loss.backward()\n",
            (
                "raw_total_loss = 0\n"
                "for x, y in loader:\n"
                "    loss = criterion(model(x), y)\n"
                "    raw_total_loss += loss\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A record of the step's figures returned to the caller (PyTorch-BigGraph's `Stats(loss=float(loss))`).
            RETURNED_STATS_RECORD,
            (
                RETURNED_STATS_RECORD.replace(
                    "        stats = Stats(loss=float(loss), count=len(edges))\n",
                    "        stats = Stats(loss=loss, count=len(edges))\n",
                ),
            ),
        ),
        Example(
            # A moving average of the loss kept in an entry the next step reads back (TorchMD-Net).
            LOSS_AVERAGE_ENTRY,
            (
                LOSS_AVERAGE_ENTRY.replace(
                    "        self.ema[stage][name] = loss.detach()\n", "        self.ema[stage][name] = loss\n"
                ),
            ),
        ),
    )
    untouched = (
        # A read-out the caller appends only when it is a float (ElegantRL's AgentBase): a tensor
        # is left out of the history, not kept.
        "class Agent:\n"
        "    def update_net(self, buffer):\n"
        "        for _ in range(self.update_times):\n"
        "            obj_critic, obj_actor = self.update_objectives(buffer)\n"
        "            objs_actor.append(obj_actor) if isinstance(obj_actor, float) else None\n"
        "    def update_objectives(self, buffer):\n"
        "        obj_critic = self.criterion(self.cri(buffer.state, buffer.action), buffer.q_label).mean()\n"
        "        obj_actor = self.cri(buffer.state, self.act(buffer.state)).mean()\n"
        "        self.optimizer.zero_grad()\n"
        "        (obj_critic - obj_actor).backward()\n"
        "        self.optimizer.step()\n"
        "        return obj_critic.item(), obj_actor.item()\n",
        # A dict the step's model function returns afresh, updated for the progress bar (OpenPCDet's
        # `disp_dict`): one step's values, not a history.
        "def train_one_epoch(model, model_func, loader, optimizer, tbar):\n"
        "    for batch in loader:\n"
        "        loss, tb_dict, disp_dict = model_func(model, batch)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        disp_dict.update({'loss': loss.item()})\n"
        "        tbar.set_postfix(disp_dict)\n",
        # Totals emptied at every update (torchtune's `running_loss` reset after each step, an
        # update's micro-batch losses, a local total of one update returned for the log): they
        # keep one update's graphs at most, nothing grows across steps.
        "def train(model, loader, optimizer, accum):\n"
        "    running_loss = 0.0\n"
        "    for i, (x, y) in enumerate(loader):\n"
        "        loss = model(x, y)\n"
        "        running_loss += loss.detach()\n"
        "        loss.backward()\n"
        "        if (i + 1) % accum == 0:\n"
        "            optimizer.step()\n"
        "            optimizer.zero_grad()\n"
        "            print(running_loss.item())\n"
        "            running_loss = 0.0\n",
        "def train_batch(model, micro_batches):\n"
        "    batch_loss = torch.tensor(0.0)\n"
        "    for x, y in micro_batches:\n"
        "        loss = model(x, y)\n"
        "        batch_loss += loss.detach()\n"
        "        loss.backward()\n"
        "    return batch_loss\n"
        "\n"
        "\n"
        "def train(model, loader, optimizer):\n"
        "    for micro_batches in loader:\n"
        "        batch_loss = train_batch(model, micro_batches)\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad()\n"
        "        print(batch_loss.item())\n",
        # Read-outs made text (Open3D-ML's progress bar): a string keeps no graph, whatever it is added to.
        "for data in loader:\n"
        "    loss = model.get_loss(model(data), data)\n"
        "    optimizer.zero_grad()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    desc = ' > loss: %.03f' % loss.cpu().detach().numpy()\n"
        "    desc += ' {:.3f}'.format(loss.item())\n"
        "    history.append(f'{loss.item():.4f}')\n",
        # A criterion applied outside no_grad to a prediction made under it (DeepLab's validation): the loss has
        # no graph to keep.
        "import torch\n"
        "def validate(model, loader, criterion):\n"
        "    total = 0.0\n"
        "    for image, target in loader:\n"
        "        with torch.no_grad():\n"
        "            output = model(image)\n"
        "        loss = criterion(output, target)\n"
        "        total += loss.item()\n"
        "    return total\n",
        # A loss read through `.data`, which holds no graph (ClassyVision's step).
        "for x, y in loader:\n"
        "    local_loss = criterion(model(x), y)\n"
        "    losses.append(local_loss.data.cpu().item())\n"
        "    local_loss.backward()\n",
        # A metric named a criterion (pytorch-3dunet's `eval_criterion`): the score, not the loss.
        "for x, y in loader:\n"
        "    output = model(x)\n"
        "    criterion(output, y).backward()\n"
        "    eval_score = self.eval_criterion(output, y)\n"
        "    train_eval_scores.update(eval_score.item(), len(x))\n",
        # The epoch loss gathered across processes from the floats a tracker summed
        # (pytorch-accelerated): made from new tensors, read as a number.
        GATHERED_EPOCH_LOSS,
        # A validation loss unpacked with the metrics under no_grad, read out after the block (tez).
        "import torch\n"
        "\n"
        "\n"
        "def validate_one_epoch(model, data_loader, losses):\n"
        "    model.eval()\n"
        "    for data in data_loader:\n"
        "        with torch.no_grad():\n"
        "            loss, metrics = model.validate_one_step(data)\n"
        "        losses.update(loss.item(), data_loader.batch_size)\n",
        # A validation loss taken from an output computed under no_grad, read out after the block
        # (pytorch-ts' Trainer): it holds no graph.
        "import torch\n"
        "\n"
        "\n"
        "def validate(net, validation_iter, device):\n"
        "    total = 0.0\n"
        "    for batch_no, data_entry in enumerate(validation_iter, start=1):\n"
        "        inputs = [v.to(device) for v in data_entry.values()]\n"
        "        with torch.no_grad():\n"
        "            output = net(*inputs)\n"
        "        if isinstance(output, (list, tuple)):\n"
        "            loss = output[0]\n"
        "        else:\n"
        "            loss = output\n"
        "        total += loss.item()\n"
        "    return total / batch_no\n",
        # An array read out of the loss and added into a numpy array the function made (CPC_audio's
        # per-step losses): a tensor that requires grad added there fails at once, it is not kept.
        "import numpy as np\n"
        "def train(loader, model, criterion, optimizer):\n"
        "    logs = {}\n"
        "    for x, y in loader:\n"
        "        losses = criterion(model(x), y)\n"
        "        losses.sum().backward()\n"
        "        optimizer.step()\n"
        "        if 'loss' not in logs:\n"
        "            logs['loss'] = np.zeros(losses.size(1))\n"
        "        logs['loss'] += losses.mean(dim=0).detach().cpu().numpy()\n",
        # An array read out of the loss into a logger that writes it out and keeps nothing; a
        # read-out that never cuts the graph cannot be a NumPy array.
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    writer.add_scalar('loss', loss.detach().cpu().numpy())\n",
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    losses.append(loss.cpu().numpy())\n",
        # A replay memory's priorities are arrays it writes itself: a tensor there fails, it is not kept.
        "for b in loader:\n    loss = (q(b) - target(b)).pow(2)\n    loss.mean().backward()\n"
        "    mem.update_priorities(idxs, loss.detach().cpu().numpy())\n",
        # Either branch of a conditional start, and None, hold no graph (OLMo's z-loss total).
        "def train_batch(self, micro_batches, use_z):\n"
        "    z_loss_total = None if not use_z else torch.tensor(0.0)\n"
        "    for mb in micro_batches:\n"
        "        loss, z = self.forward(mb)\n"
        "        loss.backward()\n"
        "        if z is not None:\n"
        "            z_loss_total += z.detach()\n"
        "    return z_loss_total\n"
        "def train_step(self, batch, metrics):\n"
        "    z_loss_total = train_batch(self, batch, True)\n"
        "    metrics['z'] = z_loss_total.item()\n",
        # A parameter every caller hands a loss its method returned detached (SpeechBrain's update_average); handed the loss itself, it keeps the graph.
        "class Brain:\n"
        "    def fit_batch(self, batch):\n"
        "        loss = self.compute_loss(batch)\n"
        "        loss.backward()\n"
        "        return loss.detach().cpu()\n"
        "    def fit(self, loader):\n"
        "        avg = 0.0\n"
        "        for batch in loader:\n"
        "            loss = self.fit_batch(batch)\n"
        "            avg = self.update_average(loss, avg)\n"
        "    def update_average(self, loss, avg_loss):\n"
        "        avg_loss += float(loss) / self.step\n"
        "        return avg_loss\n",
        # A NumPy value of the loss: no graph to keep.
        'batch_logs["loss"] = loss.cpu().detach().numpy().item()\nhistory.append(loss.data.numpy().item())\n',
        # Made only from detached losses: an epoch mean and its perplexity hold no graph.
        "def train():\n"
        "    total_loss = 0.0\n"
        "    for batch in loader:\n"
        "        loss = model(**batch).loss\n"
        "        total_loss += loss.detach().float()\n"
        "    epoch_loss = total_loss / len(loader)\n"
        "    perplexity = torch.exp(epoch_loss)\n"
        "    train_loss.append(float(epoch_loss))\n"
        "    train_prep.append(float(perplexity))\n",
        # Read into a number that a MetricLogger takes by keyword (it calls .item() itself).
        "def step():\n    loss_value = losses.item()\n    metric_logger.update(loss=loss_value)\n",
        # A summary made empty in the step it reports (torchreid's engines): one step's value.
        "def forward_backward(self, x, y):\n"
        "    loss = self.criterion(self.model(x), y)\n"
        "    summary = {}\n"
        "    summary['loss'] = loss.item()\n"
        "    return summary\n",
        # What a function of this file returns detached (torchrl's `update()` returns
        # `q_loss.detach()`), copied into a buffer made here, or unpacked from a tuple.
        "def main():\n"
        "    def update(batch):\n"
        "        loss = criterion(model(batch), batch)\n"
        "        loss.backward()\n"
        "        return loss.detach()\n"
        "    losses = torch.zeros(10)\n"
        "    for j in range(10):\n"
        "        losses[j].copy_(update(next(it)))\n"
        "    metrics.update({'loss': losses.mean().item()})\n",
        "def evaluate(model, loader):\n"
        "    total = 0.0\n"
        "    for x, y in loader:\n"
        "        total += criterion(model(x), y).detach().float()\n"
        "    return torch.exp(total / len(loader)), total / len(loader)\n"
        "def fit(model, loader):\n"
        "    ppl, val_loss = evaluate(model, loader)\n"
        "    history.append(float(val_loss))\n",
        # Read into a number that is only printed.
        "def update():\n    l_old = compute_loss(data).item()\n    print(l_old)\n",
        # A logger that keeps one value per key, overwritten every step.
        "for data in buffer:\n    loss = policy_loss + value_loss\n    self.logger.record('train/loss', loss.item())\n",
        # A method the class calls only under no_grad (its caller's `with` disables autograd).
        "class T:\n"
        "    def _validate(self):\n"
        "        for b in self.loader:\n"
        "            self.total += self.criterion(self.model(b), b).item()\n"
        "    def fit(self):\n"
        "        with torch.no_grad():\n"
        "            self._validate()\n",
        # A loss read into a name that is only printed.
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    shown = loss.item()\n    print(shown)\n",
        # A token count made with a loss module's padding index is no loss (the loss itself,
        # summed in the same loop, keeps its mutant: see the examples).
        "for batch in loader:\n"
        "    num_tokens = batch.ne(self.train_loss.padding_idx).sum()\n"
        "    normalization += num_tokens.item()\n",
        "print(f'loss={loss.item():.3f}')\n",
        "for key, values in metrics.items():\n    logger.logkv_mean(key, values.mean().item())\n",
        "total += acc.item()\n",
        "if loss.item() > 10:\n    stop()\n",
        # The reference scripts' MetricLogger turns tensors into numbers itself.
        "metric_logger.update(loss=loss.item())\n",
        # A loss read out after the block from a forward's output made under no_grad, through a
        # method of it (jiant's `run_val`): it holds no graph.
        "def run_val(loader, jiant_model):\n"
        "    total_eval_loss = 0\n"
        "    for batch in loader:\n"
        "        with torch.no_grad():\n"
        "            model_output = jiant_model(batch)\n"
        "        total_eval_loss += model_output.loss.mean().item()\n"
        "    return total_eval_loss\n",
        # Under no_grad a loss holds no graph: dropping `.item()` keeps nothing alive.
        "with torch.no_grad():\n    total_loss += criterion(model(x), y).item()\n",
        "@torch.no_grad()\ndef evaluate(model):\n    losses.append(model.loss(x).item())\n",
        # Outputs picked by their loss are no loss (openWakeWord's `predictions = torch.cat((neg_high_loss,
        # pos_high_loss))`, handed to the loss): a metric of them kept as an array is no loss kept.
        "def train(model, loader, optimizer, history):\n"
        "    for x, y in loader:\n"
        "        predictions = model(x)\n"
        "        hard = predictions[predictions.squeeze() > 0.001]\n"
        "        predictions = hard_loss_pick(hard)\n"
        "        loss = loss_fn(predictions, y)\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        '        history["recall"].append(recall(predictions, y).detach().cpu().numpy())\n',
    )

    def changes(self, source, training):
        losses = _loss_names(source, training)
        for call in [*source.nodes(cst.Call), *source.nodes(cst.Subscript), *source.nodes(cst.Attribute)]:
            if isinstance(call, cst.Subscript):
                # PyTorch 0.3's read-out, `loss_l.data[0]` (ssd.pytorch's `loc_loss += ...`)
                value = _old_item(call)
                if value is None or _for_an_old_torch(source, call):
                    continue
            elif isinstance(call, cst.Attribute):
                # the tensor's values without the graph, added up whole (ENAS' `total_loss +=
                # loss.data`): not read on (`.data.item()`, `.data[0]`, `.data.cpu()`)
                if call.attr.value != "data" or not isinstance(source.parent(call), cst.AugAssign):
                    continue
                value = call.value
            elif (name := callee_name(call)) == "item" and isinstance(call.func, cst.Attribute) and not call.args:
                value = call.func.value
                if isinstance(value, cst.Call) and "numpy" in (callee_name(value) or "").lower():
                    continue  # `to_numpy(loss).item()` (MACE's metric): an array already, no graph
            elif name == "detach" and (
                (isinstance(call.func, cst.Attribute) and not call.args)
                # a project's helper that detaches a whole log (pytorch-forecasting's
                # `self.training_step_outputs.append(detach(log))`)
                or (isinstance(call.func, cst.Name) and len(call.args) == 1 and not call.args[0].star)
            ):
                # the graph cut before a store that keeps every step's value (DiffDock's
                # `meter.add([loss.cpu().detach(), ...])`, `total += loss.detach()`): dropped, each
                # step's graph stays chained into what the store keeps
                if not _kept_whole(source, call) or _emptied_each_update(source, training, call):
                    continue
                value = call.func.value if isinstance(call.func, cst.Attribute) else call.args[0].value
            elif name == "float" and isinstance(call.func, cst.Name) and len(call.args) == 1:
                value = call.args[0].value
            elif name in ("numpy", "tolist") and isinstance(call.func, cst.Attribute) and not call.args:
                # `loss.cpu().detach().numpy()`: an array needs the graph cut first, so the fault
                # is the whole read-out forgotten, the loss itself kept
                found = _read_out(call.func.value)
                if found is None or not _last_read_out(source, call) or not _kept_as_given(source, call):
                    continue
                value = found
            else:
                continue
            if not _is_loss(source, training, value, losses) or not (
                self._stored(source, call) or self._returned_to_a_sum(source, training, call)
            ):
                continue
            if (
                under_no_grad(source, call)
                or _detached(source, training, value, source.function_of(call), 5)
                or _computed_without_grad(source, value, call, 3)
            ):
                continue
            yield Change(
                call,
                (source.replace(call, source.module.code_for_node(value).strip()),),
                "the loss is kept as a tensor, with its graph",
            )

    @staticmethod
    def _returned_to_a_sum(source, training, call) -> bool:
        """True for a step function's `return loss.item()` where a caller in the file adds what
        it returns into a running total (wavenet_vocoder's `running_loss += __train_step(...)`)."""
        ret = source.parent(call)
        function = source.function_of(call)
        if function is None:
            return False
        if isinstance(ret, cst.Return) and ret.value is call:
            return any(
                function in training.called_functions(caller)
                and LossTensorLeak._stored(source, caller)
                and not under_no_grad(source, caller)
                for caller in source.nodes(cst.Call)
            ) or _kept_by_a_base(source, training, function)
        element = source.parent(ret) if isinstance(ret, cst.Element) and ret.value is call else None
        if isinstance(element, cst.Tuple) and isinstance(source.parent(element), cst.Return):
            # one of the read-outs a step returns (ElegantRL's `return obj_critic.item(),
            # obj_actor.item()`), which a caller unpacks and adds into a total or appends to a
            # history (`objs_critic.append(obj_critic)`)
            position = next(i for i, e in enumerate(element.elements) if e is ret)
            return LossTensorLeak._unpacked_and_kept(source, training, function, {position})
        # bound to a name the function returns in a tuple (JoeyNMT's `norm_batch_loss =
        # ddp_reduce(norm_batch_loss).item()`, `return norm_batch_loss, sum_correct_tokens`), whose
        # element a caller unpacks and adds into a total (`total_batch_loss += batch_loss`)
        if not (
            isinstance(ret, cst.Assign)
            and ret.value is call
            and len(ret.targets) == 1
            and isinstance(ret.targets[0].target, cst.Name)
        ):
            return False
        name = ret.targets[0].target.value
        if any(isinstance(r.value, cst.Name) and r.value.value == name for r in source.within(function, cst.Return)):
            # returned alone (pykeen's `current_epoch_loss = loss.item()`, `return current_epoch_loss`),
            # then added into a total by the caller (`batch_loss = self._forward_pass(...)`,
            # `current_epoch_loss += batch_loss`)
            for caller in source.nodes(cst.Call):
                bound = source.parent(caller)
                if (
                    function in training.called_functions(caller)
                    and not under_no_grad(source, caller)
                    and isinstance(bound, cst.Assign)
                    and bound.value is caller
                    and len(bound.targets) == 1
                    and isinstance(bound.targets[0].target, cst.Name)
                    and _added_later(source, bound, bound.targets[0].target.value)
                ):
                    return True
        positions = {
            i
            for r in source.within(function, cst.Return)
            if isinstance(r.value, cst.Tuple)
            for i, element in enumerate(r.value.elements)
            if isinstance(element.value, cst.Name) and element.value.value == name
        }
        return LossTensorLeak._unpacked_and_kept(source, training, function, positions)

    @staticmethod
    def _unpacked_and_kept(source, training, function: cst.FunctionDef, positions: set[int]) -> bool:
        """True where a caller in the file unpacks what `function` returns and adds an element at
        one of `positions` into a total, or appends it to a list, in its own scope."""
        for caller in source.nodes(cst.Call):
            unpacked = source.parent(caller)
            if (
                function not in training.called_functions(caller)
                or under_no_grad(source, caller)
                or not isinstance(unpacked, cst.Assign)
                or unpacked.value is not caller
                or len(unpacked.targets) != 1
                or not isinstance(unpacked.targets[0].target, cst.Tuple)
            ):
                continue
            elements = unpacked.targets[0].target.elements
            received = {
                value.value for i in positions if i < len(elements) and isinstance(value := elements[i].value, cst.Name)
            }
            scope = source.function_of(caller)
            if scope is not None and (
                any(
                    isinstance(total.value, cst.Name) and total.value.value in received
                    for total in source.within(scope, cst.AugAssign)
                    if isinstance(total.operator, cst.AddAssign)
                )
                or any(
                    callee_name(kept) == "append"
                    and len(kept.args) == 1
                    and isinstance(kept.args[0].value, cst.Name)
                    and kept.args[0].value.value in received
                    and not _type_guarded(source, kept, kept.args[0].value.value)
                    for kept in source.within(scope, cst.Call)
                )
            ):
                return True
        return False

    @staticmethod
    def _stored(source, call) -> bool:
        """True if the value ends up summed into a variable or kept in a container."""
        for ancestor in source.ancestors(call):
            if _formatted(ancestor):
                return False  # formatted into text (Open3D-ML's `desc += " %s: %.03f" % (l, v.cpu().detach().numpy())`)
            if isinstance(ancestor, cst.AugAssign):
                return True
            if isinstance(ancestor, cst.Call) and _stores(ancestor):
                return (
                    not _itemizing_logger(source, ancestor, call)
                    and not _keyed_logger(source, ancestor)
                    and not _dict_of_this_step(source, ancestor)
                )
            if isinstance(ancestor, cst.Call) and (_averager_add(source, ancestor) or _called_meter(source, ancestor)):
                return True
            if isinstance(ancestor, cst.Assign):
                if any(isinstance(t.target, cst.Subscript) for t in ancestor.targets):
                    return not _fresh_each_step(source, ancestor)
                if ancestor.value is call and any(
                    isinstance(t.target, cst.Attribute) and _TRACKER.search((last_name(t.target.value) or "").lower())
                    for t in ancestor.targets
                ):
                    return True  # `train_metrics.loss = loss.item()`: a tracker's setter adds it into a meter
                # `total = total + loss.item()`: a sum kept across steps, also as one branch of a
                # first-step test (RecBole's `loss.item() if total is None else total + loss.item()`;
                # the other branch's read-out starts the sum: kept whole, it holds one step's graph),
                # or as a running average (fastMRI's `avg_loss = 0.99 * avg_loss + 0.01 * loss.item()`)
                names = {dotted(t.target) for t in ancestor.targets} - {None}
                if any(
                    isinstance(node, cst.BinaryOperation)
                    and isinstance(node.operator, cst.Add)
                    and any(_scaled(side) in names for side in (node.left, node.right))
                    for node in _path_to(source, call, ancestor.value)
                ):
                    return True
                if _returned_record(source, ancestor, call):
                    return True
                # `batch_loss = loss.item()` then `total += batch_loss`, or `logger.store(
                # Loss=batch_loss)`: summed or kept through a name.
                if ancestor.value is not call:
                    names = _unpacked_into(ancestor, call)
                    if not names:
                        return False
                return _summed_later(source, ancestor, names) or _kept_later(source, ancestor, names)
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
        return False


_TEXT = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _returned_record(source, assign: cst.Assign, call: cst.Call) -> bool:
    """True where the read-out is a field of a record the step builds and returns to its caller
    (PyTorch-BigGraph's `stats = Stats(loss=float(loss), ...)`, `return stats`, which the caller
    sums over the batches and sends back through the process pool): the record keeps the step's
    value for as long as the caller keeps its records. Only in the function that differentiates."""
    value = assign.value
    if (
        not isinstance(value, cst.Call)
        or not (callee_name(value) or "a")[:1].isupper()
        or not any(a.value is call or source.parent(source.parent(call)) is a for a in value.args)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    function = source.function_of(assign)
    name = assign.targets[0].target.value
    return (
        function is not None
        and any(
            isinstance(r.value, cst.Name) and r.value.value == name and source.function_of(r) is function
            for r in source.within(function, cst.Return)
        )
        and any(callee_name(c) == "backward" for c in source.within(function, cst.Call))
    )


def _formatted(node: cst.CSTNode) -> bool:
    """True for a value made text: `"%.3f" % x`, `"{}".format(x)`, `f"{x}"`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return isinstance(node.left, _TEXT)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        return isinstance(node.func.value, _TEXT)
    return isinstance(node, cst.FormattedStringExpression)


def _kept_by_a_base(source, training, function: cst.FunctionDef) -> bool:
    """True for a method whose class's base (read through the project's modules) calls it on
    `self` and keeps what it returns (pyod's `BaseDeepLearningDetector.train`: `loss =
    self.training_forward(batch_data)`, then `overall_loss.append(loss)`)."""
    cls = source.enclosing(function, cst.ClassDef)
    if cls is None or source.parent(function) is not cls.body:
        return False  # a method of the class itself, not a function nested in one
    for base in cls.bases:
        found = training.resolver.definition(source, base.value)
        if found is None or not isinstance(found[1], cst.ClassDef):
            continue
        module, definition = found
        for call in module.within(definition, cst.Call):
            if dotted(call.func) != f"self.{function.name.value}" or under_no_grad(module, call):
                continue
            bound = module.parent(call)
            if (
                isinstance(bound, cst.Assign)
                and bound.value is call
                and len(bound.targets) == 1
                and isinstance(bound.targets[0].target, cst.Name)
            ):
                names = {bound.targets[0].target.value}
                if _summed_later(module, bound, names) or _kept_later(module, bound, names):
                    return True
    return False


def _added_later(source, bound: cst.Assign, name: str) -> bool:
    """True where the function of `bound` adds the name it binds into a total afterwards."""
    scope = source.function_of(bound)
    after = source.span(bound)[1]
    return scope is not None and any(
        isinstance(total.operator, cst.AddAssign)
        and isinstance(total.value, cst.Name)
        and total.value.value == name
        and source.span(total)[0] > after
        for total in source.within(scope, cst.AugAssign)
    )


def _scaled(term: cst.BaseExpression) -> str | None:
    """The name a term of a sum is, alone or multiplied by a number (`0.99 * avg_loss`)."""
    if isinstance(term, cst.BinaryOperation) and isinstance(term.operator, cst.Multiply):
        for value, factor in ((term.left, term.right), (term.right, term.left)):
            if isinstance(factor, (cst.Float, cst.Integer)):
                return dotted(value)
    return dotted(term)


def _path_to(source, node: cst.CSTNode, top: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes from `node` up to `top` (both included), or [] where `top` does not hold it."""
    path = [node]
    for ancestor in source.ancestors(node):
        path.append(ancestor)
        if ancestor is top:
            return path
    return []


_AVERAGER = re.compile(r"averag|meter|tracker|accumulat")


def _averager_add(source, call: cst.Call) -> bool:
    """True for `add` on a running average the file builds (Meta-Baseline's `aves =
    {k: utils.Averager() for k in aves_keys}`, then `aves['tl'].add(loss.item())`): it keeps a
    mean of everything it is given."""
    if callee_name(call) != "add" or not isinstance(call.func, cst.Attribute):
        return False
    receiver = call.func.value
    while isinstance(receiver, cst.Subscript):
        receiver = receiver.value
    if not isinstance(receiver, cst.Name):
        return False
    for assign in source.nodes(cst.Assign):
        if not any(isinstance(t.target, cst.Name) and t.target.value == receiver.value for t in assign.targets):
            continue
        value = assign.value.value if isinstance(assign.value, cst.DictComp) else assign.value
        if isinstance(value, cst.Call) and _AVERAGER.search((callee_name(value) or "").lower()):
            return True
    return False


# Calls a detached tensor passes through unchanged in kind on its way to a store.
_MOVES = frozenset({"cpu", "float", "double", "clone", "squeeze", "to", "cuda"})


def _kept_whole(source, detach: cst.Call) -> bool:
    """True where the detached tensor (through `.cpu()`, `.float()`, `.to(...)`) is added whole
    into a total (`total += loss.detach()`) or handed, alone or in a list or tuple, to a store that
    keeps what it is given (`losses.append(loss.detach().cpu())`, `meter.add([loss.detach()])`);
    not where it is read out after all (`.item()`, `.numpy()`, `float(...)`) or only bound to a
    name."""
    top: cst.CSTNode = detach
    while True:
        parent = source.parent(top)
        if not isinstance(parent, cst.Attribute) or parent.attr.value not in _MOVES:
            break
        above = source.parent(parent)
        if not isinstance(above, cst.Call) or above.func is not parent:
            break
        top = above
    parent = source.parent(top)
    if isinstance(parent, cst.Element):
        parent = source.parent(source.parent(parent))  # the list or tuple, then what holds it
    if isinstance(parent, cst.AugAssign):
        return isinstance(parent.operator, cst.AddAssign) and not _numpy_accumulator(source, parent)
    if isinstance(parent, cst.Assign) and parent.value is top:
        return _read_back_into_the_loss(source, parent)
    if not isinstance(parent, cst.Arg):
        return False
    store = source.parent(parent)
    if not isinstance(store, cst.Call) or parent.keyword is not None:
        return False
    if _averager_add(source, store):
        return True
    owner = (last_name(store.func.value) or "").lower() if isinstance(store.func, cst.Attribute) else ""
    kept = callee_name(store) in ("append", "extend", "insert") or (
        callee_name(store) == "add" and bool(_TRACKER.search(owner))
    )
    return kept and not _keyed_logger(source, store)


def _read_back_into_the_loss(source, store: cst.Assign) -> bool:
    """True for a detached loss kept in an entry of the object (`self.ema[stage][type][name] =
    loss.detach()`) that the same function reads before, into the loss it computes (TorchMD-Net's
    moving average: `loss = alpha * loss + (1 - alpha) * ema`, `ema` read from that entry): kept
    whole, each step's loss would hold the previous step's graph."""
    if len(store.targets) != 1 or not isinstance(store.targets[0].target, cst.Subscript):
        return False
    text = source.code(store.targets[0].target)
    function = source.function_of(store)
    start = source.span(store)[0]
    return function is not None and any(
        source.code(s) == text and source.span(s)[0] < start and source.enclosing(s, cst.Assign) is not store
        for s in source.within(function.body, cst.Subscript)
    )


def _emptied_each_update(source, training, call: cst.Call) -> bool:
    """True where the total or the list the value goes into is set afresh in the loop that steps
    the optimizer, at that loop's own level (torchtune's `running_loss, num_tokens = 0.0, 0` after
    each step, accelerate's `losses = []` before each update's micro-batches): it holds at most
    one update's graphs, so keeping them grows nothing across steps."""
    statement = source.enclosing(call, (cst.AugAssign, cst.Expr))
    if isinstance(statement, cst.AugAssign):
        holder = dotted(statement.target)
    elif isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        func = statement.value.func
        holder = dotted(func.value) if isinstance(func, cst.Attribute) else None
    else:
        holder = None
    function = source.function_of(call)
    if holder is None:
        return False
    loops = (cst.For, cst.While)
    fresh = False  # set in the function outside its loops: made anew at each call
    for assign in source.within(function or source.module, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
        bound = {dotted(n) for t in targets for n in _bound_names(t)}
        if holder not in bound or assign.value is None:
            continue
        loop = source.enclosing(assign, loops)
        if loop is None or (function is not None and not source.inside(loop, function)):
            fresh = fresh or function is not None
            continue
        if not source.inside(call, loop):
            continue
        if any(source.enclosing(step, loops) is loop for step in training.steps):
            return True
    if not fresh or "." in holder or function is None:
        return False
    # a local total of one call that no loop around it steps an optimizer in (OLMo's
    # `ce_batch_loss` over one update's micro-batches, returned for the log), unless a caller adds
    # what it returns into a total of its own
    stepping = any(
        isinstance(loop, loops) and source.inside(loop, function) and training.steps_within(loop.body)
        for loop in source.ancestors(call)
    )
    return not stepping and not _summed_by_callers(source, training, function)


def _summed_by_callers(source, training, function) -> bool:
    """True where a call of `function` in the file binds what it returns to names that the
    caller then adds into a total."""
    for caller in source.nodes(cst.Call):
        if function not in training.called_functions(caller):
            continue
        bound = source.parent(caller)
        if not isinstance(bound, cst.Assign) or bound.value is not caller:
            return True  # used some other way: assume it is kept
        names = [dotted(n) for t in bound.targets for n in _bound_names(t.target)]
        if any(name is not None and _added_later(source, bound, name) for name in names):
            return True
    return False


def _bound_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What an assignment target binds: itself, or each element of a tuple or list of targets."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _bound_names(e.value)]
    return [target]


def _dict_of_this_step(source, store: cst.Call) -> bool:
    """True for `disp_dict.update({...: loss.item()})` where the loop binds `disp_dict` afresh in
    each step from what a call returns (OpenPCDet's `loss, tb_dict, disp_dict = model_func(model,
    batch)`): the dict holds one step's values, for the progress bar, not a history."""
    if callee_name(store) != "update" or not isinstance(store.func, cst.Attribute):
        return False
    holder = dotted(store.func.value)
    loop = source.enclosing(store, (cst.For, cst.While))
    if holder is None or "." in holder or loop is None:
        return False
    start = source.span(store)[0]
    handed_to_a_store = any(
        _stores(later) and any(dotted(a.value) == holder for a in later.args)
        for later in source.within(loop.body, cst.Call)
        if source.span(later)[0] > start
    )  # gmflow's `logger.push(metrics)`: kept after all
    return not handed_to_a_store and any(
        source.span(assign)[1] < start
        and source.enclosing(assign, (cst.For, cst.While)) is loop
        and isinstance(assign.value, cst.Call)
        and not _AVERAGER.search((callee_name(assign.value) or "").lower())  # a meter made afresh still averages
        and holder in {dotted(n) for t in assign.targets for n in _bound_names(t.target)}
        for assign in source.within(loop.body, cst.Assign)
    )


def _called_meter(source, call: cst.Call) -> bool:
    """True for a running meter the file builds and then calls with each value (UNITER's
    `running_loss = RunningMeter('loss')`, then `running_loss(loss.item())`): it keeps a running
    mean of everything it is given."""
    if not isinstance(call.func, cst.Name) or len(call.args) != 1:
        return False
    name = call.func.value
    return any(
        any(isinstance(t.target, cst.Name) and t.target.value == name for t in assign.targets)
        and isinstance(assign.value, cst.Call)
        and bool(_AVERAGER.search((callee_name(assign.value) or "").lower()))
        for assign in source.nodes(cst.Assign)
    )


def _stores(call: cst.Call) -> bool:
    """True for a method that keeps what it is handed: a container's, a history's, a logger's
    running mean, or a meter's `add` (torchnet's AverageValueMeter sums every value it is given;
    a plain `add_scalar` writes a number out and keeps nothing)."""
    if not isinstance(call.func, cst.Attribute):
        return False
    name = callee_name(call) or ""
    if name.startswith(STORING_PREFIXES):
        return True
    return name == "add" and bool(_TRACKER.search((last_name(call.func.value) or "").lower()))


# What a read-out into an array or a list passes through on its way from the tensor.
_READ_OUT = frozenset({"cpu", "detach", "float", "double", "clone", "squeeze"})


def _old_item(subscript: cst.Subscript) -> cst.BaseExpression | None:
    """`x` for `x.data[0]`, how PyTorch before 0.4 took a loss's number (now `.item()`)."""
    holder, index = subscript.value, subscript.slice
    if (
        isinstance(holder, cst.Attribute)
        and holder.attr.value == "data"
        and len(index) == 1
        and isinstance(index[0].slice, cst.Index)
        and isinstance(index[0].slice.value, cst.Integer)
        and index[0].slice.value.value == "0"
    ):
        return holder.value
    return None


def _for_an_old_torch(source, node: cst.CSTNode) -> bool:
    """True under an `if` on a version (person-reid-baseline's `if int(version[0]) > 0 ...:
    loss.item() ... else: loss.data[0]`): the branch for an old torch never runs on a new one."""
    return any(isinstance(a, cst.If) and "version" in source.code(a.test).lower() for a in source.ancestors(node))


def _read_out(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor under `loss.cpu().detach()` or `loss.data.cpu()` (what `.numpy()` is called
    on): None unless the chain cuts the graph (`.detach()` or `.data`), as `.numpy()` needs."""
    cut = False
    while True:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args:
            if value.func.attr.value not in _READ_OUT:
                break
            cut = cut or value.func.attr.value == "detach"
            value = value.func.value
        elif isinstance(value, cst.Attribute) and value.attr.value == "data":
            cut = True
            value = value.value
        else:
            break
    return value if cut else None


def _last_read_out(source, call: cst.Call) -> bool:
    """True unless the array is read on into a number (`loss.data.numpy().item()`,
    `float(c.cpu().numpy())`): the loss in its place would be read out all the same."""
    parent = source.parent(call)
    if isinstance(parent, cst.Attribute):
        return False
    if isinstance(parent, cst.Arg):
        outer = source.parent(parent)
        return not (isinstance(outer, cst.Call) and last_name(outer.func) in ("float", "int"))
    return True


def _kept_as_given(source, call: cst.Call) -> bool:
    """True unless the array is handed straight to a store that makes arrays of its own (a
    replay memory's `update_priorities(idxs, td.detach().cpu().numpy())`): a tensor in its
    place fails there, it is not kept. A list's `append`/`extend`/`insert` and a meter keep it."""
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.Call) and _stores(ancestor):
            owner = (last_name(ancestor.func.value) or "").lower()  # type: ignore[attr-defined]
            return callee_name(ancestor) in ("append", "extend", "insert", "add") or bool(_TRACKER.search(owner))
        if isinstance(ancestor, cst.AugAssign):
            return not _numpy_accumulator(source, ancestor)
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
    return True


def _numpy_accumulator(source, added: cst.AugAssign) -> bool:
    """True where what the array is added into starts as a numpy array in the same function
    (CPC's `logs["locLoss_train"] = np.zeros(...)`, then `+= (...).detach().cpu().numpy()`): a
    tensor that requires grad added there fails at once, it is not kept."""
    target = source.code(added.target)
    function = source.function_of(added)
    for assign in source.within(function if function is not None else source.module, cst.Assign):
        value = assign.value
        if (
            any(source.code(t.target) == target for t in assign.targets)
            and isinstance(value, cst.Call)
            and (dotted(value.func) or "").split(".")[0] in ("np", "numpy")
        ):
            return True
    return False


def _unpacked_into(assign: cst.Assign, call: cst.Call) -> set:
    """The name a tuple assignment binds `call` to (SlowFast's `loss, grad_norm = (loss.item(),
    grad_norm.item())` binds the first to `loss`), or a scaling of it binds whole; empty where
    `call` is no element of its own."""
    value = assign.value
    if (
        len(assign.targets) == 1
        and isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, (cst.Multiply, cst.Divide))
        and value.left is call
    ):
        # the read-out scaled back (`li = loss.item() * gradient_accumulation_steps`): bound whole
        name = dotted(assign.targets[0].target)
        return {name} if name is not None else set()
    if len(assign.targets) != 1 or not isinstance(value, cst.Tuple):
        return set()
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
        return set()
    for element, bound in zip(value.elements, target.elements, strict=True):
        if element.value is call:
            name = dotted(bound.value)
            return {name} if name is not None else set()
    return set()


def _fresh_each_step(source, store: cst.Assign) -> bool:
    """True for `summary["loss"] = loss.item()` into a container made empty in the same step
    (`summary = {}` in the same loop, or in a function with no loop): like a dict literal, it
    keeps one step's value, not a history."""
    target = next(t.target for t in store.targets if isinstance(t.target, cst.Subscript))
    name = dotted(target.value)
    function = source.function_of(store)
    if name is None or function is None:
        return False
    start = source.span(store)[0]
    made = [
        assign
        for assign in source.within(function, cst.Assign)
        if source.span(assign)[1] < start
        and [dotted(t.target) for t in assign.targets] == [name]
        and (
            # empty, or a literal of this step's read-outs (Stanza's `logged = {'train_c_loss':
            # c_loss.item(), ...}`, then `logged['train_z_loss'] = z_loss.item()`)
            isinstance(assign.value, (cst.Dict, cst.List))
            or (isinstance(assign.value, cst.Call) and callee_name(assign.value) == "dict" and not assign.value.args)
        )
    ]
    if not made:
        return False
    # handed on whole (`history.append(summary)`, `kept = summary`) it may be kept; its entries
    # read, the dict tested or returned, it is not
    for use in source.within(function, cst.Name):
        if use.value == name and source.span(use)[0] > start:
            parent = source.parent(use)
            if isinstance(parent, cst.Arg) and _written_out(source, parent):
                continue  # `wandb.log(logged)`: written out once, not kept
            if isinstance(parent, (cst.Arg, cst.Element, cst.DictElement, cst.Yield)) or (
                isinstance(parent, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and parent.value is use
            ):
                return False
            if isinstance(parent, cst.Return) and parent.value is use and _values_kept_by_caller(source, function):
                return False

    def loop(node):
        return source.enclosing(node, (cst.For, cst.While))

    return loop(made[-1]) is loop(store)


def _written_out(source, arg: cst.Arg) -> bool:
    """True for the argument of a metrics logger's one-shot write: `wandb.log(logged)`,
    `run.log(...)`, `mlflow.log_metrics(...)`, `writer.add_scalars(tag, logged, step)`."""
    call = source.parent(arg)
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    owner = (last_name(call.func.value) or "").lower()
    return callee_name(call) in ("log", "log_metrics", "add_scalars") and any(
        word in owner for word in ("wandb", "run", "mlflow", "writer", "logger", "experiment")
    )


def _type_guarded(source, call: cst.Call, name: str) -> bool:
    """True where `call` runs only when `name` passes a type test (ElegantRL's
    `objs_actor.append(obj_actor) if isinstance(obj_actor, float) else None`): a tensor is not kept."""
    for ancestor in source.ancestors(call):
        test = ancestor.test if isinstance(ancestor, (cst.If, cst.IfExp)) else None
        if test is not None and any(
            callee_name(c) == "isinstance" and c.args and dotted(c.args[0].value) == name
            for c in [test, *source.within(test, cst.Call)]
            if isinstance(c, cst.Call)
        ):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            break
    return False


def _values_kept_by_caller(source, function: cst.FunctionDef) -> bool:
    """True where a caller in the file binds the dict `function` returns and appends its values to
    a history (Social GAN's `losses_d = discriminator_step(...)`, then `for k, v in
    sorted(losses_d.items()): checkpoint['D_losses'][k].append(v)`)."""
    for call in source.nodes(cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value == function.name.value):
            continue
        bound = assigned_alone(source.parent(call), call)
        caller = source.function_of(call)
        if bound is None:
            continue
        for loop in source.within(caller or source.module, cst.For):
            if not any(
                isinstance(c.func, cst.Attribute) and c.func.attr.value == "items" and dotted(c.func.value) == bound
                for c in source.within(loop.iter, cst.Call)
            ):
                continue
            values = [n.value for n in source.within(loop.target, cst.Name)][-1:]
            if any(
                isinstance(c.func, cst.Attribute)
                and c.func.attr.value == "append"
                and any(dotted(a.value) in values for a in c.args)
                for c in source.within(loop.body, cst.Call)
            ):
                return True
    return False


def _summed_later(source, assign: cst.Assign, names: set) -> bool:
    """True if a later statement of the same function adds a name `assign` binds to a total
    (`train_reg_loss += batch_reg_loss`)."""
    scope = source.function_of(assign) or source.module
    end = source.span(assign)[1]
    return any(
        isinstance(aug.operator, cst.AddAssign) and dotted(aug.value) in names and source.span(aug)[0] > end
        for aug in source.within(scope, cst.AugAssign)
    )


def _computed_without_grad(source, value: cst.BaseExpression, use: cst.CSTNode, depth: int) -> bool:
    """True for a value taken from what a forward under `no_grad` returned, bound anew in the
    loop body (or function) around `use` before it: pytorch-ts' validation loop runs `output =
    net(*inputs)` under no_grad, then `loss = output[0]` (or `loss = output`) and
    `cumm_epoch_loss_val += loss.item()` outside it; tez's `loss, metrics = ...` under no_grad.
    Each binding there reaching the use must be under no_grad, or a plain part (`output[0]`,
    `output.loss`) of one that is, or a method of one (jiant's `model_output.loss.mean()`)."""
    while True:
        if isinstance(value, (cst.Subscript, cst.Attribute)):
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            value = value.func.value
        else:
            break
    if not isinstance(value, cst.Name) or depth == 0:
        return False
    scope = next((a for a in source.ancestors(use) if isinstance(a, (cst.For, cst.While, cst.FunctionDef))), None)
    if scope is None:
        return False
    start = source.span(use)[0]
    bindings = [
        a
        for a in source.within(scope.body, cst.Assign)
        if source.span(a)[1] <= start
        and source.function_of(a) is source.function_of(use)
        and any(
            value.value in (_unpacked(t.target) if isinstance(t.target, (cst.Tuple, cst.List)) else {dotted(t.target)})
            for t in a.targets
        )
    ]
    return bool(bindings) and all(
        under_no_grad(source, a)
        or _computed_without_grad(source, a.value, a, depth - 1)
        or _loss_of_graphless_prediction(source, a.value, a, depth - 1)
        for a in bindings
    )


def _loss_of_graphless_prediction(source, value: cst.BaseExpression, use: cst.CSTNode, depth: int) -> bool:
    """True for a criterion applied outside `no_grad` to a prediction made under it (DeepLab's
    validation: `output = self.model(image)` under no_grad, then `loss = self.criterion(output,
    target)` after it): the loss has no graph to keep, whatever the targets are."""
    if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
        return False
    words = (callee_name(value) or dotted(value.func) or "").lower()
    if not ("loss" in words or "criterion" in words or callee_name(value) in LOSS_FUNCTIONS):
        return False
    return _computed_without_grad(source, value.args[0].value, use, depth)


def _detached(
    source, training, value: cst.BaseExpression, function, depth: int, seen: frozenset[str] = frozenset()
) -> bool:
    """True if `value` holds no graph: a number, a detached tensor (`loss.detach().float()`), a
    parameter-free function of such values (`torch.exp(...)`, `a / len(loader)`), or a name every
    binding of which in the function is one (`total_loss = 0.0`, `total_loss += loss.detach()`,
    `epoch_loss = total_loss / n`). A call of anything else (a model, a loss function) may build
    a graph of its own."""
    if _number(value) or (isinstance(value, cst.Name) and value.value in ("None", "True", "False")):
        return True
    if isinstance(value, cst.Attribute) and value.attr.value == "data":
        return True  # a tensor's `.data` shares its storage without its graph (`loss.data.cpu()`)
    if isinstance(value, cst.IfExp):  # `None if not z else torch.tensor(0.0)`: either branch
        return _detached(source, training, value.body, function, depth, seen) and _detached(
            source, training, value.orelse, function, depth, seen
        )
    if isinstance(value, cst.Call):
        name = callee_name(value)
        if name in ("detach", "numpy", "tolist"):
            return True  # a NumPy array or a list holds no graph (`loss.cpu().detach().numpy()`)
        if name in _FACTORIES and dotted(value.func) == f"torch.{name}":
            # a new tensor (`torch.zeros(n)`) records no graph unless asked to
            return argument(value, "requires_grad", None) is None
        if name in _COLLECTIVES:
            # a collective of a graph-free value is one (`self.gather(torch.tensor(total))`), whatever
            # helper of the file passes it on
            return bool(value.args) and _detached(source, training, value.args[0].value, function, depth, seen)
        returned = _returned(source, training, value) if depth > 0 else None
        if returned is not None:
            # a function of this file whose every return is detached (`return q_loss.detach()`)
            return all(_detached(source, training, r, where, depth - 1) for where, r in returned)
        if name not in _GRAPH_FREE:
            return False
        if isinstance(value.func, cst.Attribute) and dotted(value.func.value) not in ("torch", "math", "np"):
            return _detached(source, training, value.func.value, function, depth, seen)  # a tensor's method
        return bool(value.args) and _detached(source, training, value.args[0].value, function, depth, seen)
    if isinstance(value, cst.BinaryOperation):
        return _detached(source, training, value.left, function, depth, seen) and _detached(
            source, training, value.right, function, depth, seen
        )
    if isinstance(value, cst.UnaryOperation):
        return _detached(source, training, value.expression, function, depth, seen)
    if not isinstance(value, cst.Name) or depth == 0 or function is None:
        return False
    name = value.value
    if name in seen:
        return True  # its own earlier value (`epoch_loss = epoch_loss / world_size`), judged already
    bound: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
    for node in source.within(function, (cst.Assign, cst.AugAssign)):
        if source.function_of(node) is not function:
            continue  # a nested function's name of the same spelling is another variable
        targets = [node.target] if isinstance(node, cst.AugAssign) else [t.target for t in node.targets]
        if any(dotted(t) == name or isinstance(t, cst.Subscript) and dotted(t.value) == name for t in targets):
            bound.append((function, node.value))  # bound, or a slot written (`q_losses[j] = v`)
        elif any(isinstance(t, (cst.Tuple, cst.List)) and name in _unpacked(t) for t in targets):
            at = _position(targets, name)
            returned = _returned(source, training, node.value, at) if at is not None else None
            if returned is None:
                return False  # unpacked from what a call returns: nothing says it is detached
            bound.extend(returned)  # `loss, n = update(batch)`: what update returns there
    for call in source.within(function, cst.Call):
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        if (
            callee_name(call) in _IN_PLACE_WRITES
            and receiver is not None
            and dotted(receiver) == name
            and call.args
            and source.function_of(call) is function
        ):
            bound.append((function, call.args[0].value))  # a slot filled in place (`q_losses[j].copy_(v)`)
    if not bound and function is not None:
        handed = _handed(source, training, function, name)  # a parameter: what every caller hands it
        if handed is not None:
            return all(_detached(source, training, v, where, depth - 1) for where, v in handed)
    return bool(bound) and all(
        _detached(source, training, v, where, depth - 1, seen | {name} if where is function else frozenset())
        for where, v in bound
    )


# In-place methods that write what they are given into the tensor they are called on.
_IN_PLACE_WRITES = frozenset({"copy_", "fill_", "add_", "index_copy_", "masked_scatter_"})


def _position(targets: list[cst.BaseAssignTargetExpression], name: str) -> int | None:
    """Where `name` sits in a flat tuple target (`loss, n = update(...)` -> 0 for `loss`)."""
    for target in targets:
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [dotted(e.value) if not isinstance(e, cst.StarredElement) else None for e in target.elements]
            if name in names and None not in names:
                return names.index(name)
    return None


def _definitions(source, name: str) -> list[cst.FunctionDef] | None:
    """The functions of this file a call of `name` runs: every `def name`, where each other
    binding of the name wraps it (`update = torch.compile(update, mode=...)`); None where the
    name is bound to anything else (or nothing here defines it)."""
    defs = [d for d in source.nodes(cst.FunctionDef) if d.name.value == name]
    for assign in source.nodes(cst.Assign):
        if any(dotted(t.target) == name for t in assign.targets):
            value = assign.value
            if not (isinstance(value, cst.Call) and value.args and dotted(value.args[0].value) == name):
                return None
    return defs or None


def _handed(
    source, training, function: cst.FunctionDef, name: str
) -> list[tuple[cst.FunctionDef | None, cst.BaseExpression]] | None:
    """What the file's calls of `function` hand its parameter `name` (`self.update_average(loss,
    avg)` hands `loss` for `loss`), each with the function the call is in; None where a call
    hands nothing for it by position or keyword, or nothing here calls it."""
    params = [p.name.value for p in function.params.params]
    if name not in params:
        return None
    position = params.index(name) - (1 if params[:1] == ["self"] else 0)
    out = []
    for call in source.nodes(cst.Call):
        if function not in training.called_functions(call):
            continue
        arg = argument(call, name, position)
        if arg is None or arg.star:
            return None
        out.append((source.function_of(call), arg.value))
    return out or None


def _returned(
    source, training, value: cst.BaseExpression, at: int | None = None
) -> list[tuple[cst.FunctionDef, cst.BaseExpression]] | None:
    """What a call of a function defined in this file returns (`update(batch)` whose one
    `return q_loss.detach()` gives `q_loss.detach()`), each with the function it is read in; at
    `at`, the element of a returned tuple. None for any other value, or a return that is bare
    or not a tuple of the right shape."""
    if not isinstance(value, cst.Call):
        return None
    if isinstance(value.func, cst.Name):
        defs = _definitions(source, value.func.value)
    elif isinstance(value.func, cst.Attribute) and dotted(value.func.value) == "self":
        defs = training.called_functions(value) or None  # `self.fit_batch(batch)`
    else:
        return None
    if defs is None:
        return None
    out = []
    for def_ in defs:
        returns = [r for r in source.within(def_.body, cst.Return) if source.function_of(r) is def_]
        for ret in returns:
            got = ret.value
            if at is not None:
                if not isinstance(got, cst.Tuple) or len(got.elements) <= at:
                    return None
                got = got.elements[at].value
            if got is None:
                return None
            out.append((def_, got))
    return out or None


def _unpacked(target: cst.Tuple | cst.List) -> set[str]:
    """The dotted names a tuple target binds."""
    out: set[str] = set()
    for element in target.elements:
        if isinstance(element.value, (cst.Tuple, cst.List)):
            out |= _unpacked(element.value)
        elif (name := dotted(element.value)) is not None:
            out.add(name)
    return out


# Tensor factories: a new tensor with no graph.
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "tensor", "arange"})
# Collectives: what they return across processes is made from their first argument alone.
_COLLECTIVES = frozenset({"gather", "all_gather", "gather_for_metrics", "all_reduce", "reduce", "reduce_mean"})
# Calls that make a value from their inputs without parameters of their own.
_GRAPH_FREE = frozenset(
    {"float", "int", "len", "round", "exp", "log", "sqrt", "mean", "sum", "cpu", "to", "clone", "div"}
)


def _number(value: cst.BaseExpression) -> bool:
    """True for a plain number: a literal, or `int(...)`, `float(...)`, `len(...)` of anything."""
    return isinstance(value, (cst.Integer, cst.Float)) or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("int", "len", "round")
    )


def _kept_later(source, assign: cst.Assign, names: set) -> bool:
    """True if a later call of the same function stores a name `assign` binds
    (`logger.store(LossPi=pi_l_old)`, `history.append(batch_loss)`)."""
    scope = source.function_of(assign) or source.module
    end = source.span(assign)[1]
    for store in source.within(scope, cst.Call):
        if source.span(store)[0] <= end or not _stores(store) or _keyed_logger(source, store):
            continue
        owner = (last_name(store.func.value) or "").lower()
        for arg in store.args:
            if dotted(arg.value) not in names:
                continue
            if arg.keyword is not None and callee_name(store) == "update" and "logger" in owner:
                continue  # a MetricLogger's keyword value: it calls .item() on tensors itself
            return True
    for store in source.within(scope, cst.Assign):
        # stored into a slot of a history (self-critical.pytorch's `histories['loss_history']
        # [iteration] = train_loss if not sc_flag else ...`), not of a dict made for one step
        if source.span(store)[0] <= end or not any(isinstance(t.target, cst.Subscript) for t in store.targets):
            continue
        value = store.value
        stored = {dotted(value.body), dotted(value.orelse)} if isinstance(value, cst.IfExp) else {dotted(value)}
        if stored & names and not _fresh_each_step(source, store):
            return True
    return False


def _keyed_logger(source, store: cst.Call) -> bool:
    """True for `logger.record("train/loss", value)`: a logger that keeps one value per literal
    key until it writes them out, each call overwriting the last, so a tensor kept there holds
    one step's graph at most and nothing grows (`record_mean`, a running mean, keeps them all)."""
    owner = (last_name(store.func.value) or "").lower()  # type: ignore[attr-defined]
    first = store.args[0] if store.args else None
    return (
        callee_name(store) == "record"
        and "logger" in owner
        and first is not None
        and first.keyword is None
        and isinstance(first.value, cst.SimpleString)
    )


def _itemizing_logger(source, store: cst.Call, call: cst.Call) -> bool:
    """True for `metric_logger.update(loss=loss.item())`: the MetricLogger of the PyTorch
    reference scripts (and the DETR, DINO, DeiT, MAE copies of it) takes keyword values and
    calls `.item()` on tensors itself, so dropping ours keeps no graph."""
    owner = (last_name(store.func.value) or "").lower()  # type: ignore[attr-defined]
    return (
        callee_name(store) == "update"
        and "logger" in owner
        and any(a.keyword is not None and any(n is call for n in source.within(a, cst.Call)) for a in store.args)
    )


def _loss_names(source, training) -> set[str]:
    """Names that hold a loss: what backward runs on, what a loss call returns, and sums of those."""
    names = {name for b in training.backwards if (name := dotted(b.loss))}
    for backward in training.backwards:
        if backward.loss is not None and dotted(backward.loss) is None:
            # `(value_loss * c + action_loss - dist_entropy * c).backward()`: each term is a loss
            names.update(_terms(source, backward.loss))
    # what a loss is computed from is no loss, whatever it was made of (openWakeWord's
    # `predictions = torch.cat((neg_high_loss, pos_high_loss))`, the outputs picked by their loss)
    inputs = _loss_inputs(source, training, names) - names
    for _ in range(2):
        for assign in source.nodes(cst.Assign):
            if _is_loss(source, training, assign.value, names):
                names.update(name for t in assign.targets if (name := dotted(t.target)) and name not in inputs)
                names.update(
                    name
                    for t in assign.targets
                    if isinstance(t.target, cst.Tuple) and (name := _tuple_loss(t.target)) is not None
                )
    return names


def _loss_inputs(source, training, losses: set[str]) -> set[str]:
    """The names handed straight to a loss call as its input (`criterion(predictions, y)`,
    `loss = self.loss(predictions, y, w)` where backward runs on `loss`)."""
    found: set[str] = set()
    for call in source.nodes(cst.Call):
        callee = (callee_name(call) or "").lower()
        assign = source.parent(call)
        if (
            callee in LOSS_FUNCTIONS
            or _a_criterion(callee)
            or training.role(call.func) == "loss-module"
            or isinstance(assign, cst.Assign)
            and assign.value is call
            and any(dotted(t.target) in losses for t in assign.targets)
        ):
            found.update(name for arg in call.args if (name := dotted(arg.value)))
    return found


def _terms(source, expression: cst.BaseExpression) -> set[str]:
    """The plain names an expression adds, subtracts or scales (not the names inside a call's
    arguments or an attribute: those are coefficients and modules, not loss terms)."""
    if isinstance(expression, cst.Name):
        return {expression.value}
    if isinstance(expression, cst.BinaryOperation):
        return _terms(source, expression.left) | _terms(source, expression.right)
    if isinstance(expression, cst.UnaryOperation):
        return _terms(source, expression.expression)
    return set()


def _tuple_loss(target: cst.Tuple) -> str | None:
    """The loss among names a loss helper's tuple is unpacked into (`loss_pi, pi_info =
    compute_loss_pi(data)`): the one named a loss, else the first."""
    names = [dotted(e.value) for e in target.elements]
    named = [n for n in names if n and "loss" in n.rsplit(".", 1)[-1].lower()]
    return named[0] if named else names[0] if names else None


def _from_loss_loop(source, value) -> bool:
    """True if `value` reads a name bound by a loop over losses (`for key, values in
    losses.items(): log(values.mean().item())`)."""
    read = {n.value for n in source.within(value, cst.Name)}
    for loop in source.ancestors(value):
        if (
            isinstance(loop, cst.For)
            and "loss" in source.code(loop.iter).lower()
            and read & {n.value for n in source.within(loop.target, cst.Name)}
        ):
            return True
    return False


# What a loss tensor is read through; any other attribute of a "loss" object (`self.train_loss.
# padding_idx`, `criterion_loss.ignore_prompt(batch)`) belongs to a loss module, not a loss value.
TENSOR_ATTRIBUTES = frozenset(
    {"mean", "sum", "item", "detach", "float", "double", "half", "cpu", "cuda", "to", "data", "clone"}
    | {"view", "reshape", "squeeze", "unsqueeze", "tolist", "numpy", "abs", "sqrt", "exp", "log"}
)


def _names_loss(source, value) -> bool:
    """True if `value` reads something named a loss (`loss`, `self.loss_g`, `out['loss']`),
    not an attribute of a loss module (a padding index, a helper method)."""
    for node in source.within(value, (cst.Name, cst.Attribute, cst.SimpleString)):
        if isinstance(node, cst.SimpleString):
            if "loss" in node.value.lower():
                return True
            continue
        parent = source.parent(node)
        if isinstance(node, cst.Name) and isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # read through its Attribute
        if "loss" not in (last_name(node) or "").lower():
            continue
        if not _module_attribute(source, node):
            return True
    return False


def _module_attribute(source, node) -> bool:
    """True if `node` is read for an attribute a tensor does not have (`loss_fn.padding_idx`)."""
    parent = source.parent(node)
    return isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value not in TENSOR_ATTRIBUTES


# Words that make a criterion a metric (pytorch-3dunet's `eval_criterion`, a mean IoU or a Dice
# score): the model is scored with it, never trained through it.
_METRIC_WORDS = frozenset({"eval", "metric", "metrics", "score", "acc", "accuracy"})


def _a_criterion(callee: str) -> bool:
    """True for a callee named a criterion that is no metric (`criterion`, `self.criterion_ce`)."""
    return "criterion" in callee and not _METRIC_WORDS & set(callee.split("_"))


def _is_loss(source, training, value, names: set[str]) -> bool:
    if _names_loss(source, value):
        return True
    if _from_loss_loop(source, value):
        return True
    for node in source.within(value, (cst.Name, cst.Attribute, cst.Call)):
        if isinstance(node, cst.Call):
            callee = (callee_name(node) or "").lower()
            if callee in LOSS_FUNCTIONS or _a_criterion(callee) or training.role(node.func) == "loss-module":
                return True
        elif dotted(node) in names and not _module_attribute(source, node):
            return True
    return False
