"""Program 19 (written for issue 9's fresh program 19 without reading triage's rules): reinforcement learning.

An agent that learns from its own experience, where the programs before it learn from a fixed
data set: PPO on a small self-written grid-navigation environment. Each episode places an agent
and a goal at random cells of an 11x11 grid; the agent sees both positions (scaled to [-1, 1]),
moves with one of 4 actions, pays 0.03 per step, gets 0.01 for each cell it comes closer (and
loses it for each cell it moves away) and +1 on reaching the goal; an episode is cut after 60
steps (a time limit, bootstrapped from the value of the last observation as Stable-Baselines3
does). Eight copies run as one vectorised environment with automatic reset and a Monitor-style
record of each finished episode. The policy is SB3's `ActorCriticPolicy` written out: separate
tanh MLPs (64, 64) for the actor (with dropout 0.1) and the critic, orthogonal initialisation, a
categorical policy over the action logits (`torch.distributions.Categorical`). The algorithm is
SB3's PPO with its defaults where they fit: 128 steps per environment per rollout (1,024
timesteps), GAE (gamma 0.99, lambda 0.95), advantages normalised per minibatch, 10 epochs of
minibatches of 64, the clipped surrogate (clip range 0.2), a value loss (coefficient 0.5), an
entropy bonus (0.01), Adam (lr 3e-4, eps 1e-5) with the learning rate decaying linearly to zero
over the 30,000 timesteps, gradients clipped at norm 0.5; rollouts and evaluation run the policy
in eval mode, updates in train mode. An `EvalCallback` evaluates the deterministic policy on 10
episodes every 312 environment steps (2,496 timesteps). It prints as SB3 does with `verbose=1`
(SB3 itself is not used):

    Using cpu device
    ------------------------------------------
    | rollout/                |              |
    |    ep_len_mean          | 48.5         |
    |    ep_rew_mean          | -1.05        |
    | time/                   |              |
    |    fps                  | 1149         |
    |    iterations           | 2            |
    |    time_elapsed         | 1            |
    |    total_timesteps      | 2048         |
    | train/                  |              |
    |    approx_kl            | 0.0087261945 |
    |    clip_fraction        | 0.0993       |
    |    clip_range           | 0.2          |
    |    entropy_loss         | -1.38        |
    |    explained_variance   | 0.0734       |
    |    learning_rate        | 0.000293     |
    |    loss                 | 0.0121       |
    |    n_updates            | 10           |
    |    policy_gradient_loss | -0.00871     |
    |    value_loss           | 0.181        |
    ------------------------------------------
    Eval num_timesteps=2496, episode_reward=-1.21 +/- 0.66
    Episode length: 49.30 +/- 17.10
    ------------------------------------
    | eval/              |             |
    |    mean_ep_length  | 49.3        |
    ...
    New best mean reward!

(one table per rollout, the first without train/; an update's train/ values print with the next
table, which is the evaluation's table where an evaluation falls in between, as SB3's logger
does; approx_kl printed with float32's digits, as numpy prints it).

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import math
import struct
import sys
import time
from collections import deque

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

# ----------------------------------------------------------------------------- environment


class GridNavVecEnv:
    """`n_envs` copies of a 7x7 navigation task, stepped together; finished episodes reset at once."""

    size = 11
    max_steps = 60
    n_actions = 4  # up, right, down, left
    obs_dim = 4
    moves = torch.tensor([[0, 1], [1, 0], [0, -1], [-1, 0]])

    def __init__(self, n_envs: int, seed: int):
        self.n_envs = n_envs
        self.g = torch.Generator().manual_seed(seed)
        self.pos = torch.zeros(n_envs, 2, dtype=torch.long)
        self.goal = torch.zeros(n_envs, 2, dtype=torch.long)
        self.t = torch.zeros(n_envs, dtype=torch.long)
        # Monitor wrapper bookkeeping
        self.ep_rew = [0.0] * n_envs
        self.ep_len = [0] * n_envs

    def _reset_idx(self, idx: torch.Tensor) -> None:
        n = int(idx.numel())
        if n == 0:
            return
        self.pos[idx] = torch.randint(0, self.size, (n, 2), generator=self.g)
        goal = torch.randint(0, self.size, (n, 2), generator=self.g)
        same = (goal == self.pos[idx]).all(dim=1)
        while bool(same.any()):
            goal[same] = torch.randint(0, self.size, (int(same.sum()), 2), generator=self.g)
            same = (goal == self.pos[idx]).all(dim=1)
        self.goal[idx] = goal
        self.t[idx] = 0

    def _obs(self) -> torch.Tensor:
        scale = 2.0 / (self.size - 1)
        return torch.cat([self.pos * scale - 1.0, self.goal * scale - 1.0], dim=1).float()

    def reset(self) -> torch.Tensor:
        self._reset_idx(torch.arange(self.n_envs))
        self.ep_rew = [0.0] * self.n_envs
        self.ep_len = [0] * self.n_envs
        return self._obs()

    def step(self, actions: torch.Tensor):
        old_dist = (self.pos - self.goal).abs().sum(dim=1)
        self.pos = (self.pos + self.moves[actions]).clamp(0, self.size - 1)
        self.t += 1
        dist = (self.pos - self.goal).abs().sum(dim=1)
        reached = dist == 0
        rewards = -0.03 + 0.01 * (old_dist - dist).float() + reached.float()
        truncated = (self.t >= self.max_steps) & ~reached
        dones = reached | truncated
        terminal_obs = self._obs()
        infos: list[dict] = [{} for _ in range(self.n_envs)]
        for i in range(self.n_envs):
            self.ep_rew[i] += float(rewards[i])
            self.ep_len[i] += 1
            if dones[i]:
                infos[i]["episode"] = {"r": round(self.ep_rew[i], 6), "l": self.ep_len[i]}
                infos[i]["TimeLimit.truncated"] = bool(truncated[i])
                self.ep_rew[i] = 0.0
                self.ep_len[i] = 0
        self._reset_idx(dones.nonzero().flatten())
        return self._obs(), rewards, dones, truncated, terminal_obs, infos


# ----------------------------------------------------------------------------- SB3-style logger


def _float32_str(x: float) -> str:
    """How numpy prints a float32 scalar: the shortest digits that read back as the same float32."""
    x = struct.unpack("f", struct.pack("f", x))[0]
    if math.isnan(x) or math.isinf(x):
        return str(x)
    for p in range(1, 10):
        s = f"{x:.{p}g}"
        if struct.unpack("f", struct.pack("f", float(s)))[0] == x:
            break
    if "e" not in s and "." not in s:
        s += ".0"
    return s


class Float32:
    def __init__(self, value: float):
        self.value = value

    def __str__(self) -> str:
        return _float32_str(self.value)


class Logger:
    """The key-value table of stable_baselines3.common.logger.HumanOutputFormat."""

    max_length = 36

    def __init__(self):
        self.name_to_value: dict = {}

    def record(self, key: str, value) -> None:
        self.name_to_value[key] = value

    def _truncate(self, string: str) -> str:
        if len(string) > self.max_length:
            string = string[: self.max_length - 3] + "..."
        return string

    def dump(self) -> None:
        key2str = {}
        tag = ""
        for key, value in sorted(self.name_to_value.items()):
            value_str = f"{value:<8.3g}" if isinstance(value, float) else str(value)
            if key.find("/") > 0:
                tag = key[: key.find("/") + 1]
                key2str[(tag, self._truncate(tag))] = ""
            if len(tag) > 0 and tag in key:
                key = f"{'':3}{key[len(tag) :]}"
            key2str[(tag, self._truncate(key))] = self._truncate(value_str)
        if key2str:
            key_width = max(len(k[1]) for k in key2str)
            val_width = max(len(v) for v in key2str.values())
            dashes = "-" * (key_width + val_width + 7)
            lines = [dashes]
            for (_, key), value in key2str.items():
                lines.append(f"| {key}{' ' * (key_width - len(key))} | {value}{' ' * (val_width - len(value))} |")
            lines.append(dashes)
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
        self.name_to_value.clear()


def _mean(xs) -> float:
    return sum(xs) / len(xs) if len(xs) else float("nan")


def _std(xs) -> float:
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) if len(xs) else float("nan")


# ----------------------------------------------------------------------------- policy


class MlpExtractor(nn.Module):
    def __init__(self, obs_dim: int, hidden: int = 64, dropout: float = 0.1):
        super().__init__()
        self.policy_net = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.Tanh(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Dropout(dropout),
        )
        self.value_net = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
        )

    def forward(self, obs: torch.Tensor):
        return self.policy_net(obs), self.value_net(obs)


class ActorCriticPolicy(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, fault: str):
        super().__init__()
        self.fault = fault
        self.mlp_extractor = MlpExtractor(obs_dim)
        self.action_net = nn.Linear(64, n_actions)
        self.value_net = nn.Linear(64, 1)
        for module, gain in ((self.mlp_extractor, math.sqrt(2)), (self.action_net, 0.01), (self.value_net, 1.0)):
            for m in module.modules():
                if isinstance(m, nn.Linear):
                    nn.init.orthogonal_(m.weight, gain=gain)
                    m.bias.data.fill_(0.0)

    def _distribution(self, logits: torch.Tensor) -> Categorical:
        if self.fault == "wrong-softmax-dim":
            return Categorical(logits=F.log_softmax(logits, dim=0))
        if self.fault == "double-softmax":
            return Categorical(logits=F.softmax(logits, dim=-1))
        return Categorical(logits=F.log_softmax(logits, dim=-1))

    def forward(self, obs: torch.Tensor, deterministic: bool = False):
        latent_pi, latent_vf = self.mlp_extractor(obs)
        values = self.value_net(latent_vf)
        dist = self._distribution(self.action_net(latent_pi))
        actions = torch.argmax(dist.probs, dim=1) if deterministic else dist.sample()
        return actions, values, dist.log_prob(actions)

    def predict_values(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value_net(self.mlp_extractor.value_net(obs))

    def evaluate_actions(self, obs: torch.Tensor, actions: torch.Tensor):
        latent_pi, latent_vf = self.mlp_extractor(obs)
        logits = self.action_net(latent_pi)
        if self.fault == "detached-graph":
            logits = logits.detach()
        dist = self._distribution(logits)
        values = self.value_net(latent_vf)
        return values, dist.log_prob(actions), dist.entropy()


# ----------------------------------------------------------------------------- evaluation


def evaluate_policy(policy: ActorCriticPolicy, env: GridNavVecEnv, n_eval_episodes: int):
    """One deterministic episode in each copy of the evaluation env."""
    obs = env.reset()
    rewards: list = [None] * env.n_envs
    lengths: list = [None] * env.n_envs
    while any(r is None for r in rewards):
        with torch.no_grad():
            actions, _, _ = policy(obs, deterministic=True)
        obs, _, _, _, _, infos = env.step(actions)
        for i, info in enumerate(infos):
            if "episode" in info and rewards[i] is None:
                rewards[i] = info["episode"]["r"]
                lengths[i] = info["episode"]["l"]
    return rewards[:n_eval_episodes], lengths[:n_eval_episodes]


class EvalCallback:
    def __init__(self, eval_env: GridNavVecEnv, logger: Logger, eval_freq: int, n_eval_episodes: int = 10):
        self.eval_env = eval_env
        self.logger = logger
        self.eval_freq = eval_freq
        self.n_eval_episodes = n_eval_episodes
        self.n_calls = 0
        self.best_mean_reward = -float("inf")

    def on_step(self, model: PPO) -> None:
        self.n_calls += 1
        if self.eval_freq > 0 and self.n_calls % self.eval_freq == 0:
            episode_rewards, episode_lengths = evaluate_policy(model.policy, self.eval_env, self.n_eval_episodes)
            mean_reward, std_reward = _mean(episode_rewards), _std(episode_rewards)
            mean_ep_length, std_ep_length = _mean(episode_lengths), _std(episode_lengths)
            print(f"Eval num_timesteps={model.num_timesteps}, episode_reward={mean_reward:.2f} +/- {std_reward:.2f}")
            print(f"Episode length: {mean_ep_length:.2f} +/- {std_ep_length:.2f}")
            self.logger.record("eval/mean_reward", float(mean_reward))
            self.logger.record("eval/mean_ep_length", mean_ep_length)
            self.logger.record("time/total_timesteps", model.num_timesteps)
            self.logger.dump()
            if mean_reward > self.best_mean_reward:
                print("New best mean reward!")
                self.best_mean_reward = float(mean_reward)


# ----------------------------------------------------------------------------- PPO


class PPO:
    def __init__(self, env: GridNavVecEnv, args: argparse.Namespace, learning_rate: float):
        print("Using cpu device")
        self.env = env
        self.fault = args.fault
        self.n_steps = 128
        self.batch_size = 64
        self.n_epochs = 10
        self.gamma = 0.99
        self.gae_lambda = 0.95
        self.clip_range = 0.2
        self.ent_coef = 0.01
        self.vf_coef = 0.5
        self.max_grad_norm = 0.5
        self.initial_lr = learning_rate
        self.policy = ActorCriticPolicy(env.obs_dim, env.n_actions, args.fault)
        if args.fault == "frozen-parameters":
            # keep the feature layers fixed and fine-tune only the heads
            self.policy.mlp_extractor.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=learning_rate, eps=1e-5)
        self.logger = Logger()
        self.num_timesteps = 0
        self._n_updates = 0
        self._progress_remaining = 1.0
        self.ep_info_buffer: deque = deque(maxlen=100)
        self.loss_history: list = []  # for plotting the training curve afterwards

    def collect_rollouts(self, callback: EvalCallback):
        if self.fault != "missing-eval-mode":
            self.policy.eval()
        n, e = self.n_steps, self.env.n_envs
        self.obs_buf = torch.zeros(n, e, self.env.obs_dim)
        self.actions_buf = torch.zeros(n, e, dtype=torch.long)
        self.rewards_buf = torch.zeros(n, e)
        self.starts_buf = torch.zeros(n, e)
        self.values_buf = torch.zeros(n, e)
        self.log_probs_buf = torch.zeros(n, e)
        for step in range(n):
            with torch.no_grad():
                actions, values, log_probs = self.policy(self._last_obs)
            new_obs, rewards, dones, truncated, terminal_obs, infos = self.env.step(actions)
            self.num_timesteps += e
            callback.on_step(self)
            for info in infos:
                if "episode" in info:
                    self.ep_info_buffer.append(info["episode"])
            if bool(truncated.any()):
                with torch.no_grad():
                    terminal_value = self.policy.predict_values(terminal_obs[truncated]).flatten()
                rewards = rewards.clone()
                rewards[truncated] += self.gamma * terminal_value
            self.obs_buf[step] = self._last_obs
            self.actions_buf[step] = actions
            self.rewards_buf[step] = rewards
            self.starts_buf[step] = self._last_episode_starts
            self.values_buf[step] = values.flatten()
            self.log_probs_buf[step] = log_probs
            self._last_obs = new_obs
            self._last_episode_starts = dones.float()
        with torch.no_grad():
            last_values = self.policy.predict_values(new_obs).flatten()
        self.compute_returns_and_advantage(last_values, dones.float())

    def compute_returns_and_advantage(self, last_values: torch.Tensor, dones: torch.Tensor) -> None:
        self.advantages_buf = torch.zeros_like(self.rewards_buf)
        last_gae_lam = torch.zeros(self.env.n_envs)
        for step in reversed(range(self.n_steps)):
            if step == self.n_steps - 1:
                next_non_terminal = 1.0 - dones
                next_values = last_values
            else:
                next_non_terminal = 1.0 - self.starts_buf[step + 1]
                next_values = self.values_buf[step + 1]
            delta = self.rewards_buf[step] + self.gamma * next_values * next_non_terminal - self.values_buf[step]
            last_gae_lam = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages_buf[step] = last_gae_lam
        self.returns_buf = self.advantages_buf + self.values_buf

    def train(self) -> None:
        if self.fault != "missing-train-mode":
            self.policy.train()
        lr = self.initial_lr * self._progress_remaining
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.logger.record("train/learning_rate", lr)

        obs = self.obs_buf.reshape(-1, self.env.obs_dim)
        actions = self.actions_buf.reshape(-1)
        old_values = self.values_buf.reshape(-1)
        old_log_prob = self.log_probs_buf.reshape(-1)
        all_advantages = self.advantages_buf.reshape(-1)
        returns = self.returns_buf.reshape(-1)
        n = obs.size(0)

        entropy_losses, pg_losses, value_losses, clip_fractions = [], [], [], []
        for _ in range(self.n_epochs):
            approx_kl_divs = []
            indices = torch.randperm(n)
            for start in range(0, n, self.batch_size):
                idx = indices[start : start + self.batch_size]
                if self.fault == "no-grad-training":
                    with torch.no_grad():
                        values, log_prob, entropy = self.policy.evaluate_actions(obs[idx], actions[idx])
                else:
                    values, log_prob, entropy = self.policy.evaluate_actions(obs[idx], actions[idx])
                values = values.flatten()
                advantages = all_advantages[idx]
                if len(advantages) > 1:
                    if self.fault == "missing-epsilon":
                        advantages = (advantages - advantages.mean()) / advantages.std()
                    else:
                        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

                ratio = torch.exp(log_prob - old_log_prob[idx])
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * torch.clamp(ratio, 1 - self.clip_range, 1 + self.clip_range)
                policy_loss = -torch.min(policy_loss_1, policy_loss_2).mean()
                pg_losses.append(policy_loss.item())
                clip_fractions.append(torch.mean((torch.abs(ratio - 1) > self.clip_range).float()).item())

                if self.fault == "wrong-loss-reduction":
                    value_loss = F.mse_loss(returns[idx], values, reduction="sum")
                else:
                    value_loss = F.mse_loss(returns[idx], values)
                value_losses.append(value_loss.item())
                entropy_loss = -torch.mean(entropy)
                entropy_losses.append(entropy_loss.item())

                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                if self.fault == "loss-tensor-leak":
                    self.loss_history.append(loss)
                else:
                    self.loss_history.append(loss.item())

                with torch.no_grad():
                    log_ratio = log_prob - old_log_prob[idx]
                    approx_kl_divs.append(torch.mean((torch.exp(log_ratio) - 1) - log_ratio))

                if self.fault != "missing-zero-grad":
                    self.optimizer.zero_grad()
                if self.fault != "missing-backward":
                    loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                if self.fault != "missing-optimizer-step":
                    self.optimizer.step()
            self._n_updates += 1

        var_y = returns.var(unbiased=False)
        explained_var = float("nan") if var_y == 0 else float(1 - (returns - old_values).var(unbiased=False) / var_y)
        self.logger.record("train/entropy_loss", _mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", _mean(pg_losses))
        self.logger.record("train/value_loss", _mean(value_losses))
        self.logger.record("train/approx_kl", Float32(torch.stack(approx_kl_divs).mean().item()))
        self.logger.record("train/clip_fraction", _mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
        self.logger.record("train/n_updates", self._n_updates)
        self.logger.record("train/clip_range", self.clip_range)

    def _dump_logs(self, iteration: int) -> None:
        time_elapsed = max(time.time() - self.start_time, sys.float_info.epsilon)
        fps = int(self.num_timesteps / time_elapsed)
        self.logger.record("time/iterations", iteration)
        if len(self.ep_info_buffer) > 0:
            self.logger.record("rollout/ep_rew_mean", _mean([ep["r"] for ep in self.ep_info_buffer]))
            self.logger.record("rollout/ep_len_mean", float(_mean([ep["l"] for ep in self.ep_info_buffer])))
        self.logger.record("time/fps", fps)
        self.logger.record("time/time_elapsed", int(time_elapsed))
        self.logger.record("time/total_timesteps", self.num_timesteps)
        self.logger.dump()

    def learn(self, total_timesteps: int, callback: EvalCallback) -> PPO:
        self.start_time = time.time()
        self._last_obs = self.env.reset()
        self._last_episode_starts = torch.ones(self.env.n_envs)
        iteration = 0
        while self.num_timesteps < total_timesteps:
            self.collect_rollouts(callback)
            iteration += 1
            self._progress_remaining = 1.0 - self.num_timesteps / total_timesteps
            self._dump_logs(iteration)
            self.train()
        return self


# ----------------------------------------------------------------------------- main


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    n_envs = 8
    env = GridNavVecEnv(n_envs, seed=args.seed)
    eval_env = GridNavVecEnv(10, seed=10_000 + args.seed)
    learning_rate = 3e-4
    if args.fault == "lr-too-high":
        learning_rate = 3e-2
    model = PPO(env, args, learning_rate)
    eval_callback = EvalCallback(eval_env, model.logger, eval_freq=max(2500 // n_envs, 1), n_eval_episodes=10)
    model.learn(total_timesteps=30_000, callback=eval_callback)
    return 0


if __name__ == "__main__":
    sys.exit(main())
