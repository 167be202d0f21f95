"""The training probe: facts about a run that its log does not hold, counted while it runs.

A step that never calls `backward()` and one that never calls `optimizer.step()` leave the same
log: nothing trains, the loss stays where it began. So do a missing `zero_grad()` and a step too
large, often. What tells them apart is what ran. Under `injector run --calibrate` and `triage
watch`, every Python process of the run that imports torch counts:

- backward passes that completed (`Tensor.backward`, `torch.autograd.backward`), those that
  raised, and `torch.autograd.grad` calls;
- optimizers built, optimizers that stepped at least once, and optimizer steps (torch's global
  optimizer-step hooks);
- optimizers whose parameters a backward pass gave gradients, and that never stepped;
- optimizers that took every one of their steps with no gradient on any of their parameters;
- steps that applied gradients a backward had added onto those the optimizer's previous step
  had already applied: nothing cleared them in between (no `zero_grad()` on any optimizer or
  module, and the gradient tensor the same one);
- forward passes of a module with trainable parameters, in training mode, with gradients off
  (torch's global forward pre-hook);
- the processes that stepped an optimizer, and whether they took different numbers of steps or
  of backward passes (ranks of one data-parallel run take the same).

The counts become one line of the log that triage reads (`Counts.line`, `Counts.parse`), each
number before its words:

    [trainwreck probe] 0 backward passes, 0 autograd.grad calls, 1 optimizers built, ...

The probe changes nothing in the run: each hook counts and passes on what torch returns. A
process keeps its counts in a file of its own in the folder that `TRAINWRECK_PROBE` names,
rewritten in place at every event (a rank that ends with `os._exit` keeps what it counted);
`collect` adds up the folder. Processes the run starts afresh find the probe through the
`sitecustomize` in `probe_site/` (`environment()` puts it on PYTHONPATH); forked ones inherit
it and start counting from zero.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import os
import sys
import uuid
import weakref
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from trainwreck import imports, sites

ENV = "TRAINWRECK_PROBE"
SITE = str(Path(__file__).parent / "probe_site")
PREFIX = "[trainwreck probe]"
_RECORD = 160  # bytes of one process's file: a fixed width, so a rewrite in place leaves no tail
_SUFFIX = ".probe"


@dataclass
class Counts:
    """What the probe counted in one process, or in all of a run's processes added up."""

    backward: int = 0
    failed_backward: int = 0  # backward passes that raised (a loss with no graph)
    grad_calls: int = 0
    optimizers: int = 0  # built during the run
    stepped: int = 0  # optimizers that stepped at least once
    steps: int = 0
    unstepped: int = 0  # optimizers whose parameters got gradients, and that never stepped
    gradless: int = 0  # optimizers that stepped, every time with no gradient
    kept: int = 0  # steps on gradients kept from the optimizer's step before
    no_grad_forwards: int = 0  # forward passes of a trainable module in training mode, gradients off
    stepping: int = 0  # processes that stepped an optimizer
    uneven: int = 0  # 1 where those processes took different numbers of steps or backward passes (`collect`)

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def empty(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))

    def line(self) -> str:
        """The line the log gets, in words a reader follows and triage parses."""
        return f"{PREFIX} " + ", ".join(f"{getattr(self, name)} {words}" for name, words in _WORDS.items())

    @classmethod
    def parse(cls, line: str) -> Counts | None:
        """The counts a probe line holds; None if `line` is no probe line."""
        at = line.find(PREFIX)
        if at < 0:
            return None
        values = {}
        for part in line[at + len(PREFIX) :].split(","):
            number, _, words = part.strip().partition(" ")
            name = _NAMES.get(words)
            if name is None or not number.isdigit():
                return None
            values[name] = int(number)
        return cls(**values) if len(values) == len(_WORDS) else None

    def record(self) -> bytes:
        return " ".join(str(getattr(self, f.name)) for f in fields(self)).encode().ljust(_RECORD)

    @classmethod
    def from_record(cls, data: bytes) -> Counts | None:
        try:
            values = [int(word) for word in data.split()]
        except ValueError:
            return None
        return cls(*values) if len(values) == len(fields(cls)) else None


# Each count's words on the line, in the line's order.
_WORDS = {
    "backward": "backward passes",
    "failed_backward": "backward passes that raised",
    "grad_calls": "autograd.grad calls",
    "optimizers": "optimizers built",
    "stepped": "optimizers stepped",
    "steps": "optimizer steps",
    "unstepped": "optimizers given gradients that never stepped",
    "gradless": "optimizers that stepped every time with no gradient",
    "kept": "steps on gradients kept from the step before",
    "no_grad_forwards": "forward passes in training mode with gradients off",
    "stepping": "processes stepping",
    "uneven": "processes stepping unevenly",
}
_NAMES = {words: name for name, words in _WORDS.items()}


# ---- reading a run's counts ----


