"""Guard checks to call from a test: give them your model, your step or your evaluation.

Each check runs the code it is given and raises `GuardFailure` (an AssertionError) when that
code shows its fault; each is tested against the fault injected by trainwreck's own operator
(tests/injector/test_guards*.py). The watchers (`injector.guards.watch`) do the observing; these
functions say what to run and how often.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler

from injector.guards.errors import GuardFailure
from injector.guards.watchers import watch

Step = Callable[[], Any]


def assert_params_change(model: nn.Module, step: Step) -> None:
    """One `step()` changes every trainable parameter of `model` and no frozen one."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    step()
    for name, parameter in model.named_parameters():
        same = torch.equal(parameter.detach(), before[name])
        if parameter.requires_grad and same:
            raise GuardFailure(f"trainable parameter {name} did not change after one step")
        if not parameter.requires_grad and not same:
            raise GuardFailure(f"frozen parameter {name} changed after one step")


def assert_grads_cleared(step: Step) -> None:
    """Two `step()`s on the same batch: the second backward starts from cleared gradients."""
    with watch("missing-zero-grad"):
        step()
        step()


def assert_overfits_one_batch(step: Callable[[], float], steps: int = 50, factor: float = 0.1) -> None:
    """`step()` (one optimizer step on one fixed batch, returning the loss) brings the loss
    below `factor` times its first value within `steps` steps."""
    losses = [float(step()) for _ in range(steps)]
    if not all(math.isfinite(loss) for loss in losses):
        raise GuardFailure(f"the loss went non-finite while overfitting one batch: {losses[-1]}")
    if min(losses) > factor * losses[0]:
        raise GuardFailure(
            f"the model did not overfit one batch: loss {losses[0]:.4g} -> {min(losses):.4g} in "
            f"{steps} steps (wanted below {factor:g}x)"
        )


def assert_eval_deterministic(model: nn.Module, evaluate: Step) -> None:
    """`evaluate()` twice gives the same result and builds no graph; afterwards `model` is back
    in the mode the check found it in."""
    mode = model.training
    with watch("missing-eval-mode", "missing-no-grad-eval"):
        first = evaluate()
        model.train(mode)
        second = evaluate()
    model.train(mode)
    if not _same(first, second):
        raise GuardFailure("two evaluations of the same model on the same data differ")


def assert_eval_restores_mode(model: nn.Module, evaluate: Step) -> None:
    """`evaluate()` leaves `model` in the train/eval mode it found it in."""
    for mode in (True, False):
        model.train(mode)
        evaluate()
        if model.training != mode:
            raise GuardFailure(f"evaluation left the model in {'train' if model.training else 'eval'} mode")


def assert_probabilities(probs: torch.Tensor, class_axis: int = -1) -> None:
    """`probs` are probabilities over `class_axis`: non-negative, summing to one there."""
    sums = probs.detach().float().sum(dim=class_axis)
    if bool((probs < 0).any()) or not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        raise GuardFailure(f"outputs do not sum to one over the class axis {class_axis}")


def assert_loss_gets_logits(step: Step) -> None:
    """`step()` passes logits, not probabilities, to cross_entropy."""
    with watch("double-softmax"):
        step()


def assert_no_graph_in_eval(evaluate: Step) -> None:
    """`evaluate()` builds no autograd graph in its eval-mode forwards."""
    with watch("missing-no-grad-eval"):
        evaluate()


def assert_no_graph_kept(step: Step, steps: int = 3) -> None:
    """After `steps` calls of `step()`, no tensor holds the graph of an earlier step."""
    with watch("loss-tensor-leak"):
        for _ in range(steps):
            step()


def assert_grad_norm_bounded(step: Step, max_norm: float | None = None) -> None:
    """Every optimizer step in `step()` runs on gradients clipped to a finite norm (`max_norm`
    when given, else the bound the step passes to clip_grad_norm_)."""
    with watch("missing-grad-clipping", max_norm=max_norm):
        step()


def assert_scheduler_paced(run: Step) -> None:
    """In `run()`, every LR scheduler steps at most once per optimizer step."""
    with watch("scheduler-step-misaligned"):
        run()


def assert_loader_shuffles(loader: DataLoader) -> None:
    """`loader` draws its batches in a new random order (not a fixed sequence)."""
    sampler = loader.sampler
    if isinstance(sampler, SequentialSampler) or (isinstance(sampler, DistributedSampler) and not sampler.shuffle):
        raise GuardFailure("the loader reads the data in a fixed order (shuffle is off)")


