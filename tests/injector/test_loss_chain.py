"""detached-graph along a loss's chain: each forward whose output reaches the loss by a way of its
own gets its own cut; a forward that only hands its output on, a model the step does not train,
a schedule's clamp bound and an output that is not a tensor get none."""

from __future__ import annotations

from injector.generate import mutants_for_source
from injector.operators.detached_graph import DetachedGraph


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
