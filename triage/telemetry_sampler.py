"""Sampling a watched run's telemetry: GPUs through NVML, or the process tree's CPU and memory.

Each round gives the records `triage watch` appends to its telemetry file (the JSON-lines format
`triage.detectors.telemetry` documents and reads) and whether the run looks idle, which the
stall check needs. With NVML there is one record per GPU per round; without it (no library, no
driver, no GPU, or `use_nvml=False`) one host record for the whole process tree.

All NVML calls made per round are in `read_gpus`, and the ones made once in `open_gpus`; both
take the `pynvml` module as an argument, so the record conversion is testable without a GPU.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import psutil

from trainwreck.processes import descendants

IDLE_PERCENT = 5.0  # at or under this utilisation (GPU percent, or CPU percent of one core): idle


@dataclass(frozen=True)
class GpuReading:
    """What NVML said about one GPU in one round; None where that call failed."""

    index: int
    util: float | None
    mem_used: int | None
    mem_total: int | None
    procs: tuple[tuple[int, int | None], ...] = ()  # (pid, GPU memory in bytes or None)


@dataclass(frozen=True)
class Round:
    """One sampling round: the records to write and whether the run sat idle (None: unknown)."""

    records: tuple[dict[str, Any], ...]
    idle: bool | None


def load_nvml() -> tuple[ModuleType | None, str]:
    """Import and initialise NVML; (None, why not) where it cannot be used."""
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return None, f"NVML: {exc}"
    except OSError as exc:  # a broken driver install can fail below NVML's own error type
        return None, f"NVML: {exc}"
    return pynvml, ""


def open_gpus(nvml: Any) -> list[Any]:
    """Handles of every GPU NVML sees (empty where it sees none or cannot count them)."""
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError:
        return []
    handles = []
    for i in range(count):
        try:
            handles.append(nvml.nvmlDeviceGetHandleByIndex(i))
        except nvml.NVMLError:
            handles.append(None)  # keep the index: GPU i stays GPU i in the records
    return handles


def read_gpus(nvml: Any, handles: list[Any]) -> list[GpuReading]:
    """One NVML reading per GPU; a call that fails leaves its value out, not the whole round."""
    out = []
    for index, handle in enumerate(handles):
        if handle is None:
            continue
        util = mem_used = mem_total = None
        procs: tuple[tuple[int, int | None], ...] = ()
        with contextlib.suppress(nvml.NVMLError):
            util = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        try:
            info = nvml.nvmlDeviceGetMemoryInfo(handle)
            mem_used, mem_total = int(info.used), int(info.total)
        except nvml.NVMLError:
            pass
        with contextlib.suppress(nvml.NVMLError):
            procs = tuple(
                (int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
                for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            )
        out.append(GpuReading(index, util, mem_used, mem_total, procs))
    return out


def gpu_record(t: float, wall: float, reading: GpuReading) -> dict[str, Any]:
    """The telemetry line for one GPU reading (keys whose call failed are left out)."""
    rec: dict[str, Any] = {"t": round(t, 3), "wall": round(wall, 3), "gpu": reading.index}
    if reading.util is not None:
        rec["gpu_util"] = reading.util
    if reading.mem_used is not None:
        rec["mem_used"] = reading.mem_used
    if reading.mem_total is not None:
        rec["mem_total"] = reading.mem_total
    if reading.procs:
        rec["procs"] = {str(pid): used for pid, used in reading.procs}
    return rec


def gpus_idle(readings: list[GpuReading], tree: set[int]) -> bool | None:
    """Whether the run's GPUs sit idle: those running one of `tree`'s processes, else all of them.

    NVML may report pids from another pid namespace (containers), so a GPU that shows none of
    the tree's pids is not taken as "not ours"; all GPUs then count.
    """
    known = [r for r in readings if r.util is not None]
    ours = [r for r in known if any(pid in tree for pid, _ in r.procs)]
    considered = ours or known
    if not considered:
        return None
    return all(r.util is not None and r.util <= IDLE_PERCENT for r in considered)


@dataclass(frozen=True)
class TreeUsage:
    """The process tree's CPU (percent of one core since the last reading) and resident memory."""

    cpu_util: float | None
    rss: int
    procs: int


