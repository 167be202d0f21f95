"""Ending whole process trees: a guard's torchrun or `mp.spawn` children included.

A process group is not enough on its own: launchers may start their workers in a new
session. So a tree is found through /proc parent links as well, and the caller can become a
child subreaper, so that orphaned descendants are re-parented to it instead of escaping to init.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int] | None:
    """Direct children of `pid` from /proc/PID/task/*/children; None where that file is missing."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            return None
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (empty where /proc is missing)."""
    found: list[int] = []
    queue = [pid]
    while queue:
        below = children(queue.pop())
        if below is None:
            return _descendants_by_scan(pid)
        found.extend(below)
        queue.extend(below)
    return found


def _descendants_by_scan(pid: int) -> list[int]:
    """The same, from every process's parent link (kernels without the children file)."""
    by_parent: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: parse after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        by_parent.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in by_parent.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def kill_tree(pid: int, grace: float = 1.0) -> None:
    """End `pid`, its process group and all its descendants: SIGTERM, then SIGKILL."""
    victims = [pid, *descendants(pid)]
    _signal_all(pid, victims, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in victims):
        time.sleep(0.02)
    _signal_all(pid, victims + descendants(pid), signal.SIGKILL)


def _signal_all(group: int, pids: list[int], sig: int) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def alive(pid: int) -> bool:
    """Whether `pid` is a running process: False once it has exited, zombie or not.

    A process we may not signal still exists (True). Where /proc is mounted, a pid whose
    /proc entry is gone has just exited (False); where there is no /proc at all, the signal
    check is all there is to go on.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:  # a zombie is dead for our purposes
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    except FileNotFoundError:
        return not Path("/proc/self/stat").exists()
    except (OSError, IndexError):
        return True
