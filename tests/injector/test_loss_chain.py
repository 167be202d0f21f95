"""detached-graph and no-grad-training along a loss's chain: each forward whose output reaches the
loss by a way of its own gets its own cut and its own no_grad, a forward whose output another
model scores included; a forward that only hands its output on, a model the step does not train,
a schedule's clamp bound, an output that is not a tensor, what is set up before the loop and what
only evaluation runs get none."""

from __future__ import annotations

from injector.generate import mutants_for_source
from injector.operators.detached_graph import DetachedGraph
from injector.operators.forwards import loss_chain
from injector.operators.no_grad_training import NoGradTraining
from injector.patterns import Training
from injector.source import Source


def cuts(before: str) -> list[str]:
    """The lines each detached-graph mutant of `before` adds, joined."""
    found = []
    for mutant in mutants_for_source(before, "train.py", [DetachedGraph()]):
        after = mutant.apply(before).splitlines()
        found.append(" | ".join(line.strip() for line in after if line not in before.splitlines()))
    return found


UNPACKED_INTO_TWO_TERMS = (
    "for d in data:\n"
    "    ae1s, ae2s, ae2ae1s = model(d)\n"
    "    l1 = l(ae1s, d) + l(ae2ae1s, d)\n"
    "    l2 = l(ae2s, d) - l(ae2ae1s, d)\n"
    "    loss = torch.mean(l1 + l2)\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


def test_a_forward_unpacked_into_outputs_two_terms_read_is_cut_name_by_name():
    # TranAD's training step: cutting the forward differs from cutting either term or the loss
    assert "ae1s = ae1s.detach() | ae2s = ae2s.detach() | ae2ae1s = ae2ae1s.detach()" in cuts(UNPACKED_INTO_TWO_TERMS)


def test_a_forward_that_only_hands_its_output_on_gets_no_second_cut():
    before = (
        "for d in data:\n"
        "    ae, ats = model(d)\n"
        "    l1 = l(ae, d)\n"
        "    loss = torch.mean(l1)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    # the loss cut off is the same fault as `ae` cut off: one mutant, not two
    assert cuts(before) == ["loss = torch.mean(l1).detach()"]


def test_the_forward_of_a_model_the_step_does_not_train_is_not_cut():
    before = (
        "def train(net, global_net, loader, criterion, mu):\n"
        "    optimizer = optim.SGD(net.parameters(), lr=0.01)\n"
        "    for x, target in loader:\n"
        "        _, pro1, out = net(x)\n"
        "        _, pro2, _ = global_net(x)\n"
        "        loss = criterion(out, target) + mu * criterion(pro1, pro2)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    made = cuts(before)
    assert "pro1 = pro1.detach() | out = out.detach()" in made
    assert not any("pro2 = " in cut for cut in made)


def test_a_schedules_clamp_bound_is_not_cut():
    # stable-baselines3's PPO: `self.clip_range` is a FloatSchedule, called for a number
    before = (
        "class PPO:\n"
        "    def __init__(self, policy, clip_range):\n"
        "        self.policy = policy\n"
        "        self.clip_range = FloatSchedule(clip_range)\n"
        "    def train(self):\n"
        "        clip_range = self.clip_range(self._current_progress_remaining)\n"
        "        for batch in self.buffer.get(64):\n"
        "            values, log_prob, entropy = self.policy(batch.obs, batch.actions)\n"
        "            ratio = th.exp(log_prob - batch.old_log_prob)\n"
        "            loss_1 = batch.advantages * ratio\n"
        "            loss_2 = batch.advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)\n"
        "            loss = -th.min(loss_1, loss_2).mean() + F.mse_loss(batch.returns, values.flatten())\n"
        "            self.policy.optimizer.zero_grad()\n"
        "            loss.backward()\n"
        "            self.policy.optimizer.step()\n"
    )
    made = cuts(before)
    assert not any("clip_range = " in cut for cut in made)
    assert "values = values.detach() | log_prob = log_prob.detach()" in made


def test_an_output_read_by_position_or_through_an_output_object_is_not_cut_whole():
    before = (
        "for x, y in loader:\n"
        "    outputs = model(x)\n"
        "    out = model(x)\n"
        "    loss = criterion(outputs[0], y) + criterion(outputs[1], y) + out.loss + crit(out.logits, y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    made = cuts(before)
    assert not any(cut.startswith(("outputs = model(x).detach()", "out = model(x).detach()")) for cut in made)


def wraps(before: str) -> list[str]:
    """The lines each no-grad-training mutant of `before` puts under no_grad, joined."""
    found = []
    for mutant in mutants_for_source(before, "train.py", [NoGradTraining()]):
        after = mutant.apply(before).splitlines()
        start = next(i for i, line in enumerate(after) if line.strip().endswith("no_grad():") and line not in before)
        indent = len(after[start]) - len(after[start].lstrip())
        body = []
        for line in after[start + 1 :]:
            if len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line.strip())
        found.append(" | ".join(body))
    return found


VAE_STEP = (
    "import torch\n"
    "def vae_step(encoder, discriminator, optim_vae, labeled, unlabeled, cuda):\n"
    "    for x, u in zip(labeled, unlabeled):\n"
    "        recon, mu, logvar = encoder(x)\n"
    "        unsup_loss = vae_loss(x, recon, mu, logvar)\n"
    "        unlab_recon, unlab_mu, unlab_logvar = encoder(u)\n"
    "        transductive_loss = vae_loss(u, unlab_recon, unlab_mu, unlab_logvar)\n"
    "        labeled_preds = discriminator(mu)\n"
    "        unlabeled_preds = discriminator(unlab_mu)\n"
    "        real = torch.ones(x.size(0))\n"
    "        if cuda:\n"
    "            real = real.cuda()\n"
    "        dsc_loss = bce(labeled_preds, real) + bce(unlabeled_preds, real)\n"
    "        total = unsup_loss + transductive_loss + 0.5 * dsc_loss\n"
    "        optim_vae.zero_grad()\n"
    "        total.backward()\n"
    "        optim_vae.step()\n"
)


def test_a_forward_whose_output_another_model_scores_is_cut_and_run_without_autograd():
    # VAAL's VAE step: the encoder's `mu` reaches the loss through the discriminator as well as
    # through the reconstruction term, so cutting the encoder differs from cutting that term
    made = cuts(VAE_STEP)
    assert "recon = recon.detach() | mu = mu.detach() | logvar = logvar.detach()" in made
    assert "labeled_preds = discriminator(mu).detach()" in made
    wrapped = wraps(VAE_STEP)
    assert "recon, mu, logvar = encoder(x)" in wrapped
    assert "labeled_preds = discriminator(mu)" in wrapped


def test_a_loss_helper_handed_the_model_does_not_make_its_inputs_a_second_forward():
    # PyTorch-YOLOv3: in training the model returns a list of the heads' outputs, which the
    # loss helper takes with the model; `.detach()` on that list would fail, not cut
    before = (
        "for imgs, targets in loader:\n"
        "    outputs = model(imgs)\n"
        "    loss, components = compute_loss(outputs, targets, model)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    assert not any(cut.startswith("outputs = model(imgs).detach()") for cut in cuts(before))


def test_no_forward_is_wrapped_whose_output_only_a_loss_already_under_no_grad_reads():
    before = (
        "import torch\n"
        "def body(self, inputs, labels):\n"
        "    pred = self.model(inputs)\n"
        "    with torch.no_grad():\n"
        "        loss = self.loss_fn(pred, labels)\n"
        "    loss.backward()\n"
    )
    assert wraps(before) == []


def test_a_forward_set_up_before_the_loop_or_taken_only_in_evaluation_is_not_wrapped():
    # nerf-pytorch builds its networks and the render settings once (`create_nerf`, whose query
    # function runs the model); demucs evaluates through `apply_model` in the same epoch loop
    before = (
        "import torch\n"
        "def create_nerf(args):\n"
        "    model = NeRF(args)\n"
        "    kwargs = {'network_query_fn': lambda x: model(x)}\n"
        "    return kwargs, torch.optim.Adam(model.parameters())\n"
        "def run(args, loader, train):\n"
        "    render_kwargs, optimizer = create_nerf(args)\n"
        "    for rays, target in loader:\n"
        "        if not train and args.valid_apply:\n"
        "            rgb = apply_model(model, rays)\n"
        "        else:\n"
        "            rgb = render(rays, **render_kwargs)\n"
        "        loss = ((rgb - target) ** 2).mean()\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    assert wraps(before) == ["loss = ((rgb - target) ** 2).mean()"]


def test_a_name_bound_inside_a_nested_tuple_target_is_followed_to_its_forward():
    # TextBrewer's `(teacher_batch, results_T), (student_batch, results_S) = get_outputs_from_batch(...)`
    text = (
        "def train(model, loader, criterion):\n"
        "    for x, y in loader:\n"
        "        (s_out, s_feat), _ = model(x)\n"
        "        loss = criterion(s_out, y)\n"
        "        loss.backward()\n"
    )
    source = Source(text, "train.py")
    training = Training(source)
    chain = loss_chain(source, training, training.loss_uses[0])
    assert [source.line(line) for line in chain] == [3, 4]
