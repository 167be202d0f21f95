from __future__ import annotations

import libcst as cst

from injector.neighbours import bound_arguments, constructor_or_function
from injector.operators.base import Change, Example, Operator
from injector.operators.forwards import assigned_element, forward_returned_terms, trained_term
from injector.operators.snippets import (
    DEFAULT_LOSS_FN,
    ELEGANTRL_UPDATE,
    FORWARD_TERMS_STEP,
    GATHERED_EPOCH_LOSS,
    LOSS_TUPLE_HELPER,
    MICROBATCH_TRAINER,
)
from injector.patterns import (
    LOSS_FUNCTIONS,
    LOSS_MODULES,
    argument,
    bound_names,
    callee_name,
    constructed,
    dotted,
    is_functional,
    is_literal_bool,
    last_name,
    names_an_objective,
    read_as_a_number,
    under_no_grad,
    with_keyword,
)

EVALUATION_PREFIXES = ("eval", "val", "test")


def _evaluation_name(name: str) -> bool:
    """True for the name of an evaluation figure (`val_loss`, `eval_loss`, `test_loss`,
    `validate_loss_fn`), not of a value head's training term (`value_loss`)."""
    lowered = name.lower()
    if lowered.endswith(("_val", "_valid", "_eval", "_test")):
        return True  # pygcn's `loss_val`, `loss_test`
    return lowered.startswith(EVALUATION_PREFIXES) and not lowered.startswith("value")


def _evaluation_only(source, call: cst.Call) -> bool:
    """True for a criterion built for evaluation only (`validate_loss_fn = nn.CrossEntropyLoss()`):
    the figure it reports is not what training minimises."""
    assign = source.enclosing(call, cst.Assign)
    if assign is None or not isinstance(assign.value, cst.Call) or constructed(assign.value) is not call:
        return False
    names = [(last_name(t.target) or "").lower() for t in assign.targets]
    if all(_evaluation_name(n) for n in names):
        return True
    # a criterion its function only calls under no_grad (a `test()` that builds its own)
    function = source.function_of(assign)
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if function is None or not isinstance(target, cst.Name):
        return False
    uses = [n for n in source.within(function, cst.Name) if n.value == target.value and n is not target]
    calls = [source.parent(n) for n in uses]
    return bool(uses) and all(
        isinstance(c, cst.Call) and c.func is n and under_no_grad(source, c) for n, c in zip(uses, calls, strict=True)
    )


def _called_in_evaluation(source, training, assign: cst.Assign) -> bool:
    """True for a helper whose every caller in the file first switches a model to eval mode
    (mmengine's `_parse_losses`, called by the validation and test loops after
    `self.runner.model.eval()`): what it averages is a reported figure."""
    function = source.function_of(assign)
    if function is None:
        return False
    callers = training.callers(function)

    def after_eval(call: cst.Call) -> bool:
        caller = source.function_of(call)
        return caller is not None and any(
            callee_name(c) == "eval" and not c.args and source.span(c)[0] < source.span(call)[0]
            for c in source.within(caller, cst.Call)
        )

    return bool(callers) and all(after_eval(call) for call in callers)


def _only_logged(source, training, assign: cst.Assign) -> bool:
    """True for a loss assigned in one branch of an `if` whose other branch holds every backward
    of that name (opacus' per-sample path: `loss = torch.mean(per_sample_losses)` only logged,
    its gradients computed apart; the `else` runs `loss.backward()`)."""
    branch = source.enclosing(assign, cst.If)
    names = {dotted(t.target) for t in assign.targets}
    if branch is None or branch.orelse is None:
        return False
    uses = [
        use
        for use in training.backwards
        if dotted(use.loss) in names and source.function_of(use.call) is source.function_of(assign)
    ]

    def inside(node, block) -> bool:
        start, end = source.span(block)
        return start <= source.span(node)[0] < end

    here = branch.body if inside(assign, branch.body) else branch.orelse
    other = branch.orelse if here is branch.body else branch.body
    return bool(uses) and all(inside(use.call, other) for use in uses)


_AVERAGED_TWICE = (
    "criterion = nn.CrossEntropyLoss()\n"
    "for x, y in loader:\n"
    "    loss_lm = criterion(model(x), y)\n"
    "    loss_lm = (loss_lm.float()).mean()\n"
    "    loss_lm.backward()\n"
)


