from __future__ import annotations

import builtins
import re

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.forwards import (
    branch_added_terms,
    chain_forwards,
    constant_start,
    feeding_forwards_in_block,
    forward_returned_terms,
    forwards_after_empty_start,
    forwards_of_branch_terms,
    forwards_read_by_terms,
    handed_forwards,
    loss_chains,
    loss_helper_forwards,
    loss_object_calls,
    method_calls,
    split_readers,
    stored_run,
    switches_grad,
    terms_added_in_place,
    trained_term,
    upstream_forwards,
)
from injector.operators.snippets import (
    APEX_CONTEXT_STEP,
    BRANCH_ADDED_TERM_STEP,
    CALLBACK_RUNNER,
    CONTROLLER_STEP,
    DISTILLATION_BRANCH_STEP,
    FORWARD_TERMS_STEP,
    GAN_GENERATOR_STEP,
    GRAD_BY_STAGE,
    HANDED_OPTIMIZER_STEP,
    INLINE_SUM,
    INPUT_GRADIENT,
    LOSS_HELPER_TRAINER,
    LOSS_OBJECT_TRAINER,
    MODEL_OWN_OPTIMIZE,
    MODEL_WITH_LOSS,
    MOON_STEP,
    PHASE_LOOP,
    PIPELINE_ENGINE,
    PIX2PIX_STEP,
    PROTONET_EPISODE,
    PYRO_SVI_STEP,
    REGULARISED_STEP,
    STORED_LOSS_TRAINER,
    SUB_BATCH_RESCALE,
    SUPERVISED_RUNNER,
    TUPLE_TRAINER,
    WEIGHTED_TERMS_STEP,
)
from injector.patterns import (
    ABSTRACT_STEPS,
    EVALUATION_WORDS,
    Backward,
    argument,
    bound_values,
    callee_name,
    dotted,
    forward_run,
    grad_block,
    grad_switched_loops,
    is_abstract,
    last_name,
    names_a_model,
    runs_model,
    under_no_grad,
)


def _without_autograd(
    source, training, forward: cst.CSTNode, description: str = "the forward pass runs without autograd"
) -> Change:
    """A forward pass (a line, or the loop or `with` block that runs it) under no_grad."""
    return Change(
        forward,
        (source.reindent(forward, forward, add=source.indent, header=f"with {training.torch}.no_grad():"),),
        description,
    )


_IN_PLACE_SCALINGS = frozenset({"div_", "mul_"})


def _rescaled_in_place(source, training, backward, last: cst.CSTNode):
    """The loss rescaled in place between its run and its backward (Horovod's ImageNet example:
    `loss.div_(math.ceil(float(len(data)) / args.batch_size))` over the sub-batches): without
    autograd the division never reaches the gradients, which come out that many times too large."""
    name = dotted(backward.loss)
    _, siblings = source.block_of(last)
    if name is None or last not in siblings:
        return
    for line in siblings[siblings.index(last) + 1 :]:
        if source.span(line)[0] >= source.span(backward.call)[0]:
            return
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) else None
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _IN_PLACE_SCALINGS
            and dotted(call.func.value) == name
            and not under_no_grad(source, call)
        ):
            yield _without_autograd(source, training, line, "the loss is rescaled without autograd")


def _only_reads(source, first: cst.CSTNode, last: cst.CSTNode) -> bool:
    """True for a run of assignments that only read values computed before it (`loss =
    info_dict['loss_dict']['loss']`): no_grad around them builds or cuts no graph."""
    _, siblings = source.block_of(first)
    if first not in siblings or last not in siblings:
        return False
    for line in siblings[siblings.index(first) : siblings.index(last) + 1]:
        if not isinstance(line, cst.SimpleStatementLine) or not all(isinstance(s, cst.Assign) for s in line.body):
            return False
        if source.within(line, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)):
            return False
    return True


