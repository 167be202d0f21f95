# Copyright (c) Meta Platforms, Inc. and affiliates.
#
# This source code is licensed under the MIT license found in the
# LICENSE file in the root directory of this source tree.

from __future__ import annotations

import warnings
from pathlib import Path

import hydra
import torch.nn
import torch.optim
import tqdm
from omegaconf import DictConfig, OmegaConf
from tensordict.nn import CudaGraphModule, TensorDictSequential
from torchrl._utils import get_available_device, timeit
from torchrl.checkpoint import Checkpoint, CheckpointFormat, GlobalRNGState
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import ExplorationType, set_exploration_type
from torchrl.modules import EGreedyModule
from torchrl.objectives import DQNLoss, HardUpdate
from torchrl.record import VideoRecorder
from torchrl.record.loggers import generate_exp_name, get_logger
from torchrl.render import save_render_checkpoint
from utils_cartpole import eval_model, make_dqn_model, make_env

torch.set_float32_matmul_precision("high")


def _save_checkpoint(
    path: str | Path | None,
    *,
    cfg: DictConfig,
    model: torch.nn.Module,
    collected_frames: int,
    metrics: dict,
    checkpoint: Checkpoint | None = None,
    format: CheckpointFormat = "archive",
) -> Path | None:
    """Saves a DQN checkpoint that can be consumed by ``rlrender``.

    Args:
        path: Destination checkpoint path. ``None`` disables checkpointing.
        cfg: Hydra training configuration.
        model: DQN policy module.
        collected_frames: Number of training frames collected so far.
        metrics: Scalar metrics recorded at checkpoint time.
        checkpoint: Full training-state checkpoint. When omitted, a render-only
            checkpoint is constructed for backwards compatibility.
        format: Output container format for the compatibility path.

    Returns:
        The written checkpoint path, or ``None`` when checkpointing is disabled.
    """
    if path in (None, ""):
        return None
    if checkpoint is None:
        return save_render_checkpoint(
            path,
            model,
            env_metadata={"env_name": cfg.env.env_name},
            frames=collected_frames,
            metrics=metrics,
            config=OmegaConf.to_container(cfg, resolve=True),
            format=format,
        )
    checkpoint.components["trainer_state"]["collected_frames"] = collected_frames
    checkpoint.components["metrics"].clear()
    checkpoint.components["metrics"].update(metrics)
    components = None
    if not cfg.checkpoint.get("include_replay_buffer", True):
        components = set(checkpoint.components).difference({"replay_buffer"})
    return checkpoint.save(path, components=components)


def _resume_checkpoint(
    checkpoint: Checkpoint,
    path: str | Path,
    map_location: str | torch.device,
    *,
    include_replay_buffer: bool = True,
):
    """Restore mutable training state without replacing the current config."""
    components = set(checkpoint.components).difference({"config"})
    if not include_replay_buffer:
        components.discard("replay_buffer")
    return checkpoint.load(
        path,
        components=components,
        map_location=map_location,
        tensor_load_kwargs={"weights_only": True, "mmap": True},
    )