_HEADS_SUMMED = (
    "class Agent:\n"
    "    def criterion(self, preds, targets, tasks):\n"
    "        loss = 0\n"
    "        for t, t_preds in preds.items():\n"
    "            inds = [i for i in range(len(tasks)) if tasks[i] == t]\n"
    "            loss += self.criterion_fn(t_preds[inds], targets[inds]) * len(inds)\n"
    "        loss /= len(targets)\n"
    "        return loss\n"
    "    def update_model(self, inputs, targets, tasks):\n"
    "        loss = self.criterion(self.model(inputs), targets, tasks)\n"
    "        self.optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)


_VAE_LOSS = (
    "def vae_loss(x, x_recon, mu, logvar):\n"
    "    kl_loss = torch.mean(\n"
    "        -0.5 * torch.sum(1 + logvar - mu ** 2 - torch.exp(logvar), dim=1), dim=0)\n"
    "    return F.mse_loss(x_recon, x) + kl_loss\n"
)


_TERMS_AVERAGED_IN_PLACE = (
    "def __call__(self, policy, obs, acts):\n"
    "    (_, log_prob, entropy) = policy.evaluate_actions(obs, acts)\n"
    "    prob_true_act = th.exp(log_prob).mean()\n"
    "    log_prob = log_prob.mean()\n"
    "    entropy = entropy.mean() if entropy is not None else None\n"
    "    ent_loss = -self.ent_weight * (entropy if entropy is not None else th.zeros(1))\n"
    "    neglogp = -log_prob\n"
    "    loss = neglogp + ent_loss\n"
    "    return Metrics(loss=loss, prob_true_act=prob_true_act)\n"
)


# A project loss class with a mean reduction by default, compiled and chosen by a flag (gnina-torch).
COMPILED_PROJECT_LOSS = (
    "import torch\n"
    "import torch.nn as nn\n"
    "class ScaledNLLLoss(nn.Module):\n"
    '    def __init__(self, scale: float = 1.0, reduction: str = "mean"):\n'
    "        super().__init__()\n"
    "        self.scale = scale\n"
    "        self.loss = nn.NLLLoss(reduction=reduction)\n"
    "\n"
    "    def forward(self, x, y):\n"
    "        return self.scale * self.loss(x, y)\n"
    "\n"
    "def training(args, affinity):\n"
    "    pose_loss = torch.jit.script(ScaledNLLLoss(scale=args.scale_pose_loss))\n"
    "    affinity_loss = (\n"
    "        torch.jit.script(ScaledNLLLoss(scale=args.scale_affinity_loss))\n"
    "        if affinity\n"
    "        else None\n"
    "    )\n"
    "    return pose_loss, affinity_loss\n"
)


class WrongLossReduction(Operator):
    id = "wrong-loss-reduction"
    summary = (
        'Sum a loss that was averaged: `reduction="mean"` (explicit or default) → `"sum"`, '
        "and `.mean()` → `.sum()` where a loss is computed."
    )
    examples = (
        Example(
            # The two objectives the actor's loss weighs against each other (ElegantRL's PPO): summed,
            # either outweighs the other by the batch size. The critic's objective, minimised alone
            # by its own optimizer, only changes scale.
            ELEGANTRL_UPDATE,
            (
                ELEGANTRL_UPDATE.replace(
                    "obj_surrogate = (advantages[ids] * ratio).mean()",
                    "obj_surrogate = (advantages[ids] * ratio).sum()",
                ),
                ELEGANTRL_UPDATE.replace("obj_entropy = entropy.mean()", "obj_entropy = entropy.sum()"),
            ),
        ),
        Example(
            # Averaged, then scaled, on the line that differentiates it; and a batch mean of
            # per-sample sums returned by a loss function.
            "def noise_estimation_loss(model, x0, e):\n"
            "    output = model(x0 + e)\n"
            "    return (e - output).square().sum(dim=(1, 2, 3)).mean(dim=0)\n"
            "for x, z in loader:\n"
            "    loss_G.mean().mul(gain).backward()\n",
            (
                "def noise_estimation_loss(model, x0, e):\n"
                "    output = model(x0 + e)\n"
                "    return (e - output).square().sum(dim=(1, 2, 3)).mean(dim=0)\n"
                "for x, z in loader:\n"
                "    loss_G.sum().mul(gain).backward()\n",
                "def noise_estimation_loss(model, x0, e):\n"
                "    output = model(x0 + e)\n"
                "    return (e - output).square().sum(dim=(1, 2, 3)).sum(dim=0)\n"
                "for x, z in loader:\n"
                "    loss_G.mean().mul(gain).backward()\n",
            ),
        ),
        Example(
            # A loss function returning its loss with extras, the default a trainer keeps in an attribute
            # (DeBERTa's `self.loss_fn = loss_fn if loss_fn is not None else _loss_fn`).
            DEFAULT_LOSS_FN,
            (
                DEFAULT_LOSS_FN.replace(
                    '            return loss.mean(), batch["input_ids"].size(0)\n',
                    '            return loss.sum(), batch["input_ids"].size(0)\n',
                ),
            ),
        ),
        Example(
            # Entries a backward adds up, each averaged where it is stored.
            "def step(out, x, y):\n    out['rec'] = rec_fn(net(x), y).mean()\n"
            "    out['adv'] = adv_fn(net(x)).mean()\n    (out['rec'] + out['adv']).backward()\n",
            (
                "def step(out, x, y):\n    out['rec'] = rec_fn(net(x), y).sum()\n"
                "    out['adv'] = adv_fn(net(x)).mean()\n    (out['rec'] + out['adv']).backward()\n",
                "def step(out, x, y):\n    out['rec'] = rec_fn(net(x), y).mean()\n"
                "    out['adv'] = adv_fn(net(x)).sum()\n    (out['rec'] + out['adv']).backward()\n",
            ),
        ),
        Example(
            # A loss module's per-sample sum averaged over the batch axis, label-smoothing style.
            "class SmoothLoss(nn.Module):\n    def forward(self, x, t):\n        return (-t * x).mean(0).sum()\n",
            ("class SmoothLoss(nn.Module):\n    def forward(self, x, t):\n        return (-t * x).sum(0).sum()\n",),
        ),
        Example(
            # A loss of per-sample terms averaged on the line that differentiates it.
            "loss = -torch.min(surr1, surr2) + value_term\nloss.mean().backward()\n",
            ("loss = -torch.min(surr1, surr2) + value_term\nloss.sum().backward()\n",),
        ),
        Example(
            "criterion = nn.CrossEntropyLoss(label_smoothing=0.1)\nloss = criterion(model(x), y)\n",
            ('criterion = nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")\nloss = criterion(model(x), y)\n',),
        ),
        Example(
            "loss = F.binary_cross_entropy(x_hat, x, size_average=True)\n",
            ("loss = F.binary_cross_entropy(x_hat, x, size_average=False)\n",),
        ),
        Example(
            # Imported from torch.nn by name (the same name from another package is left alone).
            "from torch.nn import CTCLoss\ncriterion = CTCLoss()\nloss = criterion(log_probs, targets, in_lens, out_lens)\n",
            (
                'from torch.nn import CTCLoss\ncriterion = CTCLoss(reduction="sum")\n'
                "loss = criterion(log_probs, targets, in_lens, out_lens)\n",
            ),
        ),
        Example(
            # A project's loss helper handed its reduction as a string.
            'loss = train_util.conditional_loss(pred.float(), target.float(), args.loss_type, "mean", huber_c)\n',
            ('loss = train_util.conditional_loss(pred.float(), target.float(), args.loss_type, "sum", huber_c)\n',),
        ),
        Example(
            # A loss class of the project's, averaging by torch's keywords.
            "criterion = utils.FocalLoss(ignore_index=255, size_average=True)\ndice = DiceLoss(reduction='mean')\n",
            (
                "criterion = utils.FocalLoss(ignore_index=255, size_average=False)\ndice = DiceLoss(reduction='mean')\n",
                "criterion = utils.FocalLoss(ignore_index=255, size_average=True)\ndice = DiceLoss(reduction='sum')\n",
            ),
        ),
        Example(
            "loss = F.mse_loss(pred, target, reduction='mean')\n",
            ("loss = F.mse_loss(pred, target, reduction='sum')\n",),
        ),
        Example(
            # Terms of a loss, each averaged before they are added up.
            "total_loss = 0\nfor q in targets:\n    total_loss += torch.sum(-q * out, dim=-1).mean()\n",
            ("total_loss = 0\nfor q in targets:\n    total_loss += torch.sum(-q * out, dim=-1).sum()\n",),
        ),
        Example(
            # A weighted regulariser's mean added to the loss.
            "loss = criterion(scores, targets)\nloss += alpha_c * ((1.0 - alphas.sum(dim=1)) ** 2).mean()\n",
            ("loss = criterion(scores, targets)\nloss += alpha_c * ((1.0 - alphas.sum(dim=1)) ** 2).sum()\n",),
        ),
        Example(
            # einops' reduce, and the mean a loss function returns.
            "def p_losses(self, x, t):\n"
            "    loss = reduce(F.mse_loss(self.model(x), x, reduction='none'), 'b ... -> b', 'mean')\n"
            "    return loss.mean()\n",
            (
                "def p_losses(self, x, t):\n"
                "    loss = reduce(F.mse_loss(self.model(x), x, reduction='none'), 'b ... -> b', 'sum')\n"
                "    return loss.mean()\n",
                "def p_losses(self, x, t):\n"
                "    loss = reduce(F.mse_loss(self.model(x), x, reduction='none'), 'b ... -> b', 'mean')\n"
                "    return loss.sum()\n",
            ),
        ),
        Example(
            # Means inside a compound loss (a GAN's losses, penalties): one mutant sums them all.
            "d_loss = -torch.mean(real) + torch.mean(fake) + lambda_gp * gradient_penalty\n"
            "gradient_penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()\n"
            "def d_logistic_loss(real_pred, fake_pred):\n"
            "    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()\n",
            (
                "d_loss = -torch.sum(real) + torch.sum(fake) + lambda_gp * gradient_penalty\n"
                "gradient_penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()\n"
                "def d_logistic_loss(real_pred, fake_pred):\n"
                "    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()\n",
                "d_loss = -torch.mean(real) + torch.mean(fake) + lambda_gp * gradient_penalty\n"
                "gradient_penalty = ((grads.norm(2, dim=1) - 1) ** 2).sum()\n"
                "def d_logistic_loss(real_pred, fake_pred):\n"
                "    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()\n",
                "d_loss = -torch.mean(real) + torch.mean(fake) + lambda_gp * gradient_penalty\n"
                "gradient_penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()\n"
                "def d_logistic_loss(real_pred, fake_pred):\n"
                "    return F.softplus(-real_pred).sum() + F.softplus(fake_pred).sum()\n",
            ),
        ),
        Example(
            "recon_loss = ((x_hat - x) ** 2).mean()\nloss = torch.mean(torch.abs(a - b))\n",
            (
                "recon_loss = ((x_hat - x) ** 2).sum()\nloss = torch.mean(torch.abs(a - b))\n",
                "recon_loss = ((x_hat - x) ** 2).mean()\nloss = torch.sum(torch.abs(a - b))\n",
            ),
        ),
        Example(
            # A value head's loss (not an evaluation figure) and a mean through torch's alias.
            "import torch as th\n"
            "from torch.nn import functional as F\n"
            "value_loss = F.mse_loss(returns, values_pred)\n"
            "entropy_loss = -th.mean(entropy)\n",
            (
                "import torch as th\n"
                "from torch.nn import functional as F\n"
                'value_loss = F.mse_loss(returns, values_pred, reduction="sum")\n'
                "entropy_loss = -th.mean(entropy)\n",
                "import torch as th\n"
                "from torch.nn import functional as F\n"
                "value_loss = F.mse_loss(returns, values_pred)\n"
                "entropy_loss = -th.sum(entropy)\n",
            ),
        ),
        Example(
            # The mean of each loss the model returns, summed in place into the total.
            MICROBATCH_TRAINER,
            (MICROBATCH_TRAINER.replace("microbatch_loss.add_(loss.mean())", "microbatch_loss.add_(loss.sum())"),),
        ),
        Example(
            # The loss a project's factory returns, averaging by an explicit keyword (SlowFast).
            'loss_fun = losses.get_loss_func(cfg.MODEL.LOSS_FUNC)(reduction="mean")\n',
            ('loss_fun = losses.get_loss_func(cfg.MODEL.LOSS_FUNC)(reduction="sum")\n',),
        ),
        Example(
            # A term summed into a name the function then adds into its loss (YOLO's compute_loss).
            "def compute_loss(p, t):\n"
            "    lbox = torch.zeros(1)\n"
            "    for layer in p:\n"
            "        lbox += (1.0 - iou(layer, t)).mean()\n"
            "    loss = lbox + lobj\n"
            "    return loss\n",
            (
                "def compute_loss(p, t):\n"
                "    lbox = torch.zeros(1)\n"
                "    for layer in p:\n"
                "        lbox += (1.0 - iou(layer, t)).sum()\n"
                "    loss = lbox + lobj\n"
                "    return loss\n",
            ),
        ),
        Example(
            # The mean of a loss the criterion averaged already (nlp-tutorial's BERT) is one
            # number: only the criterion's reduction gets a mutant.
            _AVERAGED_TWICE,
            (_AVERAGED_TWICE.replace("nn.CrossEntropyLoss()", 'nn.CrossEntropyLoss(reduction="sum")'),),
        ),
        Example(
            # A loss a criterion leaves unreduced, then averaged over its dimensions and the batch (demucs'
            # per-source L1): those means are its reduction, all summed in the one mutant; the weighted mean
            # over the sources that follows is no average of the loss's elements.
            "import torch.nn.functional as F\n"
            "def step(model, x, y, weights, optimizer):\n"
            "    loss = F.l1_loss(model(x), y, reduction='none')\n"
            "    loss = loss.mean(dim=(2, 3)).mean(0)\n"
            "    loss = (loss * weights).sum() / weights.sum()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "import torch.nn.functional as F\n"
                "def step(model, x, y, weights, optimizer):\n"
                "    loss = F.l1_loss(model(x), y, reduction='none')\n"
                "    loss = loss.sum(dim=(2, 3)).sum(0)\n"
                "    loss = (loss * weights).sum() / weights.sum()\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # A masked mean spelled as the sum over the mask's count (wavenet_vocoder's losses): the sum kept.
            "import torch\n"
            "import torch.nn as nn\n"
            "class MaskedCrossEntropyLoss(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.criterion = nn.CrossEntropyLoss(reduction='none')\n"
            "    def forward(self, input, target, mask):\n"
            "        losses = self.criterion(input, target)\n"
            "        mask_ = mask.expand_as(target)\n"
            "        return ((losses * mask_).sum()) / mask_.sum()\n"
            "for x, y, m in loader:\n"
            "    loss = criterion(model(x), y, mask=m)\n"
            "    loss.backward()\n"
            "    opt.step()\n",
            (
                "import torch\n"
                "import torch.nn as nn\n"
                "class MaskedCrossEntropyLoss(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.criterion = nn.CrossEntropyLoss(reduction='none')\n"
                "    def forward(self, input, target, mask):\n"
                "        losses = self.criterion(input, target)\n"
                "        mask_ = mask.expand_as(target)\n"
                "        return (losses * mask_).sum()\n"
                "for x, y, m in loader:\n"
                "    loss = criterion(model(x), y, mask=m)\n"
                "    loss.backward()\n"
                "    opt.step()\n",
            ),
        ),
        Example(
            # A summing criterion's cost divided by the batch size (crnn's warp-ctc): the division dropped;
            # the validation function's is only reported.
            "import torch\n"
            "def train_batch(net, criterion, optimizer, images, text, length):\n"
            "    preds = net(images)\n"
            "    batch_size = images.size(0)\n"
            "    cost = criterion(preds, text, preds_size, length) / batch_size\n"
            "    net.zero_grad()\n"
            "    cost.backward()\n"
            "    optimizer.step()\n"
            "def val(net, criterion, loader):\n"
            "    for images, text, length in loader:\n"
            "        preds = net(images)\n"
            "        cost = criterion(preds, text, preds_size, length) / batch_size\n"
            "        loss_avg.add(cost)\n",
            (
                "import torch\n"
                "def train_batch(net, criterion, optimizer, images, text, length):\n"
                "    preds = net(images)\n"
                "    batch_size = images.size(0)\n"
                "    cost = criterion(preds, text, preds_size, length)\n"
                "    net.zero_grad()\n"
                "    cost.backward()\n"
                "    optimizer.step()\n"
                "def val(net, criterion, loader):\n"
                "    for images, text, length in loader:\n"
                "        preds = net(images)\n"
                "        cost = criterion(preds, text, preds_size, length) / batch_size\n"
                "        loss_avg.add(cost)\n",
            ),
        ),
        Example(
            # FuxiCTR's BaseModel: the loss method's reduction default, handed on to the loss and
            # used by the training loop's call, which gives none
            "class BaseModel(nn.Module):\n"
            '    def add_loss(self, inputs, reduction="mean"):\n'
            "        return_dict = self.forward(inputs)\n"
            '        loss = self.loss_fn(return_dict["y_pred"], return_dict["y_true"], reduction=reduction)\n'
            "        return loss\n"
            "\n"
            "    def train_one_epoch(self, loader):\n"
            "        for batch in loader:\n"
            "            self.optimizer.zero_grad()\n"
            "            loss = self.add_loss(batch)\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n",
            (
                "class BaseModel(nn.Module):\n"
                '    def add_loss(self, inputs, reduction="sum"):\n'
                "        return_dict = self.forward(inputs)\n"
                '        loss = self.loss_fn(return_dict["y_pred"], return_dict["y_true"], reduction=reduction)\n'
                "        return loss\n"
                "\n"
                "    def train_one_epoch(self, loader):\n"
                "        for batch in loader:\n"
                "            self.optimizer.zero_grad()\n"
                "            loss = self.add_loss(batch)\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # A mean written as a sum assigned first, then divided by the count (mvts_transformer's
            # `batch_loss = torch.sum(loss)`, `mean_loss = batch_loss / len(loss)`).
            "for X, targets in loader:\n"
            "    loss = loss_module(model(X), targets)\n"
            "    batch_loss = torch.sum(loss)\n"
            "    mean_loss = batch_loss / len(loss)\n"
            "    optimizer.zero_grad()\n"
            "    mean_loss.backward()\n"
            "    optimizer.step()\n"
            "    epoch_loss += batch_loss.item()\n",
            (
                "for X, targets in loader:\n"
                "    loss = loss_module(model(X), targets)\n"
                "    batch_loss = torch.sum(loss)\n"
                "    mean_loss = batch_loss\n"
                "    optimizer.zero_grad()\n"
                "    mean_loss.backward()\n"
                "    optimizer.step()\n"
                "    epoch_loss += batch_loss.item()\n",
            ),
        ),
        Example(
            # Each head's mean put back to a sum, then the whole divided by the batch's size by hand
            # (the continual-learning agent's multi-head criterion): the division dropped.
            _HEADS_SUMMED,
            (_HEADS_SUMMED.replace("        loss /= len(targets)\n", ""),),
        ),
        Example(
            # The KL term's batch mean spelled as a function over per-sample sums, scaled (pyod's VAE).
            _VAE_LOSS,
            (
                _VAE_LOSS.replace(
                    "    return F.mse_loss(x_recon, x) + kl_loss\n",
                    '    return F.mse_loss(x_recon, x, reduction="sum") + kl_loss\n',
                ),
                _VAE_LOSS.replace("    kl_loss = torch.mean(\n", "    kl_loss = torch.sum(\n"),
            ),
        ),
        Example(
            # Terms averaged in place under names of their own, then combined into the loss (imitation's
            # behavioural-cloning loss); the logged mean probability is no term.
            _TERMS_AVERAGED_IN_PLACE,
            (
                _TERMS_AVERAGED_IN_PLACE.replace("    log_prob = log_prob.mean()\n", "    log_prob = log_prob.sum()\n"),
                _TERMS_AVERAGED_IN_PLACE.replace(
                    "    entropy = entropy.mean() if entropy is not None else None\n",
                    "    entropy = entropy.sum() if entropy is not None else None\n",
                ),
            ),
        ),
        Example(
            # A loss class of the project whose `reduction` defaults to the mean, compiled by TorchScript
            # and chosen by a flag (gnina-torch's losses): handed `reduction="sum"` where it is built.
            COMPILED_PROJECT_LOSS,
            (
                COMPILED_PROJECT_LOSS.replace(
                    "    pose_loss = torch.jit.script(ScaledNLLLoss(scale=args.scale_pose_loss))\n",
                    '    pose_loss = torch.jit.script(ScaledNLLLoss(scale=args.scale_pose_loss, reduction="sum"))\n',
                ),
                COMPILED_PROJECT_LOSS.replace(
                    "        torch.jit.script(ScaledNLLLoss(scale=args.scale_affinity_loss))\n",
                    '        torch.jit.script(ScaledNLLLoss(scale=args.scale_affinity_loss, reduction="sum"))\n',
                ),
            ),
        ),
        Example(
            # The mean mapped over the losses by another name (habitat's PPO `mean_fn`).
            "def update(self, batch):\n"
            '    action_loss = -(batch["advantages"] * self.policy.log_prob(batch["actions"]))\n'
            '    value_loss = (self.critic(batch["obs"]) - batch["returns"]) ** 2\n'
            "    mean_fn = torch.mean\n"
            "    action_loss, value_loss = map(mean_fn, (action_loss, value_loss))\n"
            "    (action_loss + value_loss).backward()\n",
            (
                "def update(self, batch):\n"
                '    action_loss = -(batch["advantages"] * self.policy.log_prob(batch["actions"]))\n'
                '    value_loss = (self.critic(batch["obs"]) - batch["returns"]) ** 2\n'
                "    mean_fn = torch.sum\n"
                "    action_loss, value_loss = map(mean_fn, (action_loss, value_loss))\n"
                "    (action_loss + value_loss).backward()\n",
            ),
        ),
        Example(
            # The penalties a helper of the file returns, added into the loss (ENAS).
            "def _apply_penalties(extra_out, args):\n"
            "    penalty = 0\n"
            "    if args.activation_regularization:\n"
            '        penalty += args.ar_amount * extra_out["dropped"].pow(2).mean()\n'
            "    return penalty\n"
            "for x, y in loader:\n"
            "    out, extra_out = model(x)\n"
            "    loss = criterion(out, y)\n"
            "    loss += _apply_penalties(extra_out, args)\n",
            (
                "def _apply_penalties(extra_out, args):\n"
                "    penalty = 0\n"
                "    if args.activation_regularization:\n"
                '        penalty += args.ar_amount * extra_out["dropped"].pow(2).sum()\n'
                "    return penalty\n"
                "for x, y in loader:\n"
                "    out, extra_out = model(x)\n"
                "    loss = criterion(out, y)\n"
                "    loss += _apply_penalties(extra_out, args)\n",
            ),
        ),
        Example(
            # The average a loss calls by another name (score_sde's losses).
            "def loss_fn(model, batch, reduce_mean=True):\n"
            "    reduce_op = torch.mean if reduce_mean else lambda *a, **k: 0.5 * torch.sum(*a, **k)\n"
            "    losses = reduce_op(torch.square(model(batch) - batch).reshape(len(batch), -1), dim=-1)\n"
            "    return torch.mean(losses)\n",
            (
                "def loss_fn(model, batch, reduce_mean=True):\n"
                "    reduce_op = torch.sum if reduce_mean else lambda *a, **k: 0.5 * torch.sum(*a, **k)\n"
                "    losses = reduce_op(torch.square(model(batch) - batch).reshape(len(batch), -1), dim=-1)\n"
                "    return torch.mean(losses)\n",
                "def loss_fn(model, batch, reduce_mean=True):\n"
                "    reduce_op = torch.mean if reduce_mean else lambda *a, **k: 0.5 * torch.sum(*a, **k)\n"
                "    losses = reduce_op(torch.square(model(batch) - batch).reshape(len(batch), -1), dim=-1)\n"
                "    return torch.sum(losses)\n",
            ),
        ),
        Example(
            # The terms of the sum a loss function returns for the step to index (DiffDock's
            # `loss_tuple[0]`): each mean over the batch (and the coordinates) becomes a sum.
            LOSS_TUPLE_HELPER,
            (
                LOSS_TUPLE_HELPER.replace(
                    "tr_loss = ((tr_pred - data.tr_score) ** 2).mean(dim=mean_dims)",
                    "tr_loss = ((tr_pred - data.tr_score) ** 2).sum(dim=mean_dims)",
                ),
                LOSS_TUPLE_HELPER.replace(
                    "rot_loss = ((rot_pred - data.rot_score) ** 2).mean(dim=mean_dims)",
                    "rot_loss = ((rot_pred - data.rot_score) ** 2).sum(dim=mean_dims)",
                ),
            ),
        ),
        Example(
            # The batch means of the terms a module's forward computes and returns for the loop to
            # add up (torchsde's latent SDE): each summed on its own.
            FORWARD_TERMS_STEP,
            (
                FORWARD_TERMS_STEP.replace("log_prob(x).sum(dim=1).mean(dim=0)", "log_prob(x).sum(dim=1).sum(dim=0)"),
                FORWARD_TERMS_STEP.replace(
                    "Normal(0.0, 1.0)).sum(dim=1).mean(dim=0)", "Normal(0.0, 1.0)).sum(dim=1).sum(dim=0)"
                ),
            ),
        ),
    )
    untouched = (
        # A mean bound to a name that only a metric under no_grad calls.
        "reduce = torch.mean\nwith torch.no_grad():\n    err = reduce((pred - y).abs())\n",
        # The mean over deep supervision's outputs (UNet++), not over the batch.
        "for input, target in loader:\n"
        "    outputs = model(input)\n"
        "    loss = 0\n"
        "    for output in outputs:\n"
        "        loss += criterion(output, target)\n"
        "    loss /= len(outputs)\n"
        "    loss.backward()\n",
        # Every rank's logged losses stacked by NumPy and averaged for the epoch's figure (nnU-Net).
        "def on_train_epoch_end(outputs):\n"
        "    losses = [None] * dist.get_world_size()\n"
        "    dist.all_gather_object(losses, outputs['loss'])\n"
        "    loss_here = np.vstack(losses).mean()\n"
        "    log('train_losses', loss_here)\n",
        # The epoch loss gathered across processes from the floats a tracker summed
        # (pytorch-accelerated): made from new tensors, read as a number.
        GATHERED_EPOCH_LOSS,
        # A loss module built and never called (TCN's script writes its loss out by hand).
        "criterion = nn.CrossEntropyLoss()\n"
        "for x, y in loader:\n"
        "    output = model(x)\n"
        "    loss = -torch.trace(torch.matmul(y, torch.log(output).t()))\n"
        "    loss.backward()\n",
        # A reduction default every call by name overrides (OLMo's cross_entropy_loss: training
        # hands "sum", evaluation "none").
        'def cross_entropy_loss(logits, labels, reduction="mean"):\n'
        "    loss = F.cross_entropy(logits, labels, reduction=reduction)\n"
        "    return loss\n"
        "\n"
        "\n"
        'train_loss = cross_entropy_loss(logits, labels, reduction="sum")\n'
        'per_token = cross_entropy_loss(logits, labels, "none")\n',
        # A sum over a count in the branch a caller's `reduction=` picks (OLMo's loss helper), and a
        # weighted mean over per-source weights (demucs): no batch average to turn into a sum.
        "import torch\n"
        'def cross_entropy_loss(logits, labels, mask, reduction="mean"):\n'
        '    loss = F.cross_entropy(logits, labels, reduction="none")\n'
        '    if reduction == "mean":\n'
        "        loss = loss.sum() / mask.sum()\n"
        "    return loss\n"
        "for x, y in loader:\n"
        "    out = model(x)\n"
        "    loss = (out - y).abs().mean(1)\n"
        "    weights = torch.tensor(args.weights).to(out)\n"
        "    loss = (loss * weights).sum() / weights.sum()\n"
        "    loss.backward()\n",
        # Per-sample sums left to the caller, and a mean of sums over another axis than the batch's.
        "def noise_loss(e, output):\n"
        "    return (e - output).square().sum(dim=(1, 2, 3))\n"
        "def frame_loss(e, output):\n"
        "    return (e - output).square().sum(dim=2).mean(dim=1)\n",
        # A mean over the pixel dimensions, per sample, is no batch average.
        "loss = loss.mean([1, 2, 3])\n",
        # A mean over one dimension where the loss is differentiated is no batch average.
        "loss = criterion(out, y)\nloss.mean(0).backward()\n",
        # Lightning runs validation_step under no_grad: its loss is a reported figure.
        "class M(LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        x, y = batch\n"
        "        loss = F.cross_entropy(self.encoder(x), y)\n"
        "        self.log('val_loss', loss)\n",
        # A validation figure, and a test figure named the other way round.
        "val_loss = F.mse_loss(out, y)\nloss_test = F.nll_loss(output[idx_test], labels[idx_test])\n",
        "loss = F.cross_entropy(logits, y, reduction='none')\n",
        "eval_loss = torch.mean(losses)\n",
        # A criterion only evaluation uses.
        "validate_loss_fn = nn.CrossEntropyLoss().to(device=device)\n",
        "acc = (pred == y).float().mean()\n",
        "x = reduce(x, 'b c -> b', 'max')\n",
        "val_loss += criterion_out.mean()\n",
        # A mean over one dimension is no batch average.
        "loss += alpha_c * reg.mean(1)\n",
        # Means over a dimension, and a compound figure that is not a loss.
        "path_penalty = lengths.mean(1) + mean_path.mean(0)\nscore = -torch.mean(real) + torch.mean(fake)\n",
        "def validate(losses):\n    return losses.mean()\n",
        'total = nn.MSELoss(reduction="sum")\n',
        # A loss reached through a module of another package (pytorch-metric-learning's losses
        # take a `reducer`, no `reduction`).
        "from pytorch_metric_learning import losses\ncriterion_triplet = losses.TripletMarginLoss(margin=0.3)\n",
        # A loss class of the same name from another package (its own arguments, no `reduction`).
        "from warpctc_pytorch import CTCLoss\ncriterion = CTCLoss()\n",
        # A helper only the evaluation calls, after switching the model to eval mode.
        "def parse(history):\n    avg_loss = history.mean()\n    return avg_loss\n"
        "def validate(model, history):\n    model.eval()\n    return parse(history)\n",
        # A loss only logged in its branch: the other branch differentiates its own.
        "if per_sample:\n    loss = torch.mean(per_sample_losses)\nelse:\n    loss = criterion(model(x), y)\n"
        "    loss.backward()\n",
        # A criterion its function only calls under no_grad.
        "def test(model, x, y):\n    criterion = nn.CrossEntropyLoss()\n    with torch.no_grad():\n"
        "        return criterion(model(x), y).item()\n",
        # A project's loss class with no averaging keyword: its default is its own.
        "criterion = FocalLoss(gamma=2)\nval_criterion = DiceLoss(size_average=True)\n",
        # The deprecated spelling that already sums.
        "rec = F.binary_cross_entropy(x_hat, x, size_average=False)\n",
    )

    def changes(self, source, training):
        aliases = frozenset({training.torch})  # `th.mean(...)` after `import torch as th`
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if (
                ((name in LOSS_FUNCTIONS and is_functional(call)) or name in LOSS_MODULES)
                and not under_no_grad(source, call)
                and not _evaluation_only(source, call)
                and not _foreign(source, call)
                and not (name in LOSS_MODULES and _never_used(source, call))
            ):
                reduction = argument(call, "reduction", None)
                averaged = argument(call, "size_average", None)
                if averaged is not None or argument(call, "reduce", None) is not None:
                    # The deprecated `size_average=`/`reduce=` override `reduction`: `size_average=
                    # False` already sums; only `size_average=True` averages.
                    if averaged is not None and is_literal_bool(averaged.value, True):
                        yield Change(
                            call, (source.replace(averaged.value, "False"),), f"`{name}` sums instead of averaging"
                        )
                    continue
                if reduction is None:
                    new = with_keyword(call, "reduction", cst.SimpleString('"sum"'))
                    yield Change(call, (source.replace_node(call, new),), f"`{name}` sums instead of averaging")
                elif isinstance(reduction.value, cst.SimpleString) and reduction.value.evaluated_value in {
                    "mean",
                    "batchmean",
                }:
                    yield Change(
                        call,
                        (source.replace_string(reduction.value, "sum"),),
                        f"`{name}` sums instead of averaging",
                    )
            elif _defaults_to_mean(source, training, call):
                # a project's loss factory or loss whose `reduction` defaults to "mean", called
                # without one (pyod's `get_criterion_by_name('mse')(x_recon, x)`)
                new = with_keyword(call, "reduction", cst.SimpleString('"sum"'))
                yield Change(
                    call, (source.replace_node(call, new),), f"`{name}` sums instead of averaging (its default)"
                )
            elif _project_loss(source, call):
                # A loss class of the project's or another package's, averaging by an explicit
                # keyword in torch's spelling (`utils.FocalLoss(ignore_index=255, size_average=True)`)
                factory = callee_name(call.func) if isinstance(call.func, cst.Call) else None
                yield from _summed_by_keyword(source, call, name or f"the loss {factory}() builds")
        for function, default in _reduction_defaults(source):
            yield Change(
                default,
                (source.replace_string(default, "sum"),),
                f"`{function.name.value}` sums its loss instead of averaging (its `reduction` default)",
            )
        for call in source.nodes(cst.Call):
            if _helper_reduction(source, call):
                mode = next(a for a in call.args if _is_mean_string(a.value))
                yield Change(
                    call,
                    (source.replace_string(mode.value, "sum"),),
                    f"`{callee_name(call)}` sums instead of averaging",
                )
        for assign in source.nodes(cst.Assign):
            if not any(
                isinstance(t.target, cst.Name)
                and (_names_loss(t.target.value) or _objective_term(source, assign, t.target.value))
                and not _evaluation_name(t.target.value)
                for t in assign.targets
            ):
                continue  # a training loss, not a reported evaluation figure
            if (
                under_no_grad(source, assign)
                or _only_logged(source, training, assign)
                or _called_in_evaluation(source, training, assign)
                or _read_as_a_number_only(source, assign)
            ):
                continue
            value = assign.value
            if isinstance(value, cst.Call) and callee_name(value) == "reduce":
                # einops: `loss = reduce(loss, 'b ... -> b', 'mean')`
                mode = argument(value, "reduction", 2)
                if (
                    mode is not None
                    and isinstance(mode.value, cst.SimpleString)
                    and mode.value.evaluated_value == "mean"
                ):
                    yield Change(
                        value,
                        (source.replace_string(mode.value, "sum"),),
                        "the loss is summed instead of averaged",
                    )
                continue
            averages = [  # a mean over dimensions (`loss.mean([1, 2, 3])`) is none
                a
                for a in _averages(value, aliases)
                if not _averaged_already(source, training, _averaged(a, aliases), assign)
            ]
            if averages:
                yield _summed(source, value, averages)
            elif means := _unreduced_means(source, training, value, assign):
                yield _summed(source, value, means)
            elif (
                (mean := _sum_over_count(value, training)) is not None
                and not _picked_mean(source, assign)
                and not _in_evaluation(source, assign)
            ):
                yield _count_dropped(source, mean)
        for assign in source.nodes(cst.Assign):
            # a term averaged in place under a name of its own (imitation's `log_prob =
            # log_prob.mean()`, `entropy = entropy.mean() if entropy is not None else None`), then
            # combined into the loss (`neglogp = -log_prob`, `loss = neglogp + ent_loss + l2_loss`)
            averages = _term_averaged_in_place(source, assign, aliases)
            if averages:
                yield _summed(source, assign.value, averages)
        for aug in source.nodes(cst.AugAssign):
            # `total_loss += loss.mean()`, `loss += alpha * ((1 - a.sum(1)) ** 2).mean()`: each
            # term of a summed loss averaged, weighted or not
            target = (last_name(aug.target) or "").lower()
            if (
                isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign))
                and ("loss" in target or _summed_into_a_loss(source, aug))
                and not _evaluation_name(target)
                and not under_no_grad(source, aug)
            ):
                averages = _averages(aug.value, aliases)
                if averages:
                    yield _summed(source, aug.value, averages)
            elif _mean_of_summed_terms(source, training, aug):
                # `loss /= len(targets)` after `loss = 0` and `loss += ... * len(inds)` per head
                # (the continual-learning agent's multi-head criterion): the batch mean, by hand
                yield Change(
                    aug, (source.delete_statement(source.parent(aug)),), "the loss is summed instead of averaged"
                )
        for call in source.nodes(cst.Call):
            # `total.add_(loss.mean())`: the same sum written in place (composer's micro-batch
            # loss adds up the mean of each loss the model returns)
            if (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value in ("add_", "sub_")
                and len(call.args) == 1
                and "loss" in (last_name(call.func.value) or "").lower()
                and not _evaluation_name((last_name(call.func.value) or "").lower())
                and not under_no_grad(source, call)
            ):
                averages = _averages(call.args[0].value, aliases)
                if averages:
                    yield _summed(source, call.args[0].value, averages)
        entries: list[cst.Assign] = []
        for backward in training.loss_uses:
            # a loss kept as an entry (`engine.state.output[Keys.LOSS] = loss_fn(pred, y).mean()`),
            # or the entries it adds up
            stored = training.loss_assignment(backward) if isinstance(backward.loss, cst.Subscript) else None
            for assign in ([stored] if stored is not None else []) + training.stored_terms(backward):
                if assign not in entries and not under_no_grad(source, assign):
                    entries.append(assign)
                    averages = _averages(assign.value, aliases)
                    if averages:
                        yield _summed(source, assign.value, averages)
        yield from _helper_term_means(source, training, aliases)
        for backward in training.loss_uses:
            # the terms a module's forward computes and returns for the step to add up (torchsde's
            # `log_pxs = xs_dist.log_prob(xs).sum(dim=(0, 2)).mean(dim=0)`): each batch mean summed
            for term in forward_returned_terms(source, training, backward):
                means = _averages(term.value, aliases) or _batch_dim_means(source, training, term.value, term)
                if means:
                    yield _summed(source, term, means)
        for backward in training.backwards:
            # `loss.mean().backward()`: the loss averaged on the line that differentiates it, and
            # scaled there too (stylegan2-ada's `loss_Gmain.mean().mul(gain).backward()`)
            loss = backward.loss
            while (
                isinstance(loss, cst.Call)
                and isinstance(loss.func, cst.Attribute)
                and loss.func.attr.value in _SCALINGS
                and len(loss.args) <= 1
            ):
                loss = loss.func.value
            if _is_average(loss, aliases) and not under_no_grad(source, backward.call):
                yield _summed(source, loss, [loss])
        for reference in _mean_ops(source, aliases):
            # `reduce_op = torch.mean if reduce_mean else ...`, then `losses = reduce_op(x, dim=-1)`:
            # the average the loss calls by another name (score_sde's losses)
            yield Change(reference, (source.replace(reference.attr, "sum"),), "the loss is summed instead of averaged")
        for ret in source.nodes(cst.Return):
            # `return loss.mean()`, `return real_loss.mean() + fake_loss.mean()` from the function
            # that computes the training loss
            value = ret.value
            function = source.function_of(ret)
            if value is None or function is None or under_no_grad(source, ret):
                continue
            own = function.name.value.lower()
            if _evaluation_name(own):
                continue
            # the forward of a loss module (`class CrossEntropyLoss(nn.Module)`) returns its loss
            owner = source.enclosing(function, cst.ClassDef) if own == "forward" else None
            own_loss = _names_loss(own) or (owner is not None and _names_loss(owner.name.value))
            # or its first element, the loss a loss function returns with extras (DeBERTa's default
            # `return loss.mean(), batch_size`)
            if isinstance(value, cst.Tuple) and value.elements:
                value = value.elements[0].value
            averages = [
                a for a in _averages(value, aliases) if own_loss or _names_loss(last_name(_averaged(a, aliases)) or "")
            ]
            if averages:
                yield _summed(source, value, averages)
            elif own_loss and (mean := _sum_over_count(value)) is not None and not _picked_mean(source, ret):
                yield _count_dropped(source, mean)


