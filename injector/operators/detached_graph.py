from __future__ import annotations

import libcst as cst
import libcst.matchers as cst_matchers

from injector.operators.base import Change, Example, Operator
from injector.operators.forwards import (
    added_terms,
    assigned_element,
    augmented_reads,
    branch_added_terms,
    branch_helper_forwards,
    chain_forwards,
    constant_start,
    distribution,
    drawn,
    forward_returned_terms,
    forwards_after_empty_start,
    handed_forwards,
    loss_chains,
    loss_helper_forwards,
    loss_object_calls,
    read_forwards,
    split_readers,
    stored_run,
    terms_added_in_place,
    trained_term,
    upstream_forwards,
)
from injector.operators.snippets import (
    APEX_CONTEXT_STEP,
    AUDIOTOOLS_STEP,
    BRANCH_ADDED_TERM_STEP,
    CONTROLLER_STEP,
    DEFAULT_LOSS_FN,
    DISTILLATION_BRANCH_STEP,
    ELEGANTRL_UPDATE,
    FORWARD_TERMS_STEP,
    GAN_GENERATOR_STEP,
    HELPER_STEP_TRAINER,
    INPUT_GRADIENT,
    KEYED_PREDICTIONS,
    KGE_TRAIN_STEP,
    LOSS_HELPER_TRAINER,
    LOSS_OBJECT_TRAINER,
    LOSS_TUPLE_HELPER,
    MICROBATCH_TRAINER,
    MODEL_WITH_LOSS,
    MOON_STEP,
    OPTIONAL_TERM_HELPER,
    PARSED_BATCH_STEP,
    PIPELINE_ENGINE,
    PIX2PIX_STEP,
    PPO_UPDATE,
    PROTONET_EPISODE,
    REGULARISED_STEP,
    RELAYED_BACKWARD,
    SAC_ACTOR_UPDATE,
    SCALED_HELPER_BACKWARD,
    SR_MODEL_STEP,
    STORED_LOSS_TRAINER,
    TARGET_TRAINERS,
    TUPLE_TRAINER,
    TWO_MODEL_STEP,
    WALKED_LOSSES,
    WEIGHTED_TERMS_STEP,
)
from injector.patterns import (
    LOSS_FUNCTIONS,
    appended_to,
    bound_names,
    callee_name,
    constructed,
    dotted,
    last_name,
    loss_name,
    method_on,
    names_an_objective,
    runs_model,
    walking_loop,
)

RETRIEVAL_FORWARD = (
    "class Retrieval(nn.Module):\n"
    "    def forward(self, image, text, targets, labels):\n"
    "        sim = self.img(image) @ self.txt(text).t() / self.temp\n"
    "        loss_i2t = -torch.sum(F.log_softmax(sim, dim=1) * targets, dim=1).mean()\n"
    "        loss_t2i = -torch.sum(F.log_softmax(sim.t(), dim=1) * targets, dim=1).mean()\n"
    "        loss_ita = (loss_i2t + loss_t2i) / 2\n"
    "        logits = self.itm_head(self.fuse(image, text))\n"
    "        loss_itm = F.cross_entropy(logits, labels)\n"
    "        return loss_ita, loss_itm\n"
)


_MEAN_TEACHER_LOSS = (
    "for step, (x, y) in enumerate(loader):\n"
    "    out = model(x)\n"
    "    loss_ce = ce_loss(out[:n], y)\n"
    "    loss_dice = dice_loss(out[:n], y)\n"
    "    supervised_loss = 0.5 * (loss_dice + loss_ce)\n"
    "    weight = ramp(step)\n"
    "    dist = softmax_mse_loss(out[n:], ema_out)\n"
    "    consistency_loss = torch.sum(mask * dist) / torch.sum(mask)\n"
    "    loss = supervised_loss + weight * consistency_loss\n"
    "    loss.backward()\n"
)


_SUMMED_TERMS = (
    "for x, y in loader:\n"
    "    logits_lm, logits_clsf = model(x)\n"
    "    loss_lm = criterion(logits_lm, y)\n"
    "    loss_lm = (loss_lm.float()).mean()\n"
    "    loss_clsf = criterion(logits_clsf, z)\n"
    "    loss = loss_lm + loss_clsf\n"
    "    loss.backward()\n"
)


