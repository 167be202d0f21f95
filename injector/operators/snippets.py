"""Code that several operators' examples share: one spelling of a real trainer, probed by each."""

from __future__ import annotations

# OLMo's shape: train_step clears, runs its backward through its own helper and steps, writing
# the scheduled rate into every group first; clears and rates set elsewhere (before evaluating,
# on restore) are rewritten by the step. Each operator's example mutates its own fault here.
HELPER_STEP_TRAINER = (
    "class Trainer:\n"
    "    def train_batch(self, batch):\n"
    "        loss = self.model(batch).mean()\n"
    "        loss.backward()\n"
    "        return loss.detach()\n"
    "    def train_step(self, batch):\n"
    "        metrics = {}\n"
    "        self.optim.zero_grad(set_to_none=True)\n"
    "        metrics['loss'] = self.train_batch(batch).item()\n"
    "        for group in self.optim.param_groups:\n"
    "            group['lr'] = self.scheduler.get_lr(self.cfg.lr, self.step)\n"
    "        self.optim.step()\n"
    "        return metrics\n"
    "    def eval(self):\n"
    "        self.optim.zero_grad(set_to_none=True)\n"
    "        self.model.eval()\n"
    "    def restore(self, state):\n"
    "        for group in self.optim.param_groups:\n"
    "            group['lr'] = state['lr']\n"
    "    def fit(self):\n"
    "        for batch in self.loader:\n"
    "            self.train_step(batch)\n"
)