def environment(folder: Path) -> dict[str, str]:
    """Variables under which the Python processes a command starts count into `folder`."""
    return {ENV: str(folder), **sites.environment(SITE)}


def collect(folder: Path) -> Counts:
    """The counts of every process that counted into `folder`, added up."""
    if folder == _state.folder:
        _state.save()  # this process's latest counts (some are written only now and then)
    total = Counts()
    paces = set()  # (backward passes, steps) of each process that stepped
    with contextlib.suppress(OSError):
        for file in folder.glob(f"*{_SUFFIX}"):
            with contextlib.suppress(OSError):
                counts = Counts.from_record(file.read_bytes())
                if counts is not None:
                    total = total + counts
                    if counts.steps:
                        paces.add((counts.backward, counts.steps))
    total.uneven = int(len(paces) > 1)
    return total


def folder() -> Path | None:
    """Where this process counts, if the probe is installed here."""
    return _state.folder if _state.installed else None


def clear(folder: Path) -> None:
    """Forget what was counted into `folder`, this process's counts included."""
    _state.restart()
    with contextlib.suppress(OSError):
        for file in folder.glob(f"*{_SUFFIX}"):
            with contextlib.suppress(OSError):
                file.unlink()


# ---- counting in this process ----


def install(folder: Path) -> None:
    """Count in this process, into `folder` (now if torch is imported, else once it is)."""
    folder.mkdir(parents=True, exist_ok=True)
    _state.folder = folder
    if _state.installed:
        return
    _state.installed = True
    os.register_at_fork(after_in_child=_state.restart)
    if "torch" in sys.modules:
        _hook(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterTorch())


def start_from_environment(site: str = SITE) -> None:
    """In a process a probed run started (our sitecustomize, loaded from `site`): count if the
    run asks for it, then run the `sitecustomize` ours shadows."""
    folder = os.environ.get(ENV)
    sites.chain(site)
    if folder:
        with contextlib.suppress(OSError):
            install(Path(folder))


