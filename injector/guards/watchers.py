"""Watchers: checks that observe whatever training runs inside a `with` block.

A watcher installs torch's global hooks (module forwards, optimizer steps) and wraps a few
library functions (softmax, the losses, `Tensor.backward`, the LR scheduler's and the samplers'
`step`/`__iter__`) for the duration of the block, so a user's own test, calling the user's own
training code, is checked without changing either. A violation raises `GuardFailure` where it
happens (inside a forked DDP rank too, which then exits non-zero); checks that need the whole
run (parameters changed) raise when the block ends. Each watcher targets one catalogued fault.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import inspect
import math
import weakref
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler

from injector.guards.errors import GuardFailure

MODE_MODULES = (nn.Dropout, nn.modules.batchnorm._BatchNorm)  # modules whose output depends on train/eval
LOSSES = ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits")
LEAK_SCANS = 3  # optimizer steps whose live graphs are scanned for one kept from the step before


class Watcher:
    """One check over a block of training code: `start` installs it, `finish` removes it and
    raises when the whole run shows the fault."""

    fault = ""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def start(self) -> None:
        """Install the hooks and wrappers."""

    def verdict(self) -> None:
        """Raise GuardFailure when the run as a whole shows the fault (after the block)."""

    def stop(self) -> None:
        """Remove the hooks and wrappers."""
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    # ---- plumbing ----

    def hook(self, handle: Any) -> None:
        self._undo.append(handle.remove)

    def wrap(self, owner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        """Replace `owner.name` by `make(original)` until the block ends."""
        original = getattr(owner, name)
        own = name in vars(owner)  # else inherited: deleting the wrapper brings it back
        setattr(owner, name, make(original))
        self._undo.append(lambda: setattr(owner, name, original) if own else delattr(owner, name))


class ParamsChange(Watcher):
    """Every trainable parameter of the modules run in training mode changes; frozen ones do not."""

    fault = "missing-optimizer-step"

    def start(self) -> None:
        self.before: dict[int, tuple[str, nn.Parameter, torch.Tensor]] = {}

        def seen(module: nn.Module, args: Any) -> None:
            if not module.training:
                return
            for name, parameter in module.named_parameters(recurse=False):
                if id(parameter) not in self.before:
                    label = f"{type(module).__name__}.{name}"
                    self.before[id(parameter)] = (label, parameter, parameter.detach().clone())

        self.hook(nn.modules.module.register_module_forward_pre_hook(seen))

    def verdict(self) -> None:
        stuck = [label for label, p, old in self.before.values() if p.requires_grad and torch.equal(p.detach(), old)]
        moved = [
            label for label, p, old in self.before.values() if not p.requires_grad and not torch.equal(p.detach(), old)
        ]
        if stuck:
            raise GuardFailure(
                f"{len(stuck)} trainable parameter(s) did not change over training, e.g. {stuck[0]}: "
                "no backward, no optimizer step, or a graph cut before the loss"
            )
        if moved:
            raise GuardFailure(f"frozen parameter {moved[0]} changed during training")


class GradsCleared(Watcher):
    """The first backward after an optimizer step starts from cleared gradients (zero_grad)."""

    fault = "missing-zero-grad"

    def start(self) -> None:
        self.stepped: dict[int, bool] = {}
        hooked: set[int] = set()

        def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            for group in optimizer.param_groups:
                for parameter in group["params"]:
                    self.stepped[id(parameter)] = True
                    if id(parameter) not in hooked and parameter.requires_grad:
                        hooked.add(id(parameter))
                        self.hook(parameter.register_hook(self._check(parameter)))

        self.hook(register_optimizer_step_post_hook(after_step))

    def _check(self, parameter: torch.Tensor) -> Callable[[torch.Tensor], None]:
        def check(grad: torch.Tensor) -> None:
            # The hook sees the new gradient before it is added to .grad: what .grad holds now
            # is what the last optimizer step left there.
            stale = parameter.grad
            if self.stepped.pop(id(parameter), False) and stale is not None and bool(stale.detach().abs().sum() > 0):
                raise GuardFailure(
                    "gradients from the previous optimizer step were still there at the next "
                    "backward: they accumulate across steps (zero_grad() is not called)"
                )

        return check


class ModeRight(Watcher):
    """Evaluation runs dropout/batch-norm in eval mode, training in train mode."""

    fault = "missing-eval-mode"

    def start(self) -> None:
        self.eval_in_training = False

        def seen(module: nn.Module, args: Any) -> None:
            if not isinstance(module, MODE_MODULES):
                return
            if module.training and not torch.is_grad_enabled():
                raise GuardFailure(
                    f"{type(module).__name__} ran in training mode during evaluation (under no_grad): "
                    "model.eval() is not called"
                )
            if not module.training and torch.is_grad_enabled():
                self.eval_in_training = True

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if self.eval_in_training:
                raise GuardFailure(
                    "an optimizer step followed a forward with dropout/batch-norm in eval mode: "
                    "model.train() is not called again after evaluation"
                )

        def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self.eval_in_training = False

        self.hook(nn.modules.module.register_module_forward_pre_hook(seen))
        self.hook(register_optimizer_step_pre_hook(before_step))
        self.hook(register_optimizer_step_post_hook(after_step))


class NoGraphInEval(Watcher):
    """A model in eval mode builds no autograd graph (evaluation runs under no_grad)."""

    fault = "missing-no-grad-eval"

    def start(self) -> None:
        def done(module: nn.Module, args: Any, output: Any) -> None:
            if module.training or not torch.is_grad_enabled():
                return
            if isinstance(output, torch.Tensor) and output.requires_grad:
                raise GuardFailure(
                    f"{type(module).__name__} in eval mode built an autograd graph: evaluation is "
                    "not wrapped in torch.no_grad() / torch.inference_mode()"
                )

        self.hook(nn.modules.module.register_module_forward_hook(done))


class SoftmaxAxis(Watcher):
    """Every softmax normalises over the class axis: its rows sum to one there."""

    fault = "wrong-softmax-dim"

    def __init__(self, class_axis: int = -1) -> None:
        super().__init__()
        self.class_axis = class_axis

    def start(self) -> None:
        def checked(original: Callable, log: bool) -> Callable:
            def softmax(*args: Any, **kwargs: Any) -> Any:
                out = original(*args, **kwargs)
                if isinstance(out, torch.Tensor) and out.dim() > 1 and out.is_floating_point():
                    probs = out.detach().float()
                    probs = probs.exp() if log else probs
                    sums = probs.sum(dim=self.class_axis)
                    finite = torch.isfinite(sums)
                    if bool(finite.any()) and not torch.allclose(
                        sums[finite], torch.ones_like(sums[finite]), atol=1e-3
                    ):
                        raise GuardFailure(
                            f"a {'log_' if log else ''}softmax output does not sum to one over axis "
                            f"{self.class_axis} (the class axis): it normalises over another dim"
                        )
                return out

            return softmax

        for owner in (torch, F, torch.Tensor):
            self.wrap(owner, "softmax", lambda f: checked(f, False))
            self.wrap(owner, "log_softmax", lambda f: checked(f, True))


class LogitsToLoss(Watcher):
    """cross_entropy / nll get logits, never probabilities (no second softmax)."""

    fault = "double-softmax"

    def start(self) -> None:
        def make(original: Callable) -> Callable:
            def cross_entropy(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
                if isinstance(input, torch.Tensor) and input.dim() >= 2 and input.is_floating_point():
                    rows = input.detach().float()
                    if bool((rows >= 0).all()) and torch.allclose(
                        rows.sum(dim=1), torch.ones_like(rows.sum(dim=1)), atol=1e-3
                    ):
                        raise GuardFailure(
                            "cross_entropy received probabilities (rows sum to one), not logits: "
                            "softmax is applied twice"
                        )
                return original(input, *args, **kwargs)

            return cross_entropy

        self.wrap(F, "cross_entropy", make)


class MeanLoss(Watcher):
    """The training loss is a per-sample mean: no loss summed over the batch feeds backward."""

    fault = "wrong-loss-reduction"

    def start(self) -> None:
        def make(original: Callable, name: str) -> Callable:
            def loss(*args: Any, **kwargs: Any) -> Any:
                out = original(*args, **kwargs)
                if kwargs.get("reduction") == "sum" and isinstance(out, torch.Tensor) and out.requires_grad:
                    raise GuardFailure(
                        f"{name}(reduction='sum') in a training step: the gradient scales with the "
                        "batch size (use the mean)"
                    )
                return out

            return loss

        for name in LOSSES:
            self.wrap(F, name, functools.partial(_named, make, name))


def _named(make: Callable[[Callable, str], Callable], name: str, original: Callable) -> Callable:
    return make(original, name)


class ClippedNorm(Watcher):
    """Before every optimizer step the gradients were clipped to a finite norm, and are within it."""

    fault = "missing-grad-clipping"

    def __init__(self, max_norm: float | None = None) -> None:
        super().__init__()
        self.max_norm = max_norm

    def start(self) -> None:
        self.bound: float | None = None

        def make(original: Callable) -> Callable:
            def clip(parameters: Any, max_norm: float, *args: Any, **kwargs: Any) -> Any:
                self.bound = float(max_norm)
                return original(parameters, max_norm, *args, **kwargs)

            return clip

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            bound = self.bound if self.max_norm is None else self.max_norm
            if bound is None or not math.isfinite(bound):
                raise GuardFailure(
                    f"an optimizer step ran on gradients that were not clipped to a finite norm (clip bound: {bound})"
                )
            grads = [p.grad.detach().float() for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            norm = (
                float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
                if grads
                else 0.0
            )
            if norm > bound * 1.01 + 1e-6:
                raise GuardFailure(
                    f"the gradient norm at an optimizer step is {norm:.3g}, above the clip bound {bound:g}"
                )
            self.bound = None

        self.wrap(torch.nn.utils, "clip_grad_norm_", make)
        self.hook(register_optimizer_step_pre_hook(before_step))


class SchedulerPace(Watcher):
    """An LR scheduler steps at most once per optimizer step."""

    fault = "scheduler-step-misaligned"

    def start(self) -> None:
        self.steps: dict[int, int] = {}
        self.first: dict[int, tuple[int, int]] = {}

        def counted(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self.steps[id(optimizer)] = self.steps.get(id(optimizer), 0) + 1

        def make(original: Callable) -> Callable:
            def step(scheduler: Any, *args: Any, **kwargs: Any) -> Any:
                optimizer = getattr(scheduler, "optimizer", None)
                if optimizer is not None:
                    self.first.setdefault(id(scheduler), (scheduler.last_epoch, self.steps.get(id(optimizer), 0)))
                result = original(scheduler, *args, **kwargs)
                if optimizer is None:
                    return result
                done = self.steps.get(id(optimizer), 0)
                start = self.first[id(scheduler)]
                if scheduler.last_epoch - start[0] > done - start[1] + 1:
                    raise GuardFailure(
                        f"the LR scheduler stepped {scheduler.last_epoch - start[0]} times over "
                        f"{done - start[1]} optimizer steps: it runs ahead of the optimizer"
                    )
                return result

            return step

        self.hook(register_optimizer_step_post_hook(counted))
        self.wrap(torch.optim.lr_scheduler.LRScheduler, "step", make)


class Shuffled(Watcher):
    """The loader feeding the optimizer steps shuffles, and a sampler is told each epoch."""

    fault = "no-shuffle"

    def start(self) -> None:
        self.current: DataLoader | None = None
        self.epochs: dict[int, int] = {}

        def iterate(original: Callable) -> Callable:
            def __iter__(loader: DataLoader) -> Any:
                self.current = loader
                return original(loader)

            return __iter__

        def sampler_iterate(original: Callable) -> Callable:
            def __iter__(sampler: DistributedSampler) -> Any:
                if self.epochs.get(id(sampler)) == sampler.epoch:
                    raise GuardFailure(
                        f"a DistributedSampler was iterated twice at epoch {sampler.epoch}: "
                        "sampler.set_epoch(epoch) is not called, so every epoch has the same order"
                    )
                self.epochs[id(sampler)] = sampler.epoch
                return original(sampler)

            return __iter__

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            loader = self.current
            if loader is None:
                return
            sampler = loader.sampler
            if isinstance(sampler, SequentialSampler) or (
                isinstance(sampler, DistributedSampler) and not sampler.shuffle
            ):
                raise GuardFailure(
                    "the DataLoader that feeds the optimizer steps reads the data in a fixed order (shuffle is off)"
                )

        self.wrap(DataLoader, "__iter__", iterate)
        self.wrap(DistributedSampler, "__iter__", sampler_iterate)
        self.hook(register_optimizer_step_pre_hook(before_step))


class NoLeak(Watcher):
    """No tensor holding an autograd graph outlives its step (a loss summed without .item())."""

    fault = "loss-tensor-leak"

    def start(self) -> None:
        self.roots: list[Any] = []
        self.scans = 0
        # Graphs alive before the block (an earlier test's leftovers) are not this run's leak;
        # held until the block ends so that their ids stay theirs.
        self.older = _graph_tensors()
        older = {id(t) for t in self.older}

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if self.scans > LEAK_SCANS:
                return
            self.scans += 1
            alive = [t for t in _graph_tensors() if id(t) not in older]
            previous = {id(node) for node in self.roots}
            if previous:
                for tensor in alive:
                    if _reaches(tensor.grad_fn, previous):
                        raise GuardFailure(
                            "a tensor still holds the autograd graph of an earlier step: a loss is "
                            "stored or summed as a tensor (use .item() or .detach())"
                        )
            # kept (strongly) until the next step only, so their ids cannot be reused meanwhile
            self.roots = [tensor.grad_fn for tensor in alive]

        self.hook(register_optimizer_step_pre_hook(before_step))

    def stop(self) -> None:
        self.roots = []
        self.older = []
        super().stop()


def _graph_tensors() -> list[torch.Tensor]:
    """Every live tensor that holds an autograd graph."""
    return [o for o in gc.get_objects() if issubclass(type(o), torch.Tensor) and o.grad_fn is not None]


def _reaches(node: Any, targets: set[int], budget: int = 64) -> bool:
    """Whether the graph under `node` holds one of `targets` (within the first nodes only)."""
    seen = 0
    stack = [node]
    while stack and seen < budget:
        current = stack.pop()
        seen += 1
        if current is None:
            continue
        if id(current) in targets and current is not node:
            return True
        stack.extend(next_node for next_node, _ in getattr(current, "next_functions", ()))
    return False


class ScalerUsed(Watcher):
    """With fp16 autocast or an enabled GradScaler, every backward and step goes through the scaler."""

    fault = "missing-grad-scaler"

    def start(self) -> None:
        self.scaled: list[torch.Tensor] = []
        self.enabled = False
        self.in_scaler_step = False
        self.fp16 = False
        self.updated = True
        Scaler = torch.amp.GradScaler

        def init(original: Callable) -> Callable:
            def wrapped(scaler: Any, *args: Any, **kwargs: Any) -> None:
                original(scaler, *args, **kwargs)
                if scaler.is_enabled():
                    self.enabled = True  # a scaler the code made to use: every step must use it

            return wrapped

        def scale(original: Callable) -> Callable:
            def wrapped(scaler: Any, outputs: Any) -> Any:
                if scaler.is_enabled():
                    self.enabled = True
                    if not self.updated:
                        raise GuardFailure("GradScaler.update() was not called after scaler.step()")
                result = original(scaler, outputs)
                if isinstance(result, torch.Tensor):
                    self.scaled.append(result)
                return result

            return wrapped

        def step(original: Callable) -> Callable:
            def wrapped(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
                self.in_scaler_step = True
                try:
                    return original(scaler, optimizer, *args, **kwargs)
                finally:
                    self.in_scaler_step = False
                    self.updated = not scaler.is_enabled()

            return wrapped

        def update(original: Callable) -> Callable:
            def wrapped(scaler: Any, *args: Any, **kwargs: Any) -> Any:
                self.updated = True
                return original(scaler, *args, **kwargs)

            return wrapped

        def backward(original: Callable) -> Callable:
            def wrapped(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
                if (self.enabled or self.fp16) and not any(tensor is s for s in self.scaled):
                    raise GuardFailure(
                        "backward() on a loss that did not go through scaler.scale(): under fp16 "
                        "autocast gradients underflow"
                    )
                self.scaled = []
                return original(tensor, *args, **kwargs)

            return wrapped

        def enter(original: Callable) -> Callable:
            def wrapped(region: Any) -> Any:
                if region._enabled and region.fast_dtype == torch.float16 and region.device == "cuda":
                    self.fp16 = True
                return original(region)

            return wrapped

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if (self.enabled or self.fp16) and not self.in_scaler_step:
                raise GuardFailure(
                    "optimizer.step() called directly although a GradScaler scales the loss: "
                    "use scaler.step(optimizer) so inf/NaN steps are skipped and gradients unscaled"
                )

        # a scaler made before the block counts as much as one made in it
        self.enabled = any(issubclass(type(o), Scaler) and o.is_enabled() for o in gc.get_objects())
        self.wrap(Scaler, "__init__", init)
        self.wrap(Scaler, "scale", scale)
        self.wrap(Scaler, "step", step)
        self.wrap(Scaler, "update", update)
        self.wrap(torch.Tensor, "backward", backward)
        self.wrap(torch.autocast, "__enter__", enter)
        self.hook(register_optimizer_step_pre_hook(before_step))


class UpdateBounded(Watcher):
    """Every optimizer step moves the parameters by less than their own size, and the losses
    that feed backward stay finite and do not blow up.

    Observed: the norm of each step's update over all the optimizer's parameters, against the
    norm of those parameters before the step (the update-to-weight ratio: around 1e-3 in a
    healthy run, rarely above 0.5 in a small test's first steps; an optimizer step scales it
    with the learning rate, so a rate 100 times too high puts it far above 1), and every
    scalar loss passed to backward (non-finite, or `blowup` times its first value). Each
    optimizer step clones the parameters it updates: meant for the small models of tests."""

    fault = "lr-too-high"

    def __init__(self, max_ratio: float = 1.0, blowup: float = 100.0) -> None:
        super().__init__()
        self.max_ratio = max_ratio
        self.blowup = blowup

    def start(self) -> None:
        # the first value of each loss, by the autograd node that made it (a GAN's two losses
        # have their own scales)
        self.first_loss: dict[str, float] = {}
        self.before: dict[int, list[torch.Tensor]] = {}

        def before_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self.before[id(optimizer)] = [p.detach().clone() for p in _params(optimizer)]

        def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            old = self.before.pop(id(optimizer), None)
            if old is None:
                return
            new = [p.detach() for p in _params(optimizer)]
            with torch.no_grad():
                moved = math.sqrt(
                    sum(float((n.double() - o.double()).square().sum()) for n, o in zip(new, old, strict=True))
                )
                size = math.sqrt(sum(float(o.double().square().sum()) for o in old))
            if not math.isfinite(moved):
                raise GuardFailure("an optimizer step made the parameters non-finite: the learning rate is too high")
            if size > 0 and moved > self.max_ratio * size:
                raise GuardFailure(
                    f"one optimizer step moved the parameters by {moved / size:.3g}x their own norm "
                    f"(the update-to-weight ratio; healthy runs stay near 1e-3, the bound is "
                    f"{self.max_ratio:g}): the learning rate is too high"
                )

        def backward(original: Callable) -> Callable:
            def wrapped(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
                if tensor.numel() == 1 and tensor.is_floating_point():
                    value = float(tensor.detach())
                    if not math.isfinite(value):
                        raise GuardFailure(f"the loss is {value} at a backward: training diverged")
                    first = self.first_loss.setdefault(type(tensor.grad_fn).__name__, abs(value))
                    if first > 0 and abs(value) > self.blowup * first:
                        raise GuardFailure(
                            f"the loss grew from {first:.4g} to {value:.4g} during training: "
                            "it diverges (the learning rate is too high?)"
                        )
                return original(tensor, *args, **kwargs)

            return wrapped

        self.hook(register_optimizer_step_pre_hook(before_step))
        self.hook(register_optimizer_step_post_hook(after_step))
        self.wrap(torch.Tensor, "backward", backward)


def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


# Set while a watcher runs a module again (on other inputs, or with other flags): the hooks of
# every watcher leave those calls alone, so a check never observes another check's probe.
_PROBING: contextvars.ContextVar[bool] = contextvars.ContextVar("trainwreck_probing", default=False)
PROBED_CALLS = 2  # calls of one module that a probing watcher runs again (the first ones)


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in a module's argument or output (nested in tuples, lists, dicts)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _mapped(value: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`value` with every tensor in it replaced by `change(tensor)`."""
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, tuple):
        return tuple(_mapped(item, change) for item in value)
    if isinstance(value, list):
        return [_mapped(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _mapped(item, change) for key, item in value.items()}
    return value


def _wrapper(module: nn.Module) -> bool:
    """DDP/DataParallel-style wrappers: running them again would start a collective or a reduction."""
    return type(module).__name__ in {"DistributedDataParallel", "DataParallel", "FullyShardedDataParallel"}


@contextlib.contextmanager
def _probe(module: nn.Module, args: tuple, kwargs: dict, rng: torch.Tensor | None = None) -> Iterator[Any]:
    """Run `module` again on `args` and give its output to the block, leaving no trace: the
    global random state (set to `rng` first when given, so dropout draws what the real call
    drew), the module's buffers (batch-norm statistics: the probe runs on copies, so the real
    graph's saved tensors keep their versions) and every watcher's view are as they were."""
    swapped = []
    for owner in module.modules():
        for name, buffer in owner._buffers.items():
            if buffer is not None:
                swapped.append((owner, name, buffer))
                owner._buffers[name] = buffer.clone()
    token = _PROBING.set(True)
    try:
        with torch.random.fork_rng(devices=[]):
            if rng is not None:
                torch.random.set_rng_state(rng)
            yield module(*args, **kwargs)
    finally:
        _PROBING.reset(token)
        for owner, name, buffer in swapped:
            owner._buffers[name] = buffer


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return tensor._version
    except RuntimeError:  # inference tensors keep no version counter
        return None


class NoInplaceDamage(Watcher):
    """In-place activations change no value anybody else still reads.

    Observed, in the modules the run calls: (1) a module whose own `inplace` flag is not set
    does not modify a tensor passed to it (its version counter moves: `x += y` or `relu_(x)`
    on the caller's tensor); (2) a module holding submodules with `inplace=True` computes the
    same output when those flags are off (an in-place ReLU that overwrites a value a later
    line reads changes it). In-place writes to a module's own intermediates that nothing reads
    again are not observable (and harmless); where autograd still needed the value, backward
    raises on its own."""

    fault = "inplace-activation"

    def start(self) -> None:
        self.stack: list[tuple[nn.Module, list[tuple[torch.Tensor, int]], torch.Tensor | None]] = []
        self.calls: dict[int, int] = {}

        def before(module: nn.Module, args: Any) -> None:
            if _PROBING.get():
                return
            versions = [(t, v) for t in _tensors(args) if (v := _version(t)) is not None]
            rng = None
            if not self.stack and self.calls.get(id(module), 0) < PROBED_CALLS and _has_inplace(module):
                rng = torch.random.get_rng_state()
            self.stack.append((module, versions, rng))

        def after(module: nn.Module, args: Any, kwargs: Any, output: Any = None) -> None:
            # (always called: a forward that raised leaves no entry behind; it has no output)
            if _PROBING.get() or not self.stack or self.stack[-1][0] is not module:
                return
            _, versions, rng = self.stack.pop()
            if not getattr(module, "inplace", False):
                for tensor, version in versions:
                    if _version(tensor) != version:
                        raise GuardFailure(
                            f"{type(module).__name__} modified a tensor passed to it in place (an "
                            "in-place activation or `x += ...` on its input): the caller's value changed"
                        )
            if rng is None or _wrapper(module):
                return
            self.calls[id(module)] = self.calls.get(id(module), 0) + 1
            flagged = [m for m in module.modules() if getattr(m, "inplace", False) is True]
            for m in flagged:
                setattr(m, "inplace", False)  # noqa: B010 (an attribute of some module classes only)
            try:
                with torch.no_grad(), _probe(module, args, kwargs, rng) as reference:
                    pass
            finally:
                for m in flagged:
                    setattr(m, "inplace", True)  # noqa: B010
            got, want = _tensors(output), _tensors(reference)
            if len(got) != len(want) or not all(
                a.shape == b.shape
                and torch.allclose(a.detach().float(), b.float(), rtol=1e-4, atol=1e-6, equal_nan=True)
                for a, b in zip(got, want, strict=True)
            ):
                raise GuardFailure(
                    f"{type(module).__name__} computes another output when its in-place activations "
                    f"({type(flagged[0]).__name__}) work out of place: they overwrite a value that is read again"
                )

        self.hook(nn.modules.module.register_module_forward_pre_hook(before))
        self.hook(nn.modules.module.register_module_forward_hook(after, with_kwargs=True, always_call=True))


def _has_inplace(module: nn.Module) -> bool:
    return any(getattr(m, "inplace", False) is True for m in module.modules() if m is not module)


class FiniteOnZeros(Watcher):
    """Every module the run calls stays finite, forward and backward, on an all-zero input.

    Observed: the first calls of each module are run once more with every floating-point
    argument of one or more dims replaced by zeros (a zero-variance, all-zero batch: what padding, a blank image or
    a dead feature gives), and the output and the gradient with respect to those zeros must be
    finite wherever the real call's output was. A `log`, `sqrt` or division left without its
    epsilon gives inf/NaN there. Functions outside modules (a loss written in the training
    loop) are not probed."""

    fault = "missing-epsilon"

    def start(self) -> None:
        self.calls: dict[int, int] = {}

        def after(module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
            if _PROBING.get() or _wrapper(module) or self.calls.get(id(module), 0) >= PROBED_CALLS:
                return
            self.calls[id(module)] = self.calls.get(id(module), 0) + 1
            real = _tensors(output)
            if not real or not all(bool(torch.isfinite(t).all()) for t in real if t.is_floating_point()):
                return  # already non-finite on real data: not this check's to judge
            zeros: list[torch.Tensor] = []

            def zero(tensor: torch.Tensor) -> torch.Tensor:
                if not tensor.is_floating_point() or tensor.dim() == 0:
                    return tensor  # ids, masks and scalar settings (a temperature) stay
                made = torch.zeros_like(tensor, requires_grad=torch.is_grad_enabled())
                zeros.append(made)
                return made

            if not any(t.is_floating_point() for t in _tensors((args, kwargs))):
                return
            with _probe(module, _mapped(args, zero), _mapped(kwargs, zero)) as probed:
                floats = [t for t in _tensors(probed) if t.is_floating_point()]
                if not all(bool(torch.isfinite(t).all()) for t in floats):
                    raise GuardFailure(
                        f"{type(module).__name__} gives inf/NaN on an all-zero input: a log, sqrt or "
                        "division there has no epsilon"
                    )
                graph = [t for t in floats if t.requires_grad]
                sources = [z for z in zeros if z.requires_grad]
                if graph and sources:
                    grads = torch.autograd.grad(
                        torch.stack([t.sum().float() for t in graph]).sum(), sources, allow_unused=True
                    )
                    if not all(g is None or bool(torch.isfinite(g).all()) for g in grads):
                        raise GuardFailure(
                            f"{type(module).__name__}'s gradient is inf/NaN on an all-zero input: a "
                            "sqrt or division there has no epsilon"
                        )

        self.hook(nn.modules.module.register_module_forward_hook(after, with_kwargs=True))


class MaskRespected(Watcher):
    """An attention module's outputs do not depend on what it must not see.

    Observed, on the first calls of the modules of class `module` (every module when None;
    the class that holds the attention mask, which `injector suggest` reads from the code):
    run again with the last sequence position's input changed (dim 1 of the floating-point
    arguments), the outputs at earlier positions stay the same (`kind="causal"`); given a
    (batch, seq) mask argument of 0/1 or bool values, changing the inputs at the positions on
    one side of the mask leaves the outputs on the other side the same (`kind="padding"`).
    With `kind="any"` either property passes, with `kind="all"` both must (where a mask is
    passed)."""

    fault = "missing-attention-mask"

    def __init__(self, module: str | None = None, kind: str = "any") -> None:
        super().__init__()
        if kind not in ("causal", "padding", "any", "all"):
            raise ValueError(f"kind must be causal, padding, any or all, not {kind!r}")
        self.module = module
        self.kind = kind

    def start(self) -> None:
        self.calls: dict[int, int] = {}
        self.rngs: dict[int, torch.Tensor] = {}
        self.checked = 0

        def wanted(module: nn.Module) -> bool:
            named = self.module is None or type(module).__name__ == self.module
            return named and not _wrapper(module) and self.calls.get(id(module), 0) < PROBED_CALLS

        def before(module: nn.Module, args: Any) -> None:
            if not _PROBING.get() and wanted(module):
                self.rngs[id(module)] = torch.random.get_rng_state()

        def after(module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
            if _PROBING.get() or not wanted(module) or id(module) not in self.rngs:
                return
            rng = self.rngs.pop(id(module))
            self.calls[id(module)] = self.calls.get(id(module), 0) + 1
            found = _sequence(args, kwargs, output)
            if found is None:
                return
            batch, length = found
            with torch.no_grad():
                with _probe(module, args, kwargs, rng) as out:
                    reference = _first_sequence(out, batch, length)
                if reference is None:
                    return
                results = {}
                if self.kind in ("causal", "any", "all"):
                    hidden = torch.zeros(length, dtype=torch.bool)
                    hidden[-1] = True
                    results["causal"] = self._same_elsewhere(
                        module, args, kwargs, rng, hidden.expand(batch, length), reference
                    )
                if self.kind in ("padding", "any", "all"):
                    mask = _mask(args, kwargs, batch, length)
                    if mask is not None:
                        results["padding"] = any(
                            self._same_elsewhere(module, args, kwargs, rng, side, reference) for side in (mask, ~mask)
                        )
            if not results:
                return
            self.checked += 1
            failed = [kind for kind, kept in results.items() if not kept]
            if failed and (self.kind == "all" or len(failed) == len(results)):
                what = " or ".join(
                    {"causal": "a later position", "padding": "masked (padding) positions"}[k] for k in failed
                )
                raise GuardFailure(
                    f"{type(module).__name__}'s outputs change when only {what} change: the attention "
                    "mask is not applied"
                )

        self.hook(nn.modules.module.register_module_forward_pre_hook(before))
        self.hook(nn.modules.module.register_module_forward_hook(after, with_kwargs=True))

    def _same_elsewhere(
        self,
        module: nn.Module,
        args: Any,
        kwargs: Any,
        rng: torch.Tensor,
        hidden: torch.Tensor,
        reference: torch.Tensor,
    ) -> bool:
        """Whether the outputs outside `hidden` (batch, seq) stay when the inputs inside change."""
        if bool(hidden.all()) or not bool(hidden.any()):
            return True
        generator = torch.Generator().manual_seed(0)
        batch, length = hidden.shape

        def changed(tensor: torch.Tensor) -> torch.Tensor:
            if not tensor.is_floating_point() or tensor.dim() < 2 or tuple(tensor.shape[:2]) != (batch, length):
                return tensor
            noise = torch.randn(tensor.shape, generator=generator).to(tensor.dtype) * (tensor.abs().mean() + 1.0)
            where = hidden.reshape(batch, length, *([1] * (tensor.dim() - 2))).to(tensor.device)
            return torch.where(where, tensor + noise.to(tensor.device), tensor)

        with _probe(module, _mapped(args, changed), _mapped(kwargs, changed), rng) as out:
            probed = _first_sequence(out, batch, length)
        if probed is None:
            return True
        keep = ~hidden.to(reference.device)
        return torch.allclose(probed[keep].float(), reference[keep].float(), rtol=1e-4, atol=1e-5)

    def verdict(self) -> None:
        if self.module is not None and self.checked == 0:
            raise GuardFailure(
                f"no call of {self.module} with a (batch, seq, ...) input ran: the attention mask was not checked"
            )


def _sequence(args: Any, kwargs: Any, output: Any) -> tuple[int, int] | None:
    """(batch, seq) of the first floating-point argument with 3+ dims whose output keeps both."""
    for tensor in _tensors((args, kwargs)):
        if tensor.is_floating_point() and tensor.dim() >= 3 and tensor.shape[1] > 1:
            batch, length = int(tensor.shape[0]), int(tensor.shape[1])
            if _first_sequence(output, batch, length) is not None:
                return batch, length
    return None


def _first_sequence(output: Any, batch: int, length: int) -> torch.Tensor | None:
    for tensor in _tensors(output):
        if tensor.is_floating_point() and tensor.dim() >= 2 and tuple(tensor.shape[:2]) == (batch, length):
            return tensor.detach()
    return None


def _mask(args: Any, kwargs: Any, batch: int, length: int) -> torch.Tensor | None:
    """A (batch, seq) bool or 0/1 argument (a padding mask), as bool; None without one."""
    for tensor in _tensors((args, kwargs)):
        if tuple(tensor.shape) != (batch, length) or (tensor.is_floating_point() and tensor.dtype != torch.bool):
            continue
        if tensor.dtype == torch.bool or bool(((tensor == 0) | (tensor == 1)).all()):
            return tensor.bool().cpu()
    return None


class BatchesMoved(Watcher):
    """Once the code moves tensors to a device, every batch it feeds a model or a loss went
    through that move.

    Observed without a GPU: the tensors returned by `.to(<device>)` and `.cuda()` (a dtype-only
    `.to` does not count) are remembered, and a data tensor (no autograd history, not a
    parameter) that reaches the outermost module call or a loss function without having been
    returned by one (or being a view of one) is reported, as soon as anything was moved in the block. On a CPU run the
    move is a no-op, so a dropped `.to(device)` changes no number: this is the only place it
    shows. Batches moved by a helper that copies them afterwards (`x.to(device).long()` from
    another dtype) read as not moved."""

    fault = "device-mismatch"

    def start(self) -> None:
        # storage address -> a moved tensor on it (weakly: tensors compare by value, so no
        # set of them; a view of a moved batch shares its storage)
        self.moved: dict[int, weakref.ref[torch.Tensor]] = {}
        self.depth = 0

        def moving(original: Callable, always: bool) -> Callable:
            def wrapped(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
                out = original(tensor, *args, **kwargs)
                if isinstance(out, torch.Tensor) and (always or _names_device(args, kwargs)):
                    self.remember(out)
                return out

            return wrapped

        def check(where: str, values: Any) -> None:
            if not len(self.moved):
                return
            for tensor in _tensors(values):
                if tensor.grad_fn is None and not tensor.requires_grad and not self.placed(tensor):
                    raise GuardFailure(
                        f"a batch tensor {tuple(tensor.shape)} reached {where} without `.to(device)`: "
                        "on a GPU it stays on the CPU (Expected all tensors to be on the same device)"
                    )

        def before(module: nn.Module, args: Any) -> None:
            self.depth += 1

        def after(module: nn.Module, args: Any, kwargs: Any, output: Any = None) -> None:
            self.depth -= 1
            if self.depth == 0 and not _PROBING.get():
                check(type(module).__name__, (args, kwargs))
                for tensor in _tensors(output):  # a model's output is where its inputs were
                    self.remember(tensor)

        def loss(original: Callable, name: str) -> Callable:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if self.depth == 0:
                    check(name, (args, kwargs))
                return original(*args, **kwargs)

            return wrapped

        self.wrap(torch.Tensor, "to", lambda f: moving(f, False))
        self.wrap(torch.Tensor, "cuda", lambda f: moving(f, True))
        for name in LOSSES:
            self.wrap(F, name, functools.partial(_named, loss, name))
        self.hook(nn.modules.module.register_module_forward_pre_hook(before))
        self.hook(nn.modules.module.register_module_forward_hook(after, with_kwargs=True, always_call=True))

    def remember(self, tensor: torch.Tensor) -> None:
        self.moved[_storage(tensor)] = weakref.ref(tensor)

    def placed(self, tensor: torch.Tensor) -> bool:
        """Whether `tensor` is a moved tensor or a view of one (same storage)."""
        ref = self.moved.get(_storage(tensor))
        alive = ref() if ref is not None else None
        return alive is not None and _storage(alive) == _storage(tensor)


def _storage(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, sparse)
        return id(tensor)


def _names_device(args: tuple, kwargs: dict) -> bool:
    """Whether `.to(*args, **kwargs)` names a device (or a tensor to follow), not a dtype only."""
    if "device" in kwargs:
        return True
    first = args[0] if args else kwargs.get("other")
    return isinstance(first, (str, int, torch.device, torch.Tensor)) and not isinstance(first, bool)


class ReplicasInSync(Watcher):
    """After every optimizer step of a multi-rank run, all ranks hold the same parameters."""

    fault = "rank-skip"

    def start(self) -> None:
        import torch.distributed as dist

        def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
                return
            with torch.no_grad():
                total = torch.stack(
                    [p.detach().double().sum() for g in optimizer.param_groups for p in g["params"]]
                ).sum()
                low, high = total.clone().reshape(1), total.clone().reshape(1)
                dist.all_reduce(low, op=dist.ReduceOp.MIN)
                dist.all_reduce(high, op=dist.ReduceOp.MAX)
            if not torch.allclose(low, high, rtol=1e-6, atol=1e-9):
                raise GuardFailure(f"replicas differ after an optimizer step (rank {dist.get_rank()})")

        self.hook(register_optimizer_step_post_hook(after_step))


# The watcher for each fault id: the checks that `injector suggest` puts around a test.
WATCHERS: dict[str, Callable[..., Watcher]] = {
    "missing-zero-grad": GradsCleared,
    "missing-optimizer-step": ParamsChange,
    "missing-backward": ParamsChange,
    "detached-graph": ParamsChange,
    "no-grad-training": ParamsChange,
    "missing-eval-mode": ModeRight,
    "missing-train-mode": ModeRight,
    "missing-no-grad-eval": NoGraphInEval,
    "wrong-softmax-dim": SoftmaxAxis,
    "double-softmax": LogitsToLoss,
    "wrong-loss-reduction": MeanLoss,
    "missing-grad-clipping": ClippedNorm,
    "scheduler-step-misaligned": SchedulerPace,
    "no-shuffle": Shuffled,
    "missing-set-epoch": Shuffled,
    "loss-tensor-leak": NoLeak,
    "missing-grad-scaler": ScalerUsed,
    "rank-skip": ReplicasInSync,
    "lr-too-high": UpdateBounded,
    "inplace-activation": NoInplaceDamage,
    "missing-epsilon": FiniteOnZeros,
    "missing-attention-mask": MaskRespected,
    "device-mismatch": BatchesMoved,
}


def make(faults: tuple[str, ...], options: dict[str, Any]) -> list[Watcher]:
    """The watchers for `faults` (catalog ids), each given the `options` it takes."""
    unknown = [f for f in faults if f not in WATCHERS]
    if unknown:
        raise ValueError(f"no watcher for fault id {unknown[0]!r}; known: {', '.join(sorted(WATCHERS))}")
    made: list[Watcher] = []
    for fault in dict.fromkeys(faults):
        kind = WATCHERS[fault]
        if any(type(watcher) is kind for watcher in made):
            continue
        takes = inspect.signature(kind).parameters
        made.append(kind(**{k: v for k, v in options.items() if k in takes}))
    return made


@contextlib.contextmanager
def watch(*faults: str, **options: Any) -> Iterator[None]:
    """Check the training run inside the block for `faults` (catalog ids); `options` go to the
    watchers that take them (`class_axis` for wrong-softmax-dim, `max_norm` for clipping).
    Python processes started inside the block (scripts, torchrun workers, spawned ranks) are
    watched too; ranks started by `torch.multiprocessing.spawn` are forked (while CUDA is not
    initialised), so they inherit the watchers instead of importing torch afresh. With
    `in_process=True`, Python scripts started with `subprocess.run([sys.executable, ...])` run
    in this process instead (`injector.guards.inprocess.scripts_in_process`).

    Raises GuardFailure (an AssertionError) where the run shows one of the faults."""
    from injector.guards.children import forked_ranks, passed_on
    from injector.guards.inprocess import scripts_in_process

    here = bool(options.pop("in_process", False))
    watchers = make(faults, options)
    started: list[Watcher] = []

    def verdicts() -> None:
        for watcher in watchers:
            watcher.verdict()

    try:
        with passed_on(faults, options), forked_ranks(verdicts), scripts_in_process() if here else nullcontext():
            for watcher in watchers:
                watcher.start()
                started.append(watcher)
            yield
    finally:
        for watcher in reversed(started):
            watcher.stop()
    verdicts()