class ProcessTree:
    """CPU time and resident memory of every process below `root` (psutil reads them).

    CPU use is the difference of each process's own user+system time between two readings
    (keyed by pid and start time, so a reused pid is a new process); a process that started
    since the last reading counts all of its time.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self._prev: dict[tuple[int, float], float] | None = None
        self._prev_t = 0.0

    def pids(self) -> list[int]:
        return descendants(self.root)

    def read(self, t: float, pids: list[int] | None = None) -> TreeUsage | None:
        """The tree's usage now (`t`: a monotonic time); None where processes cannot be read."""
        seconds: dict[tuple[int, float], float] = {}
        rss = 0
        for pid in self.pids() if pids is None else pids:
            try:
                process = psutil.Process(pid)
                with process.oneshot():
                    if process.status() == psutil.STATUS_ZOMBIE:
                        continue  # exited, not yet reaped: no memory, and its time is final
                    times = process.cpu_times()
                    resident = process.memory_info().rss
                    started = process.create_time()
                if resident == 0:
                    continue  # exiting: its memory is already released (a sample taken now reads 0)
                seconds[(pid, started)] = times.user + times.system
                rss += resident
            except psutil.Error:
                continue  # it ended between the listing and now, or is not ours to read
        cpu = None
        if self._prev is not None and t > self._prev_t:
            used = sum(now - self._prev.get(key, 0.0) for key, now in seconds.items())
            cpu = round(100.0 * max(used, 0.0) / (t - self._prev_t), 1)
        self._prev, self._prev_t = seconds, t
        return TreeUsage(cpu, rss, len(seconds))


def host_record(t: float, wall: float, usage: TreeUsage) -> dict[str, Any]:
    """The telemetry line for the process tree (a host sample: `cpu_util`, no `gpu_util`)."""
    rec: dict[str, Any] = {"t": round(t, 3), "wall": round(wall, 3)}
    if usage.cpu_util is not None:
        rec["cpu_util"] = usage.cpu_util
    rec["mem_used"] = usage.rss
    rec["procs"] = usage.procs
    return rec


class Sampler:
    """Telemetry of one watched run: GPUs where NVML works, the process tree otherwise.

    `notice` is the one line to tell the user when GPU telemetry is not available (else None);
    `idle_what` names what the stall check watched, for its message.
    """

    def __init__(self, root: int, *, use_nvml: bool = True, nvml: Any = None) -> None:
        self.tree = ProcessTree(root)
        self.nvml = nvml
        self.handles: list[Any] = []
        why = "--no-nvml given"
        if use_nvml and nvml is None:
            self.nvml, why = load_nvml()
        if self.nvml is not None:
            self.handles = open_gpus(self.nvml)
            if not any(h is not None for h in self.handles):
                why = "NVML sees no GPU"
                self.close()
        self.notice = (
            None
            if self.nvml is not None
            else (f"no GPU telemetry ({why}); recording CPU and memory of the command's processes instead")
        )
        self.gpu = self.nvml is not None
        self.idle_what = (
            "the GPUs idle (utilisation <= {:.0f}%)" if self.gpu else "its processes idle (CPU <= {:.0f}%)"
        ).format(IDLE_PERCENT)

    def sample(self, t: float, wall: float) -> Round:
        """One round at monotonic time `t` (seconds since the start) and Unix time `wall`."""
        pids = self.tree.pids()
        usage = self.tree.read(t, pids)
        cpu_idle = None if usage is None or usage.cpu_util is None else usage.cpu_util <= IDLE_PERCENT
        if not self.gpu:
            host: tuple[dict[str, Any], ...] = (
                (host_record(t, wall, usage),)
                if usage is not None and usage.cpu_util is not None and usage.procs
                else ()
            )
            return Round(host, cpu_idle)
        readings = read_gpus(self.nvml, self.handles)
        idle = gpus_idle(readings, set(pids))
        records = tuple(rec for rec in (gpu_record(t, wall, r) for r in readings) if len(rec) > 3)
        # NVML answered nothing about utilisation this round: the process tree has to tell
        return Round(records, cpu_idle if idle is None else idle)

    def close(self) -> None:
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
            self.nvml = None