class _State:
    """This process's counts and what the hooks remember between two events."""

    def __init__(self) -> None:
        self.installed = False
        self.folder: Path | None = None
        self.fd: int | None = None
        self.generation = 0
        # every optimizer alive, whenever built (one built before a test may step in it)
        self.optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.restart()

    def restart(self) -> None:
        """From zero, in a file of its own (a forked child; a new test)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd = None
        self.generation += 1  # what optimizers of before leave behind when collected is not ours
        self.counts = Counts()
        self.clears = 0  # zero_grad() calls, on any optimizer or module
        # optimizer -> (a parameter, its gradient and that gradient's version after the last step)
        self.after_step: weakref.WeakKeyDictionary[Any, tuple[Any, Any, int]] = weakref.WeakKeyDictionary()
        # optimizer -> `clears` when a backward added onto the gradients its last step applied
        self.added_onto: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        # optimizer -> [steps, steps with no gradient, 1 if a backward gave its parameters gradients]
        self.seen: weakref.WeakKeyDictionary[Any, list[int]] = weakref.WeakKeyDictionary()
        self.gone = Counts()  # what optimizers collected meanwhile leave in the counts
        # during a backward: optimizers not yet given gradients, and a few of their gradients before it
        self.gradients_before: list[tuple[Any, list[tuple[Any, Any, int]]]] = []

    def entry(self, optimizer: Any) -> list[int]:
        entry = self.seen.get(optimizer)
        if entry is None:
            entry = self.seen[optimizer] = [0, 0, 0]
            weakref.finalize(optimizer, _forget, entry, self.generation)
        return entry

    def save(self) -> None:
        if self.folder is None:
            return
        counts = self.counts
        entries = list(self.seen.values())
        counts.gradless = self.gone.gradless + sum(1 for e in entries if e[0] and e[0] == e[1])
        counts.unstepped = self.gone.unstepped + sum(1 for e in entries if e[2] and not e[0])
        counts.stepping = int(counts.steps > 0)
        try:
            if self.fd is None:
                name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}{_SUFFIX}"
                self.fd = os.open(self.folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.pwrite(self.fd, counts.record(), 0)
        except OSError:
            self.folder = None  # the folder went away: count on, write nothing


_state = _State()


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Hooks torch the moment its import finishes, in a process that had not imported it (a
    spec found and not used, `importlib.util.find_spec("torch")`, leaves it waiting)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        spec = imports.spec_elsewhere(self, name, path, target) if name == "torch" else None
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module = functools.partial(self._then_hook, spec.loader.exec_module)
        return spec

    def _then_hook(self, run: Any, module: Any) -> None:
        run(module)
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        _hook(module)


def _hook(torch: Any) -> None:
    """Wrap what counts; a torch these hooks do not fit is left as it is."""
    try:
        from torch.nn.modules import module as module_module
        from torch.optim import optimizer as optimizer_module

        autograd = torch.autograd
        autograd.backward = _counting(autograd.backward, _backward)
        autograd.grad = _counting(autograd.grad, _grad_call)
        optimizer = torch.optim.Optimizer
        optimizer.__init__ = _counting(optimizer.__init__, _built)
        optimizer.zero_grad = _counting(optimizer.zero_grad, _cleared)
        torch.nn.Module.zero_grad = _counting(torch.nn.Module.zero_grad, _cleared)
        optimizer_module.register_optimizer_step_pre_hook(_before_step)
        optimizer_module.register_optimizer_step_post_hook(_after_step)
        module_module.register_module_forward_pre_hook(functools.partial(_forward, torch.is_grad_enabled))
    except (AttributeError, ImportError, TypeError):
        return
    atexit.register(_state.save)


def _counting(function: Any, then: Any) -> Any:
    """`function`, and `then(args)` once it has returned (not if it raised)."""
    is_backward = then is _backward

    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the caller's frame, not ours
        if is_backward:
            _before_backward()
        try:
            result = function(*args, **kwargs)
        except BaseException:
            if is_backward:
                _state.counts.failed_backward += 1
                _state.save()
            raise
        then(args)
        return result

    return counted


def _backward(args: tuple) -> None:
    _state.counts.backward += 1
    for optimizer, before in _state.gradients_before:
        if any(p.grad is not grad or (grad is not None and grad._version != version) for p, grad, version in before):
            _state.entry(optimizer)[2] = 1  # this backward gave its parameters gradients
    _state.gradients_before = []
    _state.save()


def _grad_call(args: tuple) -> None:
    _state.counts.grad_calls += 1
    _state.save()


def _built(args: tuple) -> None:
    _state.counts.optimizers += 1
    if args:
        with contextlib.suppress(TypeError):
            _state.optimizers.add(args[0])
    _state.save()


def _cleared(args: tuple) -> None:
    _state.clears += 1


def _forward(grad_enabled: Any, module: Any, args: Any) -> None:
    """A trainable module run in training mode with gradients off: a step under `no_grad`."""
    if module.training and not grad_enabled():
        own = module._parameters
        if own and any(p is not None and p.requires_grad for p in own.values()):
            counts = _state.counts
            counts.no_grad_forwards += 1
            if counts.no_grad_forwards & (counts.no_grad_forwards - 1) == 0:  # 1, 2, 4, ...: few writes
                _state.save()


def _before_backward() -> None:
    """A backward about to add onto gradients that an optimizer's last step applied, untouched;
    and, for optimizers not yet given gradients in this run, a few of their gradients as they
    are (`_backward` sees whether the backward changed them)."""
    _state.gradients_before = [
        (optimizer, [(p, p.grad, p.grad._version if p.grad is not None else 0) for p in _trainable(optimizer)])
        for optimizer in list(_state.optimizers)
        if not _state.entry(optimizer)[2]
    ]
    for optimizer, (parameter, gradient, version) in list(_state.after_step.items()):
        if optimizer in _state.added_onto:
            continue
        current = getattr(parameter, "grad", None)
        if current is not None and current is gradient and current._version == version:
            _state.added_onto[optimizer] = _state.clears


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    entry = _state.entry(optimizer)
    entry[0] += 1
    if _first_gradient(optimizer) is None:
        entry[1] += 1
    else:
        entry[2] = 1
    if entry[0] == 1:
        _state.counts.stepped += 1
    added = _state.added_onto.pop(optimizer, None)
    remembered = _state.after_step.get(optimizer)
    if added == _state.clears and remembered is not None and getattr(remembered[0], "grad", None) is remembered[1]:
        _state.counts.kept += 1


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    _state.counts.steps += 1
    first = _first_gradient(optimizer)
    if first is not None:
        _state.after_step[optimizer] = (first, first.grad, first.grad._version)
    else:
        _state.after_step.pop(optimizer, None)
    _state.save()


def _forget(entry: list[int], generation: int) -> None:
    """An optimizer was collected: what it did stays in this run's counts."""
    if generation != _state.generation:
        return
    if entry[0] and entry[0] == entry[1]:
        _state.gone.gradless += 1
    if entry[2] and not entry[0]:
        _state.gone.unstepped += 1


def _trainable(optimizer: Any, count: int = 3) -> list[Any]:
    """The optimizer's first few parameters that require gradients."""
    found = []
    for group in getattr(optimizer, "param_groups", ()):
        for parameter in group.get("params", ()):
            if getattr(parameter, "requires_grad", False):
                found.append(parameter)
                if len(found) == count:
                    return found
    return found


def _first_gradient(optimizer: Any) -> Any:
    """The optimizer's first parameter that has a gradient, or None."""
    for group in getattr(optimizer, "param_groups", ()):
        for parameter in group.get("params", ()):
            if getattr(parameter, "grad", None) is not None:
                return parameter
    return None