def assert_epochs_differ(run_epochs: Step) -> None:
    """In `run_epochs()` (two epochs or more), a DistributedSampler is told each epoch."""
    with watch("missing-set-epoch"):
        run_epochs()


def assert_scaler_used(step: Step) -> None:
    """In `step()`, with fp16 autocast or an enabled GradScaler, the loss is scaled, the
    optimizer stepped through the scaler and the scaler updated."""
    with watch("missing-grad-scaler"):
        step()
        step()


def assert_lr_stable(step: Step, steps: int = 5, max_ratio: float = 1.0) -> None:
    """`steps` calls of `step()` (optimizer steps on the training data): no optimizer step
    moves the parameters by more than `max_ratio` times their norm, and the loss stays finite
    and does not blow up."""
    with watch("lr-too-high", max_ratio=max_ratio):
        for _ in range(steps):
            step()


def assert_no_inplace_damage(run: Step) -> None:
    """In `run()` (forwards of your model), no module modifies a tensor passed to it in place,
    and in-place activations give the outputs their out-of-place versions give."""
    with watch("inplace-activation"):
        run()


def assert_finite_on_zeros(run: Step) -> None:
    """In `run()`, every module called stays finite (output and input gradient) when run again
    on an all-zero input: its log/sqrt/division keep their epsilon."""
    with watch("missing-epsilon"):
        run()


def assert_attention_masked(run: Step, module: str | None = None, kind: str = "any") -> None:
    """In `run()`, the modules of class `module` (all when None) keep their outputs when a later
    position changes (`kind="causal"`), when the positions a (batch, seq) mask argument hides
    change (`"padding"`), both (`"all"`) or either (`"any"`)."""
    with watch("missing-attention-mask", module=module, kind=kind):
        run()


def assert_batches_moved(step: Step) -> None:
    """In `step()`, every batch tensor reaching the model or the loss went through the
    `.to(device)` the code uses (checked on CPU: no GPU needed)."""
    with watch("device-mismatch"):
        step()


def assert_replicas_in_sync(
    train_rank: Callable[[int, int], nn.Module], world_size: int = 2, timeout: float = 60.0
) -> None:
    """`train_rank(rank, world_size)`, run in `world_size` forked gloo ranks, leaves identical
    parameters on every rank (a rank that skips a collective fails or hangs: both are caught).

    A collective waits at most 80% of `timeout`, so a rank left waiting by a peer's skipped
    collective reports gloo's error before the whole check gives up."""
    context = mp.get_context("fork")
    results: Any = context.Queue()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ranks = [
        context.Process(target=_rank, args=(rank, world_size, port, train_rank, results, timeout), daemon=True)
        for rank in range(world_size)
    ]
    for process in ranks:
        process.start()
    weights: dict[int, list[float]] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(weights) < world_size:
            try:
                rank, flat, error = results.get(timeout=0.2)
            except queue.Empty:
                _check_ranks_alive(ranks, weights, deadline, timeout)
                continue
            if error is not None:
                raise GuardFailure(f"rank {rank} failed: {error}")
            weights[rank] = flat
    finally:
        for process in ranks:
            process.join(timeout=2)
            if process.is_alive():
                process.kill()
                process.join()
    first = weights[0]
    for rank in range(1, world_size):
        if weights[rank] != first:
            raise GuardFailure(f"rank {rank}'s parameters differ from rank 0's after training")


def _check_ranks_alive(ranks: list[Any], reported: dict[int, Any], deadline: float, timeout: float) -> None:
    for rank, process in enumerate(ranks):
        if rank not in reported and process.exitcode is not None:
            raise GuardFailure(f"rank {rank} exited with code {process.exitcode} before reporting its parameters")
    if time.monotonic() > deadline:
        raise GuardFailure(f"the ranks did not finish within {timeout:g} s (a rank skipped a collective?)")


def _rank(rank: int, world_size: int, port: int, train_rank: Callable, results: Any, timeout: float) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout * 0.8),
        )
        model = train_rank(rank, world_size)
        _report(results, (rank, torch.cat([p.detach().flatten() for p in model.parameters()]).tolist(), None))
    except BaseException as error:
        _report(results, (rank, None, f"{type(error).__name__}: {error}".splitlines()[0]))
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _report(results: Any, item: tuple) -> None:
    """Put ITEM on the queue and wait until it is in the pipe. A queue's feeder thread sends
    later, and a gloo teardown that hangs while holding the GIL would keep it from ever sending:
    the check then waited out its whole timeout on ranks that had finished."""
    results.put(item)
    results.close()
    results.join_thread()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
