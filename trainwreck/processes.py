"""Ending whole process trees: a guard's torchrun or `mp.spawn` children included.

A process group is not enough on its own: launchers may start their workers in a new
session. So a tree is found through parent links as well (psutil reads them portably), and the
caller can become a child subreaper, so that orphaned descendants are re-parented to it instead
of escaping to init.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

import psutil

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """Direct children of `pid` (empty once it has exited)."""
    try:
        return [child.pid for child in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, through parent links (empty once it has exited)."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pid: int, grace: float = 1.0) -> None:
    """End `pid`, its process group and all its descendants: SIGTERM, then SIGKILL."""
    victims = [pid, *descendants(pid)]
    _signal_all(pid, victims, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in victims):
        time.sleep(0.02)
    _signal_all(pid, victims + descendants(pid), signal.SIGKILL)


def _signal_all(group: int, pids: list[int], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def alive(pid: int) -> bool:
    """Whether `pid` is a running process: False once it has exited, zombie or not (a process
    we may not inspect still exists)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def identity(pid: int) -> str | None:
    """`pid` and its start time, for people reading an owner file; None if no such process."""
    started = start_time(pid)
    return None if started is None else f"{pid} {started:.2f}"


def start_time(pid: int) -> float | None:
    """When process `pid` started (Unix time), or None if it does not run (zombies included)."""
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process.create_time()
    except psutil.AccessDenied:
        return 0.0  # it runs, and is not ours to inspect: as old as can be
    except psutil.Error:
        return None


def single_threaded() -> bool:
    """Whether this process runs one thread, native threads included (False where unknown)."""
    try:
        return psutil.Process().num_threads() == 1
    except psutil.Error:
        return False