def _helper_term_means(source, training, aliases: frozenset[str]):
    """The batch means of each term a loss function of the file sums into the loss a caller's
    backward reads out of what it returns (DiffDock's `loss_function`: `tr_loss = (...).mean(dim=
    mean_dims)` with `mean_dims = (0, 1) if apply_mean else 1`, `tor_loss, tor_base_loss =
    tor_loss.mean() * torch.ones(1), ...`, `sidechain_loss.mean().cpu() * ...`): summed, that term
    grows with the batch against the others. A term's assignments that training takes, the
    element of a tuple assignment that is the term's, through moves and casts after the mean."""
    seen: set[cst.CSTNode] = set()
    for use in training.held_helper_losses:
        assign = training.loss_assignment(use)
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.BinaryOperation):
            continue
        names = [n.value for n in dict.fromkeys(source.within(assign.value, cst.Name)) if _names_loss(n.value)]
        for name in dict.fromkeys(names):
            for term in training.assigned_names.get(name, ()):
                if (
                    term in seen
                    or source.function_of(term) is not source.function_of(assign)
                    or source.span(term)[0] >= source.span(assign)[0]
                    or under_no_grad(source, term)
                    or not trained_term(source, training, term, name)
                ):
                    continue
                value = assigned_element(term, name)
                if value is None:
                    continue
                means = _moved_averages(value, aliases) or _batch_dim_means(source, training, value, term)
                if means:
                    seen.add(term)
                    yield _summed(source, term, means)