_STAGE_LOSSES = (
    "def train(net, loader, optimizer, l2_loss):\n"
    "    for images, maps, pafs in loader:\n"
    "        stages_output = net(images)\n"
    "        losses = []\n"
    "        for i in range(len(stages_output) // 2):\n"
    "            losses.append(l2_loss(stages_output[i * 2], maps))\n"
    "            losses.append(l2_loss(stages_output[i * 2 + 1], pafs))\n"
    "        loss = losses[0]\n"
    "        for i in range(1, len(losses)):\n"
    "            loss += losses[i]\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


_ZERO_TENSOR_START = (
    "import torch\n"
    "\n"
    "\n"
    "def discriminator_step(batch, generator, discriminator, d_loss_fn, optimizer_d):\n"
    "    x, y = batch\n"
    "    loss = torch.zeros(1).to(y)\n"
    "    scores = discriminator(generator(x), y)\n"
    "    data_loss = d_loss_fn(scores)\n"
    "    loss += data_loss\n"
    "    optimizer_d.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer_d.step()\n"
)


_TARGET_FIRST = (
    "class Trainer(BaseTrainer):\n"
    "    def _train_epoch(self, epoch):\n"
    "        for noisy, clean in self.train_dataloader:\n"
    "            target = build_mask(noisy, clean)\n"
    "            mask = self.model(noisy.unsqueeze(1))\n"
    "            mask = mask.permute(0, 2, 3, 1)\n"
    "            loss = self.loss_function(target, mask)\n"
    "            self.optimizer.zero_grad()\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)


_WEIGHTED_BY_SETTINGS = (
    "for x, y in loader:\n"
    "    pred = model(x)\n"
    "    loss_pos = mpjpe(pred, y)\n"
    "    loss_vel = velocity_loss(pred, y)\n"
    "    loss_total = loss_pos + args.lambda_vel * loss_vel\n"
    "    optimizer.zero_grad()\n"
    "    loss_total.backward()\n"
    "    optimizer.step()\n"
)


_DERIVED_FROM_MODULE = (
    "distillation_loss = nn.BCEWithLogitsLoss(reduction='none')\n"
    "for x, y, t, lam in loader:\n"
    "    y_hat = model(x)\n"
    "    label_loss = F.binary_cross_entropy_with_logits(y_hat, y)\n"
    "    soft_loss = distillation_loss(y_hat, t).mean(dim=1) * lam + distillation_loss(y_hat, t.flip(0)).mean(dim=1) * (1.0 - lam)\n"
    "    soft_loss = soft_loss.mean()\n"
    "    soft_loss = 0.5 * soft_loss\n"
    "    loss = label_loss + soft_loss\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


_DICT_OF_OUTPUTS = (
    "def inference(net, batch):\n"
    "    img, label = batch\n"
    "    return {'out': net(img), 'label': label}\n"
    "def calc_loss(loss_dict, results):\n"
    "    loss = 0\n"
    "    for op, w in zip(loss_dict['op'], loss_dict['weight']):\n"
    "        loss += op(results['out'], results['label']) * w\n"
    "    return loss\n"
    "def train(net, loader, loss_dict, optimizer):\n"
    "    for batch in loader:\n"
    "        results = inference(net, batch)\n"
    "        loss = calc_loss(loss_dict, results)\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


_BRANCH_LOSS_HELPER = (
    "def forward_step(x, y, internal_loss, model, criterion, device_ids):\n"
    "    if internal_loss:\n"
    "        loss = model(x, y)\n"
    "        if isinstance(device_ids, (list, tuple)):\n"
    "            loss = loss.mean()\n"
    "        return loss\n"
    "    else:\n"
    "        y_ = model(x)\n"
    "        return criterion(y_, y, x)\n"
    "\n"
    "\n"
    "def train_one_epoch(model, loader, criterion):\n"
    "    for x, y in loader:\n"
    "        loss = forward_step(x, y, True, model, criterion, [0])\n"
    "        loss.backward()\n"
)


_GLIMPSE_STEP = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "for x, y in loader:\n"
    "    log_probas, baselines, log_pi = model(x)\n"
    "    loss_action = F.nll_loss(log_probas, y)\n"
    "    loss_baseline = F.mse_loss(baselines, reward)\n"
    "    loss_reinforce = torch.sum(-log_pi * (reward - baselines.detach()), dim=1)\n"
    "    loss_reinforce = torch.mean(loss_reinforce, dim=0)\n"
    "    loss = loss_action + loss_baseline + loss_reinforce * 0.01\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


_BRANCH_LOSSES_STEP = (
    "def step(D, real, do_main, do_r1):\n"
    "    logits = D(real)\n"
    "    loss_real = 0\n"
    "    if do_main:\n"
    "        loss_real = F.softplus(-logits)\n"
    "    loss_r1 = 0\n"
    "    if do_r1:\n"
    "        loss_r1 = penalty(logits, real) * gamma\n"
    "    (logits * 0 + loss_real + loss_r1).mean().mul(gain).backward()\n"
)


# Named loss terms summed beside a regulariser computed in place (SPIN).
INPLACE_REGULARISED_SUM = (
    "import torch\n"
    "def train_step(model, optimizer, images, gt, w_kp, w_shape):\n"
    "    pred_kp, pred_shape, pred_camera = model(images)\n"
    '    loss_keypoints = keypoint_loss(pred_kp, gt["kp"])\n'
    '    loss_shape = shape_loss(pred_shape, gt["shape"])\n'
    "    loss = w_kp * loss_keypoints + w_shape * loss_shape + ((torch.exp(-pred_camera[:, 0] * 10)) ** 2).mean()\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


DRAWING_AGENT = (
    "class TruncatedNormal(pyd.Normal):\n"
    "    def sample(self, clip=None, sample_shape=torch.Size()):\n"
    "        eps = torch.clamp(torch.randn_like(self.loc) * self.scale, -clip, clip)\n"
    "        return self.loc + eps\n"
    "class Actor(nn.Module):\n"
    "    def forward(self, obs, std):\n"
    "        mu = torch.tanh(self.policy(obs))\n"
    "        dist = TruncatedNormal(mu, torch.ones_like(mu) * std)\n"
    "        return dist\n"
    "class Agent:\n"
    "    def __init__(self):\n"
    "        self.actor = Actor()\n"
    "    def update_actor(self, obs, stddev):\n"
    "        dist = self.actor(obs, stddev)\n"
    "        action = dist.sample(clip=0.3)\n"
    "        log_prob = dist.log_prob(action).sum(-1)\n"
    "        actor_loss = -self.critic(torch.cat([obs, action], -1)).mean()\n"
    "        actor_loss.backward()\n"
)
TORCH_DRAWING_AGENT = DRAWING_AGENT.replace("dist = TruncatedNormal(", "dist = pyd.Normal(").replace(
    "dist.sample(clip=0.3)", "dist.sample()"
)


class DetachedGraph(Operator):
    id = "detached-graph"
    summary = (
        "`.detach()` the model output passed to the loss (or the loss itself when it is not a "
        "loss call, or comes out of a tuple)."
    )
    examples = (
        Example(
            # A dict of predictions a method of the file fills by key (FAIR-Chem's `_forward`): no
            # `detach` on it, so the loss computed from it is cut whole.
            KEYED_PREDICTIONS,
            (
                KEYED_PREDICTIONS.replace(
                    "loss = self._compute_loss(out, batch)", "loss = self._compute_loss(out, batch).detach()"
                ),
            ),
        ),
        Example(
            # Objectives named as such (ElegantRL's PPO): the actor's sum cut, and each of its two
            # terms; the critic's objective cut where it is computed (its forward's output reaches
            # nothing else).
            ELEGANTRL_UPDATE,
            (
                ELEGANTRL_UPDATE.replace(
                    "obj_critic = self.criterion(value, reward_sums[ids]).mean()",
                    "obj_critic = self.criterion(value, reward_sums[ids]).mean().detach()",
                ),
                ELEGANTRL_UPDATE.replace(
                    "obj_actor = obj_surrogate + obj_entropy * self.lambda_entropy",
                    "obj_actor = (obj_surrogate + obj_entropy * self.lambda_entropy).detach()",
                ),
                ELEGANTRL_UPDATE.replace(
                    "obj_surrogate = (advantages[ids] * ratio).mean()",
                    "obj_surrogate = (advantages[ids] * ratio).mean().detach()",
                ),
                ELEGANTRL_UPDATE.replace("obj_entropy = entropy.mean()", "obj_entropy = entropy.mean().detach()"),
            ),
        ),
        Example(
            # Each subclass's returned sum, rescaled for accumulation, is a loss of its own (UER-py's
            # target trainers): the sum is cut, and each term where it is unpacked from the entry
            # of the model's dict (the entries are tuples: no cut of the dict itself). The base
            # class's call runs whichever override the trainer is: cut there, every trainer's loss
            # is; each override's own loss is cut where it is unpacked from the model's tuple.
            TARGET_TRAINERS,
            (
                TARGET_TRAINERS.replace(
                    "loss = self.forward_propagation(batch, model)",
                    "loss = self.forward_propagation(batch, model).detach()",
                ),
                TARGET_TRAINERS.replace("loss = loss_mlm + loss_sp", "loss = (loss_mlm + loss_sp).detach()"),
                TARGET_TRAINERS.replace(
                    "        loss, correct, denominator = loss_info\n",
                    "        loss, correct, denominator = loss_info\n        loss = loss.detach()\n",
                ),
                TARGET_TRAINERS.replace(
                    '        loss_mlm, correct_mlm, denominator = loss_info["mlm"]\n',
                    '        loss_mlm, correct_mlm, denominator = loss_info["mlm"]\n        loss_mlm = loss_mlm.detach()\n',
                ),
                TARGET_TRAINERS.replace(
                    '        loss_sp, correct_sp = loss_info["sp"]\n',
                    '        loss_sp, correct_sp = loss_info["sp"]\n        loss_sp = loss_sp.detach()\n',
                ),
            ),
        ),
        Example(
            # A loss object handed the outputs step by step (pytorch-seq2seq's trainer): what it
            # is handed is cut; the object has no `detach`.
            LOSS_OBJECT_TRAINER,
            (
                LOSS_OBJECT_TRAINER.replace(
                    "loss.eval_batch(step_output, targets[:, step + 1])",
                    "loss.eval_batch(step_output.detach(), targets[:, step + 1])",
                ),
            ),
        ),
        Example(
            # A distillation term computed one way or another in a nested branch and added as
            # `loss = w * kd_loss + loss`: each branch's term cut alone (once-for-all's).
            DISTILLATION_BRANCH_STEP,
            (
                DISTILLATION_BRANCH_STEP.replace(
                    "cross_entropy_loss_with_soft_target(output, soft_label)",
                    "cross_entropy_loss_with_soft_target(output, soft_label).detach()",
                ),
                DISTILLATION_BRANCH_STEP.replace(
                    "F.mse_loss(output, soft_logits)", "F.mse_loss(output, soft_logits).detach()"
                ),
                DISTILLATION_BRANCH_STEP.replace(
                    "self.train_criterion(output, labels)", "self.train_criterion(output.detach(), labels)"
                ),
            ),
        ),
        Example(
            # Two models, each with its optimizer stepped after one backward (pretrain-gnns'
            # context prediction): both forwards are trained, a part of the output taken at once
            # (`model_a(x)[batch.center]`) is the forward, and a tensor read by its methods is
            # one even where rows are picked by a name (`rep_a[i]`).
            TWO_MODEL_STEP,
            (
                TWO_MODEL_STEP.replace(
                    "loss = criterion(pred_pos, batch.y) + criterion(pred_neg, 1 - batch.y)",
                    "loss = (criterion(pred_pos, batch.y) + criterion(pred_neg, 1 - batch.y)).detach()",
                ),
                TWO_MODEL_STEP.replace(
                    "rep_a = model_a(batch.x_a)[batch.center]", "rep_a = model_a(batch.x_a)[batch.center].detach()"
                ),
                TWO_MODEL_STEP.replace("rep_b = model_b(batch.x_b)", "rep_b = model_b(batch.x_b).detach()"),
            ),
        ),
        Example(
            # A term computed and added without a branch (cellpose's cell-probability term,
            # `loss2 = criterion2(...)`, then `loss = loss + loss2`): cut alone.
            "def train_step(net, x, lbl, optimizer):\n"
            "    y = net(x)\n"
            "    loss = mse(y[:, :2], lbl[:, :2])\n"
            "    loss2 = bce(y[:, -1], lbl[:, -1])\n"
            "    loss = loss + loss2\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "def train_step(net, x, lbl, optimizer):\n"
                "    y = net(x)\n"
                "    loss = mse(y[:, :2], lbl[:, :2])\n"
                "    loss2 = bce(y[:, -1], lbl[:, -1]).detach()\n"
                "    loss = loss + loss2\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "def train_step(net, x, lbl, optimizer):\n"
                "    y = net(x)\n"
                "    loss = mse(y[:, :2], lbl[:, :2]).detach()\n"
                "    loss2 = bce(y[:, -1], lbl[:, -1])\n"
                "    loss = loss + loss2\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
                "def train_step(net, x, lbl, optimizer):\n"
                "    y = net(x).detach()\n"
                "    loss = mse(y[:, :2], lbl[:, :2])\n"
                "    loss2 = bce(y[:, -1], lbl[:, -1])\n"
                "    loss = loss + loss2\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A regulariser on the model's weights added in a branch as `loss = loss + term`: cut alone.
            REGULARISED_STEP,
            (
                REGULARISED_STEP.replace(
                    "regularization = args.regularization * (model.entity_embedding.norm(p=3) ** 3)",
                    "regularization = (args.regularization * (model.entity_embedding.norm(p=3) ** 3)).detach()",
                ),
                REGULARISED_STEP.replace("loss = -score.mean()", "loss = (-score.mean()).detach()"),
            ),
        ),
        Example(
            # A distribution read through its draw and beside it (SAC's `dist.rsample()` and
            # `dist.log_prob(action)`): each value taken from it is cut where it is taken.
            SAC_ACTOR_UPDATE,
            (
                SAC_ACTOR_UPDATE.replace(
                    "actor_loss = (self.alpha.detach() * log_prob - actor_q).mean()",
                    "actor_loss = (self.alpha.detach() * log_prob - actor_q).mean().detach()",
                ),
                SAC_ACTOR_UPDATE.replace("action = dist.rsample()", "action = dist.rsample().detach()"),
                SAC_ACTOR_UPDATE.replace(
                    "log_prob = dist.log_prob(action).sum(-1, keepdim=True)",
                    "log_prob = dist.log_prob(action).sum(-1, keepdim=True).detach()",
                ),
                SAC_ACTOR_UPDATE.replace(
                    "self.critic(obs, action)\n",
                    "self.critic(obs, action)\n    actor_q1 = actor_q1.detach()\n    actor_q2 = actor_q2.detach()\n",
                ),
            ),
        ),
        Example(
            # Terms reduced by hand from scores, in either branch (KnowledgeGraphEmbedding's
            # `-positive_score.mean()`, `-(w * positive_score).sum() / w.sum()`): each cut alone.
            KGE_TRAIN_STEP,
            (
                KGE_TRAIN_STEP.replace(
                    "loss = (positive_loss + negative_loss) / 2",
                    "loss = ((positive_loss + negative_loss) / 2).detach()",
                ),
                KGE_TRAIN_STEP.replace("= -positive_score.mean()", "= (-positive_score.mean()).detach()"),
                KGE_TRAIN_STEP.replace(
                    "= -(weight * positive_score).sum() / weight.sum()",
                    "= (-(weight * positive_score).sum() / weight.sum()).detach()",
                ),
                KGE_TRAIN_STEP.replace("= -negative_score.mean()", "= (-negative_score.mean()).detach()"),
                KGE_TRAIN_STEP.replace(
                    "= -(weight * negative_score).sum() / weight.sum()",
                    "= (-(weight * negative_score).sum() / weight.sum()).detach()",
                ),
                KGE_TRAIN_STEP.replace("= model(negative)", "= model(negative).detach()"),
                KGE_TRAIN_STEP.replace(".squeeze(dim=1)", ".squeeze(dim=1).detach()"),
            ),
        ),
        Example(
            # apex's `with amp.scale_loss(loss, optimizer) as scaled_loss: scaled_loss.backward()`:
            # the loss is the value the context scales (UNITER's), cut where the model returns it.
            APEX_CONTEXT_STEP,
            (
                APEX_CONTEXT_STEP.replace(
                    "loss = model(batch, compute_loss=True)", "loss = model(batch, compute_loss=True).detach()"
                ),
            ),
        ),
        Example(
            # Loss entries of a dict summed by configured weights (DAC): the total cut off, and each
            # entry cut where its criterion runs.
            AUDIOTOOLS_STEP,
            (
                AUDIOTOOLS_STEP.replace(
                    "if k in output])\n", "if k in output])\n        output['loss'] = output['loss'].detach()\n"
                ),
                AUDIOTOOLS_STEP.replace(
                    "state.mel_loss(out, batch['signal'])", "state.mel_loss(out, batch['signal']).detach()"
                ),
                AUDIOTOOLS_STEP.replace(
                    "state.stft_loss(out, batch['signal'])", "state.stft_loss(out, batch['signal']).detach()"
                ),
            ),
        ),
        Example(
            # Losses a loop walks, each backpropagated (PyDreamer's `for loss in losses:`): cut where made.
            WALKED_LOSSES,
            (
                WALKED_LOSSES.replace(
                    "    losses, state, metrics = model.training_step(batch, state)\n",
                    "    losses, state, metrics = model.training_step(batch, state)\n    losses = [x.detach() for x in losses]\n",
                ),
            ),
        ),
        Example(
            # A loss function's output that is a dict under one configuration and a tuple by default
            # (DeBERTa's trainer asks `isinstance(output, dict)`): cut entry by entry either way.
            DEFAULT_LOSS_FN,
            (
                DEFAULT_LOSS_FN.replace(
                    '            loss = output["loss"]\n', '            loss = output["loss"].detach()\n'
                ),
                DEFAULT_LOSS_FN.replace(
                    "            loss, size = output\n",
                    "            loss, size = output\n            loss = loss.detach()\n",
                ),
                DEFAULT_LOSS_FN.replace(
                    "        output = self.loss_fn(self, self.model, batch)\n",
                    '        output = self.loss_fn(self, self.model, batch)\n        output = {k: v.detach() for k, v in output.items()} if isinstance(output, dict) else type(output)(v.detach() if hasattr(v, "detach") else v for v in output)\n',
                ),
            ),
        ),
        Example(
            # Outputs wrapped in a list for a loss function of lists (DeepChem's TorchModel): each
            # output cut off, since a list has no `detach`.
            "outputs = self.model(inputs)\n"
            "if isinstance(outputs, torch.Tensor):\n"
            "    outputs = [outputs]\n"
            "batch_loss = loss(outputs, labels, weights)\n"
            "batch_loss.backward()\n",
            (
                "outputs = self.model(inputs)\n"
                "if isinstance(outputs, torch.Tensor):\n"
                "    outputs = [outputs]\n"
                "batch_loss = loss([output.detach() for output in outputs], labels, weights)\n"
                "batch_loss.backward()\n",
            ),
        ),
        Example(
            # Deep supervision: a loss that starts empty and adds one criterion a head; the target
            # it is handed is moved, not computed (UNet++'s train.py): the term is the call's value.
            "for x, y in loader:\n    y = y.cuda()\n    outputs = model(x)\n    loss = 0\n"
            "    for output in outputs:\n        loss += criterion(output, y)\n    loss.backward()\n",
            (
                "for x, y in loader:\n    y = y.cuda()\n    outputs = model(x)\n    loss = 0\n"
                "    for output in outputs:\n        loss += criterion(output, y).detach()\n    loss.backward()\n",
            ),
        ),
        Example(
            # Per-task losses appended to a list the backward sums (chemprop's atom/bond targets):
            # each appended loss, one per branch that computes it.
            "for target, pred in zip(targets, preds):\n"
            "    if regression:\n"
            "        loss = mse(pred, target) * weight\n"
            "    else:\n"
            "        loss = bce(pred, target) * weight\n"
            "    loss = loss.sum() / mask.sum()\n"
            "    losses.append(loss)\n"
            "sum(losses).backward()\n",
            (
                "for target, pred in zip(targets, preds):\n"
                "    if regression:\n"
                "        loss = (mse(pred, target) * weight).detach()\n"
                "    else:\n"
                "        loss = bce(pred, target) * weight\n"
                "    loss = loss.sum() / mask.sum()\n"
                "    losses.append(loss)\n"
                "sum(losses).backward()\n",
                "for target, pred in zip(targets, preds):\n"
                "    if regression:\n"
                "        loss = mse(pred, target) * weight\n"
                "    else:\n"
                "        loss = (bce(pred, target) * weight).detach()\n"
                "    loss = loss.sum() / mask.sum()\n"
                "    losses.append(loss)\n"
                "sum(losses).backward()\n",
            ),
        ),
        Example(
            # the loss out of the model's own loss method, scaled on its way into the trainer's
            # backward method (flair's ModelTrainer)
            SCALED_HELPER_BACKWARD,
            (
                SCALED_HELPER_BACKWARD.replace(
                    "forward_loss(batch)\n", "forward_loss(batch)\n        loss = loss.detach()\n"
                ),
            ),
        ),
        Example(
            # Losses that start at 0 and are computed in branches, added up where they are
            # differentiated (stylegan2-ada's discriminator pass): each one cut off.
            _BRANCH_LOSSES_STEP,
            (
                _BRANCH_LOSSES_STEP.replace(
                    "        loss_r1 = penalty(logits, real) * gamma\n",
                    "        loss_r1 = (penalty(logits, real) * gamma).detach()\n",
                ),
                _BRANCH_LOSSES_STEP.replace(
                    "        loss_real = F.softplus(-logits)\n", "        loss_real = F.softplus(-logits).detach()\n"
                ),
                _BRANCH_LOSSES_STEP.replace("    logits = D(real)\n", "    logits = D(real).detach()\n"),
            ),
        ),
        Example(
            # Forward, loss and backward in one line (SAM's second pass at the perturbed weights).
            "for x, y in loader:\n    smooth_crossentropy(model(x), y, smoothing=0.1).mean().backward()\n",
            ("for x, y in loader:\n    smooth_crossentropy(model(x).detach(), y, smoothing=0.1).mean().backward()\n",),
        ),
        Example(
            # Lightning differentiates what `training_step` returns.
            "class Net(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        loss = F.cross_entropy(self(x), y)\n"
            "        return loss\n",
            (
                "class Net(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        x, y = batch\n"
                "        loss = F.cross_entropy(self(x).detach(), y)\n"
                "        return loss\n",
            ),
        ),
        Example(
            # The loss averaged where it is differentiated is still `loss`.
            "pi = self.pi(s)\nloss = -torch.min(pi * adv, clipped) + vf_loss\nloss.mean().backward()\n",
            ("pi = self.pi(s)\nloss = (-torch.min(pi * adv, clipped) + vf_loss).detach()\nloss.mean().backward()\n",),
        ),
        Example(
            # A loss kept as an entry by a nested function the step calls (MONAI's trainers).
            "def step(engine, x, y):\n    def compute():\n        engine.out['pred'] = engine.net(x)\n"
            "        engine.out['loss'] = engine.loss_fn(engine.out['pred'], y)\n"
            "    compute()\n    engine.out['loss'].backward()\n",
            (
                "def step(engine, x, y):\n    def compute():\n        engine.out['pred'] = engine.net(x)\n"
                "        engine.out['loss'] = engine.loss_fn(engine.out['pred'], y)\n"
                "        engine.out['loss'] = engine.out['loss'].detach()\n"
                "    compute()\n    engine.out['loss'].backward()\n",
            ),
        ),
        Example(
            # D steps reuse G's output made before their loop: D runs inside the loss function.
            "def step(g, d_opt, z, real, n):\n    fake = g(z)\n    for _ in range(n):\n"
            "        d_loss = d_loss_fn(fake, real)\n        d_loss.backward()\n        d_opt.step()\n",
            (
                "def step(g, d_opt, z, real, n):\n    fake = g(z)\n    for _ in range(n):\n"
                "        d_loss = d_loss_fn(fake, real).detach()\n        d_loss.backward()\n        d_opt.step()\n",
            ),
        ),
        Example(
            # A loss that starts at 0 (no graph to cut): each term added into it is cut off.
            "def step(x, y, w):\n    feats = model(x)\n    loss = 0\n    if w > 0:\n"
            "        loss_t = criterion_t(feats, y)\n        loss += w * loss_t\n    loss.backward()\n",
            (
                "def step(x, y, w):\n    feats = model(x)\n    loss = 0\n    if w > 0:\n"
                "        loss_t = criterion_t(feats.detach(), y)\n        loss += w * loss_t\n    loss.backward()\n",
            ),
        ),
        Example(
            "logits = model(x)\nloss = F.cross_entropy(logits, y)\nloss.backward()\n",
            ("logits = model(x)\nloss = F.cross_entropy(logits.detach(), y)\nloss.backward()\n",),
        ),
        Example(
            "outputs = model(**batch)\nloss = outputs.loss\nscaler.scale(loss).backward()\n",
            ("outputs = model(**batch)\nloss = outputs.loss.detach()\nscaler.scale(loss).backward()\n",),
        ),
        Example(
            "loss = self.criterion(self.net(a) + b, y) / accum\n(loss).backward()\n",
            ("loss = (self.criterion(self.net(a) + b, y) / accum).detach()\n(loss).backward()\n",),
        ),
        Example(
            "def step(self, x, y):\n"
            "    logits, self.loss = self.model(x, y)\n"
            "    self.accelerator.backward(self.loss)\n",
            (
                "def step(self, x, y):\n"
                "    logits, self.loss = self.model(x, y)\n"
                "    self.loss = self.loss.detach()\n"
                "    self.accelerator.backward(self.loss)\n",
            ),
        ),
        Example(
            # Each branch computes the loss its own way: each gets the mutant.
            "out = model(x)\n"
            "if kind == 'eps':\n"
            "    loss = F.mse_loss(out, noise)\n"
            "else:\n"
            "    loss = (w * F.mse_loss(out, x, reduction='none')).mean()\n"
            "    loss = loss.mean()\n"
            "accelerator.backward(loss)\n",
            (
                "out = model(x)\n"
                "if kind == 'eps':\n"
                "    loss = F.mse_loss(out.detach(), noise)\n"
                "else:\n"
                "    loss = (w * F.mse_loss(out, x, reduction='none')).mean()\n"
                "    loss = loss.mean()\n"
                "accelerator.backward(loss)\n",
                "out = model(x)\n"
                "if kind == 'eps':\n"
                "    loss = F.mse_loss(out, noise)\n"
                "else:\n"
                "    loss = (w * F.mse_loss(out, x, reduction='none')).mean().detach()\n"
                "    loss = loss.mean()\n"
                "accelerator.backward(loss)\n",
            ),
        ),
        Example(
            # The loss reaches backward as a parameter of a nested function (timm's train loop).
            "def train_one_epoch(model, loader):\n"
            "    def _forward():\n"
            "        result = task(x, y)\n"
            "        _loss = result['loss']\n"
            "        return _loss, result\n"
            "    def _backward(_loss):\n"
            "        _loss.backward()\n"
            "    loss, result = _forward()\n"
            "    _backward(loss)\n",
            (
                "def train_one_epoch(model, loader):\n"
                "    def _forward():\n"
                "        result = task(x, y)\n"
                "        _loss = result['loss'].detach()\n"
                "        return _loss, result\n"
                "    def _backward(_loss):\n"
                "        _loss.backward()\n"
                "    loss, result = _forward()\n"
                "    _backward(loss)\n",
            ),
        ),
        Example(
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    if accum > 1:\n"
            "        loss = loss / accum\n"
            "    scaled = scaler.scale(loss)\n"
            "    scaled.backward()\n",
            (
                "for x, y in loader:\n"
                "    loss = model(x, y).detach()\n"
                "    if accum > 1:\n"
                "        loss = loss / accum\n"
                "    scaled = scaler.scale(loss)\n"
                "    scaled.backward()\n",
            ),
        ),
        Example(
            # The loss reaches the backward through a helper of the file that runs it.
            "def backward(total_loss, scaler):\n"
            "    if scaler is not None:\n"
            "        scaler.scale(total_loss).backward()\n"
            "    else:\n"
            "        total_loss.backward()\n"
            "for batch in loader:\n"
            "    losses = model(batch)\n"
            "    total_loss = losses['loss']\n"
            "    backward(total_loss, scaler)\n",
            (
                "def backward(total_loss, scaler):\n"
                "    if scaler is not None:\n"
                "        scaler.scale(total_loss).backward()\n"
                "    else:\n"
                "        total_loss.backward()\n"
                "for batch in loader:\n"
                "    losses = model(batch)\n"
                "    total_loss = losses['loss'].detach()\n"
                "    backward(total_loss, scaler)\n",
            ),
        ),
        Example(
            # The model output is not the criterion's first argument (a distillation loss is handed
            # the input batch first); a branch that sums loss terms one by one is left alone.
            "for x, y in loader:\n"
            "    outputs = model(x)\n"
            "    if not cosub:\n"
            "        loss = criterion(x, outputs, y)\n"
            "    else:\n"
            "        loss = 0.5 * criterion(outputs[0], y)\n"
            "        loss = loss + 0.5 * criterion(outputs[1], y)\n"
            "    loss.backward()\n",
            (
                "for x, y in loader:\n"
                "    outputs = model(x)\n"
                "    if not cosub:\n"
                "        loss = criterion(x, outputs.detach(), y)\n"
                "    else:\n"
                "        loss = 0.5 * criterion(outputs[0], y)\n"
                "        loss = loss + 0.5 * criterion(outputs[1], y)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A loss returned beside the logits, handed rescaled to a helper that runs the backward.
            "def optimizer_step(_loss, optimizer):\n"
            "    _loss.backward()\n"
            "    optimizer.step()\n"
            "for x, y in loader:\n"
            "    logits, lm_loss = model(\n"
            "        x, lm_labels=y\n"
            "    )\n"
            "    optimizer_step(lm_loss / accum, optimizer)\n",
            (
                "def optimizer_step(_loss, optimizer):\n"
                "    _loss.backward()\n"
                "    optimizer.step()\n"
                "for x, y in loader:\n"
                "    logits, lm_loss = model(\n"
                "        x, lm_labels=y\n"
                "    )\n"
                "    lm_loss = lm_loss.detach()\n"
                "    optimizer_step(lm_loss / accum, optimizer)\n",
            ),
        ),
        Example(
            # A loss kept in a dict: its entry is cut off (the dict has no `detach`).
            "class VAE(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        results = self.forward(batch[0])\n"
            "        train_loss = self.model.loss_function(*results, M_N=0.1)\n"
            "        return train_loss['loss']\n",
            (
                "class VAE(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        results = self.forward(batch[0])\n"
                "        train_loss = self.model.loss_function(*results, M_N=0.1)\n"
                "        train_loss['loss'] = train_loss['loss'].detach()\n"
                "        return train_loss['loss']\n",
            ),
        ),
        Example(
            # A loss computed in a helper the training step calls: where it is returned, and in the helper.
            "class Sep(LightningModule):\n"
            "    def shared_step(self, batch):\n"
            "        x, y = batch\n"
            "        loss = self.loss_func(self(x), y)\n"
            "        return loss\n"
            "    def training_step(self, batch, batch_nb):\n"
            "        loss = self.shared_step(batch)\n"
            "        self.log('loss', loss)\n"
            "        return loss\n",
            (
                "class Sep(LightningModule):\n"
                "    def shared_step(self, batch):\n"
                "        x, y = batch\n"
                "        loss = self.loss_func(self(x), y)\n"
                "        return loss\n"
                "    def training_step(self, batch, batch_nb):\n"
                "        loss = self.shared_step(batch).detach()\n"
                "        self.log('loss', loss)\n"
                "        return loss\n",
                "class Sep(LightningModule):\n"
                "    def shared_step(self, batch):\n"
                "        x, y = batch\n"
                "        loss = self.loss_func(self(x).detach(), y)\n"
                "        return loss\n"
                "    def training_step(self, batch, batch_nb):\n"
                "        loss = self.shared_step(batch)\n"
                "        self.log('loss', loss)\n"
                "        return loss\n",
            ),
        ),
        Example(
            # An output object's loss: the holder has no `detach`, its loss is cut off.
            "class LM(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.model(**batch)\n"
            "        return {'loss': out.loss, 'log': {'ppl': out.loss.exp()}}\n",
            (
                "class LM(LightningModule):\n"
                "    def training_step(self, batch, batch_idx):\n"
                "        out = self.model(**batch)\n"
                "        out.loss = out.loss.detach()\n"
                "        return {'loss': out.loss, 'log': {'ppl': out.loss.exp()}}\n",
            ),
        ),
        Example(
            # A train_step that runs its backward through its own helper returns figures, not a loss (OLMo): only the helper's loss is a site.
            HELPER_STEP_TRAINER,
            (
                HELPER_STEP_TRAINER.replace(
                    "        loss = self.model(batch).mean()\n", "        loss = self.model(batch).mean().detach()\n"
                ),
            ),
        ),
        Example(
            # The loss a framework backpropagates after compute_objectives returns it (SpeechBrain's Brain).
            "class SpkIdBrain(sb.Brain):\n"
            "    def compute_objectives(self, predictions, batch, stage):\n"
            "        loss = sb.nnet.losses.nll_loss(predictions, batch.y)\n"
            "        return loss\n",
            (
                "class SpkIdBrain(sb.Brain):\n"
                "    def compute_objectives(self, predictions, batch, stage):\n"
                "        loss = sb.nnet.losses.nll_loss(predictions.detach(), batch.y)\n"
                "        return loss\n",
            ),
        ),
        Example(
            # A train_step that returns its loss in a dict of a returned tuple, for a hook to backpropagate (USB); a dict without the loss is none.
            "class FixMatch(AlgorithmBase):\n"
            "    def train_step(self, x, y):\n"
            "        logits = self.model(x)\n"
            "        loss = self.ce_loss(logits, y, reduction='mean')\n"
            "        out_dict = self.process_out_dict(loss=loss)\n"
            "        return out_dict, {}\n",
            (
                "class FixMatch(AlgorithmBase):\n"
                "    def train_step(self, x, y):\n"
                "        logits = self.model(x)\n"
                "        loss = self.ce_loss(logits.detach(), y, reduction='mean')\n"
                "        out_dict = self.process_out_dict(loss=loss)\n"
                "        return out_dict, {}\n",
            ),
        ),
        Example(
            # A loss registered for a backward run later (nanotron's pipeline engine).
            PIPELINE_ENGINE,
            (
                PIPELINE_ENGINE.replace(
                    '        output["loss"] = output["loss"] / self.nb_microbatches\n',
                    '        output["loss"] = output["loss"] / self.nb_microbatches\n'
                    '        output["loss"] = output["loss"].detach()\n',
                ),
            ),
        ),
        Example(
            # Losses a model's forward returns for the script to add up (BLIP): each cut off where
            # computed, an average of two term by term.
            RETRIEVAL_FORWARD,
            (
                RETRIEVAL_FORWARD.replace(
                    "loss_i2t = -torch.sum(F.log_softmax(sim, dim=1) * targets, dim=1).mean()",
                    "loss_i2t = (-torch.sum(F.log_softmax(sim, dim=1) * targets, dim=1).mean()).detach()",
                ),
                RETRIEVAL_FORWARD.replace(
                    "loss_t2i = -torch.sum(F.log_softmax(sim.t(), dim=1) * targets, dim=1).mean()",
                    "loss_t2i = (-torch.sum(F.log_softmax(sim.t(), dim=1) * targets, dim=1).mean()).detach()",
                ),
                RETRIEVAL_FORWARD.replace(
                    "F.cross_entropy(logits, labels)", "F.cross_entropy(logits.detach(), labels)"
                ),
            ),
        ),
        Example(
            # The loss a forward computes only when given targets (nanoGPT): `loss = None` has no graph.
            "class GPT(nn.Module):\n"
            "    def forward(self, idx, targets=None):\n"
            "        x = self.blocks(idx)\n"
            "        if targets is not None:\n"
            "            logits = self.lm_head(x)\n"
            "            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))\n"
            "        else:\n"
            "            logits = self.lm_head(x[:, [-1], :])\n"
            "            loss = None\n"
            "        return logits, loss\n",
            (
                "class GPT(nn.Module):\n"
                "    def forward(self, idx, targets=None):\n"
                "        x = self.blocks(idx)\n"
                "        if targets is not None:\n"
                "            logits = self.lm_head(x)\n"
                "            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).detach(), targets.view(-1))\n"
                "        else:\n"
                "            logits = self.lm_head(x[:, [-1], :])\n"
                "            loss = None\n"
                "        return logits, loss\n",
            ),
        ),
        Example(
            # A trainer module's forward returning its losses in a namedtuple built from a list
            # (simple-faster-rcnn-pytorch): each listed loss is cut off where computed.
            TUPLE_TRAINER,
            (
                TUPLE_TRAINER.replace("F.cross_entropy(scores, labels)", "F.cross_entropy(scores.detach(), labels)"),
                TUPLE_TRAINER.replace("self.reg(scores).mean()\n", "self.reg(scores).mean().detach()\n"),
            ),
        ),
        Example(
            # Terms added into a loss that starts at zero, whatever computes them; one unpacked from a call.
            SR_MODEL_STEP,
            (
                SR_MODEL_STEP.replace(
                    "self.cri_pix(self.output, self.gt)", "self.cri_pix(self.output, self.gt).detach()"
                ),
                SR_MODEL_STEP.replace(
                    "self.cri_perceptual(self.output, self.gt)", "self.cri_perceptual(self.output.detach(), self.gt)"
                ),
            ),
        ),
        Example(
            # A loss assigned as a sum of terms (nlp-tutorial's BERT): the sum cut off whole, and
            # each term cut off where it is computed.
            _SUMMED_TERMS,
            (
                _SUMMED_TERMS.replace("loss = loss_lm + loss_clsf", "loss = (loss_lm + loss_clsf).detach()"),
                _SUMMED_TERMS.replace("criterion(logits_lm, y)", "criterion(logits_lm, y).detach()"),
                _SUMMED_TERMS.replace("criterion(logits_clsf, z)", "criterion(logits_clsf, z).detach()"),
                _SUMMED_TERMS.replace(
                    "    logits_lm, logits_clsf = model(x)\n",
                    "    logits_lm, logits_clsf = model(x)\n    logits_lm = logits_lm.detach()\n    logits_clsf = logits_clsf.detach()\n",
                ),
            ),
        ),
        Example(
            # A loss summed through a weight that is a name, from a sum of sums and a term derived
            # from a criterion's value (SSL4MIS's mean teacher): each criterion call cut off alone.
            _MEAN_TEACHER_LOSS,
            (
                _MEAN_TEACHER_LOSS.replace(
                    "loss = supervised_loss + weight * consistency_loss",
                    "loss = (supervised_loss + weight * consistency_loss).detach()",
                ),
                _MEAN_TEACHER_LOSS.replace("dice_loss(out[:n], y)", "dice_loss(out[:n], y).detach()"),
                _MEAN_TEACHER_LOSS.replace("= ce_loss(out[:n], y)", "= ce_loss(out[:n], y).detach()"),
                _MEAN_TEACHER_LOSS.replace("ema_out)\n", "ema_out).detach()\n"),
                _MEAN_TEACHER_LOSS.replace(
                    "    out = model(x)\n",
                    "    out = model(x).detach()\n",
                ),
            ),
        ),
        Example(
            # Terms computed where they are added, in loops, into a loss that starts empty (MelGAN's hinge
            # losses over the discriminator's scales): each addition cut off, the others still training.
            "import torch.nn.functional as F\n"
            "def d_step(netD, optD, x_t, x_pred_t):\n"
            "    D_fake_det = netD(x_pred_t.detach())\n"
            "    D_real = netD(x_t)\n"
            "    loss_D = 0\n"
            "    for scale in D_fake_det:\n"
            "        loss_D += F.relu(1 + scale[-1]).mean()\n"
            "    for scale in D_real:\n"
            "        loss_D += F.relu(1 - scale[-1]).mean()\n"
            "    netD.zero_grad()\n"
            "    loss_D.backward()\n"
            "    optD.step()\n",
            (
                "import torch.nn.functional as F\n"
                "def d_step(netD, optD, x_t, x_pred_t):\n"
                "    D_fake_det = netD(x_pred_t.detach())\n"
                "    D_real = netD(x_t)\n"
                "    loss_D = 0\n"
                "    for scale in D_fake_det:\n"
                "        loss_D += F.relu(1 + scale[-1]).mean().detach()\n"
                "    for scale in D_real:\n"
                "        loss_D += F.relu(1 - scale[-1]).mean()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n",
                "import torch.nn.functional as F\n"
                "def d_step(netD, optD, x_t, x_pred_t):\n"
                "    D_fake_det = netD(x_pred_t.detach())\n"
                "    D_real = netD(x_t)\n"
                "    loss_D = 0\n"
                "    for scale in D_fake_det:\n"
                "        loss_D += F.relu(1 + scale[-1]).mean()\n"
                "    for scale in D_real:\n"
                "        loss_D += F.relu(1 - scale[-1]).mean().detach()\n"
                "    netD.zero_grad()\n"
                "    loss_D.backward()\n"
                "    optD.step()\n",
            ),
        ),
        Example(
            # A loss that starts empty, added up from the generator forward an inner if/else picks
            # (ParallelWaveGAN's VQ generator): the output cut off where each forward assigns it (the first
            # name it unpacks into), each term computed where it is added cut off there, the adversarial term
            # where it is computed; the forward's input, which has no graph, is not cut.
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
                "            y_, z = self.model['generator'](y, *x)\n"
                "        else:\n"
                "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "        gen_loss += self.criterion['mse'](z, z.detach())\n"
                "    else:\n"
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y)\n"
                "    if self.steps > self.start:\n"
                "        p_ = self.model['discriminator'](y_)\n"
                "        adv_loss = self.criterion['adv'](p_.detach())\n"
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
                "            y_ = y_.detach()\n"
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
                "            y_, z = self.model['generator'](self.pqmf(y), *x)\n"
                "            y_ = y_.detach()\n"
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
                "        y_ = self.model['generator'](*x).detach()\n"
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
                "        gen_loss += self.criterion['mse'](z, z.detach()).detach()\n"
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
                "        y_ = self.model['generator'](*x)\n"
                "    gen_loss += self.criterion['mel'](y_, y).detach()\n"
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
            ),
        ),
        Example(
            # The same GAN step: each term cut off, and the generator's output where it is computed (read
            # through the discriminator by the generator's loss).
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
                "    fake = netG(z)\n"
                "    d_fake = netD(fake.detach())\n"
                "    loss_D = 0\n"
                "    for scale in d_fake:\n"
                "        loss_D += scale.mean().detach()\n"
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
                "    g_out = netD(fake)\n"
                "    loss_G = 0\n"
                "    for scale in g_out:\n"
                "        loss_G += (-scale.mean()).detach()\n"
                "    netG.zero_grad()\n"
                "    loss_G.backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    fake = netG(z).detach()\n"
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
            # A critic step, then a generator step (WGAN-GP): the generator's output is cut off only in the
            # generator's step; the critic's optimizer, stepped after the first, trains the critic alone.
            "import torch\n"
            "optimizer_D = torch.optim.Adam(critic.parameters())\n"
            "optimizer_G = torch.optim.Adam(generator.parameters())\n"
            "for x in loader:\n"
            "    fake = generator(z)\n"
            "    score = critic(fake)\n"
            "    d_loss = score.mean()\n"
            "    d_loss.backward()\n"
            "    optimizer_D.step()\n"
            "    optimizer_G.zero_grad()\n"
            "    fake = generator(z)\n"
            "    score = critic(fake)\n"
            "    g_loss = -score.mean()\n"
            "    g_loss.backward()\n"
            "    optimizer_G.step()\n",
            (
                "import torch\n"
                "optimizer_D = torch.optim.Adam(critic.parameters())\n"
                "optimizer_G = torch.optim.Adam(generator.parameters())\n"
                "for x in loader:\n"
                "    fake = generator(z)\n"
                "    score = critic(fake)\n"
                "    d_loss = score.mean().detach()\n"
                "    d_loss.backward()\n"
                "    optimizer_D.step()\n"
                "    optimizer_G.zero_grad()\n"
                "    fake = generator(z)\n"
                "    score = critic(fake)\n"
                "    g_loss = -score.mean()\n"
                "    g_loss.backward()\n"
                "    optimizer_G.step()\n",
                "import torch\n"
                "optimizer_D = torch.optim.Adam(critic.parameters())\n"
                "optimizer_G = torch.optim.Adam(generator.parameters())\n"
                "for x in loader:\n"
                "    fake = generator(z)\n"
                "    score = critic(fake)\n"
                "    d_loss = score.mean()\n"
                "    d_loss.backward()\n"
                "    optimizer_D.step()\n"
                "    optimizer_G.zero_grad()\n"
                "    fake = generator(z)\n"
                "    score = critic(fake)\n"
                "    g_loss = (-score.mean()).detach()\n"
                "    g_loss.backward()\n"
                "    optimizer_G.step()\n",
                "import torch\n"
                "optimizer_D = torch.optim.Adam(critic.parameters())\n"
                "optimizer_G = torch.optim.Adam(generator.parameters())\n"
                "for x in loader:\n"
                "    fake = generator(z)\n"
                "    score = critic(fake)\n"
                "    d_loss = score.mean()\n"
                "    d_loss.backward()\n"
                "    optimizer_D.step()\n"
                "    optimizer_G.zero_grad()\n"
                "    fake = generator(z).detach()\n"
                "    score = critic(fake)\n"
                "    g_loss = -score.mean()\n"
                "    g_loss.backward()\n"
                "    optimizer_G.step()\n",
            ),
        ),
        Example(
            # A weighted loss that starts empty, in the sum the backward takes (MelGAN's feature matching):
            # each of its terms cut off.
            "import torch\n"
            "for x in loader:\n"
            "    out = netD(netG(x))\n"
            "    loss_G = -out[-1].mean()\n"
            "    loss_feat = 0\n"
            "    for a, b in zip(out, real):\n"
            "        loss_feat += F.l1_loss(a, b.detach())\n"
            "    optG.zero_grad()\n"
            "    (loss_G + lambda_feat * loss_feat).backward()\n"
            "    optG.step()\n",
            (
                "import torch\n"
                "for x in loader:\n"
                "    out = netD(netG(x))\n"
                "    loss_G = -out[-1].mean()\n"
                "    loss_feat = 0\n"
                "    for a, b in zip(out, real):\n"
                "        loss_feat += F.l1_loss(a, b.detach()).detach()\n"
                "    optG.zero_grad()\n"
                "    (loss_G + lambda_feat * loss_feat).backward()\n"
                "    optG.step()\n",
                "import torch\n"
                "for x in loader:\n"
                "    out = netD(netG(x))\n"
                "    loss_G = (-out[-1].mean()).detach()\n"
                "    loss_feat = 0\n"
                "    for a, b in zip(out, real):\n"
                "        loss_feat += F.l1_loss(a, b.detach())\n"
                "    optG.zero_grad()\n"
                "    (loss_G + lambda_feat * loss_feat).backward()\n"
                "    optG.step()\n",
            ),
        ),
        Example(
            # A loss unpacked from a method of the file that computes it with a loss call in each of several
            # branches (kospeech's per-architecture criteria): each computation cut off there.
            "import torch\n"
            "class Trainer:\n"
            "    def _forward(self, model, x, y, architecture):\n"
            '        if architecture == "las":\n'
            "            out = model(x)\n"
            "            loss = self.criterion(out.view(-1, out.size(-1)), y)\n"
            "        else:\n"
            "            out = model(x)\n"
            "            loss, ctc, ce = self.criterion(log_probs=out, targets=y)\n"
            "        return out, loss\n"
            "\n"
            "    def train_epoch(self, model, loader):\n"
            "        for x, y in loader:\n"
            "            out, loss = self._forward(model, x, y, self.architecture)\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n",
            (
                "import torch\n"
                "class Trainer:\n"
                "    def _forward(self, model, x, y, architecture):\n"
                '        if architecture == "las":\n'
                "            out = model(x)\n"
                "            loss = self.criterion(out.view(-1, out.size(-1)).detach(), y)\n"
                "        else:\n"
                "            out = model(x)\n"
                "            loss, ctc, ce = self.criterion(log_probs=out, targets=y)\n"
                "        return out, loss\n"
                "\n"
                "    def train_epoch(self, model, loader):\n"
                "        for x, y in loader:\n"
                "            out, loss = self._forward(model, x, y, self.architecture)\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n",
                "import torch\n"
                "class Trainer:\n"
                "    def _forward(self, model, x, y, architecture):\n"
                '        if architecture == "las":\n'
                "            out = model(x)\n"
                "            loss = self.criterion(out.view(-1, out.size(-1)), y)\n"
                "        else:\n"
                "            out = model(x)\n"
                "            loss, ctc, ce = self.criterion(log_probs=out, targets=y)\n"
                "            loss = loss.detach()\n"
                "        return out, loss\n"
                "\n"
                "    def train_epoch(self, model, loader):\n"
                "        for x, y in loader:\n"
                "            out, loss = self._forward(model, x, y, self.architecture)\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # A hybrid loss summing named terms, one weighted by a number (RAM's REINFORCE term): each term
            # cut off where it is computed, past the update that averages it.
            _GLIMPSE_STEP,
            (
                _GLIMPSE_STEP.replace(
                    "    loss = loss_action + loss_baseline + loss_reinforce * 0.01\n",
                    "    loss = (loss_action + loss_baseline + loss_reinforce * 0.01).detach()\n",
                ),
                _GLIMPSE_STEP.replace(
                    "    loss_action = F.nll_loss(log_probas, y)\n",
                    "    loss_action = F.nll_loss(log_probas, y).detach()\n",
                ),
                _GLIMPSE_STEP.replace(
                    "    loss_baseline = F.mse_loss(baselines, reward)\n",
                    "    loss_baseline = F.mse_loss(baselines, reward).detach()\n",
                ),
                _GLIMPSE_STEP.replace(
                    "    loss_reinforce = torch.sum(-log_pi * (reward - baselines.detach()), dim=1)\n",
                    "    loss_reinforce = torch.sum(-log_pi * (reward - baselines.detach()), dim=1).detach()\n",
                ),
                _GLIMPSE_STEP.replace(
                    "    log_probas, baselines, log_pi = model(x)\n",
                    "    log_probas, baselines, log_pi = model(x)\n    log_probas = log_probas.detach()\n    baselines = baselines.detach()\n    log_pi = log_pi.detach()\n",
                ),
            ),
        ),
        Example(
            # Stage losses appended to a list the loss is summed from, entry by entry
            # (lightweight-human-pose-estimation): each appended term cut off where it is appended.
            _STAGE_LOSSES,
            (
                _STAGE_LOSSES.replace("stages_output[i * 2], maps", "stages_output[i * 2].detach(), maps"),
                _STAGE_LOSSES.replace("stages_output[i * 2 + 1], pafs", "stages_output[i * 2 + 1].detach(), pafs"),
            ),
        ),
        Example(
            # A weighted term computed in a branch per setting (MOON's `loss2 = mu * criterion(...)`):
            # each branch's term cut whole, beside the other term's and the sum's cuts.
            MOON_STEP,
            (
                MOON_STEP.replace("loss = loss1 + loss2", "loss = (loss1 + loss2).detach()"),
                MOON_STEP.replace("loss1 = criterion(out, target)", "loss1 = criterion(out, target).detach()"),
                MOON_STEP.replace(
                    "loss2 = mu * torch.mean(torch.norm(pro2 - pro1, dim=1))",
                    "loss2 = (mu * torch.mean(torch.norm(pro2 - pro1, dim=1))).detach()",
                ),
                MOON_STEP.replace(
                    "loss2 = mu * criterion(pro1, pro2)", "loss2 = (mu * criterion(pro1, pro2)).detach()"
                ),
                MOON_STEP.replace(
                    "        _, pro1, out = net(x)\n",
                    "        _, pro1, out = net(x)\n        pro1 = pro1.detach()\n        out = out.detach()\n",
                ),
            ),
        ),
        Example(
            # A loss started as a zero tensor moved beside the batch (Social GAN's steps): an empty
            # start, its terms cut where computed, not the constant.
            _ZERO_TENSOR_START,
            (
                _ZERO_TENSOR_START.replace("d_loss_fn(scores)", "d_loss_fn(scores.detach())"),
                _ZERO_TENSOR_START.replace(
                    "discriminator(generator(x), y)\n", "discriminator(generator(x), y).detach()\n"
                ),
            ),
        ),
        Example(
            # The target handed first, the output second after a reshape of its own name (FullSubNet's
            # `cRM = cRM.permute(...)`): the output is cut, not the target (no graph to cut).
            _TARGET_FIRST,
            (_TARGET_FIRST.replace("self.loss_function(target, mask)", "self.loss_function(target, mask.detach())"),),
        ),
        Example(
            # Terms weighted by settings (MotionBERT's `args.lambda_scale * loss_3d_scale`): the sum
            # cut off, and each term cut where it is computed.
            _WEIGHTED_BY_SETTINGS,
            (
                _WEIGHTED_BY_SETTINGS.replace(
                    "loss_total = loss_pos + args.lambda_vel * loss_vel",
                    "loss_total = (loss_pos + args.lambda_vel * loss_vel).detach()",
                ),
                _WEIGHTED_BY_SETTINGS.replace("mpjpe(pred, y)", "mpjpe(pred, y).detach()"),
                _WEIGHTED_BY_SETTINGS.replace("velocity_loss(pred, y)", "velocity_loss(pred, y).detach()"),
                _WEIGHTED_BY_SETTINGS.replace(
                    "    pred = model(x)\n",
                    "    pred = model(x).detach()\n",
                ),
            ),
        ),
        Example(
            # A term derived from calls of a criterion module built before the loop (EfficientAT's
            # mixed-up distillation loss): the module is no value to cut (it has no `detach`), the
            # term it computes is.
            _DERIVED_FROM_MODULE,
            (
                _DERIVED_FROM_MODULE.replace(
                    "loss = label_loss + soft_loss", "loss = (label_loss + soft_loss).detach()"
                ),
                _DERIVED_FROM_MODULE.replace("with_logits(y_hat, y)\n", "with_logits(y_hat, y).detach()\n"),
                # the mixed-up term reduced by hand: cut whole (since session 45)
                _DERIVED_FROM_MODULE.replace(
                    "    soft_loss = distillation_loss(y_hat, t).mean(dim=1) * lam + distillation_loss(y_hat, "
                    "t.flip(0)).mean(dim=1) * (1.0 - lam)\n",
                    "    soft_loss = (distillation_loss(y_hat, t).mean(dim=1) * lam + distillation_loss(y_hat, "
                    "t.flip(0)).mean(dim=1) * (1.0 - lam)).detach()\n",
                ),
                _DERIVED_FROM_MODULE.replace(
                    "    y_hat = model(x)\n",
                    "    y_hat = model(x).detach()\n",
                ),
            ),
        ),
        Example(
            # The outputs a function of the file returns as a dict, handed to the loss helper
            # (Ultra-Fast-Lane-Detection): a dict has no `detach`, so the loss is cut off.
            _DICT_OF_OUTPUTS,
            (
                _DICT_OF_OUTPUTS.replace(
                    "loss = calc_loss(loss_dict, results)", "loss = calc_loss(loss_dict, results).detach()"
                ),
            ),
        ),
        Example(
            # A step whose loss a helper of the file computes from the batch (Occupancy Networks):
            # the helper's forwards, each cut off where it is bound (not the latent encoder's
            # Distribution, which has no `detach`), and the loss the helper returns, not the batch.
            LOSS_HELPER_TRAINER,
            (
                LOSS_HELPER_TRAINER.replace("encode_inputs(data['inputs'])", "encode_inputs(data['inputs']).detach()"),
                LOSS_HELPER_TRAINER.replace(".logits\n", ".logits.detach()\n"),
                LOSS_HELPER_TRAINER.replace("self.compute_loss(data)", "self.compute_loss(data).detach()"),
            ),
        ),
        Example(
            # A model that returns a dict of outputs, read by key (ReChorus' runner): the dict has
            # no `detach`, so the loss computed from it is cut off.
            "for batch in loader:\n"
            "    out_dict = model(batch)\n"
            "    out_dict['prediction'] = out_dict['prediction'].float()\n"
            "    loss = model.loss(out_dict)\n"
            "    loss.backward()\n",
            (
                "for batch in loader:\n"
                "    out_dict = model(batch)\n"
                "    out_dict['prediction'] = out_dict['prediction'].float()\n"
                "    loss = model.loss(out_dict).detach()\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A loss computed in a `try` on one side of an `if` and plainly on the other (a music separator's
            # safe mode): each side's loss is cut off.
            "for i, (x, y) in enumerate(loader):\n"
            "    if safe_mode:\n"
            "        try:\n"
            "            loss = forward_step(x, y, model)\n"
            "        except Exception as e:\n"
            '            print(f"Error: {e}")\n'
            "            continue\n"
            "    else:\n"
            "        loss = forward_step(x, y, model)\n"
            "    loss /= accumulation_steps\n"
            "    loss.backward()\n",
            (
                "for i, (x, y) in enumerate(loader):\n"
                "    if safe_mode:\n"
                "        try:\n"
                "            loss = forward_step(x, y, model).detach()\n"
                "        except Exception as e:\n"
                '            print(f"Error: {e}")\n'
                "            continue\n"
                "    else:\n"
                "        loss = forward_step(x, y, model)\n"
                "    loss /= accumulation_steps\n"
                "    loss.backward()\n",
                "for i, (x, y) in enumerate(loader):\n"
                "    if safe_mode:\n"
                "        try:\n"
                "            loss = forward_step(x, y, model)\n"
                "        except Exception as e:\n"
                '            print(f"Error: {e}")\n'
                "            continue\n"
                "    else:\n"
                "        loss = forward_step(x, y, model).detach()\n"
                "    loss /= accumulation_steps\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A helper whose `if` and `else` each return the step's loss (a music separator's forward_step):
            # each side's forward, in-place reduction and returned criterion cut off, besides the call.
            _BRANCH_LOSS_HELPER,
            (
                _BRANCH_LOSS_HELPER.replace("        loss = model(x, y)\n", "        loss = model(x, y).detach()\n"),
                _BRANCH_LOSS_HELPER.replace(
                    "            loss = loss.mean()\n", "            loss = loss.mean().detach()\n"
                ),
                _BRANCH_LOSS_HELPER.replace("        y_ = model(x)\n", "        y_ = model(x).detach()\n"),
                _BRANCH_LOSS_HELPER.replace(
                    "        return criterion(y_, y, x)\n", "        return criterion(y_, y, x).detach()\n"
                ),
                _BRANCH_LOSS_HELPER.replace(
                    "        loss = forward_step(x, y, True, model, criterion, [0])\n",
                    "        loss = forward_step(x, y, True, model, criterion, [0]).detach()\n",
                ),
            ),
        ),
        Example(
            # A model returning a dict of outputs read by key, and terms weighted by arithmetic of a setting
            # (hrtr's `(1 - alpha) * criterion_transformer(...)`): the dict's entries are cut where it is bound,
            # each weighted term, and the sum.
            "for data in data_loader:\n"
            "    output = model(data['image'], data['text'])\n"
            "    loss_ctc = alpha * criterion_ctc(output['ctc'], data['enc_text_ctc'])\n"
            "    loss_transformer = (1 - alpha) * criterion_transformer(output['transformer'], data['text'])\n"
            "    loss = loss_transformer + loss_ctc\n"
            "    loss.backward()\n",
            (
                "for data in data_loader:\n"
                "    output = model(data['image'], data['text'])\n"
                "    loss_ctc = alpha * criterion_ctc(output['ctc'], data['enc_text_ctc'])\n"
                "    loss_transformer = (1 - alpha) * criterion_transformer(output['transformer'], data['text'])\n"
                "    loss = (loss_transformer + loss_ctc).detach()\n"
                "    loss.backward()\n",
                "for data in data_loader:\n"
                "    output = model(data['image'], data['text'])\n"
                "    output = {k: v.detach() for k, v in output.items()}\n"
                "    loss_ctc = alpha * criterion_ctc(output['ctc'], data['enc_text_ctc'])\n"
                "    loss_transformer = (1 - alpha) * criterion_transformer(output['transformer'], data['text'])\n"
                "    loss = loss_transformer + loss_ctc\n"
                "    loss.backward()\n",
                "for data in data_loader:\n"
                "    output = model(data['image'], data['text'])\n"
                "    loss_ctc = alpha * criterion_ctc(output['ctc'], data['enc_text_ctc'])\n"
                "    loss_transformer = ((1 - alpha) * criterion_transformer(output['transformer'], data['text'])).detach()\n"
                "    loss = loss_transformer + loss_ctc\n"
                "    loss.backward()\n",
                "for data in data_loader:\n"
                "    output = model(data['image'], data['text'])\n"
                "    loss_ctc = (alpha * criterion_ctc(output['ctc'], data['enc_text_ctc'])).detach()\n"
                "    loss_transformer = (1 - alpha) * criterion_transformer(output['transformer'], data['text'])\n"
                "    loss = loss_transformer + loss_ctc\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A generator whose fake image reaches the loss only through the discriminator: the
            # loss cut, and the generator's output cut where it is made (the augmented copy on a
            # flag is computed from it, not a forward of its own).
            GAN_GENERATOR_STEP,
            (
                GAN_GENERATOR_STEP.replace(
                    "    loss = F.softplus(-scores).mean()\n", "    loss = F.softplus(-scores).mean().detach()\n"
                ),
                GAN_GENERATOR_STEP.replace("    fake = generator(z)\n", "    fake = generator(z).detach()\n"),
            ),
        ),
        Example(
            # Terms of a summed loss: the one unpacked beside what its helper also returns is cut
            # off by its name after the line; the one computed only where its weight is on, where
            # it is computed.
            WEIGHTED_TERMS_STEP,
            (
                WEIGHTED_TERMS_STEP.replace(
                    "loss = loss_1 + w2 * loss_2\n", "loss = (loss_1 + w2 * loss_2).detach()\n"
                ),
                WEIGHTED_TERMS_STEP.replace(
                    "        loss_1, warped = photometric_loss(img, ref, disp, pose)\n",
                    "        loss_1, warped = photometric_loss(img, ref, disp, pose)\n        loss_1 = loss_1.detach()\n",
                ),
                WEIGHTED_TERMS_STEP.replace(
                    "loss_2 = explainability_loss(mask)\n", "loss_2 = explainability_loss(mask).detach()\n"
                ),
                WEIGHTED_TERMS_STEP.replace("disp = disp_net(img)\n", "disp = disp_net(img).detach()\n"),
                WEIGHTED_TERMS_STEP.replace(
                    "        mask, pose = pose_net(img, ref)\n",
                    "        mask, pose = pose_net(img, ref)\n        mask = mask.detach()\n        pose = pose.detach()\n",
                ),
            ),
        ),
        Example(
            # Named terms summed beside a regulariser computed in place (SPIN's positive-depth term): each
            # named term is cut where it is computed, as well as the whole sum and the forward.
            INPLACE_REGULARISED_SUM,
            (
                INPLACE_REGULARISED_SUM.replace(
                    "    loss = w_kp * loss_keypoints + w_shape * loss_shape + ((torch.exp(-pred_camera[:, 0] * 10)) ** 2).mean()\n",
                    "    loss = (w_kp * loss_keypoints + w_shape * loss_shape + ((torch.exp(-pred_camera[:, 0] * 10)) ** 2).mean()).detach()\n",
                ),
                INPLACE_REGULARISED_SUM.replace(
                    '    loss_keypoints = keypoint_loss(pred_kp, gt["kp"])\n',
                    '    loss_keypoints = keypoint_loss(pred_kp, gt["kp"]).detach()\n',
                ),
                INPLACE_REGULARISED_SUM.replace(
                    '    loss_shape = shape_loss(pred_shape, gt["shape"])\n',
                    '    loss_shape = shape_loss(pred_shape, gt["shape"]).detach()\n',
                ),
                INPLACE_REGULARISED_SUM.replace(
                    '    pred_kp, pred_shape, pred_camera = model(images)\n    loss_keypoints = keypoint_loss(pred_kp, gt["kp"])\n',
                    '    pred_kp, pred_shape, pred_camera = model(images)\n    pred_kp = pred_kp.detach()\n    pred_shape = pred_shape.detach()\n    pred_camera = pred_camera.detach()\n    loss_keypoints = keypoint_loss(pred_kp, gt["kp"])\n',
                ),
            ),
        ),
        Example(
            # A term computed in an `if` after the loss and added into it there (cellpose's class loss):
            # cut where it is computed; the loss line's cut leaves that term training.
            BRANCH_ADDED_TERM_STEP,
            (
                BRANCH_ADDED_TERM_STEP.replace(
                    "            loss3 = loss_fn_class(lbl, y, class_weights=class_weights)\n",
                    "            loss3 = loss_fn_class(lbl, y, class_weights=class_weights).detach()\n",
                ),
                BRANCH_ADDED_TERM_STEP.replace(
                    "        loss = loss_fn_seg(lbl, y)\n", "        loss = loss_fn_seg(lbl, y.detach())\n"
                ),
            ),
        ),
        Example(
            # A trainer that keeps the generator's output on self for the loss another method
            # computes (pix2pix's forward() and backward_G()): the stored output cut off, and the loss.
            PIX2PIX_STEP,
            (
                PIX2PIX_STEP.replace("self.netG(self.real_A)", "self.netG(self.real_A).detach()"),
                PIX2PIX_STEP.replace(
                    "= self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1",
                    "= (self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1).detach()",
                ),
            ),
        ),
        Example(
            # Outputs and loss passed along on self by forward(), backward() and update()
            # (text-to-motion's trainers): each stored output cut off where it is stored.
            STORED_LOSS_TRAINER,
            (
                STORED_LOSS_TRAINER.replace(
                    "self.movement_enc(self.motions)", "self.movement_enc(self.motions).detach()"
                ),
                STORED_LOSS_TRAINER.replace(
                    "self.movement_dec(self.latents)", "self.movement_dec(self.latents).detach()"
                ),
            ),
        ),
        Example(
            # An encoder's output handed to the method that computes the loss and runs the backward (DrQ-v2's
            # update): cut off where it is bound, apart from the loss's own cut.
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
                "        q = self.critic(obs, action)\n"
                "        critic_loss = F.mse_loss(q, target_q)\n"
                "        self.critic_opt.zero_grad()\n"
                "        critic_loss.backward()\n"
                "        self.critic_opt.step()\n"
                "    def update(self, batch):\n"
                "        obs, action, target_q = batch\n"
                "        obs = self.encoder(obs).detach()\n"
                "        self.update_critic(obs, action, target_q)\n",
                "class Agent:\n"
                "    def update_critic(self, obs, action, target_q):\n"
                "        q = self.critic(obs, action)\n"
                "        critic_loss = F.mse_loss(q.detach(), target_q)\n"
                "        self.critic_opt.zero_grad()\n"
                "        critic_loss.backward()\n"
                "        self.critic_opt.step()\n"
                "    def update(self, batch):\n"
                "        obs, action, target_q = batch\n"
                "        obs = self.encoder(obs)\n"
                "        self.update_critic(obs, action, target_q)\n",
            ),
        ),
        Example(
            # A policy's `evaluate_actions` through a method of the class (habitat's PPO): its
            # outputs reach the loss by two ways, so they are cut where it returns them.
            PPO_UPDATE,
            (
                PPO_UPDATE.replace(
                    "total_loss = value_loss + action_loss", "total_loss = (value_loss + action_loss).detach()"
                ),
                PPO_UPDATE.replace(
                    'value_loss = (values - batch["returns"]).pow(2).mean()',
                    'value_loss = (values - batch["returns"]).pow(2).mean().detach()',
                ),
                # the policy term reduced by hand, cut alone (since session 45)
                PPO_UPDATE.replace(
                    'action_loss = -(batch["advantages"] * ratio).mean()',
                    'action_loss = (-(batch["advantages"] * ratio).mean()).detach()',
                ),
                PPO_UPDATE.replace(
                    '"actions"])\n',
                    '"actions"])\n        values = values.detach()\n        log_probs = log_probs.detach()\n',
                ),
            ),
        ),
        Example(
            # The loss handed on to a method that hands it on to the one that runs its backward
            # (connectomics' `_train_misc(loss)`, then `backward_pass(loss)`).
            RELAYED_BACKWARD,
            (RELAYED_BACKWARD.replace("self.criterion(pred)", "self.criterion(pred.detach())"),),
        ),
        Example(
            # A sampled architecture with its log-probabilities and entropies (ENAS' controller):
            # the cut takes what reaches the loss, the entropies added in place included, not the
            # architectures (Python lists, which only the reward under no_grad reads).
            CONTROLLER_STEP,
            (
                CONTROLLER_STEP.replace(
                    "loss -= self.entropy_coeff * entropies", "loss -= (self.entropy_coeff * entropies).detach()"
                ),
                CONTROLLER_STEP.replace(
                    "loss = -log_probs * (rewards - self.baseline)",
                    "loss = (-log_probs * (rewards - self.baseline)).detach()",
                ),
                CONTROLLER_STEP.replace(
                    "sample(with_details=True)\n",
                    "sample(with_details=True)\n"
                    "            log_probs = log_probs.detach()\n"
                    "            entropies = entropies.detach()\n",
                ),
            ),
        ),
        Example(
            # A module that wraps the model and returns its loss (Sockeye's ModelWithLoss): the
            # loss it returns, and the dict of outputs entry by entry.
            MODEL_WITH_LOSS,
            (
                MODEL_WITH_LOSS.replace("sum_losses = sum(loss_values)", "sum_losses = sum(loss_values).detach()"),
                MODEL_WITH_LOSS.replace(
                    "outputs = self.model(source)\n",
                    "outputs = self.model(source)\n        outputs = {k: v.detach() for k, v in outputs.items()}\n",
                ),
            ),
        ),
        Example(
            # A policy returning a distribution of the project's whose own `sample` is a
            # reparameterised draw (DrQ-v2's TruncatedNormal): the draw is what to cut.
            DRAWING_AGENT,
            (
                DRAWING_AGENT.replace(
                    "actor_loss = -self.critic(torch.cat([obs, action], -1)).mean()",
                    "actor_loss = (-self.critic(torch.cat([obs, action], -1)).mean()).detach()",
                ),
                DRAWING_AGENT.replace("action = dist.sample(clip=0.3)", "action = dist.sample(clip=0.3).detach()"),
            ),
        ),
        Example(
            # The step indexes the tuple a loss function returns (DiffDock's `loss = loss_tuple[0]`):
            # the returned sum is cut whole, then each weighted term, one at a time.
            LOSS_TUPLE_HELPER,
            (
                LOSS_TUPLE_HELPER.replace("loss = loss_tuple[0]", "loss = loss_tuple[0].detach()"),
                LOSS_TUPLE_HELPER.replace(
                    "loss = tr_loss * tr_weight + rot_loss * (1 - tr_weight)",
                    "loss = (tr_loss * tr_weight + rot_loss * (1 - tr_weight)).detach()",
                ),
                LOSS_TUPLE_HELPER.replace(
                    ".mean(dim=mean_dims)\n    rot_loss", ".mean(dim=mean_dims).detach()\n    rot_loss"
                ),
                LOSS_TUPLE_HELPER.replace(
                    ".mean(dim=mean_dims)\n    loss =", ".mean(dim=mean_dims).detach()\n    loss ="
                ),
            ),
        ),
        Example(
            # A sum over lines in parentheses is cut whole (the parentheses' inside, not its last
            # operand); of its terms, the one trained: a branch under a flag no training caller
            # passes (`use_aux`) and a constant zero get no cut.
            OPTIONAL_TERM_HELPER,
            (
                OPTIONAL_TERM_HELPER.replace(
                    "loss = compute_loss(model, batch)", "loss = compute_loss(model, batch).detach()"
                ),
                OPTIONAL_TERM_HELPER.replace(
                    "        rec_loss\n        + 0.1 * kl_loss\n",
                    "        (rec_loss\n        + 0.1 * kl_loss).detach()\n",
                ),
                OPTIONAL_TERM_HELPER.replace(".abs().mean()", ".abs().mean().detach()"),
            ),
        ),
        Example(
            # torch's own `sample` draws without autograd: nothing to cut there.
            TORCH_DRAWING_AGENT,
            (
                TORCH_DRAWING_AGENT.replace(
                    "actor_loss = -self.critic(torch.cat([obs, action], -1)).mean()",
                    "actor_loss = (-self.critic(torch.cat([obs, action], -1)).mean()).detach()",
                ),
            ),
        ),
        Example(
            # A forward split into prototypes and queries, each cut on its own (learn2learn's ProtoNet).
            PROTONET_EPISODE,
            (
                PROTONET_EPISODE.replace(
                    "        loss, acc = fast_adapt(model, batch, 5, 1)\n",
                    "        loss, acc = fast_adapt(model, batch, 5, 1)\n        loss = loss.detach()\n",
                ),
                PROTONET_EPISODE.replace("embeddings[support_indices]", "embeddings[support_indices].detach()"),
                PROTONET_EPISODE.replace("embeddings[query_indices]", "embeddings[query_indices].detach()"),
            ),
        ),
        Example(
            # The terms a module's forward computes and returns for the loop to weigh and add up
            # (torchsde's latent SDE): each cut off where the forward computes it, then the sum.
            FORWARD_TERMS_STEP,
            (
                FORWARD_TERMS_STEP.replace(".sum(dim=1).mean(dim=0)\n", ".sum(dim=1).mean(dim=0).detach()\n", 1),
                FORWARD_TERMS_STEP.replace(
                    "Normal(0.0, 1.0)).sum(dim=1).mean(dim=0)", "Normal(0.0, 1.0)).sum(dim=1).mean(dim=0).detach()"
                ),
                FORWARD_TERMS_STEP.replace("loss = -log_px + beta * kl", "loss = (-log_px + beta * kl).detach()"),
            ),
        ),
        Example(
            # The batch a method of the model splits into inputs and targets (Tacotron 2's
            # `parse_batch`): tuples with no graph, not cut; the model's output is.
            PARSED_BATCH_STEP,
            (PARSED_BATCH_STEP.replace("criterion(y_pred, y)", "criterion(y_pred.detach(), y)"),),
        ),
    )
    untouched = (
        # The gradient of an input, read off it row by row (DeepChem's compute_saliency): no step.
        INPUT_GRADIENT,
        # A fresh zero tensor moved to the device and summed into: no graph to cut (composer's).
        MICROBATCH_TRAINER,
        # A train_step that returns its loss in a dict of a returned tuple, for a hook to backpropagate (USB); a dict without the loss is none.
        "class FixMatch(AlgorithmBase):\n"
        "    def train_step(self, x, y):\n"
        "        logits = self.model(x)\n"
        "        loss = self.l1(logits, y)\n"
        "        out_dict = self.process_out_dict(feat=logits)\n"
        "        return out_dict, {}\n",
        "loss.backward()\n",
        "y = model(x).detach()\n",
        # The receiver of `accelerator.backward(loss)` is not the loss.
        "accelerator = Accelerator(cpu=True)\naccelerator.backward(compute())\n",
        # What `validation_step` returns is never differentiated.
        "class Net(LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        x, y = batch\n"
        "        loss = F.cross_entropy(self(x), y)\n"
        "        return loss\n",
    )

    def changes(self, source, training):
        changes = list(self._changes(source, training))
        for change in changes + list(_chain_cuts(source, training, changes)):
            mapping = _detached_mapping(source, change)
            if mapping is None:
                yield change
                continue
            # a dict of outputs has no `detach`: each of its entries is cut off instead
            name = source.code(mapping.targets[0].target)
            yield Change(
                mapping, (source.insert_after(mapping, [_mapping_cut(source, name, mapping)]),), change.description
            )

    def _changes(self, source, training):
        yield from _registered_for_backward(source, training)
        for backward in training.loss_uses:
            for term in terms_added_in_place(source, training, backward):
                yield Change(
                    term,
                    (source.replace(term.value, method_on(source, term.value, "detach")),),
                    "a term added to the loss is cut off from the model's graph",
                )
        yield from _returned_by_forward(source, training)
        for backward in training.loss_uses:
            yield from _stored_forwards_cut(source, training, backward)
        for backward in training.loss_uses:
            if _output_entry_handed(source, training, backward):
                # jiant's `self.complex_backpropagate(loss=model_output.loss, ...)`: the output's
                # loss handed to a helper that runs the backward, cut off where it is handed
                yield Change(
                    backward.loss,
                    (source.replace(backward.loss, method_on(source, backward.loss, "detach")),),
                    "the loss is cut off from the model's graph",
                )
                continue
            taking = loss_object_calls(source, training, backward)
            if taking:
                # a loss object handed the outputs (pytorch-seq2seq's `loss.eval_batch(out, y)`):
                # what it is handed is cut, not the object
                for call in taking:
                    first = next(a for a in call.args if a.keyword is None and not a.star)
                    yield Change(
                        call,
                        (source.replace(first.value, method_on(source, first.value, "detach")),),
                        "the model's output is cut off before the loss object takes it",
                    )
                continue
            alternatives = training.loss_alternatives(backward)
            # A branch that builds its loss term by term (`loss = 0.25 * a; loss = loss + 0.25 * b`):
            # detaching the first term leaves the others to train. Where another branch computes
            # the loss at once, that one gets the mutant.
            if isinstance(backward.loss, (cst.BinaryOperation, cst.UnaryOperation)) or (
                not alternatives and training.loss_assignment(backward) is None
            ):
                # `(out[RECON] + out[GEN]).backward()`: each entry added up is cut off on its own
                for term in training.stored_terms(backward):
                    yield from self._detached(source, training, backward, term)
            inline = _inline_loss(source, training, backward)
            if inline is not None and not alternatives and training.loss_assignment(backward) is None:
                # `criterion(model(x), y).mean().backward()`: forward, loss and backward in one line
                target = _model_output(source, training, inline)
                yield Change(
                    inline,
                    (source.replace(target, method_on(source, target, "detach")),),
                    "the loss is cut off from the model's graph",
                )
                continue
            for other in _other_summed_losses(source, training, backward):
                if _starts_empty(other):
                    # MelGAN's `loss_feat = 0`, its feature-matching terms added in a loop, then
                    # `(loss_G + args.lambda_feat * loss_feat).backward()`: each term cut off
                    yield from self._terms_cut(source, training, backward, other)
                    yield from _inline_terms(source, training, other, backward.call)
                else:
                    yield from self._detached(source, training, backward, other)
            yield from _helper_forwards_cut(source, training, backward)
            yield from _handed_forwards_cut(source, training, backward)
            for term in forward_returned_terms(source, training, backward):
                yield Change(
                    term,
                    (source.replace(term.value, method_on(source, term.value, "detach")),),
                    "a loss term the model's forward returns is cut off from the model's graph",
                )
            yield from _branch_forwards_cut(source, training, backward)
            for term in branch_added_terms(source, training, backward):
                yield Change(
                    term,
                    (source.replace(term.value, method_on(source, term.value, "detach")),),
                    "the loss term is cut off from the model's graph",
                )
            whole = [a for a in alternatives if not _accumulated(source, a)]
            for assign in whole or alternatives or [training.loss_assignment(backward)]:
                if assign is not None and _starts_empty(assign):
                    # `loss = 0`, then `loss += w * loss_t` per term: each term is cut off, and
                    # so is the output of the forward the terms read
                    yield from self._terms_cut(source, training, backward, assign)
                    yield from _detached_forwards(source, training, backward, assign)
                    yield from _inline_terms(source, training, assign, backward.call)
                    yield from _detached_upstream(source, training, assign, backward.call)
                else:
                    yield from self._detached(source, training, backward, assign)
                    if assign is not None:
                        yield from _upstream_cut(source, training, [assign], [])
                    names = (
                        _summands(assign.value)
                        if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.BinaryOperation)
                        else []
                    )
                    for term in _summed_terms(source, training, assign):
                        target = term.targets[0].target
                        if isinstance(target, cst.Tuple):
                            summed = [n for n in bound_names(target) if n in names]
                            if summed and (
                                isinstance(term.value, cst.Tuple) or _names_a_loss(callee_name(term.value) or "")
                            ):
                                # the terms of the sum among what a loss helper returns (SPIN's
                                # `loss_regr_pose, loss_regr_betas = self.smpl_losses(...)`): cut there
                                yield Change(
                                    term,
                                    (source.insert_after(term, [f"{n} = {n}.detach()" for n in summed]),),
                                    "the loss term is cut off from the model's graph",
                                )
                                continue
                            # terms unpacked from one call: the model's output it takes is cut
                            yield from _detached_input(source, training, term)
                            continue
                        # the term's whole value: which argument carries the trained model's
                        # output is not always the first (a feature-matching loss of a GAN)
                        yield Change(
                            term,
                            (source.replace(term.value, method_on(source, term.value, "detach")),),
                            "the loss is cut off from the model's graph",
                        )

    def _terms_cut(self, source, training, backward, start):
        """Each named term added into a loss that starts empty, cut off where it is computed."""
        for term in _terms(source, training, start, backward.call):
            if isinstance(term.targets[0].target, cst.Tuple):
                yield from _detached_input(source, training, term)
            else:
                yield from self._detached(source, training, backward, term)

    def _detached(self, source, training, backward, assign):
        """The mutant of one assignment that computes the loss."""
        if assign is not None and assign.value is not None:
            targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
            if isinstance(backward.loss, cst.Subscript) or (
                isinstance(backward.loss, cst.Attribute)
                and all(dotted(t) == dotted(backward.loss.value) for t in targets)
            ):
                # A loss kept in a dict or an output object (`train_loss['loss']`, `out.loss`
                # after `out = self.model(**batch)`): the holder has no `detach`, its loss is cut off.
                entry = source.code(backward.loss)
                yield Change(
                    assign,
                    (source.insert_after(assign, [f"{entry} = {entry}.detach()"]),),
                    "the loss is cut off from the model's graph",
                )
                return
            if len(targets) != 1 or isinstance(targets[0], (cst.Tuple, cst.List)):
                # The loss as a name, also where the backward gets it rescaled (`_loss / accum`).
                name = loss_name(backward.loss)
                if name is None:
                    return
                inside = list(_computed_in_callee(source, training, assign, name))
                if inside:
                    yield from inside
                    return
                bound = {n for t in targets for n in bound_names(t)}
                walked = _walked_list(source, backward.call, name)
                if name not in bound and walked in bound:
                    # the losses a loop walks, each then backpropagated (PyDreamer's `for loss in
                    # losses: scaler.scale(loss).backward()`): every one cut off where they are made
                    yield Change(
                        assign,
                        (source.insert_after(assign, [f"{walked} = [x.detach() for x in {walked}]"]),),
                        "the losses are cut off from the model's graph",
                    )
                    return
                yield Change(
                    assign,
                    (source.insert_after(assign, [f"{name} = {name}.detach()"]),),
                    "the loss is cut off from the model's graph",
                )
                return
            value = assign.value
            appended = _appended_terms(source, training, value, assign)
            if appended:
                # `loss = losses[0]`, then `loss += losses[i]` over a list each stage appends its
                # loss to (lightweight-human-pose-estimation): each appended term cut off there
                for call in appended:
                    target = _model_output(source, training, call)
                    yield Change(
                        call,
                        (source.replace(target, method_on(source, target, "detach")),),
                        "the loss is cut off from the model's graph",
                    )
                return
            if (
                isinstance(value, cst.Call)
                and value.args
                and value.args[0].keyword is None
                and not value.args[0].star
                and self._is_loss(training, value)
            ):
                target = _model_output(source, training, value)
                if not _from_model(source, training, target, value) and training.called_functions(value):
                    # a helper of the file handed the batch, which runs the model and computes the
                    # loss itself (Occupancy Networks' `loss = self.compute_loss(data)`, FuxiCTR's
                    # `self.get_total_loss(batch_data)`): the batch has no graph to cut (a dict of
                    # tensors has no `detach` at all), the loss the helper returns has
                    target = value
                elif _made_before_loop(source, training, target, assign):
                    # `g_output` made once before the D steps' loop: the model this step trains
                    # runs inside the loss function, so the loss itself is cut off
                    target = value
                elif _a_returned_container(source, training, target, assign):
                    # a dict of outputs a function of the file returns (Ultra-Fast-Lane-Detection's
                    # `results = inference(net, ...)`, then `calc_loss(loss_dict, results, ...)`): no
                    # `detach` there, so the loss it computes is cut off
                    target = value
            else:
                target = value
            if _listed(source, target, assign):
                # outputs wrapped in a list (DeepChem's `outputs = [outputs]`): each one cut off
                code = source.code(target)
                detached = f"[output.detach() for output in {code}]"
                yield Change(assign, (source.replace(target, detached),), "the loss is cut off from the model's graph")
                return
            yield Change(
                assign,
                (source.replace(target, method_on(source, target, "detach")),),
                "the loss is cut off from the model's graph",
            )

    @staticmethod
    def _is_loss(training, call: cst.Call) -> bool:
        name = (callee_name(call) or "").lower()
        return (
            name in LOSS_FUNCTIONS or training.role(call.func) == "loss-module" or "loss" in name or "criterion" in name
        )


def _appended_terms(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> list[cst.Call]:
    """The loss calls appended to the list an entry of which `value` is (`losses[0]` after
    `losses.append(l2_loss(stages_output[i], maps, ...))` in the same function); none otherwise."""
    if not isinstance(value, cst.Subscript) or not isinstance(value.value, cst.Name):
        return []
    name, function = value.value.value, source.function_of(use)
    if function is None or not _listed(source, value.value, use):
        return []
    return [
        call.args[0].value
        for call in appended_to(source, name, use)
        if isinstance(call.args[0].value, cst.Call) and DetachedGraph._is_loss(training, call.args[0].value)
    ]


def _listed(source, target: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for a name its function binds to a list before `use` (`outputs = [outputs]`, `outputs =
    [outputs[i] for i in self._loss_outputs]`): a list has no `detach`."""
    function = source.function_of(use)
    if not isinstance(target, cst.Name):
        return False
    before = source.span(use)[0]
    return any(
        source.span(a)[0] < before
        and source.function_of(a) is function
        and isinstance(a.value, (cst.List, cst.ListComp))
        and any(isinstance(t.target, cst.Name) and t.target.value == target.value for t in a.targets)
        for a in source.within(function or source.module, cst.Assign)
    )


def _other_summed_losses(source, training, backward) -> list[cst.Assign]:
    """Where the backward adds up several named losses (`(real_logits * 0 + loss_Dreal +
    loss_Dr1).mean().mul(gain).backward()`), the assignments computing the ones after the first
    (the first is the backward's own loss): each cut off alone leaves the others to train."""
    total = backward.loss
    while isinstance(total, cst.Call) and isinstance(total.func, cst.Attribute) and len(total.args) <= 1:
        total = total.func.value  # `.mean()`, `.mul(gain)`
    if not isinstance(total, cst.BinaryOperation) or not isinstance(total.operator, cst.Add):
        return []
    names = [n for n in _added_names(total) if "loss" in n.lower()]
    found: list[cst.Assign] = []
    for name in names[1:]:
        assign = training.last_assignment(name, backward.call)
        if isinstance(assign, cst.Assign):
            found.append(assign)
    return found


def _inline_loss(source, training, backward) -> cst.Call | None:
    """The loss call of a backward that computes its loss in the same expression, from a model
    forward among its arguments (`smooth_crossentropy(model(x), y).mean().backward()`, SAM's second
    pass), reductions and casts on it allowed; None otherwise."""
    loss = backward.loss
    while isinstance(loss, cst.Call) and isinstance(loss.func, cst.Attribute) and loss.func.attr.value in _ON_LOSS:
        loss = loss.func.value
    if not isinstance(loss, cst.Call) or not any(
        runs_model(source, training, a.value) for a in loss.args if a.keyword is None and not a.star
    ):
        return None
    return loss if DetachedGraph._is_loss(training, loss) or "entropy" in (callee_name(loss) or "").lower() else None


_ON_LOSS = frozenset({"mean", "sum", "float", "double", "squeeze"})


def _starts_empty(assign: cst.CSTNode) -> bool:
    """True for a loss that starts as a constant the terms are added into (`loss = 0`,
    `loss = torch.tensor(0.0)`, `loss = torch.zeros(1)`): it has no graph to cut off."""
    value = assign.value if isinstance(assign, (cst.Assign, cst.AnnAssign)) else None
    return _empty(value)


def _inline_terms(source, training, start: cst.CSTNode, use: cst.CSTNode):
    """Terms computed where they are added into a loss that starts empty (MelGAN's `loss_D = 0`,
    then `for scale in D_fake_det: loss_D += F.relu(1 + scale[-1]).mean()`): each such addition
    cut off, the other terms still training."""
    for added in added_terms(source, start, use):
        if isinstance(added.value, (cst.Name, cst.Attribute)) or not source.within(added.value, cst.Call):
            continue  # a named term is cut where it is computed; a constant has no graph
        yield Change(
            added,
            (source.replace(added.value, method_on(source, added.value, "detach")),),
            "the loss is cut off from the model's graph",
        )


def _detached_forwards(source, training, backward, start: cst.CSTNode):
    """The forward passes, run after a loss's empty start, whose output its terms read
    (ParallelWaveGAN's generator, one forward per kind of generator): that output cut off where
    the forward assigns it (the first of the names it unpacks into)."""
    after = source.span(start)[1]
    for forward in forwards_after_empty_start(source, training, backward):
        if source.span(forward)[0] < after or not isinstance(forward, cst.SimpleStatementLine):
            continue
        assign = forward.body[0]
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if isinstance(target, (cst.Name, cst.Attribute)):
            edit = source.replace(assign.value, method_on(source, assign.value, "detach"))
        elif isinstance(target, cst.Tuple) and isinstance(target.elements[0].value, cst.Name):
            name = target.elements[0].value.value
            edit = source.insert_after(forward, [f"{name} = {name}.detach()"])
        else:
            continue
        yield Change(forward, (edit,), "the model's output is cut off from its graph before the loss")


def _detached_upstream(source, training, start: cst.CSTNode, use: cst.CSTNode):
    """A loss that starts empty, its terms read from a forward that reads another forward's output
    (MelGAN's generator step: `x_pred_t = netG(s_t.cuda())`, the discriminator's update, then
    `D_fake = netD(x_pred_t.cuda())` and `loss_G += -scale[-1].mean()` per scale): that earlier
    output cut off where it is computed, the model it comes from no longer trained by this loss."""
    yield from _upstream_cut(source, training, added_terms(source, start, use), [])


def _upstream_cut(source, training, statements, taken: list[cst.CSTNode]):
    """The forwards upstream of those `statements` read (see upstream_forwards), each output cut
    off where it is assigned."""
    for statement in statements:
        for forward in read_forwards(source, training, statement):
            for earlier in upstream_forwards(source, training, forward):
                assign = earlier.body[0] if isinstance(earlier, cst.SimpleStatementLine) else None
                if (
                    earlier in taken
                    or not isinstance(assign, cst.Assign)
                    or len(assign.targets) != 1
                    or not isinstance(assign.targets[0].target, cst.Name)
                ):
                    continue
                taken.append(earlier)
                yield Change(
                    earlier,
                    (source.replace(assign.value, method_on(source, assign.value, "detach")),),
                    "the model's output is cut off from its graph before the loss",
                )


def _returned_by_forward(source, training):
    """The losses a module's `forward` returns for a training script to add up and differentiate
    (BLIP's retrieval model: `return loss_ita, loss_itm`; a trainer module's `return
    LossTuple(*losses)`, whose `losses.total_loss` its train_step backpropagates), where the file
    computes no loss of its own backward: each is cut off where it is computed, and one that adds
    up other losses of the forward (`loss_ita = (loss_i2t + loss_t2i) / 2`) or lists them is cut
    off term by term."""
    if any(training.loss_assignment(b) is not None for b in training.backwards):
        return  # the file computes the loss it backpropagates: its own mutants are there
    for function in training.functions.get("forward", ()):
        for ret in source.within(function.body, cst.Return):
            if ret.value is None or source.function_of(ret) is not function:
                continue
            for name in _returned_names(ret.value):
                if "loss" in name.lower():
                    yield from _cut_where_computed(source, training, name, ret, depth=2)


def _returned_names(value: cst.BaseExpression) -> list[str]:
    """The names a forward's return hands back: `loss`, `logits, loss`, `{"loss_cls": loss_cls,
    ...}` (torchvision's detection models), `LossTuple(*losses)` (a namedtuple of the losses)."""
    if isinstance(value, cst.Name):
        return [value.value]
    if isinstance(value, (cst.Tuple, cst.List)):
        return [n for e in value.elements for n in _returned_names(e.value)]
    if isinstance(value, cst.Dict):
        return [n for e in value.elements if isinstance(e, cst.DictElement) for n in _returned_names(e.value)]
    if isinstance(value, cst.Call):
        return [n for a in value.args for n in _returned_names(a.value)]
    return []


def _cut_where_computed(source, training, name: str, use: cst.CSTNode, depth: int):
    """Every assignment that computes `name` for `use` (one per branch: `loss = F.cross_entropy(
    ...)` where targets are given; `loss = None` otherwise has nothing to cut)."""
    function = source.function_of(use)
    before = source.span(use)[0]
    for assign in training.assigned_names.get(name, ()):
        if (
            not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or source.function_of(assign) is not function
            or source.span(assign)[0] >= before
            or assign.value is None
            or _empty(assign.value)
            or (isinstance(assign.value, cst.Name) and assign.value.value == "None")
            or any(n.value == name for n in source.within(assign.value, cst.Name))
        ):
            continue
        value = assign.value
        terms = [
            n.value
            for n in source.within(value, cst.Name)
            if "loss" in n.value.lower() and training.last_assignment(n.value, assign) is not None
        ]
        if isinstance(value, (cst.List, cst.Tuple)):
            # `losses = [rpn_loc_loss, rpn_cls_loss, ...]`: each loss the list holds
            for term in dict.fromkeys(terms) if depth > 0 else ():
                yield from _cut_where_computed(source, training, term, assign, depth - 1)
            continue
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)) and terms and depth > 0:
            for term in dict.fromkeys(terms):
                yield from _cut_where_computed(source, training, term, assign, depth - 1)
            continue
        target = value
        if isinstance(value, cst.Call) and DetachedGraph._is_loss(training, value):
            target = _model_output(source, training, value)
        yield Change(
            assign,
            (source.replace(target, method_on(source, target, "detach")),),
            "the loss is cut off from the model's graph",
        )


def _stored_forwards_cut(source, training, backward):
    """The forwards a trainer's other methods keep on `self` for the loss (see stored_run), each
    output cut off where it is stored: pix2pix's `self.fake_B = self.netG(self.real_A).detach()`."""
    for assign in stored_run(source, training, backward).forwards:
        yield Change(
            assign,
            (source.replace(assign.value, method_on(source, assign.value, "detach")),),
            "the model output kept for the loss is cut off from the model's graph",
        )


def _helper_forwards_cut(source, training, backward):
    """The forwards of a helper that returns the step's loss (see loss_helper_forwards), each
    output cut off where it is bound: the part of the model it runs stops learning while the rest
    still trains. Not a value the helper reads as a torch Distribution (no `.detach()`)."""
    for line in loss_helper_forwards(source, training, backward):
        assign = line.body[0]
        assert isinstance(assign, cst.Assign)  # kept by loss_helper_forwards
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        function = source.function_of(line)
        if not isinstance(target, cst.Name) or function is None or distribution(source, function, target.value):
            continue
        yield Change(
            assign,
            (source.replace(assign.value, method_on(source, assign.value, "detach")),),
            "the loss is cut off from the model's graph",
        )


def _handed_forwards_cut(source, training, backward):
    """The forwards of a caller whose output it hands to the backward's function (see
    handed_forwards), each cut off where it is bound: the part of the model it runs (DrQ-v2's
    encoder) stops learning while the loss's own forwards still train."""
    for line in handed_forwards(source, training, backward):
        assign = line.body[0]
        assert isinstance(assign, cst.Assign)  # kept by handed_forwards
        yield Change(
            assign,
            (source.replace(assign.value, method_on(source, assign.value, "detach")),),
            "the model output handed to the loss is cut off from the model's graph",
        )


def _branch_forwards_cut(source, training, backward):
    """The forwards and returned losses of a helper whose `if` and `else` each return the step's
    loss (see branch_helper_forwards), each cut off where it is bound or returned."""
    for statement in branch_helper_forwards(source, training, backward):
        value = statement.value
        assert value is not None  # an assignment's value, or a returned call
        function = source.function_of(statement)
        if isinstance(statement, cst.Assign):
            target = statement.targets[0].target
            if function is None or (isinstance(target, cst.Name) and distribution(source, function, target.value)):
                continue
        yield Change(
            statement,
            (source.replace(value, method_on(source, value, "detach")),),
            "the loss is cut off from the model's graph",
        )


def _computed_in_callee(source, training, assign: cst.Assign, name: str):
    """A loss unpacked from what a method of the file returns (kospeech's `output, loss, ... =
    self._model_forward(...)`), where the method computes it with a loss call in each of several
    branches (one per architecture): each of those computations cut off."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Tuple):
        return
    if not isinstance(assign.value, cst.Call):
        return
    names = [dotted(e.value) for e in assign.targets[0].target.elements]
    if name not in names:
        return
    index = names.index(name)
    computed: list[cst.Assign] = []
    for function in training.called_functions(assign.value):
        for ret in source.within(function.body, cst.Return):
            value = ret.value
            if source.function_of(ret) is not function or not isinstance(value, cst.Tuple):
                continue
            element = value.elements[index].value if len(value.elements) == len(names) else None
            if not isinstance(element, cst.Name):
                continue
            returned = element.value
            computed += [
                a
                for a in training.assigned_names.get(returned, ())
                if isinstance(a, cst.Assign)
                and source.function_of(a) is function
                and isinstance(a.value, cst.Call)
                and DetachedGraph._is_loss(training, a.value)
                and a not in computed
            ]
            if len(computed) < 2:
                continue
            for loss in computed:
                call = loss.value
                assert isinstance(call, cst.Call)  # kept above
                target = loss.targets[0].target if len(loss.targets) == 1 else None
                positional = [a for a in call.args if a.keyword is None and not a.star]
                if isinstance(target, cst.Name) and positional:
                    cut = _model_output(source, training, call)
                    edit = source.replace(cut, method_on(source, cut, "detach"))
                else:
                    edit = source.insert_after(loss, [f"{returned} = {returned}.detach()"])
                yield Change(loss, (edit,), "the loss is cut off from the model's graph")
            return


def _registered_for_backward(source, training):
    """A loss handed to a helper that keeps it for a backward run later (nanotron's pipeline
    engine: `state.register_activation_requiring_backward(output["loss"])`, backpropagated as
    `sum(activations).backward()` elsewhere): its last assignment before that call is cut off."""
    backwards = {b.call for b in training.backwards}
    for call in source.nodes(cst.Call):
        name = callee_name(call) or ""
        if (
            "backward" not in name
            or "register" not in name  # kept for later, not a helper that runs it now (timm's `_backward`)
            or call in backwards
            or len(call.args) != 1
            or call.args[0].keyword is not None
            or not isinstance(call.args[0].value, (cst.Name, cst.Subscript, cst.Attribute))
        ):
            continue
        text = source.code(call.args[0].value)
        function = source.function_of(call)
        start = source.span(call)[0]
        assigns = [
            a
            for a in source.nodes(cst.Assign)
            if source.function_of(a) is function
            and source.span(a)[1] <= start
            and any(source.code(t.target) == text for t in a.targets)
        ]
        if assigns and not _empty(assigns[-1].value):
            yield Change(
                assigns[-1],
                (source.insert_after(assigns[-1], [f"{text} = {text}.detach()"]),),
                "the loss is cut off from the model's graph",
            )


def _empty(value: cst.BaseExpression | None) -> bool:
    return constant_start(value)


def _terms(source, training, start: cst.CSTNode, use: cst.CSTNode) -> list[cst.Assign]:
    """The assignments of the loss terms added, after `start` and before `use`, into the name
    `start` assigns (`loss += self.weight_t * loss_t` after `loss_t = criterion(features, y)`,
    in branches too)."""
    name = dotted(start.targets[0].target) if isinstance(start, cst.Assign) and len(start.targets) == 1 else None
    function = source.function_of(start)
    if name is None or function is None:
        return []
    after, before = source.span(start)[1], source.span(use)[0]
    found: list[cst.Assign] = []
    for statement in source.within(function, (cst.AugAssign, cst.Assign)):
        if not after < source.span(statement)[0] < before:
            continue
        if isinstance(statement, cst.AugAssign):
            if not isinstance(statement.operator, cst.AddAssign) or dotted(statement.target) != name:
                continue
        elif [dotted(t.target) for t in statement.targets] != [name]:
            continue
        elif name not in {dotted(n) for n in source.within(statement.value, (cst.Name, cst.Attribute))}:
            # assigned afresh in a branch (stylegan2-ada's `loss_Dreal = 0`, then `if do_Dmain:
            # loss_Dreal = softplus(-real_logits)`): that assignment computes the loss
            if statement not in found:
                found.append(statement)
            continue
        for term in source.within(statement.value, cst.Name):
            if term.value == name:
                continue
            assign = training.last_assignment(term.value, statement)
            if (
                isinstance(assign, cst.Assign)
                and assign not in found
                and isinstance(assign.value, cst.Call)
                and (
                    DetachedGraph._is_loss(training, assign.value)
                    # added into a loss that starts empty: a term of it, whatever computes it
                    # (BasicSR's `l_pix = self.cri_pix(self.output, self.gt)`, then `l_total += l_pix`)
                    or (
                        _empty_start(source, training, name, statement)
                        and len(assign.targets) == 1
                        and isinstance(assign.targets[0].target, (cst.Name, cst.Tuple))
                        # a forward's output read by a term: cut off where the forward runs
                        # (_detached_forwards), not at the forward's input
                        and not runs_model(source, training, assign.value, depth=0)
                        # what a call in the addition is handed (`loss += criterion(output, target)`):
                        # that call's value is the term, not its inputs (UNet++'s moved target)
                        and not _handed_to_a_call(source, term, statement.value)
                    )
                )
            ):
                found.append(assign)
    return found


def _handed_to_a_call(source, name: cst.Name, top: cst.CSTNode) -> bool:
    """True where `name`, within `top`, is (part of) an argument of a call made there."""
    for ancestor in source.ancestors(name):
        if isinstance(ancestor, cst.Arg):
            return True
        if ancestor is top:
            return False
    return False


def _summed_terms(source, training, assign: cst.CSTNode) -> list[cst.Assign]:
    """The assignments that compute the terms of a loss assigned as a sum (`loss = loss_lm +
    loss_clsf`, soft actor-critic's `qf_loss = qf1_loss + qf2_loss`): each term's criterion call,
    past later updates of the same name (`loss_lm = loss_lm.float().mean()`), through weights
    (`supervised_loss + consistency_weight * consistency_loss`), sums of sums (`supervised_loss =
    0.5 * (loss_dice + loss_ce)`) and a term derived from a criterion's value (`consistency_loss =
    torch.sum(mask * consistency_dist) / ...`: the criterion call is cut, SSL4MIS's mean teacher).
    Cut one by one, the other terms still train: a subtler fault than the whole sum cut off."""
    if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call) and callee_name(assign.value) == "sum":
        return _summed_entries(source, training, assign)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.BinaryOperation):
        return []
    names = _summands(assign.value)
    if len(names) < 2:
        return []
    per_name = [_term_assignments(source, training, name, assign, depth=0) for name in names]
    found: list[cst.Assign] = []
    for terms in per_name:
        for term in terms:
            # a value every term is read from (torchrl's loss dict, `loss["loss_critic"]`) is the
            # whole sum again, not one of its terms
            shared = sum(term in other for other in per_name) > 1
            if term not in found and not shared:
                found.append(term)
    return found


def _summed_entries(source, training, assign: cst.Assign) -> list[cst.Assign]:
    """The loss entries a weighted sum over a dict adds up (DAC's `output["loss"] = sum([v *
    output[k] for k, v in lambdas.items() if k in output])`): each assignment before it, in its
    function, of an entry of that dict from a loss call (`output["mel/loss"] = state.mel_loss(...)`,
    also unpacked: `(output["adv/gen_loss"], output["adv/feat_loss"]) = ...generator_loss(...)`)."""
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    function = source.function_of(assign)
    if not isinstance(target, cst.Subscript) or function is None:
        return []
    holder = source.code(target.value)
    read = [
        s
        for s in source.within(assign.value, cst.Subscript)
        if source.code(s.value) == holder
        and len(s.slice) == 1
        and isinstance(s.slice[0].slice, cst.Index)
        and isinstance(s.slice[0].slice.value, cst.Name)
    ]
    if not read:
        return []  # `sum(x)` over something else

    def entry_of_holder(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Subscript) and source.code(node.value) == holder and node is not target

    before = source.span(assign)[0]
    found = []
    for other in source.within(function, cst.Assign):
        if other is assign or source.span(other)[0] >= before or len(other.targets) != 1:
            continue
        stored = other.targets[0].target
        parts = [e.value for e in stored.elements] if isinstance(stored, (cst.Tuple, cst.List)) else [stored]
        if (
            parts
            and all(entry_of_holder(p) for p in parts)
            and isinstance(other.value, cst.Call)
            and DetachedGraph._is_loss(training, other.value)
        ):
            found.append(other)
    return found


def _term_assignments(source, training, name: str, use: cst.CSTNode, depth: int) -> list[cst.Assign]:
    """Where the summed name `name`, read at `use`, is computed as a loss: its criterion call's
    assignment, the terms of a sum it is assigned, or the criterion calls its value is derived from."""
    alternatives = [a for a in training.alternatives(name, use) if isinstance(a, cst.Assign)]
    branches = [a for a in alternatives if trained_term(source, training, a, name)]
    if len(alternatives) > 1:
        # computed its own way in each branch of an `if` (MOON's `loss2`, by `--loss`): each one
        # that training takes and that computes a value
        return [t for branch in branches for t in _term_value(source, training, name, branch, depth)]
    term = training.last_assignment(name, use)
    for _ in range(3):  # past `x = x.mean()`-style updates to where the term is computed
        if not isinstance(term, cst.Assign) or not any(n.value == name for n in source.within(term.value, cst.Name)):
            break
        term = training.last_assignment(name, term)
    if not isinstance(term, cst.Assign):
        return []
    return _term_value(source, training, name, term, depth)


def _a_weight(expr: cst.BaseExpression) -> bool:
    """A loss term's weight: a name, a setting or a number, or arithmetic of them (`(1 - alpha)`)."""
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _a_weight(expr.expression)
    return isinstance(expr, cst.BinaryOperation) and _a_weight(expr.left) and _a_weight(expr.right)


def _term_value(source, training, name: str, term: cst.Assign, depth: int) -> list[cst.Assign]:
    """The assignments where the term `name` assigned by `term` is computed as a loss (see
    `_term_assignments`)."""
    if len(term.targets) != 1:
        return []
    value = term.value
    if isinstance(term.targets[0].target, cst.Tuple):
        # the term unpacked beside what a loss helper also returns (SfmLearner's `loss_1, warped,
        # diff = photometric_reconstruction_loss(...)`): cut where it is computed, by its name
        if isinstance(value, cst.Tuple):
            # a tuple of values (DiffDock's `tor_loss, tor_base_loss = tor_loss.mean() * w, ...`):
            # the term's own element, where it computes one
            element = assigned_element(term, name)
            return [term] if element is not None and source.within(element, cst.Call) and _names_a_loss(name) else []
        return [term] if isinstance(value, cst.Call) and _names_a_loss(callee_name(value) or "") else []
    if not isinstance(term.targets[0].target, cst.Name):
        return []
    if isinstance(value, cst.Call) and (callee_name(constructed(value)) or "a")[:1].isupper():
        return []  # a loss module built (EfficientAT's `distillation_loss = nn.BCEWithLogitsLoss(...)`): no value
    if isinstance(value, cst.Call) and (DetachedGraph._is_loss(training, value) or _names_a_loss(name)):
        return [term]
    if (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, (cst.Multiply, cst.Divide))
        and any(isinstance(side, cst.Call) for side in (value.left, value.right))
        and any(_a_weight(side) for side in (value.left, value.right))
        and (
            _names_a_loss(name)
            or any(isinstance(s, cst.Call) and DetachedGraph._is_loss(training, s) for s in (value.left, value.right))
        )
    ):
        return [term]  # a weighted loss call (`loss2 = mu * criterion(logits, labels)`): cut whole
    if depth >= 2 or not _names_a_loss(name):
        return []
    if (
        depth == 0
        and isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, (cst.Divide, cst.Multiply))
        and _squared_error(value.left)
    ):
        # a squared error written out and scaled or normalised (DiffDock's `tor_loss = ((tor_pred.cpu()
        # - tor_score.cpu()) ** 2 / tor_score_norm2)`, `(diff ** 2).mean(dim=1) / base.mean()`): the
        # term's own value, cut whole
        return [term]
    inner = _summands(value) if isinstance(value, cst.BinaryOperation) else []
    if len(inner) >= 2:
        # a sum of losses itself (`supervised_loss = 0.5 * (loss_dice + loss_ce)`)
        return [t for n in inner for t in _term_assignments(source, training, n, term, depth + 1)]
    # a loss derived from a criterion's value (`torch.sum(mask * dist) / torch.sum(mask)`): the call
    derived = []
    for read in dict.fromkeys(n.value for n in source.within(value, cst.Name)):
        origin = training.last_assignment(read, term)
        if (
            isinstance(origin, cst.Assign)
            and len(origin.targets) == 1
            and isinstance(origin.targets[0].target, cst.Name)
            and isinstance(origin.value, cst.Call)
            and DetachedGraph._is_loss(training, origin.value)
            and not (callee_name(constructed(origin.value)) or "a")[:1].isupper()  # a loss module built
        ):
            derived.append(origin)
    if (
        not derived
        and depth == 0
        and isinstance(value, (cst.UnaryOperation, cst.BinaryOperation))
        and any(callee_name(c) in _REDUCTIONS for c in source.within(value, cst.Call))
    ):
        # a term reduced by hand from scores (the KGE models' `positive_sample_loss = -
        # positive_score.mean()`, `-(w * negative_score).sum() / w.sum()`): the term's own value
        return [term]
    return derived


_REDUCTIONS = frozenset({"mean", "sum"})


def _squared_error(expr: cst.BaseExpression) -> bool:
    """`(a - b) ** 2` or `difference ** 2`, also averaged or added over a dimension (`.mean(dim=1)`):
    an error computed by hand."""
    if isinstance(expr, cst.Call) and callee_name(expr) in ("mean", "sum") and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    if (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Power)
        and isinstance(expr.left, cst.Name)
    ):
        return True
    return (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Power)
        and isinstance(expr.left, cst.BinaryOperation)
        and isinstance(expr.left.operator, cst.Subtract)
    )


def _summands(expr: cst.BaseExpression) -> list[str]:
    """The names a sum adds (or subtracts), in order, through number weights and parentheses (`a +
    b + c * 0.01`, `0.5 * (a + b)`), and through a weight that is itself a name where one side names
    a loss (`w * consistency_loss`); [] where it adds anything else. A term computed in place is
    passed over where named terms are added beside it (SPIN's `... + beta_weight * loss_regr_betas
    + ((torch.exp(-pred_camera[:, 0] * 10)) ** 2).mean()`): the named terms are still the sum's."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        left, right = _summands(expr.left), _summands(expr.right)
        if left and right:
            return left + right
        if left and _computed_in_place(expr.right):
            return left
        return right if right and _computed_in_place(expr.left) else []
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        sides = (expr.left, expr.right)
        numbers = [side for side in sides if isinstance(side, (cst.Integer, cst.Float))]
        if len(numbers) == 1:
            other = expr.right if numbers[0] is expr.left else expr.left
            return _summands(other)
        names = [side.value for side in sides if isinstance(side, cst.Name)]
        losses = [n for n in names if _names_a_loss(n)]
        if len(names) == 2 and len(losses) == 1:
            return losses
        # a weight read from the settings (MotionBERT's `args.lambda_scale * loss_3d_scale`)
        weights = [side for side in sides if isinstance(side, (cst.Attribute, cst.Subscript))]
        if len(names) == 1 and len(losses) == 1 and len(weights) == 1:
            return losses
        # a weight worked out in place (`rot_loss * (1 - tr_weight)`, `loss_kl / (2 * self.beta)`):
        # numbers, settings and plain names that hold no loss
        for side in sides if isinstance(expr.operator, cst.Multiply) else (expr.left,):
            other = expr.right if side is expr.left else expr.left
            if (
                isinstance(side, cst.Name)
                and _names_a_loss(side.value)
                and _a_weight(other)
                and not any(
                    _names_a_loss(cst.ensure_type(n, cst.Name).value)
                    for n in cst_matchers.findall(other, cst_matchers.Name())
                )
            ):
                return [side.value]
    return []


def _computed_in_place(expr: cst.BaseExpression) -> bool:
    """A term the sum computes itself, a call's value (`reg.mean()`, `(x ** 2).mean()`), not a name."""
    return isinstance(expr, cst.Call) or (
        isinstance(expr, cst.BinaryOperation)
        and not isinstance(expr.operator, (cst.Add, cst.Subtract))
        and any(isinstance(side, cst.Call) for side in (expr.left, expr.right))
    )


def _names_a_loss(name: str) -> bool:
    """A term named a loss (RAM's `loss_reinforce = torch.sum(-log_pi * adjusted_reward, dim=1)`),
    or an objective (ElegantRL's `obj_surrogate - obj_entropy * self.lambda_entropy`): whatever
    computes it, it is what the sum adds."""
    return "loss" in name.lower() or names_an_objective(name)


def _added_names(expr: cst.BaseExpression) -> list[str]:
    """The plain names a sum adds, in order, whatever else it adds (`x * 0 + a + b`: a, b), also
    where a weight multiplies them (`loss_G + args.lambda_feat * loss_feat`: loss_G, loss_feat)."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _added_names(expr.left) + _added_names(expr.right)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return [side.value for side in (expr.left, expr.right) if isinstance(side, cst.Name)]
    return []


def _detached_input(source, training, term: cst.Assign):
    """Terms unpacked from one loss call (`l_percep, l_style = self.cri_perceptual(self.output,
    self.gt)`): the model's output is cut off where the call takes it."""
    call = term.value
    if not isinstance(call, cst.Call) or not any(a.keyword is None and not a.star for a in call.args):
        return
    target = _model_output(source, training, call)
    yield Change(
        term,
        (source.replace(target, method_on(source, target, "detach")),),
        "the loss is cut off from the model's graph",
    )


def _empty_start(source, training, name: str, statement: cst.CSTNode) -> bool:
    """True where `name` was last assigned a constant before `statement` (`l_total = 0`)."""
    assign = training.last_assignment(name, statement)
    return assign is not None and _starts_empty(assign)


def _accumulated(source, assign: cst.CSTNode) -> bool:
    """True if a later statement of the same block adds to what `assign` assigned
    (`loss = loss + term`, `loss += term`)."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return False
    name = dotted(assign.targets[0].target)
    if name is None:
        return False
    line, siblings = source.block_of(assign)
    if line not in siblings:
        return False
    for later in siblings[siblings.index(line) + 1 :]:
        for small in getattr(later, "body", ()) if isinstance(later, cst.SimpleStatementLine) else ():
            if (
                isinstance(small, cst.AugAssign)
                and isinstance(small.operator, cst.AddAssign)
                and dotted(small.target) == name
            ):
                return True
            if (
                isinstance(small, cst.Assign)
                and any(dotted(t.target) == name for t in small.targets)
                and isinstance(small.value, cst.BinaryOperation)
                and isinstance(small.value.operator, cst.Add)
                and name in (dotted(small.value.left), dotted(small.value.right))
            ):
                return True
    return False


def _made_before_loop(source, training, output: cst.BaseExpression, assign: cst.CSTNode) -> bool:
    """True where the loss is computed in a loop from a model output made before that loop (a GAN
    trainer's `g_output`, reused by every D step): not this step's forward."""
    loop = source.enclosing(assign, (cst.For, cst.While))
    if loop is None or not isinstance(output, cst.Name):
        return False
    made = training.last_assignment(output.value, assign)
    if made is None:
        return False
    start, end = source.span(loop)
    return not start <= source.span(made)[0] < end


def _output_entry_handed(source, training, backward) -> bool:
    """True for a helper backward handed the loss entry of a forward's output (`loss=model_output.
    loss` after `model_output = wrap_jiant_forward(...)`), where nothing else computes the loss."""
    loss = backward.loss
    if (
        not getattr(backward, "helper", False)
        or not isinstance(loss, cst.Attribute)
        or not isinstance(loss.value, cst.Name)
    ):
        return False
    if training.loss_alternatives(backward) or training.loss_assignment(backward) is not None:
        return False
    made = training.last_assignment(loss.value.value, backward.call)
    return made is not None and made.value is not None and runs_model(source, training, made.value)


def _a_returned_container(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for a name last assigned what a call returns where that is a container with no
    `detach`: a function of the file that returns a dict, list or tuple written out (`return
    {'cls_out': cls_out, 'cls_label': cls_label}`), or a model's output the step reads by key
    (see _read_by_key)."""
    if not isinstance(value, cst.Name):
        return False
    assign = training.last_assignment(value.value, use)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
        return False
    if not any(isinstance(t.target, cst.Name) and t.target.value == value.value for t in assign.targets):
        return False  # unpacked from what it returns (`logits, labels = self.info_nce_loss(x)`): an element
    for function in training.called_functions(assign.value):
        returns = [r.value for r in source.within(function.body, cst.Return) if source.function_of(r) is function]
        if returns and all(_container(source, function, r) for r in returns):
            return True
    return _read_by_key(source, value.value, use)


def _container(source, function: cst.FunctionDef, value: cst.BaseExpression | None) -> bool:
    """True for a dict, list or tuple written out, or a name the function only ever binds to an
    empty one it then fills (FAIR-Chem's `outputs = {}`, `outputs[target_key] = pred`, `return
    outputs`)."""
    if isinstance(value, (cst.Dict, cst.List, cst.Tuple)):
        return True
    if not isinstance(value, cst.Name):
        return False
    bound = [
        a.value
        for a in source.within(function.body, cst.Assign)
        if any(isinstance(t.target, cst.Name) and t.target.value == value.value for t in a.targets)
    ]
    return bool(bound) and all(
        isinstance(b, (cst.Dict, cst.List))
        or (isinstance(b, cst.Call) and callee_name(b) in {"dict", "list", "OrderedDict"} and not b.args)
        for b in bound
    )


def _detached_mapping(source, change: Change) -> cst.Assign | None:
    """The assignment `name = ...` whose whole value `change` puts `.detach()` on, where the
    function then reads `name` by a string key (hrtr's `output = model(...)`, then
    `output['ctc']`): a dict of outputs, which has no `detach`."""
    cuts = {(e.start, e.end) for e in change.edits if e.text.endswith(".detach()")}
    if not cuts:
        return None
    return next(
        (
            assign
            for assign in source.nodes(cst.Assign)
            if source.span(assign.value) in cuts
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
            and _read_by_key(source, assign.targets[0].target.value, assign)
        ),
        None,
    )


def _walked_list(source, use: cst.CSTNode, name: str) -> str | None:
    """The name a loop around `use` walks with `name` as its target (`for loss in losses:`)."""
    loop = walking_loop(source, use, name)
    return loop.iter.value if loop is not None and isinstance(loop.iter, cst.Name) else None


def _mapping_cut(source, name: str, use: cst.CSTNode) -> str:
    """The statement that cuts off each entry of the mapping `name`; where the function asks
    `isinstance(name, dict)` the value may also be a tuple (DeBERTa's trainer: a loss_fn returns
    `(loss, batch_size)` by default, a dict under RTD), whose tensors are cut one by one."""
    cut = f"{{k: v.detach() for k, v in {name}.items()}}"
    function = source.function_of(use)
    scope = function.body if function is not None else source.module
    if any(
        callee_name(call) == "isinstance"
        and len(call.args) == 2
        and source.code(call.args[0].value) == name
        and last_name(call.args[1].value) in ("dict", "Mapping", "MutableMapping")
        for call in source.within(scope, cst.Call)
    ):
        cut += (
            f' if isinstance({name}, dict) else type({name})(v.detach() if hasattr(v, "detach") else v for v in {name})'
        )
    return f"{name} = {cut}"


def _read_by_key(source, name: str, use: cst.CSTNode) -> bool:
    """True where the function around `use` (or the module's top level) reads or writes `name` by a string key
    (ReChorus' `out_dict = model(batch)`, then `out_dict['prediction']`): a mapping of outputs,
    which has no `detach`."""
    function = source.function_of(use)
    scope = function.body if function is not None else source.module
    by_key = any(
        isinstance(sub.value, cst.Name)
        and sub.value.value == name
        and source.function_of(sub) is function
        and len(sub.slice) == 1
        and isinstance(sub.slice[0].slice, cst.Index)
        and isinstance(sub.slice[0].slice.value, cst.SimpleString)
        for sub in source.within(scope, cst.Subscript)
    )
    # or iterated by its items (Sockeye's `{name: output.to(torch.float32) for (name, output) in
    # model_outputs.items()}`)
    return by_key or any(
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "items"
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == name
        and not call.args
        and source.function_of(call) is function
        for call in source.within(scope, cst.Call)
    )


def _model_output(source, training, call: cst.Call) -> cst.BaseExpression:
    """The argument of a loss call that carries the model's output: the first one computed by a
    model forward (`outputs` of `criterion(samples, outputs, targets)` after `outputs =
    model(samples)`), positional before keyword (`compute_mlm_loss(logits=logits, ...)`), else the
    first; the whole call where it has none."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    positional += [a.value for a in call.args if a.keyword is not None]
    if not positional:
        return call
    for value in positional:
        if _from_model(source, training, value, call):
            return value
    return positional[0]


def _output_root(source, training, value: cst.BaseExpression) -> cst.BaseExpression:
    """What a value reads, through its entries, attributes and methods (`outputs.transpose(0, 1)`,
    `.contiguous().view(...)`): a name, or the call that runs the model."""
    root = value
    while True:
        if isinstance(root, (cst.Subscript, cst.Attribute)):
            root = root.value
        elif (
            isinstance(root, cst.Call)
            and isinstance(root.func, cst.Attribute)
            and not runs_model(source, training, root)
        ):
            root = root.func.value
        else:
            return root


def _from_model(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True if `value` is computed by a model forward, also through names reassigned from it on
    the way (FullSubNet's `cRM = self.model(noisy_mag)`, then `cRM = cRM.permute(0, 2, 3, 1)`)."""
    for _ in range(8):
        root = _output_root(source, training, value)
        if isinstance(root, cst.Call):
            return runs_model(source, training, root)
        if not isinstance(root, cst.Name):
            return False
        assign = training.last_assignment(root.value, use)
        if assign is None or assign.value is None:
            return False
        if runs_model(source, training, assign.value):
            return True
        value, use = assign.value, assign
    return False


# What a tensor has and a tuple, a dict or a model's output object has not: a name read through
# anything else may not be a tensor (`out.logits`, `out.loss` of an HF ModelOutput).
_TENSOR_ATTRIBUTES = frozenset(
    {
        "abs",
        "argmax",
        "clamp",
        "contiguous",
        "cpu",
        "cuda",
        "data",
        "detach",
        "device",
        "dim",
        "double",
        "dtype",
        "exp",
        "expand",
        "expand_as",
        "flatten",
        "flip",
        "float",
        "gather",
        "half",
        "item",
        "log",
        "log_softmax",
        "masked_fill",
        "masked_select",
        "max",
        "mean",
        "min",
        "mul",
        "narrow",
        "neg",
        "norm",
        "numel",
        "permute",
        "pow",
        "repeat",
        "reshape",
        "roll",
        "shape",
        "sigmoid",
        "size",
        "softmax",
        "split",
        "sqrt",
        "squeeze",
        "std",
        "sum",
        "t",
        "T",
        "tanh",
        "to",
        "transpose",
        "type",
        "type_as",
        "unsqueeze",
        "view",
        "view_as",
    }
)


def _assigned_value(line: cst.SimpleStatementLine) -> cst.BaseExpression | None:
    """The value the one assignment of a chain's line assigns."""
    assign = line.body[0]
    return assign.value if isinstance(assign, (cst.Assign, cst.AnnAssign)) else None


def _statement_of(source, node: cst.CSTNode) -> cst.CSTNode | None:
    if isinstance(node, cst.SimpleStatementLine):
        return node
    return next((a for a in source.ancestors(node) if isinstance(a, cst.SimpleStatementLine)), None)


def _later_reads(source, name: str, line: cst.SimpleStatementLine) -> list[cst.Name]:
    """The reads of `name` after `line` in the function around it (or the module's top level)."""
    function = source.function_of(line)
    after = source.span(line)[1]
    return [
        read
        for read in source.within(function.body if function is not None else source.module, cst.Name)
        if read.value == name and source.span(read)[0] >= after and source.function_of(read) is function
    ]


def _a_tensor(source, name: str, line: cst.SimpleStatementLine) -> bool:
    """True where every later read of `name` in the function around `line` treats it as a tensor:
    passed whole, computed with, or read through a tensor's methods and attributes; not indexed by
    one integer, unpacked, iterated or read through another attribute (a tuple, a list or an
    output object, which have no `detach`), nor handed on with a star."""
    reads = _later_reads(source, name, line)
    # read through a tensor's own methods elsewhere (pretrain-gnns' `substruct_rep.repeat(...)`
    # beside `substruct_rep[i]`): an index by a name picks rows of a tensor
    methods = any(
        isinstance(parent := source.parent(read), cst.Attribute)
        and parent.value is read
        and parent.attr.value in _TENSOR_ATTRIBUTES
        and parent.attr.value not in {"data", "device"}
        for read in reads
    )
    for read in reads:
        parent = source.parent(read)
        if isinstance(parent, cst.Attribute) and parent.value is read and parent.attr.value not in _TENSOR_ATTRIBUTES:
            return False
        if isinstance(parent, cst.Subscript) and parent.value is read:
            index = parent.slice[0].slice if len(parent.slice) == 1 else None
            if isinstance(index, cst.Index) and (
                isinstance(index.value, (cst.Integer, cst.UnaryOperation))
                or (isinstance(index.value, cst.Name) and not methods)
            ):
                return False
        if isinstance(parent, cst.Assign) and isinstance(parent.targets[0].target, (cst.Tuple, cst.List)):
            return False
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is read:
            return False
        if (
            isinstance(parent, cst.Arg) and parent.star or isinstance(parent, cst.StarredElement)
        ) and parent.value is read:
            return False  # `loss_function(*results)`: handed on as several values
    return True


def _chain_cuts(source, training, changes: list[Change]):
    """The lines of a loss's chain from the forward (see chain_forwards) whose cut no other
    mutant makes: the output cut off there, so that what computed it stops learning from this
    loss. A value unpacked into names is cut name by name, a mapping entry by entry; a value that
    may not be a tensor is left alone."""
    made: set = set()
    for backward in training.loss_uses:
        for use, chain, covered in loss_chains(source, training, backward):
            added = augmented_reads(source, chain)  # what in-place additions to the loss read
            for line in chain_forwards(source, training, use, chain, _cut_lines(source, chain, changes) | covered):
                readers = [later for later, inputs in chain.items() if line in inputs]
                if split_readers(source, chain, line):
                    # the output split into parts, each its own path to the loss (a prototypical
                    # network's support and query embeddings): each part cut where it is taken
                    yield from _readers_cut(source, chain, readers, made)
                    continue
                if _prepares_inputs(source, training, line, chain):
                    continue
                reaching = _read_by(source, readers)
                change = _chain_cut(source, line, reaching | added if reaching else None)
                if change is None and readers and all(_unpacks_a_tuple(r) for r in readers):
                    # a tuple, or a mapping of tuples (UER-py's `loss, correct, n = loss_info`, or
                    # `loss_mlm, correct, n = loss_info["mlm"]`): the names cut where they are unpacked
                    yield from _readers_cut(source, chain, readers, made)
                    continue
                if change is None and len(readers) == 1 and drawn(source, training, readers[0].body[0]):
                    # a distribution the model returned, read by the loss only through its draw
                    # (DrQ-v2's `action = dist.sample(clip=...)`): the draw is what to cut
                    line = readers[0]
                    change = _chain_cut(source, line, _read_by(source, [r for r, i in chain.items() if line in i]))
                elif change is None and any(drawn(source, training, r.body[0]) for r in readers):
                    # read through its draw and beside it (SAC's `action = dist.rsample()` and
                    # `log_prob = dist.log_prob(action)`): each value taken from it is a path of its
                    # own to the loss, cut where it is taken
                    yield from _readers_cut(source, chain, readers, made)
                    continue
                if change is not None and line not in made:
                    made.add(line)
                    yield change


_PREPARING = ("parse", "prepare", "preprocess", "collate")


def _prepares_inputs(source, training, line: cst.SimpleStatementLine, chain) -> bool:
    """True for a line that unpacks what a batch-preparing method of the model makes, handed to
    another forward of the chain as its input (Tacotron 2's `x, y = model.parse_batch(batch)`
    before `y_pred = model(x)`; MusicGen's `condition_tensors, audio_tokens, padding_mask =
    self._prepare_tokens_and_attributes(batch)`): tuples and mappings, whose names `.detach()`
    does not cut but breaks, and no output of the forward the loss learns through."""
    assign = line.body[0]
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List))
        or not isinstance(assign.value, cst.Call)
        or not any(word in (callee_name(assign.value) or "").lower() for word in _PREPARING)
    ):
        return False
    bound = bound_names(assign.targets[0].target)
    for other in chain:
        value = other.body[0].value if isinstance(other.body[0], (cst.Assign, cst.AnnAssign)) else None
        if other is line or not isinstance(value, cst.Call) or not runs_model(source, training, value, depth=0):
            continue
        if any(n.value in bound for a in value.args for n in source.within(a.value, cst.Name)):
            return True
    return False


def _readers_cut(source, chain, readers: list, made: set):
    """Each of `readers` (lines of a loss's chain) cut where it binds what the next lines read."""
    for reader in readers:
        cut = _chain_cut(source, reader, _read_by(source, [r for r, i in chain.items() if reader in i]))
        if cut is not None and reader not in made:
            made.add(reader)
            yield cut


def _unpacks_a_tuple(line: cst.SimpleStatementLine) -> bool:
    """True for `a, b = held` or `a, b = mapping["key"]`: a line unpacking a value held in a name,
    or one entry of a mapping."""
    assign = line.body[0] if len(line.body) == 1 else None
    return (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, (cst.Tuple, cst.List))
        and isinstance(assign.value, (cst.Subscript, cst.Name))
    )


def _cut_lines(source, chain, changes: list[Change]) -> set:
    """The lines of `chain` other mutants already cut: the line a change edits whole, or, for a
    `.detach()` put on part of a line's value (`criterion(logits.detach(), y)`), the line of the
    chain that part reads."""
    taken = set()
    for change in changes:
        line = _statement_of(source, change.node)
        if not isinstance(line, cst.SimpleStatementLine) or line not in chain:
            continue
        value = _assigned_value(line)
        whole = source.span(value) if value is not None else None
        parts = [e for e in change.edits if whole is not None and whole[0] <= e.start and e.end <= whole[1]]
        if not parts or any((e.start, e.end) == whole for e in parts) or not chain[line]:
            # the whole value cut, or the forward it runs itself (`F.cross_entropy(self(x).detach(), y)`)
            taken.add(line)
            continue
        for earlier in chain[line]:
            bound = (
                {n for t in earlier.body[0].targets for n in bound_names(t.target)}
                if isinstance(earlier.body[0], cst.Assign)
                else set()
            )
            for e in parts:
                if any(
                    n.value in bound and e.start <= source.span(n)[0] < e.end for n in source.within(value, cst.Name)
                ):
                    taken.add(earlier)
    return taken


def _read_by(source, lines: list[cst.SimpleStatementLine]) -> set[str] | None:
    """The names the given lines read (None for no lines: nothing to narrow a cut by)."""
    return {n.value for line in lines for n in source.within(line, cst.Name)} if lines else None


def _chain_cut(source, line: cst.SimpleStatementLine, reaching: set[str] | None = None) -> Change | None:
    """The cut of one line of a chain, or None where its value may not be a tensor. An unpacked
    value is cut at the names in `reaching` (those the chain's next lines read, where given):
    ENAS' `dags, log_probs, entropies = self.controller.sample(...)` cuts the log-probabilities
    and entropies its loss reads, not the sampled architectures (Python lists)."""
    assign = line.body[0]
    if not isinstance(assign, (cst.Assign, cst.AnnAssign)) or assign.value is None:
        return None
    targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
    if len(targets) != 1:
        return None
    target = targets[0]
    description = "the model's output is cut off from its graph before the loss"
    if isinstance(target, (cst.Tuple, cst.List)):
        names = [
            e.value.value
            for e in target.elements
            if isinstance(e.value, cst.Name)
            and e.value.value != "_"
            and _later_reads(source, e.value.value, line)
            and (reaching is None or e.value.value in reaching)
        ]
        cuts = [_name_cut(source, n, line) for n in names]
        if not cuts or None in cuts:
            return None
        return Change(assign, (source.insert_after(line, cuts),), description)
    if dotted(target) is None and not isinstance(target, cst.Subscript):
        return None
    if isinstance(target, cst.Name) and _name_cut(source, target.value, line) is None:
        return None
    return Change(assign, (source.replace(assign.value, method_on(source, assign.value, "detach")),), description)


def _name_cut(source, name: str, line: cst.SimpleStatementLine) -> str | None:
    """The statement that cuts off what `line` bound to `name`: entry by entry for a mapping read
    by key, `.detach()` for a tensor, None where it may be neither."""
    if _read_by_key(source, name, line):
        if _entries_unpacked(source, name, line):
            return None  # entries that are tuples (UER-py's `loss_mlm, correct, n = loss_info["mlm"]`)
        return _mapping_cut(source, name, line)
    return f"{name} = {name}.detach()" if _a_tensor(source, name, line) else None


def _entries_unpacked(source, name: str, line: cst.SimpleStatementLine) -> bool:
    """True where an entry of the mapping `name` is unpacked into several names after `line`: the
    entries are tuples, which have no `detach`; the names unpacked are cut where they are bound."""
    for read in _later_reads(source, name, line):
        sub = source.parent(read)
        assign = source.parent(sub) if isinstance(sub, cst.Subscript) and sub.value is read else None
        if (
            isinstance(assign, cst.Assign)
            and assign.value is sub
            and isinstance(assign.targets[0].target, (cst.Tuple, cst.List))
        ):
            return True
    return False