@hydra.main(config_path="", config_name="config_cartpole", version_base="1.3")
def main(cfg: DictConfig):

    device = torch.device(cfg.device) if cfg.device else get_available_device()

    # Make the components
    model = make_dqn_model(cfg.env.env_name, device=device)

    greedy_module = EGreedyModule(
        annealing_num_steps=cfg.collector.annealing_frames,
        eps_init=cfg.collector.eps_start,
        eps_end=cfg.collector.eps_end,
        spec=model.spec,
        device=device,
    )
    model_explore = TensorDictSequential(
        model,
        greedy_module,
    )

    # Create the replay buffer
    replay_buffer = TensorDictReplayBuffer(
        pin_memory=False,
        storage=LazyTensorStorage(max_size=cfg.buffer.buffer_size, device=device),
        batch_size=cfg.buffer.batch_size,
    )

    # Create the loss module
    loss_module = DQNLoss(
        value_network=model,
        loss_function="l2",
        delay_value=True,
    )
    loss_module.make_value_estimator(gamma=cfg.loss.gamma, device=device)
    loss_module = loss_module.to(device)
    target_net_updater = HardUpdate(
        loss_module, value_network_update_interval=cfg.loss.hard_update_freq
    )

    # Create the optimizer
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=cfg.optim.lr)

    # Create the logger
    logger = None
    if cfg.logger.backend:
        exp_name = generate_exp_name("DQN", f"CartPole_{cfg.env.env_name}")
        logger = get_logger(
            cfg.logger.backend,
            logger_name="dqn",
            experiment_name=exp_name,
            wandb_kwargs={
                "config": dict(cfg),
                "project": cfg.logger.project_name,
                "group": cfg.logger.group_name,
            },
        )

    # Create the test environment
    test_env = make_env(cfg.env.env_name, "cpu", from_pixels=cfg.logger.video)
    if cfg.logger.video:
        test_env.insert_transform(
            0,
            VideoRecorder(
                logger, tag=f"rendered/{cfg.env.env_name}", in_keys=["pixels"]
            ),
        )

    def update(sampled_tensordict):
        loss_td = loss_module(sampled_tensordict)
        q_loss = loss_td["loss"]
        optimizer.zero_grad()
        q_loss.backward()
        optimizer.step()
        target_net_updater.step()
        return q_loss.detach()

    compile_mode = None
    if cfg.compile.compile:
        compile_mode = cfg.compile.compile_mode
        if compile_mode in ("", None):
            if cfg.compile.cudagraphs:
                compile_mode = "default"
            else:
                compile_mode = "reduce-overhead"
        update = torch.compile(update, mode=compile_mode)
    if cfg.compile.cudagraphs:
        warnings.warn(
            "CudaGraphModule is experimental and may lead to silently wrong results. Use with caution.",
            category=UserWarning,
        )
        update = CudaGraphModule(update, warmup=50)

    # Create the collector
    collector = Collector(
        create_env_fn=make_env(cfg.env.env_name, "cpu"),
        policy=model_explore,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=cfg.collector.total_frames,
        device="cpu",
        storing_device="cpu",
        max_frames_per_traj=-1,
        init_random_frames=cfg.collector.init_random_frames,
        compile_policy={"mode": compile_mode, "fullgraph": True}
        if compile_mode is not None
        else False,
        cudagraph_policy={"warmup": 10} if cfg.compile.cudagraphs else False,
    )

    checkpoint_state = {"collected_frames": 0}
    checkpoint_metrics = {}
    checkpoint_config = OmegaConf.to_container(cfg, resolve=True)
    checkpoint = Checkpoint(
        format=cfg.checkpoint.format,
        strict=cfg.checkpoint.strict,
        policy=model,
        loss_module=loss_module,
        optimizer=optimizer,
        replay_buffer=replay_buffer,
        collector=collector,
        exploration=greedy_module,
        target_updater=target_net_updater,
        trainer_state=checkpoint_state,
        rng=GlobalRNGState(),
        environment_metadata={"env_name": cfg.env.env_name},
        config=checkpoint_config,
        metrics=checkpoint_metrics,
    )

    # Main loop
    checkpoint_path = cfg.checkpoint.path
    if cfg.checkpoint.resume:
        if not checkpoint_path:
            raise ValueError("checkpoint.path must be set when checkpoint.resume=True.")
        _resume_checkpoint(
            checkpoint,
            checkpoint_path,
            device,
            include_replay_buffer=cfg.checkpoint.get("include_replay_buffer", True),
        )
    collected_frames = checkpoint_state["collected_frames"]
    num_updates = cfg.loss.num_updates
    batch_size = cfg.buffer.batch_size
    test_interval = cfg.logger.test_interval
    num_test_episodes = cfg.logger.num_test_episodes
    frames_per_batch = cfg.collector.frames_per_batch
    pbar = tqdm.tqdm(total=cfg.collector.total_frames, initial=collected_frames)
    init_random_frames = cfg.collector.init_random_frames
    q_losses = torch.zeros(num_updates, device=device)
    checkpoint_interval = int(cfg.checkpoint.interval or 0)
    last_checkpoint_frame = collected_frames

    c_iter = iter(collector)
    total_iter = len(collector)
    metrics_to_log = dict(checkpoint_metrics)
    for i in range(total_iter):
        timeit.printevery(1000, total_iter, erase=True)
        with timeit("collecting"):
            try:
                data = next(c_iter)
            except StopIteration:
                break

        metrics_to_log = {}
        pbar.update(data.numel())
        data = data.reshape(-1)
        current_frames = data.numel()

        with timeit("rb - extend"):
            replay_buffer.extend(data)
        collected_frames += current_frames
        greedy_module.step(current_frames)

        # Get and log training rewards and episode lengths
        episode_rewards = data["next", "episode_reward"][data["next", "done"]]
        if len(episode_rewards) > 0:
            episode_reward_mean = episode_rewards.mean().item()
            episode_length = data["next", "step_count"][data["next", "done"]]
            episode_length_mean = episode_length.sum().item() / len(episode_length)
            metrics_to_log.update(
                {
                    "train/episode_reward": episode_reward_mean,
                    "train/episode_length": episode_length_mean,
                }
            )

        if collected_frames < init_random_frames:
            if collected_frames < init_random_frames:
                if logger:
                    logger.log_metrics(metrics_to_log, step=collected_frames)
                continue

        # optimization steps
        for j in range(num_updates):
            with timeit("rb - sample"):
                sampled_tensordict = replay_buffer.sample(batch_size)
                sampled_tensordict = sampled_tensordict.to(device)
            with timeit("update"):
                q_loss = update(sampled_tensordict)
            q_losses[j].copy_(q_loss)

        # Get and log q-values, loss, epsilon, sampling time and training time
        metrics_to_log.update(
            {
                "train/q_values": (data["action_value"] * data["action"]).sum().item()
                / frames_per_batch,
                "train/q_loss": q_losses.mean().item(),
                "train/epsilon": greedy_module.eps,
            }
        )

        # Get and log evaluation rewards and eval time
        with torch.no_grad(), set_exploration_type(
            ExplorationType.DETERMINISTIC
        ), timeit("eval"):
            prev_test_frame = ((i - 1) * frames_per_batch) // test_interval
            cur_test_frame = (i * frames_per_batch) // test_interval
            final = current_frames >= collector.total_frames
            if (i >= 1 and (prev_test_frame < cur_test_frame)) or final:
                model.eval()
                test_rewards = eval_model(model, test_env, num_test_episodes)
                model.train()
                metrics_to_log.update(
                    {
                        "eval/reward": test_rewards,
                    }
                )

        # Log all the information
        if logger:
            metrics_to_log.update(timeit.todict(prefix="time"))
            metrics_to_log["time/speed"] = pbar.format_dict["rate"]
            logger.log_metrics(metrics_to_log, step=collected_frames)
        if (
            checkpoint_path
            and checkpoint_interval > 0
            and collected_frames - last_checkpoint_frame >= checkpoint_interval
        ):
            _save_checkpoint(
                checkpoint_path,
                cfg=cfg,
                model=model,
                collected_frames=collected_frames,
                metrics=metrics_to_log,
                checkpoint=checkpoint,
            )
            last_checkpoint_frame = collected_frames

        # update weights of the inference policy
        collector.update_policy_weights_()

    _save_checkpoint(
        checkpoint_path,
        cfg=cfg,
        model=model,
        collected_frames=collected_frames,
        metrics=metrics_to_log,
        checkpoint=checkpoint,
    )
    collector.shutdown()
    if not test_env.is_closed:
        test_env.close()


if __name__ == "__main__":
    main()
