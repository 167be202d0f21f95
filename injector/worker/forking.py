"""Forked children: run a piece of work in a child, with a deadline, and end its whole tree.

A worker never runs guard code itself: the baseline and every mutant run in a forked child in
its own process group, so whatever the guard does (initialise CUDA, start ranks, hang) stays
in a tree the worker can end. Children send JSON lines back on a pipe: progress messages while
they run, and one result at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from injector.worker.output import MESSAGE_LIMIT, describe_status
from trainwreck import processes

DRIVER = "/libcuda.so"  # the CUDA driver, loaded at its first call (not by `import torch`)


@dataclass(frozen=True)
class Finished:
    """How a child ended: its result (None if it sent none), exit status, or a timeout."""

    result: dict | None
    status: int | None
    timed_out: bool = False

    def describe(self) -> str:
        return describe_status(self.status)


def run_in_child(
    work: Callable[[Callable[[dict], None]], dict],
    limit: float,
    on_progress: Callable[[dict], None] | None = None,
    still_wanted: Callable[[], None] | None = None,
) -> Finished:
    """Run `work(progress)` in a forked child and wait at most `limit` seconds for it.

    Progress messages reach `on_progress` here while it runs; `still_wanted` is called often
    (it leaves the process if the campaign has gone). At the end the child's whole process
    tree is ended, whatever it left running."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(lambda: work(lambda message: send(write, {"progress": message})), write)
    os.close(write)
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpgid(pid, pid)
    deadline = time.monotonic() + limit
    buffer = b""
    result = None
    timed_out = False
    with os.fdopen(read, "rb", buffering=0) as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], max(0.0, min(0.1, deadline - time.monotonic())))
            if ready:
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "progress" in message:
                        if on_progress is not None:
                            on_progress(message["progress"])
                    else:
                        result = message
            if still_wanted is not None:
                still_wanted()
            if time.monotonic() >= deadline:
                timed_out = True
                break
    if timed_out:
        processes.kill_tree(pid)
    status = _reap(pid)
    end_tree(pid)
    return Finished(None if timed_out else result, status, timed_out)


def end_tree(pid: int) -> None:
    """End what a child left running: its process group, and any process that escaped the
    group and was re-parented to this (subreaper) process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for orphan in processes.children(os.getpid()):
        processes.kill_tree(orphan, grace=0.2)
        _reap(orphan)


def _reap(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return status


def _child(work: Callable[[], dict], write: int) -> None:
    """Run `work` in a forked child, send its result, and leave without cleanup."""
    code = 0
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        result = work()
    except BaseException as error:
        message = f"{type(error).__name__}: {error}"[:MESSAGE_LIMIT]
        result = {"status": "error", "error": message, "message": message}
        code = 1
    try:
        send(write, result)
    finally:
        os._exit(code)


def send(fd: int, message: dict) -> None:
    """One JSON line from a child to its worker."""
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def cuda_started() -> bool:
    """Whether this process has started CUDA: a child forked from it then fails at its first CUDA
    call ("Cannot re-initialize CUDA in forked subprocess", or "initialization error").

    torch's own flag covers its lazy start-up, but not a bare driver start: `is_available()`
    without the NVML check (`PYTORCH_NVML_BASED_CUDA_CHECK`) calls `cudaGetDeviceCount`, which
    starts the driver and leaves `is_initialized()` False. The driver library mapped into this
    process says that it started."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return True
    except Exception:  # a torch built without CUDA, or one half-imported
        pass
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any(DRIVER in line for line in maps)
    except OSError:
        return False


def silence_output() -> None:
    """Point this process's stdout and stderr at /dev/null (guard output is not ours to show)."""
    log = os.open(os.devnull, os.O_WRONLY)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def abandon(code: int) -> NoReturn:
    """End every process this one started and leave now."""
    for pid in processes.descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os._exit(code)