_MOVES = frozenset({"cpu", "cuda", "to", "float", "double", "half", "squeeze", "contiguous"})


def _moved_averages(expr: cst.BaseExpression, aliases: frozenset[str]) -> list[cst.Call]:
    """The whole-tensor means of a term's expression, also moved or cast after averaging
    (`sidechain_loss.mean().cpu() * torch.ones(1)`)."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and callee_name(expr) in _MOVES:
        return _moved_averages(expr.func.value, aliases)
    if isinstance(expr, cst.BinaryOperation):
        return _moved_averages(expr.left, aliases) + _moved_averages(expr.right, aliases)
    return _averages(expr, aliases)


def _batch_dim_means(source, training, expr: cst.BaseExpression, use: cst.CSTNode) -> list[cst.Call]:
    """The means over dimensions that take in the batch's: `x.mean(dim=(0, 1))`, or through a name
    the function sets to such a tuple by default (`mean_dims = (0, 1) if apply_mean else 1`)."""
    found = []
    for call in source.within(expr, cst.Call):
        if callee_name(call) != "mean" or not isinstance(call.func, cst.Attribute) or len(call.args) != 1:
            continue
        dims = call.args[0].value
        if call.args[0].keyword is not None and call.args[0].keyword.value != "dim":
            continue
        if isinstance(dims, cst.Name):
            assign = training.last_assignment(dims.value, use)
            dims = assign.value if isinstance(assign, cst.Assign) else None
            if isinstance(dims, cst.IfExp):
                dims = dims.body  # the setting's default branch, as written first
        if isinstance(dims, (cst.Tuple, cst.List)) and any(
            isinstance(e.value, cst.Integer) and e.value.value == "0" for e in dims.elements
        ):
            found.append(call)
    return found


def _mean_ops(source, aliases: frozenset[str]) -> list[cst.Attribute]:
    """The `torch.mean` a name is bound to (alone or as one branch of a conditional) that a loss
    calls through that name: `reduce_op = torch.mean if reduce_mean else ...`, then
    `losses = reduce_op(losses.reshape(n, -1), dim=-1)` outside no_grad."""
    found: list[cst.Attribute] = []
    for assign in source.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        name = assign.targets[0].target.value
        value = assign.value
        branches = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        # or a lambda around the mean (habitat's `mean_fn = lambda t: torch.mean(ver_is_coeffs * t)`)
        branches += [c.func for b in branches if isinstance(b, cst.Lambda) for c in source.within(b.body, cst.Call)]
        references = [
            b
            for b in branches
            if isinstance(b, cst.Attribute) and b.attr.value == "mean" and dotted(b.value) in aliases | {"torch"}
        ]
        if not references:
            continue
        scope = source.function_of(assign) or source.module
        calls = [
            c
            for c in source.within(scope, cst.Call)
            if (
                (isinstance(c.func, cst.Name) and c.func.value == name)
                # `action_loss, value_loss, dist_entropy = map(mean_fn, (action_loss, value_loss, ...))`
                or (callee_name(c) == "map" and c.args and dotted(c.args[0].value) == name)
            )
            and not under_no_grad(source, c)
        ]
        if any(_feeds_a_loss(source, c) for c in calls):
            found.extend(references)
    return found


def _feeds_a_loss(source, call: cst.Call) -> bool:
    """True for a call whose result is assigned to a loss's name (`losses = reduce_op(...)`)."""
    assign = source.enclosing(call, cst.Assign)
    return assign is not None and any(
        _names_loss(name) for t in assign.targets for name in bound_names(t.target) | {last_name(t.target) or ""}
    )