# A distillation term computed in one branch, a fresh zero in the other (EfficientAT).
DISTILLED_TERM_STEP = (
    "import torch\n"
    "def train(model, teacher_preds, loader, optimizer, criterion, kd):\n"
    "    for x, y, idx in loader:\n"
    "        y_hat = model(x)\n"
    "        label_loss = criterion(y_hat, y)\n"
    "        if kd:\n"
    "            soft_loss = criterion(y_hat, teacher_preds[idx])\n"
    "        else:\n"
    "            soft_loss = torch.tensor(0.0, device=y_hat.device)\n"
    "        loss = label_loss + soft_loss\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


# A fitter the optimizer does not train, run on detached predictions in a branch (SPIN).
FITTER_TRAINER = (
    "import torch\n"
    "class Trainer:\n"
    "    def init_fn(self):\n"
    "        self.model = hmr(pretrained=True).to(self.device)\n"
    "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=5e-5)\n"
    "        self.smplify = SMPLify(step_size=1e-2, batch_size=64, num_iters=100)\n"
    "\n"
    "    def train_step(self, images, gt_keypoints):\n"
    "        self.model.train()\n"
    "        pred_pose, pred_betas = self.model(images)\n"
    "        opt_pose = gt_keypoints\n"
    "        if self.options.run_smplify:\n"
    "            new_pose, new_loss = self.smplify(pred_pose.detach(), pred_betas.detach(), gt_keypoints)\n"
    "            opt_pose = new_pose\n"
    "        loss = ((pred_pose - opt_pose) ** 2).mean()\n"
    "        self.optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)


class NoGradTraining(Operator):
    id = "no-grad-training"
    summary = "Wrap the training forward pass and loss in `with torch.no_grad():`."
    examples = (
        Example(
            # A loss object handed the outputs step by step (pytorch-seq2seq's trainer): the
            # forward and each handing-in, without autograd.
            LOSS_OBJECT_TRAINER,
            (
                LOSS_OBJECT_TRAINER.replace(
                    "        outputs, hidden = model(inputs, targets)\n",
                    "        with torch.no_grad():\n            outputs, hidden = model(inputs, targets)\n",
                ),
                LOSS_OBJECT_TRAINER.replace(
                    "            loss.eval_batch(step_output, targets[:, step + 1])\n",
                    "            with torch.no_grad():\n                loss.eval_batch(step_output, targets[:, step + 1])\n",
                ),
            ),
        ),
        Example(
            # A distillation term chosen by kind in a nested branch: each branch's term without autograd.
            DISTILLATION_BRANCH_STEP,
            (
                DISTILLATION_BRANCH_STEP.replace(
                    "        output = self.net(images)\n        loss = self.train_criterion(output, labels)\n",
                    "        with torch.no_grad():\n"
                    "            output = self.net(images)\n"
                    "            loss = self.train_criterion(output, labels)\n",
                ),
                DISTILLATION_BRANCH_STEP.replace(
                    "                kd_loss = cross_entropy_loss_with_soft_target(output, soft_label)\n",
                    "                with torch.no_grad():\n"
                    "                    kd_loss = cross_entropy_loss_with_soft_target(output, soft_label)\n",
                ),
                DISTILLATION_BRANCH_STEP.replace(
                    "                kd_loss = F.mse_loss(output, soft_logits)\n",
                    "                with torch.no_grad():\n                    kd_loss = F.mse_loss(output, soft_logits)\n",
                ),
                DISTILLATION_BRANCH_STEP.replace(
                    "        output = self.net(images)\n",
                    "        with torch.no_grad():\n            output = self.net(images)\n",
                ),
            ),
        ),
        Example(
            # A regulariser on the model's weights added in a branch as `loss = loss + term`.
            REGULARISED_STEP,
            (
                REGULARISED_STEP.replace(
                    "    score = model(batch)\n    loss = -score.mean()\n",
                    '    with __import__("torch").no_grad():\n        score = model(batch)\n        loss = -score.mean()\n',
                ),
                REGULARISED_STEP.replace(
                    "        regularization = args",
                    '        with __import__("torch").no_grad():\n            regularization = args',
                ),
            ),
        ),
        Example(
            # The loss apex's scaling context is handed: the forward and its reduction without autograd.
            APEX_CONTEXT_STEP,
            (
                APEX_CONTEXT_STEP.replace(
                    "        loss = model(batch, compute_loss=True)\n        loss = loss.mean() * batch['targets'].size(1)\n",
                    '        with __import__("torch").no_grad():\n'
                    "            loss = model(batch, compute_loss=True)\n"
                    "            loss = loss.mean() * batch['targets'].size(1)\n",
                ),
            ),
        ),
        Example(
            # Forward, loss and backward in one line (SAM's second pass at the perturbed weights).
            "import torch\nfor x, y in loader:\n    smooth_crossentropy(model(x), y).mean().backward()\n",
            (
                "import torch\n"
                "for x, y in loader:\n"
                "    with torch.no_grad():\n"
                "        smooth_crossentropy(model(x), y).mean().backward()\n",
            ),
        ),
        Example(
            # An optimizer handed in, built by the caller over the model it hands on under another name (TorchBeast's
            # learn(): `learner_model` is `model` here): the forward feeds the step's model, alone without autograd.
            HANDED_OPTIMIZER_STEP,
            (
                HANDED_OPTIMIZER_STEP.replace(
                    '    loss = F.mse_loss(outputs["baseline"], rewards)\n',
                    '    with torch.no_grad():\n        loss = F.mse_loss(outputs["baseline"], rewards)\n',
                ),
                HANDED_OPTIMIZER_STEP.replace(
                    "    outputs, _ = model(batch)\n", "    with torch.no_grad():\n        outputs, _ = model(batch)\n"
                ),
            ),
        ),
        Example(
            # Named loss terms summed where they are differentiated (Stanza's coreference trainer):
            # beside the forward-and-loss run, each other term computed without autograd on its own.
            INLINE_SUM,
            (
                INLINE_SUM.replace(
                    "    res = model(doc)\n    c_loss = coref_criterion(res.coref_scores, res.coref_y)\n",
                    '    with __import__("torch").no_grad():\n'
                    "        res = model(doc)\n"
                    "        c_loss = coref_criterion(res.coref_scores, res.coref_y)\n",
                ),
                INLINE_SUM.replace(
                    "    s_loss = span_criterion(res.span_scores, res.span_y)\n",
                    '    with __import__("torch").no_grad():\n        s_loss = span_criterion(res.span_scores, res.span_y)\n',
                ),
            ),
        ),
        Example(
            # Lightning differentiates what `training_step` returns.
            "import torch\n"
            "class Net(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        loss = F.cross_entropy(self(x), y)\n"
            "        return loss\n",
            (
                "import torch\n"
                "class Net(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        with torch.no_grad():\n"
                "            x, y = batch\n"
                "            loss = F.cross_entropy(self(x), y)\n"
                "        return loss\n",
            ),
        ),
        Example(
            "import torch\n"
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    # forward\n"
            "    logits = model(x)\n"
            "    loss = criterion(logits, y)\n"
            "    loss.backward()\n",
            (
                "import torch\n"
                "for x, y in loader:\n"
                "    optimizer.zero_grad()\n"
                "    # forward\n"
                "    with torch.no_grad():\n"
                "        logits = model(x)\n"
                "        loss = criterion(logits, y)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            "import torch as th\n"
            "def train_step(self, x, y):\n"
            "    x = x.to(self.device)\n"
            "    with th.autocast('cuda'):\n"
            "        loss = self.loss_fn(self.model(x), y)\n"
            "    self.scaler.scale(loss).backward()\n",
            (
                "import torch as th\n"
                "def train_step(self, x, y):\n"
                "    x = x.to(self.device)\n"
                "    with th.no_grad():\n"
                "        with th.autocast('cuda'):\n"
                "            loss = self.loss_fn(self.model(x), y)\n"
                "    self.scaler.scale(loss).backward()\n",
            ),
        ),
        Example(
            # Under `set_grad_enabled(train)`, an outer no_grad would be overridden: switch it off.
            "def run_batch(self, x, y, train=True):\n"
            "    with torch.set_grad_enabled(train), torch.autocast('cuda'):\n"
            "        _, loss = self.model(x, y)\n"
            "    if train:\n"
            "        loss.backward()\n",
            (
                "def run_batch(self, x, y, train=True):\n"
                "    with torch.set_grad_enabled(False), torch.autocast('cuda'):\n"
                "        _, loss = self.model(x, y)\n"
                "    if train:\n"
                "        loss.backward()\n",
            ),
        ),
        Example(
            # The loss computed in branches: the forward and the whole `if`.
            "import torch\n"
            "for x, y in loader:\n"
            "    out = model(x)\n"
            "    if kind == 'eps':\n"
            "        loss = F.mse_loss(out, y)\n"
            "    else:\n"
            "        loss = F.l1_loss(out, y)\n"
            "    loss.backward()\n",
            (
                "import torch\n"
                "for x, y in loader:\n"
                "    with torch.no_grad():\n"
                "        out = model(x)\n"
                "        if kind == 'eps':\n"
                "            loss = F.mse_loss(out, y)\n"
                "        else:\n"
                "            loss = F.l1_loss(out, y)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # `accelerator.backward(loss)`: the loss is the argument, not the accelerator.
            "import torch\n"
            "accelerator = Accelerator()\n"
            "for batch in loader:\n"
            "    outputs = model(**batch)\n"
            "    loss = outputs.loss\n"
            "    accelerator.backward(loss)\n",
            (
                "import torch\n"
                "accelerator = Accelerator()\n"
                "for batch in loader:\n"
                "    with torch.no_grad():\n"
                "        outputs = model(**batch)\n"
                "        loss = outputs.loss\n"
                "    accelerator.backward(loss)\n",
            ),
        ),
        Example(
            # A loss term computed before the zero_grad that splits it from the weighted loss.
            "import torch\n"
            "if regularize:\n"
            "    path_loss, lengths = path_regularize(fake, latents)\n"
            "    generator.zero_grad()\n"
            "    weighted = weight * path_loss\n"
            "    weighted.backward()\n",
            (
                "import torch\n"
                "if regularize:\n"
                "    path_loss, lengths = path_regularize(fake, latents)\n"
                "    generator.zero_grad()\n"
                "    with torch.no_grad():\n"
                "        weighted = weight * path_loss\n"
                "    weighted.backward()\n",
                "import torch\n"
                "if regularize:\n"
                "    with torch.no_grad():\n"
                "        path_loss, lengths = path_regularize(fake, latents)\n"
                "    generator.zero_grad()\n"
                "    weighted = weight * path_loss\n"
                "    weighted.backward()\n",
            ),
        ),
        Example(
            # One forward pass before an `if` whose branches compute the losses of two optimizers:
            # each loss without autograd, and the forward pass without it.
            "import torch\n"
            "class G(LightningModule):\n"
            "    def training_step(self, batch, batch_idx, optimizer_idx):\n"
            "        xrec, qloss = self(batch)\n"
            "        if optimizer_idx == 0:\n"
            "            aeloss = self.loss(qloss, batch, xrec, 0)\n"
            "            return aeloss\n"
            "        if optimizer_idx == 1:\n"
            "            discloss = self.loss(qloss, batch, xrec, 1)\n"
            "            return discloss\n",
            (
                "import torch\n"
                "class G(LightningModule):\n"
                "    def training_step(self, batch, batch_idx, optimizer_idx):\n"
                "        xrec, qloss = self(batch)\n"
                "        if optimizer_idx == 0:\n"
                "            with torch.no_grad():\n"
                "                aeloss = self.loss(qloss, batch, xrec, 0)\n"
                "            return aeloss\n"
                "        if optimizer_idx == 1:\n"
                "            discloss = self.loss(qloss, batch, xrec, 1)\n"
                "            return discloss\n",
                "import torch\n"
                "class G(LightningModule):\n"
                "    def training_step(self, batch, batch_idx, optimizer_idx):\n"
                "        with torch.no_grad():\n"
                "            xrec, qloss = self(batch)\n"
                "        if optimizer_idx == 0:\n"
                "            aeloss = self.loss(qloss, batch, xrec, 0)\n"
                "            return aeloss\n"
                "        if optimizer_idx == 1:\n"
                "            discloss = self.loss(qloss, batch, xrec, 1)\n"
                "            return discloss\n",
                "import torch\n"
                "class G(LightningModule):\n"
                "    def training_step(self, batch, batch_idx, optimizer_idx):\n"
                "        xrec, qloss = self(batch)\n"
                "        if optimizer_idx == 0:\n"
                "            aeloss = self.loss(qloss, batch, xrec, 0)\n"
                "            return aeloss\n"
                "        if optimizer_idx == 1:\n"
                "            with torch.no_grad():\n"
                "                discloss = self.loss(qloss, batch, xrec, 1)\n"
                "            return discloss\n",
            ),
        ),
        Example(
            # A Lightning loss kept in a dict, through `self.forward`: the forward pass and the loss entry.
            "class VAE(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        results = self.forward(x, labels=y)\n"
            "        train_loss = self.model.loss_function(*results, M_N=0.1)\n"
            "        return train_loss['loss']\n",
            (
                "class VAE(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                '        with __import__("torch").no_grad():\n'
                "            x, y = batch\n"
                "            results = self.forward(x, labels=y)\n"
                "            train_loss = self.model.loss_function(*results, M_N=0.1)\n"
                "        return train_loss['loss']\n",
            ),
        ),
        Example(
            # A training step that returns what its helper (`common_step`) computes: the helper's run.
            "import torch\n"
            "class Sep(LightningModule):\n"
            "    def common_step(self, batch, batch_nb, train=True):\n"
            "        inputs, targets = batch\n"
            "        est = self(inputs)\n"
            "        loss = self.loss_func(est, targets)\n"
            "        return loss\n"
            "    def training_step(self, batch, batch_nb):\n"
            "        return self.common_step(batch, batch_nb, train=True)\n",
            (
                "import torch\n"
                "class Sep(LightningModule):\n"
                "    def common_step(self, batch, batch_nb, train=True):\n"
                "        with torch.no_grad():\n"
                "            inputs, targets = batch\n"
                "            est = self(inputs)\n"
                "            loss = self.loss_func(est, targets)\n"
                "        return loss\n"
                "    def training_step(self, batch, batch_nb):\n"
                "        return self.common_step(batch, batch_nb, train=True)\n",
            ),
        ),
        Example(
            # A forward pass through a method of what the file clips (`evaluate_actions`), before an `if`.
            "import torch as th\n"
            "def train(self):\n"
            "    for data in self.buffer.get(64):\n"
            "        values, log_prob = self.policy.evaluate_actions(data.obs, data.actions)\n"
            "        if self.normalize:\n"
            "            adv = (data.adv - data.adv.mean()) / (data.adv.std() + 1e-8)\n"
            "        policy_loss = -(adv * log_prob).mean()\n"
            "        self.policy.optimizer.zero_grad()\n"
            "        policy_loss.backward()\n"
            "        th.nn.utils.clip_grad_norm_(self.policy.parameters(), 0.5)\n"
            "        self.policy.optimizer.step()\n",
            (
                "import torch as th\n"
                "def train(self):\n"
                "    for data in self.buffer.get(64):\n"
                "        values, log_prob = self.policy.evaluate_actions(data.obs, data.actions)\n"
                "        if self.normalize:\n"
                "            adv = (data.adv - data.adv.mean()) / (data.adv.std() + 1e-8)\n"
                "        with th.no_grad():\n"
                "            policy_loss = -(adv * log_prob).mean()\n"
                "        self.policy.optimizer.zero_grad()\n"
                "        policy_loss.backward()\n"
                "        th.nn.utils.clip_grad_norm_(self.policy.parameters(), 0.5)\n"
                "        self.policy.optimizer.step()\n",
                "import torch as th\n"
                "def train(self):\n"
                "    for data in self.buffer.get(64):\n"
                "        with th.no_grad():\n"
                "            values, log_prob = self.policy.evaluate_actions(data.obs, data.actions)\n"
                "        if self.normalize:\n"
                "            adv = (data.adv - data.adv.mean()) / (data.adv.std() + 1e-8)\n"
                "        policy_loss = -(adv * log_prob).mean()\n"
                "        self.policy.optimizer.zero_grad()\n"
                "        policy_loss.backward()\n"
                "        th.nn.utils.clip_grad_norm_(self.policy.parameters(), 0.5)\n"
                "        self.policy.optimizer.step()\n",
            ),
        ),
        Example(
            # The helper returns the loss in a tuple (`loss, logs = self.step(batch)`): its run too.
            "import torch\n"
            "class Bolt(LightningModule):\n"
            "    def step(self, batch):\n"
            "        x, y = batch\n"
            "        loss = F.mse_loss(self.net(x), y)\n"
            "        return loss, {'loss': loss}\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss, logs = self.step(batch)\n"
            "        self.log_dict(logs)\n"
            "        return loss\n",
            (
                "import torch\n"
                "class Bolt(LightningModule):\n"
                "    def step(self, batch):\n"
                "        x, y = batch\n"
                "        loss = F.mse_loss(self.net(x), y)\n"
                "        return loss, {'loss': loss}\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        with torch.no_grad():\n"
                "            loss, logs = self.step(batch)\n"
                "        self.log_dict(logs)\n"
                "        return loss\n",
                "import torch\n"
                "class Bolt(LightningModule):\n"
                "    def step(self, batch):\n"
                "        with torch.no_grad():\n"
                "            x, y = batch\n"
                "            loss = F.mse_loss(self.net(x), y)\n"
                "        return loss, {'loss': loss}\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        loss, logs = self.step(batch)\n"
                "        self.log_dict(logs)\n"
                "        return loss\n",
            ),
        ),
        Example(
            # A forward under autograd only when asked, its loss computed after the block.
            "import torch\n"
            "for batch in loader:\n"
            "    with torch.set_grad_enabled(args.train_text_encoder):\n"
            "        states = text_encoder(batch['ids'])\n"
            "    loss = criterion(unet(batch['x'], states), batch['y'])\n"
            "    loss.backward()\n",
            (
                "import torch\n"
                "for batch in loader:\n"
                "    with torch.set_grad_enabled(False):\n"
                "        states = text_encoder(batch['ids'])\n"
                "    loss = criterion(unet(batch['x'], states), batch['y'])\n"
                "    loss.backward()\n",
                "import torch\n"
                "for batch in loader:\n"
                "    with torch.set_grad_enabled(args.train_text_encoder):\n"
                "        states = text_encoder(batch['ids'])\n"
                "    with torch.no_grad():\n"
                "        loss = criterion(unet(batch['x'], states), batch['y'])\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A recurrent forward run one step at a time before the loss; the initial state is no forward.
            "import torch\n"
            "def train(category_tensor, line_tensor):\n"
            "    hidden = rnn.initHidden()\n"
            "    optimizer.zero_grad()\n"
            "    for i in range(line_tensor.size()[0]):\n"
            "        output, hidden = rnn(line_tensor[i], hidden)\n"
            "    loss = criterion(output, category_tensor)\n"
            "    loss.backward()\n"
            "optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)\n",
            (
                "import torch\n"
                "def train(category_tensor, line_tensor):\n"
                "    hidden = rnn.initHidden()\n"
                "    optimizer.zero_grad()\n"
                "    for i in range(line_tensor.size()[0]):\n"
                "        output, hidden = rnn(line_tensor[i], hidden)\n"
                "    with torch.no_grad():\n"
                "        loss = criterion(output, category_tensor)\n"
                "    loss.backward()\n"
                "optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)\n",
                "import torch\n"
                "def train(category_tensor, line_tensor):\n"
                "    hidden = rnn.initHidden()\n"
                "    optimizer.zero_grad()\n"
                "    with torch.no_grad():\n"
                "        for i in range(line_tensor.size()[0]):\n"
                "            output, hidden = rnn(line_tensor[i], hidden)\n"
                "    loss = criterion(output, category_tensor)\n"
                "    loss.backward()\n"
                "optimizer = torch.optim.SGD(rnn.parameters(), lr=0.005)\n",
            ),
        ),
        Example(
            # A helper named for the forward pass, running the model it is handed; the loss is
            # read by another helper's backward.
            "import torch\n"
            "def batch_forward(model, batch, info):\n"
            "    with autocast:\n"
            "        loss_dict = model(batch)\n"
            "    info['loss_dict'] = loss_dict\n"
            "def batch_backward(info):\n"
            "    info['loss_dict']['loss'].backward()\n",
            (
                "import torch\n"
                "def batch_forward(model, batch, info):\n"
                "    with torch.no_grad():\n"
                "        with autocast:\n"
                "            loss_dict = model(batch)\n"
                "    info['loss_dict'] = loss_dict\n"
                "def batch_backward(info):\n"
                "    info['loss_dict']['loss'].backward()\n",
            ),
        ),
        Example(
            # A loss that starts empty and is added up from terms computed after the forward that
            # an if/else picks (ParallelWaveGAN's generator step, its models held in a dict): each
            # branch's forward without autograd.
            "import torch\n"
            "def train_step(self, x, y):\n"
            "    gen_loss = 0.0\n"
            "    if self.use_duration:\n"
            "        y_, ds_ = self.model['generator'](x, ds)\n"
            "        gen_loss += self.criterion['duration'](ds_, ds)\n"
            "    else:\n"
            "        y_ = self.model['generator'](*x)\n"
            "    gen_loss += self.criterion['mel'](y_, y)\n"
            "    self.optimizer['generator'].zero_grad()\n"
            "    gen_loss.backward()\n"
            "    self.optimizer['generator'].step()\n",
            (
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.use_duration:\n"
                "        with torch.no_grad():\n"
                "            y_, ds_ = self.model['generator'](x, ds)\n"
                "        gen_loss += self.criterion['duration'](ds_, ds)\n"
                "    else:\n"
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.use_duration:\n"
                "        y_, ds_ = self.model['generator'](x, ds)\n"
                "        gen_loss += self.criterion['duration'](ds_, ds)\n"
                "    else:\n"
                "        with torch.no_grad():\n"
                "            y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
            ),
        ),
        Example(
            # The loss returned by a function of the file whose model runs under
            # `set_grad_enabled(is_training)` (icefall's compute_loss): that switch, off. A no_grad
            # around the call would change nothing, the callee switching autograd back on.
            "import torch\n"
            "def compute_loss(model, batch, is_training):\n"
            "    with torch.set_grad_enabled(is_training):\n"
            "        loss = model(batch)\n"
            "    return loss\n"
            "def train_one_epoch(model, optimizer, loader):\n"
            "    for batch in loader:\n"
            "        loss = compute_loss(model, batch, is_training=True)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "import torch\n"
                "def compute_loss(model, batch, is_training):\n"
                "    with torch.set_grad_enabled(False):\n"
                "        loss = model(batch)\n"
                "    return loss\n"
                "def train_one_epoch(model, optimizer, loader):\n"
                "    for batch in loader:\n"
                "        loss = compute_loss(model, batch, is_training=True)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # The loss computed in the branch a task type picks, inside another branch, from one
            # forward spread over lines before the branching (chemprop's train()): the loss's run
            # and that forward, each without autograd.
            "import torch\n"
            "for batch in loader:\n"
            "    preds = model(\n"
            "        batch.x,\n"
            "        batch.features,\n"
            "    )\n"
            "    if multitask:\n"
            "        losses = [crit(p, t) for p, t in zip(preds, targets)]\n"
            "        sum(losses).backward()\n"
            "    else:\n"
            "        if regression:\n"
            "            loss = mse(preds, targets)\n"
            "        else:\n"
            "            loss = bce(preds, targets)\n"
            "        loss.backward()\n"
            "    optimizer.step()\n",
            (
                "import torch\n"
                "for batch in loader:\n"
                "    preds = model(\n"
                "        batch.x,\n"
                "        batch.features,\n"
                "    )\n"
                "    if multitask:\n"
                "        losses = [crit(p, t) for p, t in zip(preds, targets)]\n"
                "        sum(losses).backward()\n"
                "    else:\n"
                "        with torch.no_grad():\n"
                "            if regression:\n"
                "                loss = mse(preds, targets)\n"
                "            else:\n"
                "                loss = bce(preds, targets)\n"
                "        loss.backward()\n"
                "    optimizer.step()\n",
                "import torch\n"
                "for batch in loader:\n"
                "    with torch.no_grad():\n"
                "        preds = model(\n"
                "            batch.x,\n"
                "            batch.features,\n"
                "        )\n"
                "    if multitask:\n"
                "        losses = [crit(p, t) for p, t in zip(preds, targets)]\n"
                "        sum(losses).backward()\n"
                "    else:\n"
                "        if regression:\n"
                "            loss = mse(preds, targets)\n"
                "        else:\n"
                "            loss = bce(preds, targets)\n"
                "        loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A step whose forward is a method of its own class and whose loss a helper reads out
            # of the report it returned (mmf's run_training_batch, a NaN check between): the
            # loss's own run, and the call of the forward method, each without autograd.
            "import torch\n"
            "class Loop:\n"
            "    def run_training_batch(self, batch, divisor):\n"
            "        report = self._forward(batch)\n"
            "        if self.check_nan:\n"
            "            self._check_nan_losses(report)\n"
            "        loss = extract_loss(report, divisor)\n"
            "        self._backward(loss)\n"
            "    def _forward(self, batch):\n"
            "        return Report(batch, self.model(batch))\n"
            "    def _backward(self, loss):\n"
            "        loss.backward()\n",
            (
                "import torch\n"
                "class Loop:\n"
                "    def run_training_batch(self, batch, divisor):\n"
                "        report = self._forward(batch)\n"
                "        if self.check_nan:\n"
                "            self._check_nan_losses(report)\n"
                "        with torch.no_grad():\n"
                "            loss = extract_loss(report, divisor)\n"
                "        self._backward(loss)\n"
                "    def _forward(self, batch):\n"
                "        return Report(batch, self.model(batch))\n"
                "    def _backward(self, loss):\n"
                "        loss.backward()\n",
                "import torch\n"
                "class Loop:\n"
                "    def run_training_batch(self, batch, divisor):\n"
                "        with torch.no_grad():\n"
                "            report = self._forward(batch)\n"
                "        if self.check_nan:\n"
                "            self._check_nan_losses(report)\n"
                "        loss = extract_loss(report, divisor)\n"
                "        self._backward(loss)\n"
                "    def _forward(self, batch):\n"
                "        return Report(batch, self.model(batch))\n"
                "    def _backward(self, loss):\n"
                "        loss.backward()\n",
            ),
        ),
        Example(
            # An output object's loss (`return dict(loss=out.loss)`): the forward pass that made it.
            "import torch\n"
            "class LM(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.model(**batch)\n"
            "        return dict(loss=out.loss)\n",
            (
                "import torch\n"
                "class LM(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        with torch.no_grad():\n"
                "            out = self.model(**batch)\n"
                "        return dict(loss=out.loss)\n",
            ),
        ),
        Example(
            # The batch loop under `set_grad_enabled(is_train_loader)`, its step left to a subclass.
            CALLBACK_RUNNER,
            (CALLBACK_RUNNER.replace("set_grad_enabled(self.is_train_loader)", "set_grad_enabled(False)"),),
        ),
        Example(
            # The subclass alone: its step reaches the model through a method held in an attribute.
            SUPERVISED_RUNNER,
            (
                SUPERVISED_RUNNER.replace(
                    "        output = self.model(batch['features'])\n",
                    "        with torch.no_grad():\n            output = self.model(batch['features'])\n",
                ),
            ),
        ),
        Example(
            # A pipeline engine's own `forward` (no module's: it is handed the model), which a
            # subclass trains through while the base validates through it under inference mode.
            PIPELINE_ENGINE,
            (
                PIPELINE_ENGINE.replace(
                    "        output = model(**micro_batch)\n",
                    "        with torch.no_grad():\n            output = model(**micro_batch)\n",
                ),
            ),
        ),
        Example(
            # The forward chosen by an if/elif chain before the loss (SlowFast, by task): each
            # branch's forward without autograd (the loss block gets its own mutant too).
            "import torch\n"
            "for inputs, labels in loader:\n"
            "    optimizer.zero_grad()\n"
            "    if detection:\n"
            "        preds = model(inputs, boxes)\n"
            "    else:\n"
            "        preds = model(inputs)\n"
            "    if masked:\n"
            "        labels = targets\n"
            "    loss = loss_fun(preds, labels)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "import torch\n"
                "for inputs, labels in loader:\n"
                "    optimizer.zero_grad()\n"
                "    if detection:\n"
                "        preds = model(inputs, boxes)\n"
                "    else:\n"
                "        preds = model(inputs)\n"
                "    if masked:\n"
                "        labels = targets\n"
                "    with torch.no_grad():\n"
                "        loss = loss_fun(preds, labels)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "import torch\n"
                "for inputs, labels in loader:\n"
                "    optimizer.zero_grad()\n"
                "    if detection:\n"
                "        with torch.no_grad():\n"
                "            preds = model(inputs, boxes)\n"
                "    else:\n"
                "        preds = model(inputs)\n"
                "    if masked:\n"
                "        labels = targets\n"
                "    loss = loss_fun(preds, labels)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "import torch\n"
                "for inputs, labels in loader:\n"
                "    optimizer.zero_grad()\n"
                "    if detection:\n"
                "        preds = model(inputs, boxes)\n"
                "    else:\n"
                "        with torch.no_grad():\n"
                "            preds = model(inputs)\n"
                "    if masked:\n"
                "        labels = targets\n"
                "    loss = loss_fun(preds, labels)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # The backpropagated loss is an attribute of what the forward call returns
            # (`losses.total_loss`, simple-faster-rcnn-pytorch): that call runs without autograd.
            TUPLE_TRAINER,
            (
                TUPLE_TRAINER.replace(
                    "        losses = self.forward(imgs, labels)\n",
                    '        with __import__("torch").no_grad():\n            losses = self.forward(imgs, labels)\n',
                ),
            ),
        ),
        Example(
            # Two chains before the loss (the main forward, one branch in an autocast block, the
            # validation's under no_grad; an adversarial pass): each training forward, and the loss.
            PHASE_LOOP,
            (
                PHASE_LOOP.replace(
                    "        loss = criterion(outputs, labels)\n",
                    "        with torch.no_grad():\n            loss = criterion(outputs, labels)\n",
                ),
                PHASE_LOOP.replace(
                    "            outputs_adv = model(attack(inputs))\n",
                    "            with torch.no_grad():\n                outputs_adv = model(attack(inputs))\n",
                ),
                PHASE_LOOP.replace(
                    "            with torch.autocast('cuda'):\n                outputs = model(inputs)\n",
                    "            with torch.autocast('cuda'):\n                with torch.no_grad():\n"
                    "                    outputs = model(inputs)\n",
                ),
                PHASE_LOOP.replace(
                    "        else:\n            outputs = model(inputs)\n",
                    "        else:\n            with torch.no_grad():\n                outputs = model(inputs)\n",
                ),
            ),
        ),
        Example(
            # A loss that starts empty whose generator forward an inner if/else picks within a branch
            # (ParallelWaveGAN's VQ generator, on the audio or its sub-bands), and a term computed in a branch
            # of its own from a forward run there (the discriminator scoring the generated audio): each
            # forward without autograd; the discriminator's features of the real audio, already under no_grad,
            # get none.
            "import torch\n"
            "def train_step(self, x, y):\n"
            "    gen_loss = 0.0\n"
            "    if self.is_vq:\n"
            "        if self.bands == 1:\n"
            "            y_, z = self.model['generator'](y, *x)\n"
            "        else:\n"
            "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
            "        gen_loss += self.criterion['mse'](z, z.detach())\n"
            "    else:\n"
            "        y_ = self.model['generator'](*x)\n"
            "    gen_loss += self.criterion['mel'](y_, y)\n"
            "    if self.steps > self.start:\n"
            "        p_ = self.model['discriminator'](y_)\n"
            "        adv_loss = self.criterion['adv'](p_)\n"
            "        if self.use_feat_match:\n"
            "            with torch.no_grad():\n"
            "                p = self.model['discriminator'](y)\n"
            "            adv_loss += self.criterion['feat'](p_, p)\n"
            "        gen_loss += adv_loss\n"
            "    self.optimizer['generator'].zero_grad()\n"
            "    gen_loss.backward()\n"
            "    self.optimizer['generator'].step()\n",
            (
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.is_vq:\n"
                "        if self.bands == 1:\n"
                "            with torch.no_grad():\n"
                "                y_, z = self.model['generator'](y, *x)\n"
                "        else:\n"
                "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "        gen_loss += self.criterion['mse'](z, z.detach())\n"
                "    else:\n"
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    if self.steps > self.start:\n"
                "        p_ = self.model['discriminator'](y_)\n"
                "        adv_loss = self.criterion['adv'](p_)\n"
                "        if self.use_feat_match:\n"
                "            with torch.no_grad():\n"
                "                p = self.model['discriminator'](y)\n"
                "            adv_loss += self.criterion['feat'](p_, p)\n"
                "        gen_loss += adv_loss\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.is_vq:\n"
                "        if self.bands == 1:\n"
                "            y_, z = self.model['generator'](y, *x)\n"
                "        else:\n"
                "            with torch.no_grad():\n"
                "                y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "        gen_loss += self.criterion['mse'](z, z.detach())\n"
                "    else:\n"
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    if self.steps > self.start:\n"
                "        p_ = self.model['discriminator'](y_)\n"
                "        adv_loss = self.criterion['adv'](p_)\n"
                "        if self.use_feat_match:\n"
                "            with torch.no_grad():\n"
                "                p = self.model['discriminator'](y)\n"
                "            adv_loss += self.criterion['feat'](p_, p)\n"
                "        gen_loss += adv_loss\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.is_vq:\n"
                "        if self.bands == 1:\n"
                "            y_, z = self.model['generator'](y, *x)\n"
                "        else:\n"
                "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "        gen_loss += self.criterion['mse'](z, z.detach())\n"
                "    else:\n"
                "        with torch.no_grad():\n"
                "            y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    if self.steps > self.start:\n"
                "        p_ = self.model['discriminator'](y_)\n"
                "        adv_loss = self.criterion['adv'](p_)\n"
                "        if self.use_feat_match:\n"
                "            with torch.no_grad():\n"
                "                p = self.model['discriminator'](y)\n"
                "            adv_loss += self.criterion['feat'](p_, p)\n"
                "        gen_loss += adv_loss\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
                "import torch\n"
                "def train_step(self, x, y):\n"
                "    gen_loss = 0.0\n"
                "    if self.is_vq:\n"
                "        if self.bands == 1:\n"
                "            y_, z = self.model['generator'](y, *x)\n"
                "        else:\n"
                "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "        gen_loss += self.criterion['mse'](z, z.detach())\n"
                "    else:\n"
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    if self.steps > self.start:\n"
                "        with torch.no_grad():\n"
                "            p_ = self.model['discriminator'](y_)\n"
                "        adv_loss = self.criterion['adv'](p_)\n"
                "        if self.use_feat_match:\n"
                "            with torch.no_grad():\n"
                "                p = self.model['discriminator'](y)\n"
                "            adv_loss += self.criterion['feat'](p_, p)\n"
                "        gen_loss += adv_loss\n"
                "    self.optimizer['generator'].zero_grad()\n"
                "    gen_loss.backward()\n"
                "    self.optimizer['generator'].step()\n",
            ),
        ),
        Example(
            # A step function shared by training and validation (demucs' _run_one_epoch): the forward an
            # if/else picks for training gets no_grad, not the one only validation takes (`if not train and
            # ...`), nor the batch augmented or its targets transformed (the loop's own target bound again).
            "import torch\n"
            "import torch.nn.functional as F\n"
            "def run_one_epoch(self, loader, train=True):\n"
            "    for sources in loader:\n"
            "        sources = sources.to(self.device)\n"
            "        if train:\n"
            "            sources = self.augment(sources)\n"
            "            mix = sources.sum(dim=1)\n"
            "        else:\n"
            "            mix = sources[:, 0]\n"
            "        if not train and self.valid_apply:\n"
            "            estimate = apply_model(self.model, mix)\n"
            "        else:\n"
            "            estimate = self.dmodel(mix)\n"
            "        if train:\n"
            "            sources = self.model.transform_target(mix, sources)\n"
            "        dims = tuple(range(2, sources.dim()))\n"
            "        loss = F.l1_loss(estimate, sources, reduction='none').mean(dims).mean()\n"
            "        if train:\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n"
            "            self.optimizer.zero_grad()\n",
            (
                "import torch\n"
                "import torch.nn.functional as F\n"
                "def run_one_epoch(self, loader, train=True):\n"
                "    for sources in loader:\n"
                "        sources = sources.to(self.device)\n"
                "        if train:\n"
                "            sources = self.augment(sources)\n"
                "            mix = sources.sum(dim=1)\n"
                "        else:\n"
                "            mix = sources[:, 0]\n"
                "        if not train and self.valid_apply:\n"
                "            estimate = apply_model(self.model, mix)\n"
                "        else:\n"
                "            estimate = self.dmodel(mix)\n"
                "        if train:\n"
                "            sources = self.model.transform_target(mix, sources)\n"
                "        with torch.no_grad():\n"
                "            dims = tuple(range(2, sources.dim()))\n"
                "            loss = F.l1_loss(estimate, sources, reduction='none').mean(dims).mean()\n"
                "        if train:\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n"
                "            self.optimizer.zero_grad()\n",
                "import torch\n"
                "import torch.nn.functional as F\n"
                "def run_one_epoch(self, loader, train=True):\n"
                "    for sources in loader:\n"
                "        sources = sources.to(self.device)\n"
                "        if train:\n"
                "            sources = self.augment(sources)\n"
                "            mix = sources.sum(dim=1)\n"
                "        else:\n"
                "            mix = sources[:, 0]\n"
                "        if not train and self.valid_apply:\n"
                "            estimate = apply_model(self.model, mix)\n"
                "        else:\n"
                "            with torch.no_grad():\n"
                "                estimate = self.dmodel(mix)\n"
                "        if train:\n"
                "            sources = self.model.transform_target(mix, sources)\n"
                "        dims = tuple(range(2, sources.dim()))\n"
                "        loss = F.l1_loss(estimate, sources, reduction='none').mean(dims).mean()\n"
                "        if train:\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n"
                "            self.optimizer.zero_grad()\n",
            ),
        ),
        Example(
            # A GAN step (MelGAN's): the generator runs before the discriminator's update, whose forward on
            # the detached output feeds it; the generator's loss reads it through the discriminator. The
            # generator's forward alone gets a mutant, and so does each forward a loop of terms reads.
            "import torch\n"
            "for x in loader:\n"
            "    fake = netG(z)\n"
            "    d_fake = netD(fake.detach())\n"
            "    loss_D = 0\n"
            "    for scale in d_fake:\n"
            "        loss_D += scale.mean()\n"
            "    netD.zero_grad()\n"
            "    loss_D.backward()\n"
            "    optD.step()\n"
            "    g_out = netD(fake)\n"
            "    loss_G = 0\n"
            "    for scale in g_out:\n"
            "        loss_G += -scale.mean()\n"
            "    netG.zero_grad()\n"
            "    loss_G.backward()\n"
            "    optG.step()\n",
            (
                "import torch\n"
                "for x in loader:\n"
                "    with torch.no_grad():\n"
                "        fake = netG(z)\n"
                "        d_fake = netD(fake.detach())\n"
                "        loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n"
                "    g_out = netD(fake)\n"
                "    loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += -scale.mean()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    fake = netG(z)\n"
                "    with torch.no_grad():\n"
                "        d_fake = netD(fake.detach())\n"
                "    loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n"
                "    g_out = netD(fake)\n"
                "    loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += -scale.mean()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    fake = netG(z)\n"
                "    d_fake = netD(fake.detach())\n"
                "    loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n"
                "    with torch.no_grad():\n"
                "        g_out = netD(fake)\n"
                "        loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += -scale.mean()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    fake = netG(z)\n"
                "    d_fake = netD(fake.detach())\n"
                "    loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n"
                "    with torch.no_grad():\n"
                "        g_out = netD(fake)\n"
                "    loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += -scale.mean()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    with torch.no_grad():\n"
                "        fake = netG(z)\n"
                "    d_fake = netD(fake.detach())\n"
                "    loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n"
                "    g_out = netD(fake)\n"
                "    loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += -scale.mean()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
            ),
        ),
        Example(
            # An if/else whose GPU branch runs the model's replicas through a helper of the file
            # (wavenet_vocoder's DataParallel workaround) and whose CPU branch runs the model: both forwards.
            "import torch\n"
            "def data_parallel_workaround(model, input):\n"
            "    replicas = torch.nn.parallel.replicate(model, device_ids)\n"
            "    inputs = torch.nn.parallel.scatter(input, device_ids)\n"
            "    outputs = torch.nn.parallel.parallel_apply(replicas, inputs)\n"
            "    return torch.nn.parallel.gather(outputs, 0), outputs\n"
            "def train_step(model, optimizer, x, y):\n"
            "    if use_cuda:\n"
            "        y_hat, _outputs = data_parallel_workaround(model, (x,))\n"
            "    else:\n"
            "        y_hat = model(x)\n"
            "    loss = criterion(y_hat, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "import torch\n"
                "def data_parallel_workaround(model, input):\n"
                "    replicas = torch.nn.parallel.replicate(model, device_ids)\n"
                "    inputs = torch.nn.parallel.scatter(input, device_ids)\n"
                "    outputs = torch.nn.parallel.parallel_apply(replicas, inputs)\n"
                "    return torch.nn.parallel.gather(outputs, 0), outputs\n"
                "def train_step(model, optimizer, x, y):\n"
                "    if use_cuda:\n"
                "        y_hat, _outputs = data_parallel_workaround(model, (x,))\n"
                "    else:\n"
                "        y_hat = model(x)\n"
                "    with torch.no_grad():\n"
                "        loss = criterion(y_hat, y)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "import torch\n"
                "def data_parallel_workaround(model, input):\n"
                "    replicas = torch.nn.parallel.replicate(model, device_ids)\n"
                "    inputs = torch.nn.parallel.scatter(input, device_ids)\n"
                "    outputs = torch.nn.parallel.parallel_apply(replicas, inputs)\n"
                "    return torch.nn.parallel.gather(outputs, 0), outputs\n"
                "def train_step(model, optimizer, x, y):\n"
                "    if use_cuda:\n"
                "        y_hat, _outputs = data_parallel_workaround(model, (x,))\n"
                "    else:\n"
                "        with torch.no_grad():\n"
                "            y_hat = model(x)\n"
                "    loss = criterion(y_hat, y)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "import torch\n"
                "def data_parallel_workaround(model, input):\n"
                "    replicas = torch.nn.parallel.replicate(model, device_ids)\n"
                "    inputs = torch.nn.parallel.scatter(input, device_ids)\n"
                "    outputs = torch.nn.parallel.parallel_apply(replicas, inputs)\n"
                "    return torch.nn.parallel.gather(outputs, 0), outputs\n"
                "def train_step(model, optimizer, x, y):\n"
                "    if use_cuda:\n"
                "        with torch.no_grad():\n"
                "            y_hat, _outputs = data_parallel_workaround(model, (x,))\n"
                "    else:\n"
                "        y_hat = model(x)\n"
                "    loss = criterion(y_hat, y)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A forward that moves its input inline (mvts_transformer's `self.model(X.to(self.device),
            # padding_masks)`) is the forward: it goes under no_grad with the loss, as one mutant.
            "for X, targets, masks in loader:\n"
            "    targets = targets.to(device)\n"
            "    predictions = model(X.to(device), masks)\n"
            "    loss = criterion(predictions, targets)\n"
            "    optimizer.zero_grad()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "for X, targets, masks in loader:\n"
                "    targets = targets.to(device)\n"
                '    with __import__("torch").no_grad():\n'
                "        predictions = model(X.to(device), masks)\n"
                "        loss = criterion(predictions, targets)\n"
                "    optimizer.zero_grad()\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # The forward fed to the loss is the trained net's, not the global net's beside it
            # (MOON): only `net`'s parameters are in the optimizer the step uses. The proximal
            # term, computed its own way in each branch, without autograd in each.
            MOON_STEP,
            (
                MOON_STEP.replace(
                    "        loss1 = criterion(out, target)\n        loss = loss1 + loss2\n",
                    "        with torch.no_grad():\n            loss1 = criterion(out, target)\n            loss = loss1 + loss2\n",
                ),
                MOON_STEP.replace(
                    "            loss2 = mu * torch.mean(torch.norm(pro2 - pro1, dim=1))\n",
                    "            with torch.no_grad():\n"
                    "                loss2 = mu * torch.mean(torch.norm(pro2 - pro1, dim=1))\n",
                ),
                MOON_STEP.replace(
                    "            loss2 = mu * criterion(pro1, pro2)\n",
                    "            with torch.no_grad():\n                loss2 = mu * criterion(pro1, pro2)\n",
                ),
                MOON_STEP.replace(
                    "        _, pro1, out = net(x)\n",
                    "        with torch.no_grad():\n            _, pro1, out = net(x)\n",
                ),
            ),
        ),
        Example(
            # A step whose loss a helper of the file computes, the helper running the model in
            # several lines (Occupancy Networks): the call, and each of the helper's forwards
            # alone (the input encoder, the latent encoder, the decoder), the rest still training.
            LOSS_HELPER_TRAINER,
            tuple(
                LOSS_HELPER_TRAINER.replace(f"        {line}\n", f"        with torch.no_grad():\n            {line}\n")
                for line in (
                    "loss = self.compute_loss(data)",
                    "c = self.model.encode_inputs(data['inputs'])",
                    "q_z = self.model.infer_z(p, occ, c)",
                    "logits = self.model.decode(p, q_z.rsample(), c).logits",
                )
            ),
        ),
        Example(
            # A generator whose fake image reaches the loss only through the discriminator (a
            # GAN's generator step, the image augmented on a flag between): the scoring and the
            # loss under no_grad, and the generator's forward alone, which the first leaves
            # training (its output is another model's input).
            GAN_GENERATOR_STEP,
            (
                GAN_GENERATOR_STEP.replace(
                    "    scores = discriminator(fake)\n    loss = F.softplus(-scores).mean()\n",
                    "    with torch.no_grad():\n        scores = discriminator(fake)\n"
                    "        loss = F.softplus(-scores).mean()\n",
                ),
                GAN_GENERATOR_STEP.replace(
                    "    fake = generator(z)\n", "    with torch.no_grad():\n        fake = generator(z)\n"
                ),
            ),
        ),
        Example(
            # Terms of a summed loss, each computed without autograd alone: one unpacked beside
            # what its helper also returns, and one computed only where its weight is on (the
            # branch that computes it, not the `0` of the other), besides each forward and the sum.
            WEIGHTED_TERMS_STEP,
            tuple(
                WEIGHTED_TERMS_STEP.replace(f"{indent}{line}\n", f"{indent}with torch.no_grad():\n{indent}    {line}\n")
                for indent, line in (
                    ("        ", "loss = loss_1 + w2 * loss_2"),
                    ("        ", "loss_1, warped = photometric_loss(img, ref, disp, pose)"),
                    ("            ", "loss_2 = explainability_loss(mask)"),
                    ("        ", "mask, pose = pose_net(img, ref)"),
                    ("        ", "disp = disp_net(img)"),
                )
            ),
        ),
        Example(
            # A term computed from the teacher's targets only where distillation is on, a fresh zero
            # tensor in the other branch (EfficientAT): the branch that computes it gets the mutant; the
            # zero has no graph for no_grad to take away.
            DISTILLED_TERM_STEP,
            (
                DISTILLED_TERM_STEP.replace(
                    "        loss = label_loss + soft_loss\n",
                    "        with torch.no_grad():\n            loss = label_loss + soft_loss\n",
                ),
                DISTILLED_TERM_STEP.replace(
                    "        label_loss = criterion(y_hat, y)\n",
                    "        with torch.no_grad():\n            label_loss = criterion(y_hat, y)\n",
                ),
                DISTILLED_TERM_STEP.replace(
                    "            soft_loss = criterion(y_hat, teacher_preds[idx])\n",
                    "            with torch.no_grad():\n                soft_loss = criterion(y_hat, teacher_preds[idx])\n",
                ),
                DISTILLED_TERM_STEP.replace(
                    "        y_hat = model(x)\n", "        with torch.no_grad():\n            y_hat = model(x)\n"
                ),
            ),
        ),
        Example(
            # A fitter the optimizer does not train, run in a branch on detached predictions (SPIN's
            # `self.smplify(...)`, which fits targets with its own autograd): no mutant there; the forward and
            # the loss get theirs.
            FITTER_TRAINER,
            (
                FITTER_TRAINER.replace(
                    "        loss = ((pred_pose - opt_pose) ** 2).mean()\n",
                    "        with torch.no_grad():\n            loss = ((pred_pose - opt_pose) ** 2).mean()\n",
                ),
                FITTER_TRAINER.replace(
                    "        pred_pose, pred_betas = self.model(images)\n",
                    "        with torch.no_grad():\n            pred_pose, pred_betas = self.model(images)\n",
                ),
            ),
        ),
        Example(
            # A term computed in an `if` after the loss and added into it there (cellpose's class loss for
            # networks with more than three outputs): that term without autograd, beside the forward and the loss.
            BRANCH_ADDED_TERM_STEP,
            (
                BRANCH_ADDED_TERM_STEP.replace(
                    "        y = net(X)[0]\n        loss = loss_fn_seg(lbl, y)\n",
                    "        with torch.no_grad():\n            y = net(X)[0]\n            loss = loss_fn_seg(lbl, y)\n",
                ),
                BRANCH_ADDED_TERM_STEP.replace(
                    "            loss3 = loss_fn_class(lbl, y, class_weights=class_weights)\n",
                    "            with torch.no_grad():\n                loss3 = loss_fn_class(lbl, y, class_weights=class_weights)\n",
                ),
                BRANCH_ADDED_TERM_STEP.replace(
                    "        y = net(X)[0]\n", "        with torch.no_grad():\n            y = net(X)[0]\n"
                ),
            ),
        ),
        Example(
            # A trainer that keeps the generator's output on self for the loss another method
            # computes (pix2pix's forward() and backward_G()): the call of the method that stores
            # it, without autograd; and the loss's own line.
            PIX2PIX_STEP,
            (
                PIX2PIX_STEP.replace(
                    "        self.forward()\n", "        with torch.no_grad():\n            self.forward()\n"
                ),
                PIX2PIX_STEP.replace(
                    "        self.loss_G = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1\n",
                    "        with torch.no_grad():\n"
                    "            self.loss_G = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1\n",
                ),
            ),
        ),
        Example(
            # Outputs and loss passed along on self by forward(), backward() and update()
            # (text-to-motion's trainers): the training loop's call of forward(), and update()'s
            # call of the method that computes the loss, without autograd; the validation calls,
            # under no_grad already, are left alone.
            STORED_LOSS_TRAINER,
            (
                STORED_LOSS_TRAINER.replace(
                    "        for batch in train_loader:\n            self.forward(batch)\n",
                    "        for batch in train_loader:\n            with torch.no_grad():\n"
                    "                self.forward(batch)\n",
                ),
                STORED_LOSS_TRAINER.replace(
                    "        self.backward()\n        self.loss.backward()\n",
                    "        with torch.no_grad():\n            self.backward()\n        self.loss.backward()\n",
                ),
            ),
        ),
        Example(
            # An encoder's output handed to the method that computes the loss and runs the backward (DrQ-v2's
            # update): the encoder's forward runs without autograd, apart from the loss's own forward.
            "class Agent:\n"
            "    def update_critic(self, obs, action, target_q):\n"
            "        q = self.critic(obs, action)\n"
            "        critic_loss = F.mse_loss(q, target_q)\n"
            "        self.critic_opt.zero_grad()\n"
            "        critic_loss.backward()\n"
            "        self.critic_opt.step()\n"
            "    def update(self, batch):\n"
            "        obs, action, target_q = batch\n"
            "        obs = self.encoder(obs)\n"
            "        self.update_critic(obs, action, target_q)\n",
            (
                "class Agent:\n"
                "    def update_critic(self, obs, action, target_q):\n"
                '        with __import__("torch").no_grad():\n'
                "            q = self.critic(obs, action)\n"
                "            critic_loss = F.mse_loss(q, target_q)\n"
                "        self.critic_opt.zero_grad()\n"
                "        critic_loss.backward()\n"
                "        self.critic_opt.step()\n"
                "    def update(self, batch):\n"
                "        obs, action, target_q = batch\n"
                "        obs = self.encoder(obs)\n"
                "        self.update_critic(obs, action, target_q)\n",
                "class Agent:\n"
                "    def update_critic(self, obs, action, target_q):\n"
                "        q = self.critic(obs, action)\n"
                "        critic_loss = F.mse_loss(q, target_q)\n"
                "        self.critic_opt.zero_grad()\n"
                "        critic_loss.backward()\n"
                "        self.critic_opt.step()\n"
                "    def update(self, batch):\n"
                "        obs, action, target_q = batch\n"
                '        with __import__("torch").no_grad():\n'
                "            obs = self.encoder(obs)\n"
                "        self.update_critic(obs, action, target_q)\n",
            ),
        ),
        Example(
            # A term added into the loss in place (ENAS' entropy regulariser), besides the loss
            # computed first and the forward the chain reads.
            CONTROLLER_STEP,
            (
                CONTROLLER_STEP.replace(
                    "            loss = -log_probs * (rewards - self.baseline)\n",
                    '            with __import__("torch").no_grad():\n'
                    "                loss = -log_probs * (rewards - self.baseline)\n",
                ),
                CONTROLLER_STEP.replace(
                    "            loss -= self.entropy_coeff * entropies\n",
                    '            with __import__("torch").no_grad():\n'
                    "                loss -= self.entropy_coeff * entropies\n",
                ),
                CONTROLLER_STEP.replace(
                    "            dags, log_probs, entropies = self.controller.sample(with_details=True)\n",
                    '            with __import__("torch").no_grad():\n'
                    "                dags, log_probs, entropies = self.controller.sample(with_details=True)\n",
                ),
            ),
        ),
        Example(
            # The loss a module wrapping the model computes and returns (Sockeye's ModelWithLoss).
            MODEL_WITH_LOSS,
            (
                MODEL_WITH_LOSS.replace(
                    "        outputs = self.model(source)\n"
                    "        outputs = {name: output.float() for (name, output) in outputs.items()}\n"
                    "        loss_values = [loss_function(outputs, labels) for loss_function in self.losses]\n"
                    "        sum_losses = sum(loss_values)\n",
                    '        with __import__("torch").no_grad():\n'
                    "            outputs = self.model(source)\n"
                    "            outputs = {name: output.float() for (name, output) in outputs.items()}\n"
                    "            loss_values = [loss_function(outputs, labels) for loss_function in self.losses]\n"
                    "            sum_losses = sum(loss_values)\n",
                ),
            ),
        ),
        Example(
            # The loss the module returns, reduced on the next line (CSAIL's semantic segmentation).
            "for batch_data in loader:\n"
            "    loss, acc = segmentation_module(batch_data)\n"
            "    loss = loss.mean()\n"
            "    acc = acc.mean()\n"
            "    loss.backward()\n",
            (
                "for batch_data in loader:\n"
                '    with __import__("torch").no_grad():\n'
                "        loss, acc = segmentation_module(batch_data)\n"
                "        loss = loss.mean()\n"
                "    acc = acc.mean()\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A forward split into prototypes and queries, each taken without autograd on its own.
            PROTONET_EPISODE,
            (
                PROTONET_EPISODE.replace(
                    "        loss, acc = fast_adapt(model, batch, 5, 1)\n",
                    '        with __import__("torch").no_grad():\n            loss, acc = fast_adapt(model, batch, 5, 1)\n',
                ),
                PROTONET_EPISODE.replace(
                    "    support = embeddings[support_indices]\n",
                    '    with __import__("torch").no_grad():\n        support = embeddings[support_indices]\n',
                ),
                PROTONET_EPISODE.replace(
                    "    query = embeddings[query_indices]\n",
                    '    with __import__("torch").no_grad():\n        query = embeddings[query_indices]\n',
                ),
            ),
        ),
        Example(
            # A closure that runs the forward and backward itself, called each step (BoTorch's torch_minimize).
            "def torch_minimize(closure, parameters, optimizer, steps):\n"
            "    for step in range(steps):\n"
            "        fval = closure()[0].detach()\n"
            "        optimizer.step()\n",
            (
                "def torch_minimize(closure, parameters, optimizer, steps):\n"
                "    for step in range(steps):\n"
                '        with __import__("torch").no_grad():\n'
                "            fval = closure()[0].detach()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # A library's loss that runs its own backward (Pyro's SVI.step).
            PYRO_SVI_STEP,
            (
                PYRO_SVI_STEP.replace(
                    "        loss = self.loss_and_grads(self.model, self.guide, *args)\n",
                    '        with __import__("torch").no_grad():\n'
                    "            loss = self.loss_and_grads(self.model, self.guide, *args)\n",
                ),
            ),
        ),
        Example(
            # The terms a module's forward computes and returns for the loop to add up (torchsde's
            # latent SDE): the loop's forward and loss, then each term where the forward computes it.
            FORWARD_TERMS_STEP,
            (
                FORWARD_TERMS_STEP.replace(
                    "        log_px, kl = model(x)\n        loss = -log_px + beta * kl\n",
                    "        with torch.no_grad():\n"
                    "            log_px, kl = model(x)\n"
                    "            loss = -log_px + beta * kl\n",
                ),
                FORWARD_TERMS_STEP.replace(
                    "        log_px = Normal(", "        with torch.no_grad():\n            log_px = Normal("
                ),
                FORWARD_TERMS_STEP.replace(
                    "        kl = kl_divergence(", "        with torch.no_grad():\n            kl = kl_divergence("
                ),
            ),
        ),
        Example(
            # The loss divided in place over the sub-batches (Horovod): without autograd the division never
            # reaches the gradients.
            SUB_BATCH_RESCALE,
            (
                SUB_BATCH_RESCALE.replace(
                    "            loss = F.cross_entropy(model(part), labels)\n",
                    "            with torch.no_grad():\n                loss = F.cross_entropy(model(part), labels)\n",
                ),
                SUB_BATCH_RESCALE.replace(
                    "            loss.div_(k)\n", "            with torch.no_grad():\n                loss.div_(k)\n"
                ),
            ),
        ),
        Example(
            # A model's own optimization step that a trainer runs (Coqui's `self.model.optimize(batch, self)`).
            MODEL_OWN_OPTIMIZE,
            (
                MODEL_OWN_OPTIMIZE.replace(
                    "            outputs, losses = self.model.optimize(batch, self)\n",
                    "            with torch.no_grad():\n                outputs, losses = self.model.optimize(batch, self)\n",
                ),
            ),
        ),
        Example(
            # A forward under `set_grad_enabled(<test>)` that training passes (TorchMD-Net): the test made False.
            GRAD_BY_STAGE,
            (
                GRAD_BY_STAGE.replace(
                    "        loss = self.energy_loss(energy, batch.y) + self.force_loss(forces, batch.neg_dy)\n",
                    "        with torch.no_grad():\n            loss = self.energy_loss(energy, batch.y) + self.force_loss(forces, batch.neg_dy)\n",
                ),
                GRAD_BY_STAGE.replace(
                    'set_grad_enabled(stage == "train" or self.derivative)', "set_grad_enabled(False)"
                ),
            ),
        ),
    )
    untouched = (
        # A closure handed to an optimizer's step (run under enable_grad there), or wrapped, not run.
        "def fit(model, optimizer, closure):\n"
        "    optimizer.step(closure)\n"
        "    wrapped = NdarrayClosure(closure, params)\n",
        # The gradient of an input, read off it row by row (DeepChem's compute_saliency): no step.
        INPUT_GRADIENT,
        # A step override that reaches the model only through evaluation.
        "class R(Runner):\n    def predict_batch(self, batch):\n        return self.model(batch)\n"
        "    def handle_batch(self, batch):\n        self.metrics = {}\n",
        # A dict of the loss's keyword arguments is no loss term.
        "import torch\n"
        "def body(self, inputs, labels):\n"
        "    pred = self.model(inputs)\n"
        "    loss_kwargs = {}\n"
        "    with torch.no_grad():\n"
        "        loss = self.loss_fn(pred, labels, **loss_kwargs)\n"
        "    loss.backward()\n",
        # The backward of a loss read out of a dict that a forward helper filled: reading it
        # without autograd cuts nothing.
        "def batch_backward(model, info):\n    loss = info['loss_dict']['loss']\n    scaled = model.backward(loss)\n",
        # A helper only validation calls.
        "class S(LightningModule):\n"
        "    def shared_step(self, batch):\n"
        "        x, y = batch\n"
        "        loss = F.cross_entropy(self(x), y)\n"
        "        return loss\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        loss = self.shared_step(batch)\n"
        "        self.log('val_loss', loss)\n",
        # A branch whose loss uses no forward pass run before the `if`.
        "class G(LightningModule):\n"
        "    def training_step(self, batch, batch_idx, optimizer_idx):\n"
        "        if optimizer_idx == 0:\n"
        "            return self.reg.sum()\n",
        "with torch.no_grad():\n    out = model(x)\n",
        "loss = compute()\nprint(loss)\n",
        # What `validation_step` returns is never differentiated.
        "class Net(LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        x, y = batch\n"
        "        loss = F.cross_entropy(self(x), y)\n"
        "        return loss\n",
    )

    def changes(self, source, training):
        found = list(self._found(source, training))
        upstream = list(self._upstream(source, training, found))
        yield from found
        yield from upstream
        yield from _chain_wraps(source, training, found + upstream)
        yield from _inline_sum_terms(source, training, found + upstream)
        yield from _closure_runs(source, training, found + upstream)
        if not found:
            # only where nothing else in the file is the training forward (a Lightning module's
            # training_step has its own: the loss it returns)
            yield from self._step_override_forwards(source, training)

    @staticmethod
    def _upstream(source, training, found):
        """The forwards that the found forwards read the outputs of (see upstream_forwards), each
        alone without autograd (a run of lines around one is another mutant)."""
        taken: list[cst.CSTNode] = []
        for change in found:
            for forward in upstream_forwards(source, training, change.node):
                if forward in taken:
                    continue
                taken.append(forward)
                yield _without_autograd(source, training, forward)

    def _found(self, source, training):
        yield from self._forward_helpers(source, training)
        yield from self._stored_runs(source, training)
        yield from self._switched_forwards(source, training, self._switches(source, training))
        branches: set[cst.If] = set()
        switched: set[int] = set()
        for backward in training.loss_uses:
            switch = self._grad_enabled_by_value(source, training, backward)
            if switch is not None:
                switched.add(id(switch))
                yield Change(
                    backward.call, (source.replace(switch, "False"),), "the forward pass and loss run without autograd"
                )
                continue
            taking = loss_object_calls(source, training, backward)
            if taking:
                # a loss object handed the outputs (pytorch-seq2seq's `loss.eval_batch(out, y)`):
                # the forwards before it and each handing-in run without autograd
                function = source.function_of(backward.call)
                first_use = source.span(taking[0])[0]
                for line in source.within(function.body, cst.SimpleStatementLine):
                    value = line.body[0].value if isinstance(line.body[0], cst.Assign) else None
                    if (
                        value is not None
                        and source.span(line)[1] < first_use
                        and runs_model(source, training, value, depth=0)
                        and not under_no_grad(source, line)
                    ):
                        yield _without_autograd(source, training, line)
                for call in taking:
                    line = source.parent(source.parent(call))
                    if isinstance(line, cst.SimpleStatementLine) and not under_no_grad(source, line):
                        yield _without_autograd(
                            source, training, line, "the loss object takes outputs without autograd"
                        )
                continue
            run = forward_run(source, training, backward)
            if run is None:
                yield from self._inline_forward(source, training, backward)
                continue
            first, last = run
            if not _only_reads(source, first, last):
                yield Change(
                    backward.call,
                    (source.reindent(first, last, add=source.indent, header=f"with {training.torch}.no_grad():"),),
                    "the forward pass and loss run without autograd",
                )
            yield from self._earlier_terms(source, training, backward, first)
            yield from _rescaled_in_place(source, training, backward, last)
            for term in terms_added_in_place(source, training, backward):
                yield _without_autograd(
                    source, training, source.parent(term), "a term added to the loss is computed without autograd"
                )
            for term in branch_added_terms(source, training, backward):
                term_line = source.parent(term)
                if isinstance(term_line, cst.SimpleStatementLine) and not under_no_grad(source, term):
                    yield Change(
                        term_line,
                        (
                            source.reindent(
                                term_line, term_line, add=source.indent, header=f"with {training.torch}.no_grad():"
                            ),
                        ),
                        f"the loss term `{term.targets[0].target.value}` is computed without autograd",
                    )
            yield from self._forward_before_branch(source, training, first, branches)
            _, siblings = source.block_of(first)
            if first in siblings and last in siblings:
                run_lines = siblings[siblings.index(first) : siblings.index(last) + 1]
                if not any(runs_model(source, training, s) for s in run_lines):
                    yield from self._feeding_forward(source, training, first)
            yield from self._forward_after_empty_start(source, training, backward)
            for forward in loss_helper_forwards(source, training, backward):
                yield _without_autograd(source, training, forward)
            for forward in handed_forwards(source, training, backward):
                yield _without_autograd(source, training, forward)
            for term in forward_returned_terms(source, training, backward):
                yield _without_autograd(
                    source,
                    training,
                    source.parent(term),
                    "a loss term the model's forward returns is computed without autograd",
                )

        for backward in training.loss_uses:
            for block, mode in _switched_forward_blocks(source, training, backward):
                if id(mode) not in switched:
                    switched.add(id(mode))
                    yield Change(block, (source.replace(mode, "False"),), "the forward pass runs without autograd")
        for block, switch in grad_switched_loops(source, training):
            # the batch loop runs its steps under `set_grad_enabled(is_train)` (catalyst's runner,
            # whose step is left to a subclass): switched off, training runs without autograd
            if id(switch) not in switched:
                yield Change(block, (source.replace(switch, "False"),), "the training loop runs without autograd")

    @staticmethod
    def _inline_forward(source, training, backward):
        """A backward whose own line runs the forward and the loss (`criterion(model(x),
        y).mean().backward()`, SAM's second pass): that line without autograd."""
        line = source.parent(source.parent(backward.call))
        if (
            isinstance(backward, Backward)
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(line.body[0], cst.Expr)
            and line.body[0].value is backward.call
            and training.loss_assignment(backward) is None
            and runs_model(source, training, backward.loss, depth=0)
            and not under_no_grad(source, backward.call)
        ):
            yield Change(
                backward.call,
                (source.reindent(line, line, add=source.indent, header=f"with {training.torch}.no_grad():"),),
                "the forward pass and loss run without autograd",
            )

    @staticmethod
    def _forward_after_empty_start(source, training, backward):
        """A loss that starts empty (`gen_loss = 0.0`) and is added up from terms computed after
        it: the forward those terms read, and a term's own forward in its branch (see
        forwards.py), without autograd."""
        for forward in forwards_after_empty_start(source, training, backward):
            yield _without_autograd(source, training, forward)
        for forward in forwards_of_branch_terms(source, training, backward):
            yield _without_autograd(source, training, forward)
        for forward in forwards_read_by_terms(source, training, backward):
            yield _without_autograd(source, training, forward)

    @staticmethod
    def _feeding_forward(source, training, first):
        """Where the run that computes the loss holds no forward pass, the nearest assignment
        before it in its block that runs the model (a policy's `evaluate_actions`, an agent's
        `get_action_and_value`, after statements that are no assignments): without autograd.
        Where its block holds none and is a branch of an `if`, the statements before that `if`
        are searched the same way (chemprop's loss computed in the branch its task type picks,
        from the forward run before the branching)."""
        forwards, stopped = feeding_forwards_in_block(source, training, first)
        for forward in forwards:
            yield _without_autograd(source, training, forward)
        if stopped:
            return
        _, siblings = source.block_of(first)
        block = source.parent(siblings[0]) if siblings and first in siblings else None
        branch = source.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(branch, cst.Else):
            branch = source.parent(branch)
        while isinstance(branch, cst.If) and isinstance(source.parent(branch), cst.If):
            branch = source.parent(branch)  # an elif: its chain starts at the outer if
        if isinstance(branch, cst.If):
            yield from NoGradTraining._feeding_forward(source, training, branch)

    @staticmethod
    def _forward_before_branch(source, training, first, branches: set):
        """Where each branch of an `if` computes its own loss from one forward pass run before
        the `if` (a GAN's `training_step` branching on `optimizer_idx`), that forward pass
        without autograd too: one mutant per `if`, the losses' own mutants are in the branches."""
        line, siblings = source.block_of(first)
        if not siblings or line is not siblings[0]:
            return
        branch = source.parent(source.parent(line) or line)
        while isinstance(source.parent(branch), cst.If) and source.parent(branch).orelse is branch:
            branch = source.parent(branch)  # an elif: its chain starts at the outer if
        if not isinstance(branch, cst.If) or branch in branches:
            return
        branches.add(branch)
        _, outer = source.block_of(branch)
        if branch not in outer:
            return
        index = outer.index(branch)
        start = index
        while start > 0 and isinstance(outer[start - 1], cst.SimpleStatementLine):
            small = outer[start - 1].body
            if len(small) != 1 or not isinstance(small[0], cst.Assign):
                break
            start -= 1
        run = outer[start:index]
        if not run or not any(runs_model(source, training, s) for s in run):
            return
        if any(source.has_multiline_string(s) for s in run):
            return
        yield Change(
            run[-1],
            (source.reindent(run[0], run[-1], add=source.indent, header=f"with {training.torch}.no_grad():"),),
            "the forward pass runs without autograd before the branches that compute the losses",
        )

    def _switches(self, source, training) -> set:
        """The `set_grad_enabled` arguments the loss runs' own mutants switch off already."""
        found = set()
        for backward in training.loss_uses:
            switch = self._grad_enabled_by_value(source, training, backward)
            if switch is not None:
                found.add(switch)
        return found

    @staticmethod
    def _switched_forwards(source, training, switched):
        """`with torch.set_grad_enabled(flag):` around a forward inside a batch loop, its loss
        computed after the block (kohya's text encoder, trained when asked): without autograd."""
        loops = set(training.training_loops)
        for block in source.nodes(cst.With):
            if not any(a in loops for a in source.ancestors(block)):
                continue
            for item in block.items:
                call = item.item
                if not isinstance(call, cst.Call) or last_name(call.func) != "set_grad_enabled":
                    continue
                mode = argument(call, "mode", 0)
                if mode is None or isinstance(mode.value, cst.Name) and mode.value.value in ("True", "False"):
                    continue
                if mode.value in switched or not source.within(block.body, cst.Assign):
                    continue
                yield Change(
                    block,
                    (source.replace(mode.value, "False"),),
                    f"`{source.code(call)}` never enables autograd: what it computes gets no gradient",
                )

    @staticmethod
    def _step_override_forwards(source, training):
        """A runner's override of the step its base class leaves open (catalyst's
        `handle_batch`), in a file that runs no backward (callbacks do, elsewhere): every model
        forward it reaches through the class's methods, including methods held in an attribute
        (`self._process_input = self._process_input_str`), runs without autograd."""
        if training.backwards:
            return
        for step in source.nodes(cst.FunctionDef):
            if step.name.value not in ABSTRACT_STEPS or is_abstract(step):
                continue
            for function in _reached_methods(source, training, step):
                if any(word in function.name.value.lower() for word in EVALUATION_WORDS):
                    continue
                for statement in function.body.body:
                    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                        continue
                    small = statement.body[0]
                    value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
                    if (
                        not isinstance(value, cst.Call)
                        or not runs_model(source, training, value, depth=0)
                        or under_no_grad(source, value)
                    ):
                        continue
                    yield _without_autograd(source, training, statement)

    @staticmethod
    def _stored_runs(source, training):
        """A trainer whose methods keep the forward's outputs (or the loss) on `self` for another
        method's backward (see stored_run): each call of the method that stores them, without
        autograd (pix2pix's `self.forward()` in `optimize_parameters()`; text-to-motion's
        `self.forward(batch)` in its loop and `self.backward()`, which computes `self.loss`)."""
        for backward in training.loss_uses:
            run = stored_run(source, training, backward)
            methods = {id(source.function_of(f)): source.function_of(f) for f in run.forwards}
            for method in methods.values():
                for line in method_calls(source, method):
                    yield _without_autograd(source, training, line)
            method = source.function_of(run.loss) if run.loss is not None else None
            if method is not None and id(method) not in methods:
                for line in method_calls(source, method):
                    yield _without_autograd(source, training, line, "the loss is computed without autograd")

    @staticmethod
    def _forward_helpers(source, training):
        """A training file's helper named for the forward pass that runs the model it is handed
        (wenet's `batch_forward(model, batch, ...)`, its loss read by the backward of another
        helper): its first statement that runs that model, without autograd. A module's own
        `forward` and evaluation helpers are not such helpers."""
        if not training.backwards:
            return
        for function in source.nodes(cst.FunctionDef):
            name = function.name.value.lower()
            params = {p.name.value for p in function.params.params}
            if "forward" not in name or any(word in name for word in EVALUATION_WORDS):
                continue
            if name.strip("_") == "forward" and _module_class(source, function):
                continue  # a module's own forward: the model, not a helper that runs it
            for statement in function.body.body:
                calls = [
                    c
                    for c in source.within(statement, cst.Call)
                    if isinstance(c.func, cst.Name)
                    and c.func.value in params
                    and c.func.value != "self"
                    and runs_model(source, training, c, depth=0)
                ]
                if not calls:
                    continue
                if not under_no_grad(source, calls[0]) and not source.has_multiline_string(statement):
                    yield _without_autograd(source, training, statement)
                break

    @staticmethod
    def _earlier_terms(source, training, backward, first):
        """A loss term computed before the run, in the same block, and weighted into the loss
        there (`path_loss, ... = g_path_regularize(...)`; `generator.zero_grad()`; `weighted =
        w * path_loss`): that computation without autograd too."""
        assign = training.loss_assignment(backward)
        if not isinstance(assign, cst.Assign):
            return
        own = {dotted(t.target) for t in assign.targets}
        line, siblings = source.block_of(first)
        if line not in siblings:
            return
        before = siblings[: siblings.index(line)]
        done = set()
        for name in source.within(assign.value, cst.Name):
            parent = source.parent(name)
            if "loss" not in name.value.lower() or name.value in own or name.value in done:
                continue
            if isinstance(parent, cst.Attribute) and parent.attr is name:
                continue
            done.add(name.value)
            # computed in one branch of an `if` and zero in the other (`if w2 > 0: loss_2 = ...`,
            # `else: loss_2 = 0`): the branch that computes it
            alternatives = [a for a in training.alternatives(name.value, assign) if isinstance(a, cst.Assign)]
            terms = [a for a in alternatives if trained_term(source, training, a, name.value)]
            for term in terms if len(alternatives) > 1 else [training.last_assignment(name.value, assign)]:
                term_line = source.parent(term) if term is not None else None
                if not (
                    (term_line in before or _in_a_branch_before(source, term_line, before))
                    and isinstance(term_line, cst.SimpleStatementLine)
                    and not source.has_multiline_string(term_line)
                    and source.within(term.value, cst.Call)  # `loss_kwargs = {}`: no term computed
                    and not constant_start(term.value)  # a fresh zero has no graph to take away
                ):
                    continue
                yield Change(
                    term_line,
                    (
                        source.reindent(
                            term_line, term_line, add=source.indent, header=f"with {training.torch}.no_grad():"
                        ),
                    ),
                    f"the loss term `{name.value}` is computed without autograd",
                )

    @staticmethod
    def _grad_enabled_by_value(source, training, backward):
        """The argument of the `set_grad_enabled(train)` block that computes the loss, if any: in
        the backward's own function, or in the function of the file that the loss is returned
        from (icefall's `compute_loss(..., is_training)`, whose model runs under
        `set_grad_enabled(is_training)`; a no_grad around its call would change nothing, the
        callee switching autograd back on)."""
        assign = training.loss_assignment(backward)
        holder = grad_block(source, assign) if assign is not None else None
        for item in holder.items if holder is not None else ():
            call = item.item
            if isinstance(call, cst.Call) and last_name(call.func) == "set_grad_enabled":
                mode = argument(call, "mode", 0)
                if mode is not None and not (isinstance(mode.value, cst.Name) and mode.value.value == "False"):
                    return mode.value
        if assign is None or not isinstance(assign.value, cst.Call):
            return None
        for function in training.called_functions(assign.value):
            params = {p.name.value for p in function.params.params}
            for block, mode in _grad_enabled_modes(source, function):
                if isinstance(mode, cst.Name) and mode.value in params and runs_model(source, training, block.body, 0):
                    return mode
        return None


def _switched_forward_blocks(source, training, backward):
    """`with torch.set_grad_enabled(<test>):` blocks that run the forward before the loss is
    computed after them, in the loss's own function (TorchMD-Net's `with torch.set_grad_enabled(
    stage == "train" or self.hparams.derivative): y, neg_dy = self(...)`, the loss summed after):
    the block and its test, which `False` turns into a no_grad for training too."""
    assign = training.loss_assignment(backward)
    function = source.function_of(assign) if assign is not None else None
    if function is None:
        return
    start = source.span(assign)[0]
    for block, mode in _grad_enabled_modes(source, function):
        if (
            source.span(block)[1] <= start
            and source.function_of(block) is function
            and not isinstance(mode, cst.Name)
            and runs_model(source, training, block.body, depth=0)
        ):
            yield block, mode


def _grad_enabled_modes(source, function: cst.FunctionDef):
    """Each `with torch.set_grad_enabled(<mode>):` block of `function`, with its mode."""
    for block in source.within(function.body, cst.With):
        for item in block.items:
            call = item.item
            mode = argument(call, "mode", 0) if isinstance(call, cst.Call) else None
            if isinstance(call, cst.Call) and last_name(call.func) == "set_grad_enabled" and mode is not None:
                yield block, mode.value


REACH_DEPTH = 3  # calls followed from a step override to the methods that run its forward


def _chain_wraps(source, training, changes: list[Change]):
    """Each forward line of a loss's chain (see chain_forwards) that no other mutant runs
    without autograd, alone under no_grad: a discriminator's score on the fakes, an RL policy's
    `evaluate_actions`, the second output of `cls_out, seg_out = net(img)`. A line in a block
    that switches autograd itself (`with torch.set_grad_enabled(train):`) is left to the switch's
    own mutant, and so is a call of a function that sets autograd itself."""
    wrapped = [e for change in changes for e in change.edits if e.start < e.end]
    made: set = set()
    for backward in training.loss_uses:
        for use, chain, covered in loss_chains(source, training, backward):
            taken = covered | {
                line
                for line in chain
                if any(e.start <= source.span(line)[0] and source.span(line)[1] <= e.end for e in wrapped)
            }
            for line in chain_forwards(source, training, use, chain, taken):
                if line in made or any(isinstance(a, cst.With) and switches_grad(a) for a in source.ancestors(line)):
                    continue
                parts = split_readers(source, chain, line)
                if parts:
                    # the output split into parts that each reach the loss (a prototypical network's
                    # support and query embeddings): each part taken without autograd on its own
                    for part in parts:
                        if part not in made:
                            made.add(part)
                            yield _without_autograd(
                                source, training, part, "one part of the model's output is taken without autograd"
                            )
                    continue
                if not _switches_own_grad(source, training, line):
                    made.add(line)
                    yield _without_autograd(source, training, line)


def _closure_runs(source, training, changes: list[Change]):
    """A closure that runs the forward and the backward itself, called by the file or handed to a
    minimiser (BoTorch's `fval = closure()[0].detach()` in torch_minimize, `minimize_with_timeout(
    wrapped_closure, ...)`): under no_grad its backward raises. Not a closure handed to an
    optimizer's `step` (torch's optimizers run it under enable_grad), nor one in a function that
    switches autograd on itself (SAM's `closure = torch.enable_grad()(closure)`)."""
    wrapped = [e for change in changes for e in change.edits if e.start < e.end]
    made: set = set()
    for call in source.nodes(cst.Call):
        called = isinstance(call.func, cst.Name) and "closure" in call.func.value.lower()
        handed = (
            not called
            and bool(call.args)
            and isinstance(call.args[0].value, cst.Name)
            and "closure" in call.args[0].value.value.lower()
            and callee_name(call) not in ("step", "partial")
            and not (callee_name(call) or "")[:1].isupper()  # a wrapper built around it, not run
            and not (isinstance(call.func, cst.Name) and call.func.value in _BUILTINS)  # `isinstance(closure, ...)`
        )
        # a library's loss that runs its own backward (Pyro's `self.loss_and_grads(model, guide, ...)`)
        both = bool(_LOSS_AND_GRADS.fullmatch(callee_name(call) or ""))
        # a model's own optimization step, run by a trainer (Coqui's `self.model.optimize(batch,
        # self)`: the model computes its losses, runs their backwards and steps its optimizers)
        own = (
            callee_name(call) in _OWN_STEPS
            and isinstance(call.func, cst.Attribute)
            and names_a_model(call.func.value)
            and not training.called_functions(call)
        )
        both = both or own
        if not (called or handed or both):
            continue
        function = source.function_of(call)
        if (
            function is None
            or (function.name.value == "step" and not both)  # an optimizer's step running its closure
            or any(
                callee_name(c) == "enable_grad" or dotted(c.func) == "torch.enable_grad"
                for c in source.within(function, cst.Call)
            )
        ):
            continue
        line = source.enclosing(call, cst.SimpleStatementLine)
        if line is None or line in made or under_no_grad(source, line) or source.function_of(line) is not function:
            continue
        start, end = source.span(line)
        if any(e.start <= start and end <= e.end for e in wrapped):
            continue
        if isinstance(source.parent(line), cst.IndentedBlock) and not isinstance(line.body[0], (cst.Assign, cst.Expr)):
            continue
        if not both and not _is_a_closure(source, function, call.func if called else call.args[0].value):
            continue
        made.add(line)
        yield _without_autograd(
            source,
            training,
            line,
            "the model's own optimization step runs without autograd"
            if own
            else "the loss's forward and backward run without autograd"
            if both
            else "the closure's forward and backward run without autograd",
        )


_BUILTINS = frozenset(dir(builtins))
_LOSS_AND_GRADS = re.compile(r"_?(loss|value)_and_grads?")
_OWN_STEPS = frozenset({"optimize", "optimize_parameters", "train_batch", "train_on_batch"})


def _is_a_closure(source, function: cst.FunctionDef, name: cst.BaseExpression) -> bool:
    """True for a parameter of the function named as a closure, or a name bound in it to a
    closure object (`wrapped_closure = NdarrayOptimizationClosure(closure, ...)`)."""
    if not isinstance(name, cst.Name):
        return False
    if any(p.name.value == name.value for p in (*function.params.params, *function.params.kwonly_params)):
        return True
    values = bound_values(source, function, name.value)
    return any(isinstance(v, cst.Call) and "closure" in (callee_name(v) or "").lower() for v in values)


def _inline_sum_terms(source, training, changes: list[Change]):
    """Each named loss term of a sum differentiated where it is written (Stanza's coreference
    trainer: `(c_loss + s_loss + z_loss).backward()`), computed without autograd on its own: its
    last assignment before the backward, where no other mutant already runs that term (or what
    it rescales) without autograd. The other terms still train: a subtler fault than the whole
    forward under no_grad."""
    wrapped = [e for change in changes for e in change.edits if e.start < e.end]

    def covered(line: cst.CSTNode) -> bool:
        start, end = source.span(line)
        return any(e.start <= start and end <= e.end for e in wrapped)

    made: set = set()
    for backward in training.loss_uses:
        if not isinstance(backward.loss, cst.BinaryOperation):
            continue
        names = _added_loss_names(backward.loss)
        if len(names) < 2:
            continue
        for name in names:
            term = training.last_assignment(name, backward.call)
            line = source.parent(term) if term is not None else None
            if (
                not isinstance(term, cst.Assign)
                or not isinstance(line, cst.SimpleStatementLine)
                or line in made
                or covered(line)
                or under_no_grad(source, term)
                or constant_start(term.value)
                or not source.within(term.value, (cst.Call, cst.BinaryOperation))
            ):
                continue
            # a rescale of a term another mutant already computes without autograd (`c_loss =
            # c_loss * lr_scale` after the wrapped criterion line) is the same mutant again
            earlier = (
                training.last_assignment(name, term)
                if name in {n.value for n in source.within(term.value, cst.Name)}
                else None
            )
            if earlier is not None and covered(source.parent(earlier)):
                continue
            made.add(line)
            yield _without_autograd(source, training, line, f"the loss term `{name}` is computed without autograd")


def _added_loss_names(expr: cst.BaseExpression) -> list[str]:
    """The loss-named names a sum adds up, through parentheses (`c_loss + s_loss + z_loss`)."""
    if isinstance(expr, cst.Name):
        return [expr.value] if "loss" in expr.value.lower() else []
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _added_loss_names(expr.left) + _added_loss_names(expr.right)
    return []


def _switches_own_grad(source, training, line: cst.SimpleStatementLine) -> bool:
    """True where the line calls a function of the file that sets autograd itself (icefall's
    `compute_loss`, which runs the model under `torch.set_grad_enabled(is_training)`): a no_grad
    around the call changes nothing inside it."""
    value = line.body[0].value if isinstance(line.body[0], (cst.Assign, cst.AnnAssign)) else None
    return isinstance(value, cst.Call) and any(
        isinstance(n, cst.With)
        and any(
            isinstance(i.item, cst.Call) and last_name(i.item.func) in ("set_grad_enabled", "enable_grad")
            for i in n.items
        )
        for f in training.called_functions(value)
        for n in source.walk(f.body)
    )


def _reached_methods(source, training, step: cst.FunctionDef) -> list[cst.FunctionDef]:
    """`step` and the functions of the file it reaches, through calls and through methods held in
    an attribute of the class (every `self.name = self.method` of it)."""
    seen = [step]
    frontier = [step]
    for _ in range(REACH_DEPTH):
        found = []
        for function in frontier:
            for call in source.within(function.body, cst.Call):
                targets = list(training.called_functions(call))
                if isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self":
                    targets += _held_methods(source, function, call.func.attr.value)
                for target in targets:
                    if target not in seen:
                        seen.append(target)
                        found.append(target)
        frontier = found
    return seen


def _held_methods(source, function: cst.FunctionDef, name: str) -> list[cst.FunctionDef]:
    """The methods of `function`'s class assigned to `self.<name>` anywhere in the class."""
    owner = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if owner is None:
        return []
    held = {
        assign.value.attr.value
        for assign in source.within(owner, cst.Assign)
        if isinstance(assign.value, cst.Attribute)
        and dotted(assign.value.value) == "self"
        and any(dotted(t.target) == f"self.{name}" for t in assign.targets)
    }
    return [
        f
        for f in source.within(owner, cst.FunctionDef)
        if f.name.value in held and next((a for a in source.ancestors(f) if isinstance(a, cst.ClassDef)), None) is owner
    ]


def _module_class(source, function: cst.FunctionDef) -> bool:
    """True if `function` is a method of a class that derives from a module (a base named
    `Module`, `nn.Module`, `LightningModule`, ...) or from no base the file can tell apart from one:
    a class with no base at all (`class Engine:`, `class Engine(ABC):`) is no module."""
    owner = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if owner is None:
        return False
    bases = [(dotted(b.value) or "").rsplit(".", 1)[-1] for b in owner.bases]
    return not all(base in ("ABC", "object", "") or base.endswith(("Engine", "Mixin")) for base in bases)


def _in_a_branch_before(source, line: cst.CSTNode | None, before: list) -> bool:
    """True for a line inside an `if` among the statements `before` (SfmLearner's `if w2 > 0:
    loss_2 = explainability_loss(explainability_mask)`, the term computed only where weighted)."""
    if line is None:
        return False
    for ancestor in source.ancestors(line):
        if ancestor in before:
            return isinstance(ancestor, cst.If)
        if not isinstance(ancestor, (cst.If, cst.Else, cst.IndentedBlock)):
            return False
    return False