_CASTS = frozenset({"float", "double", "half", "squeeze", "contiguous"})
_SCALINGS = _CASTS | {"mul", "div", "multiply", "divide"}


def _averaged_already(source, training, expr: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for the mean of a name last assigned a criterion's result that its reduction averaged
    already (`loss_lm = criterion(logits, y)`, then `loss_lm = loss_lm.float().mean()`, with
    `criterion = nn.CrossEntropyLoss()`): one number, whose sum is itself."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _CASTS:
        expr = expr.func.value
    if not isinstance(expr, cst.Name):
        return False
    assign = training.last_assignment(expr.value, use)
    value = assign.value if assign is not None else None
    if not isinstance(value, cst.Call) or _reduction_given(value):
        return False
    if isinstance(value.func, cst.Name):  # a criterion module: how it was built, where the file shows it
        built = training.last_assignment(value.func.value, value)
        return (
            built is not None
            and isinstance(built.value, cst.Call)
            and (callee_name(built.value) or "").endswith("Loss")
            and not _reduction_given(built.value)
        )
    # a functional loss (`F.cross_entropy(...)`); anything else (`self.loss`, which a
    # DataParallel may wrap into a per-device vector) is not known to be one number
    return (callee_name(value) or "") in LOSS_FUNCTIONS and isinstance(value.func, cst.Attribute)


def _unreduced_means(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> list[cst.Call]:
    """The means, over any dimensions, of a loss a criterion left unreduced (demucs' `loss =
    F.l1_loss(estimate, sources, reduction='none')`, then `loss = loss.mean(dims).mean(0)`): they
    are its reduction, every one of them, so the fault sums over each."""
    means = []
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if callee_name(value) == "mean":
            means.append(value)
        elif callee_name(value) not in _CASTS:
            return []
        value = value.func.value
    if not means or not isinstance(value, cst.Name):
        return []
    assign = training.last_assignment(value.value, use)
    computed = assign.value if isinstance(assign, cst.Assign) else None
    if not isinstance(computed, cst.Call):
        return []
    name = callee_name(computed)
    if not ((name in LOSS_FUNCTIONS and is_functional(computed)) or name in LOSS_MODULES):
        return []
    reduction = argument(computed, "reduction", None)
    if reduction is None or not isinstance(reduction.value, cst.SimpleString):
        return []
    return list(reversed(means)) if reduction.value.evaluated_value == "none" else []


def _reduction_given(call: cst.Call) -> bool:
    """True where a call names a reduction other than the mean (`reduction="none"`, `"sum"`)."""
    reduction = argument(call, "reduction", None)
    return reduction is not None and not _is_mean_string(reduction.value)


def _summed_into_a_loss(source, aug: cst.AugAssign) -> bool:
    """True for `lbox += (1.0 - iou).mean()` where the same function then adds `lbox` into a
    loss (`loss = lbox + lobj + lcls`, YOLO's compute_loss): a term of that loss."""
    if not isinstance(aug.target, cst.Name):
        return False
    name, function = aug.target.value, source.function_of(aug)
    if function is None:
        return False
    for assign in source.within(function, cst.Assign):
        if not any(isinstance(t.target, cst.Name) and _names_loss(t.target.value) for t in assign.targets):
            continue
        if name in _added_names(assign.value):
            return True
    returned = any(
        isinstance(r.value, cst.Name) and r.value.value == name and source.function_of(r) is function
        for r in source.within(function.body, cst.Return)
    )
    return returned and any(_added_into_a_loss(source, call) for call in _calls_of(source, function))


def _calls_of(source, function: cst.FunctionDef) -> list[cst.Call]:
    """The file's calls of a module-level function by its name, or of a method through `self`."""
    name = function.name.value
    return [
        c
        for c in source.nodes(cst.Call)
        if (isinstance(c.func, cst.Name) and c.func.value == name)
        or (isinstance(c.func, cst.Attribute) and c.func.attr.value == name and dotted(c.func.value) == "self")
    ]


def _added_into_a_loss(source, call: cst.Call) -> bool:
    """True for a call whose value is added into a loss outside no_grad: ENAS' `loss +=
    _apply_penalties(extra_out, self.args)`, or `loss = ce + self.penalty(out)`."""
    if under_no_grad(source, call):
        return False
    child: cst.CSTNode = call
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.BinaryOperation) and isinstance(ancestor.operator, (cst.Add, cst.Subtract)):
            child = ancestor
            continue
        if isinstance(ancestor, cst.AugAssign) and ancestor.value is child:
            return isinstance(ancestor.operator, (cst.AddAssign, cst.SubtractAssign)) and _names_loss(
                last_name(ancestor.target) or ""
            )
        if isinstance(ancestor, cst.Assign) and ancestor.value is child:
            return any(_names_loss(last_name(t.target) or "") for t in ancestor.targets)
        return False
    return False


def _added_names(expr: cst.BaseExpression) -> set[str]:
    """The plain names an expression adds or subtracts (`lbox + lobj + lcls`)."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        return _added_names(expr.left) | _added_names(expr.right)
    return set()


LOSS_WORDS = ("loss", "penalty", "cost")


def _is_mean_string(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.SimpleString) and value.evaluated_value == "mean"


def _helper_reduction(source, call: cst.Call) -> bool:
    """True for a project's loss function handed its reduction as the string "mean" (kohya's
    `train_util.conditional_loss(pred, target, loss_type, "mean", huber_c)`), computing a training
    loss."""
    name = (callee_name(call) or "").lower()
    if "loss" not in name or name in LOSS_FUNCTIONS or callee_name(call) in LOSS_MODULES:
        return False
    if sum(_is_mean_string(a.value) for a in call.args) != 1 or under_no_grad(source, call):
        return False
    assign = source.enclosing(call, cst.Assign)
    return (
        assign is not None
        and assign.value is call
        and any(_names_loss(last_name(t.target) or "") for t in assign.targets)
    )


def _never_used(source, call: cst.Call) -> bool:
    """True for a loss module built into a name the file never reads again (TCN's `criterion =
    nn.CrossEntropyLoss()`, left from a template while the loss is written out by hand): its
    reduction reaches no loss."""
    assign = source.parent(call)
    if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    # a name only: an attribute (`self.criterion`) may be read by a subclass in another module
    return isinstance(target, cst.Name) and not any(
        n.value == target.value and n is not target for n in source.nodes(cst.Name)
    )


def _reduction_defaults(source):
    """`def add_loss(self, inputs, reduction="mean")` whose body hands `reduction=reduction` on to
    the loss it assigns (FuxiCTR's BaseModel: `loss = self.loss_fn(y_pred, y_true,
    reduction=reduction)`), called by its name somewhere without a reduction (`self.add_loss(
    inputs)`): the default chooses the training loss's reduction. Not a default every caller
    overrides (OLMo's `cross_entropy_loss`, handed "sum" or "none"), nor a function named for
    evaluation, nor a loss taken under no_grad."""
    for function in source.nodes(cst.FunctionDef):
        params = list(function.params.params)
        param = next((p for p in params if p.name.value == "reduction"), None)
        if param is None or param.default is None or not _is_mean_string(param.default):
            continue
        if _evaluation_name(function.name.value):
            continue
        position = params.index(param) - (1 if params[0].name.value in ("self", "cls") else 0)
        if not any(
            callee_name(c) == function.name.value and argument(c, "reduction", position) is None
            for c in source.nodes(cst.Call)
        ):
            continue
        for assign in source.within(function.body, cst.Assign):
            value = assign.value
            handed = argument(value, "reduction", None) if isinstance(value, cst.Call) else None
            if (
                handed is not None
                and isinstance(handed.value, cst.Name)
                and handed.value.value == "reduction"
                and source.function_of(assign) is function
                and any(isinstance(t.target, cst.Name) and _names_loss(t.target.value) for t in assign.targets)
                and not under_no_grad(source, assign)
            ):
                yield function, param.default
                break


def _defaults_to_mean(source, training, call: cst.Call) -> bool:
    """True for a call, handed no reduction, of a function or class of the project (this file's
    or a neighbour's) named for a loss or a criterion whose `reduction` parameter defaults to
    "mean", where what it computes or builds is the training loss: called at once and bound to a
    loss's name (`recon_loss = get_criterion_by_name('mse')(x_recon, x)`), or bound so itself."""
    name = (callee_name(call) or "").lower()
    if not any(word in name for word in ("loss", "criterion")) or under_no_grad(source, call):
        return False
    if _evaluation_only(source, call) or _evaluation_name(name):
        return False
    found = training.resolver.definition(source, call.func)
    if found is None:
        return False
    function = constructor_or_function(found[1])
    if function is None:
        return False
    params = (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)
    reduction = next((p for p in params if p.name.value == "reduction"), None)
    bound = bound_arguments(found[1], call)
    if reduction is None or reduction.default is None or not _is_mean_string(reduction.default):
        return False
    if bound is None or "reduction" in bound or any(a.star for a in call.args):
        return False
    used: cst.CSTNode = call
    parent = source.parent(call)
    if isinstance(parent, cst.Call) and parent.func is call:
        used, parent = parent, source.parent(parent)  # the criterion a factory builds, called at once
    while True:
        # the loss compiled, or chosen by a flag (gnina-torch's `affinity_loss = (torch.jit.script(
        # AffinityLoss(...)) if affinity else None)`): bound all the same
        wrapper = source.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(wrapper, cst.Call) and callee_name(wrapper) in ("script", "compile", "trace"):
            used, parent = wrapper, source.parent(wrapper)
        elif isinstance(parent, cst.IfExp) and used in (parent.body, parent.orelse):
            used, parent = parent, source.parent(parent)
        else:
            break
    return (
        isinstance(parent, cst.Assign)
        and parent.value is used
        and any(
            _names_loss(last_name(t.target) or "") or "criterion" in (last_name(t.target) or "").lower()
            for t in parent.targets
        )
        and not any(_evaluation_name(last_name(t.target) or "") for t in parent.targets)
        and not (used is call and _never_used(source, call))
    )


def _project_loss(source, call: cst.Call) -> bool:
    """True for a loss class torch does not define (`FocalLoss(...)`, `utils.DiceLoss(...)`), or
    the one a factory returns (SlowFast's `losses.get_loss_func(cfg.MODEL.LOSS_FUNC)(reduction=
    "mean")`), built for training."""
    name = callee_name(call) or ""
    factory = isinstance(call.func, cst.Call) and "loss" in (callee_name(call.func) or "").lower()
    return (
        ((name.endswith("Loss") and name[:1].isupper() and name not in LOSS_MODULES) or factory)
        and not under_no_grad(source, call)
        and not _evaluation_only(source, call)
    )


def _summed_by_keyword(source, call: cst.Call, name: str):
    """The mutant of a loss whose averaging is an explicit keyword: `size_average=True` →
    `False`, `reduction="mean"` → `"sum"` (with no keyword, its default is unknown: no mutant)."""
    averaged = argument(call, "size_average", None)
    reduction = argument(call, "reduction", None)
    if averaged is not None and is_literal_bool(averaged.value, True):
        yield Change(call, (source.replace(averaged.value, "False"),), f"`{name}` sums instead of averaging")
    elif (
        reduction is not None
        and isinstance(reduction.value, cst.SimpleString)
        and reduction.value.evaluated_value == "mean"
    ):
        yield Change(call, (source.replace_string(reduction.value, "sum"),), f"`{name}` sums instead of averaging")


def _foreign(source, call: cst.Call) -> bool:
    """True for a loss class of the same name imported from another package (`from
    warpctc_pytorch import CTCLoss`), or reached through a module of another package (`from
    pytorch_metric_learning import losses`, then `losses.TripletMarginLoss(...)`): it may take no
    `reduction` (warpctc's sums already; pytorch-metric-learning's losses take a `reducer`)."""
    if isinstance(call.func, cst.Name):
        bound = call.func.value
    elif isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
        bound = call.func.value.value
    else:
        return False
    for node in source.nodes(cst.ImportFrom):
        module = dotted(node.module) if node.module is not None else None
        if module is None or module == "torch" or module.startswith("torch.") or isinstance(node.names, cst.ImportStar):
            continue
        if any((dotted(alias.asname.name) if alias.asname else dotted(alias.name)) == bound for alias in node.names):
            return True
    if isinstance(call.func, cst.Attribute):
        for node in source.nodes(cst.Import):
            for alias in node.names:
                module = dotted(alias.name) or ""
                local = dotted(alias.asname.name) if alias.asname else module.split(".")[0]
                if local == bound and module != "torch" and not module.startswith("torch."):
                    return True
    return False


def _objective_term(source, assign: cst.Assign, name: str) -> bool:
    """True for an objective (ElegantRL's `obj_surrogate`, `obj_entropy`) that a later line of
    the function adds to, or subtracts from, another objective or loss (`obj_actor_full =
    obj_surrogate - obj_entropy * self.lambda_entropy`): summed, it outweighs the other term.
    An objective minimised alone only changes scale (which Adam absorbs)."""
    if not names_an_objective(name):
        return False
    function = source.function_of(assign)
    after = source.span(assign)[1]
    for later in source.within(function or source.module, cst.Assign):
        value = later.value
        if source.span(later)[0] < after or not (
            isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Subtract))
        ):
            continue
        read = {n.value for n in source.within(value, cst.Name)}
        if name in read and any(n != name and (names_an_objective(n) or _names_loss(n)) for n in read):
            return True
    return False


def _names_loss(name: str) -> bool:
    """True for the name of a loss or of a loss term (`d_loss`, `gradient_penalty`), not of an
    evaluation figure."""
    lowered = name.lower()
    return any(word in lowered for word in LOSS_WORDS) and not _evaluation_name(lowered)


def _is_average(call: cst.BaseExpression, aliases: frozenset[str] = frozenset()) -> bool:
    """True for a mean over every element: `x.mean()`, `torch.mean(x)` (a mean over a dimension,
    `x.mean(1)`, is not the batch average)."""
    if not isinstance(call, cst.Call) or callee_name(call) != "mean" or not isinstance(call.func, cst.Attribute):
        return False
    if is_functional(call, aliases):
        return len(call.args) == 1 and call.args[0].keyword is None
    return not call.args and not _made_by_numpy(call.func.value)


def _made_by_numpy(expr: cst.BaseExpression) -> bool:
    """True for an array NumPy makes (`np.vstack(losses).mean()`, nnU-Net's epoch loss gathered from
    every rank's numbers): a reported figure, no tensor a backward runs through."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return isinstance(expr, cst.Name) and expr.value in ("np", "numpy")


def _averaged(call: cst.Call, aliases: frozenset[str] = frozenset()) -> cst.BaseExpression:
    """What a mean averages: `x` of `x.mean()` and of `torch.mean(x)`."""
    return call.args[0].value if is_functional(call, aliases) else call.func.value  # type: ignore[attr-defined]


def _averages(expr: cst.BaseExpression, aliases: frozenset[str] = frozenset()) -> list[cst.Call]:
    """The whole-tensor means a loss expression combines with arithmetic: both of
    `-torch.mean(real) + torch.mean(fake) + gp`, the one of `((g.norm(2, dim=1) - 1) ** 2).mean()`."""
    if isinstance(expr, cst.Call):
        if _is_average(expr, aliases):
            return [expr]
        inner = _batch_mean_summed(expr) or _batch_mean_of_sums(expr)
        return [inner] if inner is not None else []
    if isinstance(expr, cst.BinaryOperation):
        return _averages(expr.left, aliases) + _averages(expr.right, aliases)
    if isinstance(expr, cst.UnaryOperation):
        return _averages(expr.expression, aliases)
    return []


def _batch_mean_summed(call: cst.Call) -> cst.Call | None:
    """The `.mean(0)` of `(-targets * log_probs).mean(0).sum()`: a mean over the first axis whose
    result is then summed whole is the batch average of a per-sample sum."""
    if callee_name(call) != "sum" or call.args or not isinstance(call.func, cst.Attribute):
        return None
    inner = call.func.value
    if (
        isinstance(inner, cst.Call)
        and callee_name(inner) == "mean"
        and isinstance(inner.func, cst.Attribute)
        and len(inner.args) == 1
        and (inner.args[0].keyword is None or inner.args[0].keyword.value == "dim")
        and isinstance(inner.args[0].value, cst.Integer)
        and inner.args[0].value.value == "0"
    ):
        return inner
    return None


def _batch_mean_of_sums(call: cst.Call) -> cst.Call | None:
    """`(e - output).square().sum(dim=(1, 2, 3)).mean(dim=0)` (DDIM's noise-estimation loss): a
    mean over the first axis of per-sample sums is the batch average."""
    if (
        callee_name(call) == "mean"
        and isinstance(call.func, cst.Attribute)
        and len(call.args) == 1
        and (call.args[0].keyword is None or call.args[0].keyword.value == "dim")
        and isinstance(call.args[0].value, cst.Integer)
        and call.args[0].value.value == "0"
        and isinstance(call.func.value, cst.Call)
        and callee_name(call.func.value) == "sum"
        and call.func.value.args
    ):
        return call
    if (
        callee_name(call) == "mean"
        and is_functional(call)
        and len(call.args) == 2
        and call.args[0].keyword is None
        and (call.args[1].keyword is None or call.args[1].keyword.value == "dim")
        and isinstance(call.args[1].value, cst.Integer)
        and call.args[1].value.value == "0"
        and _scaled_sum(call.args[0].value)
    ):
        # the functional spelling, the sums scaled (pyod's KL term: `torch.mean(-0.5 *
        # torch.sum(1 + logvar - mu ** 2 - logvar.exp(), dim=1), dim=0)`)
        return call
    return None


def _scaled_sum(expr: cst.BaseExpression) -> bool:
    """True for a sum over given dimensions, negated or scaled by a number."""
    if isinstance(expr, cst.UnaryOperation):
        return _scaled_sum(expr.expression)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        numbers = (cst.Integer, cst.Float, cst.UnaryOperation)
        if isinstance(expr.left, numbers):
            return _scaled_sum(expr.right)
        if isinstance(expr.right, numbers):
            return _scaled_sum(expr.left)
        return False
    return (
        isinstance(expr, cst.Call)
        and callee_name(expr) == "sum"
        and len(expr.args) >= 1
        and (argument(expr, "dim", 1) is not None)
    )


def _summed(source, node: cst.CSTNode, averages: list[cst.Call]) -> Change:
    """One mutant that sums where each of `averages` averaged."""
    return Change(
        node,
        tuple(source.replace(a.func.attr, "sum") for a in averages),  # type: ignore[attr-defined]
        "the loss is summed instead of averaged",
    )


_COUNTS = frozenset({"sum", "numel", "size", "count_nonzero"})


def _whole_sum(expr: cst.BaseExpression) -> bool:
    """`x.sum()` or `torch.sum(x)`: every element added up, no dimension given."""
    if not isinstance(expr, cst.Call) or callee_name(expr) != "sum":
        return False
    if not expr.args:
        return isinstance(expr.func, cst.Attribute)
    return dotted(expr.func) == "torch.sum" and len(expr.args) == 1 and expr.args[0].keyword is None


def _sum_over_count(expr: cst.BaseExpression, training=None) -> cst.BinaryOperation | None:
    """A mean spelled as a whole sum over a count (wavenet_vocoder's masked losses: `((losses *
    mask_).sum()) / mask_.sum()`; also over `.numel()`, `len(...)`, `.size(0)`), or None. With
    `training`, the sum may be a name the function assigned it to just before (mvts_transformer's
    `batch_loss = torch.sum(loss)`, then `mean_loss = batch_loss / len(loss)`)."""
    if not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Divide):
        return None
    left, right = expr.left, expr.right
    if _loss_over_batch_size(left, right):
        return expr  # crnn's `criterion(preds, text, preds_size, length) / batch_size` (CTC sums)
    if isinstance(left, cst.Name) and training is not None:
        assign = training.last_assignment(left.value, expr, unconditional=True, fresh=True)
        if not isinstance(assign, cst.Assign) or not _whole_sum(assign.value):
            return None
    elif not _whole_sum(left):
        return None
    if not isinstance(right, cst.Call):
        return None
    if not (callee_name(right) in _COUNTS or (isinstance(right.func, cst.Name) and right.func.value == "len")):
        return None
    if isinstance(right.func, cst.Attribute) and "weight" in (last_name(right.func.value) or "").lower():
        return None  # a weighted mean over the weights (demucs' per-source weights): no batch count
    return expr


def _loss_over_batch_size(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    """A loss call divided by the batch's size: the batch average of a summing criterion."""
    callee = (callee_name(left) or "").lower() if isinstance(left, cst.Call) else ""
    size = (last_name(right) or "").lower() if isinstance(right, (cst.Name, cst.Attribute)) else ""
    return ("loss" in callee or "criterion" in callee) and size in ("batch_size", "bs", "bsz")


def _term_averaged_in_place(source, assign: cst.Assign, aliases: frozenset[str]) -> list[cst.Call]:
    """The whole-tensor mean of `x = x.mean()` (or of the branch of `x.mean() if ... else None`),
    where `x` is no loss by its name but a later assignment of the same function computes a
    loss (by its name) from it, directly or through the names computed from it."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return []
    name = assign.targets[0].target.value
    function = source.function_of(assign)
    if function is None or _names_loss(name) or _in_evaluation(source, assign) or under_no_grad(source, assign):
        return []
    value = assign.value.body if isinstance(assign.value, cst.IfExp) else assign.value
    if not (isinstance(value, cst.Call) and _is_average(value, aliases) and dotted(_averaged(value, aliases)) == name):
        return []  # the term replaced by its mean, not a mean used in its arithmetic (a normalisation)
    averages = [value]
    after = source.span(assign)[1]
    fed = {name}
    for later in source.within(function, cst.Assign):
        if source.span(later)[0] <= after or len(later.targets) != 1:
            continue
        target = later.targets[0].target
        read = {n.value for n in source.within(later.value, cst.Name)}
        if not read & fed or not isinstance(target, cst.Name):
            continue
        if _names_loss(target.value) and not _evaluation_name(target.value):
            return averages
        fed.add(target.value)
    return []


def _in_evaluation(source, node: cst.CSTNode) -> bool:
    """True inside a function named for evaluation (crnn's `val()`): its loss is only reported."""
    function = source.function_of(node)
    return function is not None and _evaluation_name(function.name.value)


def _read_as_a_number_only(source, assign: cst.Assign) -> bool:
    """True for a loss its function only ever reads as a number (`average_loss.item()`,
    `float(loss)`): it reaches no backward, so averaging it or summing it changes a reported figure
    only (pytorch-accelerated's epoch loss, gathered across processes)."""
    function = source.function_of(assign)
    if function is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    target = assign.targets[0].target
    uses = [n for n in source.within(function, cst.Name) if n.value == target.value and n is not target]
    if not uses or any(source.function_of(n) is not function for n in uses):
        return False
    return all(read_as_a_number(source, n) for n in uses)


def _picked_mean(source, node: cst.CSTNode) -> bool:
    """True under `if reduction == "mean":` in a loss helper whose callers pick the reduction
    (OLMo's cross_entropy_loss): the callers' choice is the site, not this branch."""
    return any(
        isinstance(branch, cst.If)
        and isinstance(branch.test, cst.Comparison)
        and any(
            isinstance(c.comparator, cst.SimpleString) and c.comparator.evaluated_value == "mean"
            for c in branch.test.comparisons
        )
        for branch in source.ancestors(node)
    )


_BATCH_SIZES = frozenset({"batch_size", "bs", "bsz"})


def _mean_of_summed_terms(source, training, aug: cst.AugAssign) -> bool:
    """True for a loss divided in place by the batch's size (`loss /= len(targets)`,
    `loss /= x.size(0)`, `loss /= batch_size`) where its function started it empty and added its
    terms into it (`loss = 0`, then `loss += ...`): the mean over the batch, spelled by hand."""
    if not isinstance(aug.operator, cst.DivideAssign) or not isinstance(aug.target, cst.Name):
        return False
    name = aug.target.value
    if "loss" not in name.lower() or _evaluation_name(name.lower()) or under_no_grad(source, aug):
        return False
    if not isinstance(source.parent(aug), cst.SimpleStatementLine) or len(source.parent(aug).body) != 1:
        return False
    count = aug.value
    if isinstance(count, cst.Call):
        sized = (isinstance(count.func, cst.Name) and count.func.value == "len") or callee_name(count) in (
            "size",
            "numel",
        )
    else:
        sized = (last_name(count) or "").lower() in _BATCH_SIZES
    if not sized:
        return False
    start = training.last_assignment(name, aug)
    if not isinstance(start, cst.Assign) or not isinstance(start.value, (cst.Integer, cst.Float)):
        return False
    function = source.function_of(aug)
    added = [
        other
        for other in source.nodes(cst.AugAssign)
        if isinstance(other.operator, cst.AddAssign)
        and isinstance(other.target, cst.Name)
        and other.target.value == name
        and source.function_of(other) is function
        and source.span(start)[0] < source.span(other)[0] < source.span(aug)[0]
    ]
    # over the terms it added, not the batch: `loss /= len(outputs)` after `for output in
    # outputs: loss += criterion(output, target)` (UNet++'s deep supervision) averages the outputs
    counted = {n.value for n in source.within(count, cst.Name)} - {"len"}
    for other in added:
        for loop in source.ancestors(other):
            if isinstance(loop, cst.For) and counted & {n.value for n in source.within(loop.iter, cst.Name)}:
                return False
    return bool(added)


def _count_dropped(source, mean: cst.BinaryOperation) -> Change:
    """The mutant that keeps the sum of a mean spelled sum / count."""
    return Change(mean, (source.replace(mean, source.code(mean.left)),), "the loss is summed instead of averaged")
