"""GPU telemetry symptoms: an idle GPU, low utilisation, memory climbing.

The telemetry file is JSON lines, one sample per line (written by `nvidia-smi`-style pollers
or `triage watch`):

    {"t": 12.5, "gpu_util": 87, "mem_used": 10240}

`t` is seconds (any origin), `gpu_util` percent (0-100), `mem_used` any unit (only its trend
is used); an optional `"gpu": 0` separates devices. Unknown keys are ignored.

Host samples, for runs without a GPU (`triage watch` writes them where NVML is missing), carry
`cpu_util` and no `gpu_util`; they describe the watched command's whole process tree:

    {"t": 12.5, "cpu_util": 97.5, "mem_used": 734003200, "procs": 3}

`cpu_util` is percent of one core (above 100 with several busy cores), `mem_used` the tree's
resident memory in bytes. They never count as a GPU: no idle or utilisation claim is made from
them; resident memory that keeps climbing after the start-up is the `memory-growing` symptom.

`triage watch` also writes `wall` (Unix time of the sample) and, on GPU samples, `mem_total`
(bytes) and `procs` (pid -> GPU memory in bytes, or null, where NVML reports it); these are
informational and ignored here.
"""

from __future__ import annotations

import json
import math
import os
from statistics import median

from trainwreck.errors import BadInputError
from triage.detectors import Context
from triage.records import Evidence, Symptom

# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {
        "gpu-idle",
        "gpu-low-util",
        "gpu-memory-climbing",
        "memory-growing",
    }
)


def load(path: str | os.PathLike[str]) -> list[dict[str, float]]:
    """Read a telemetry JSON-lines file; raise BadInputError on a file that is not one."""
    samples: list[dict[str, float]] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    raise BadInputError(f"{path}:{n}: telemetry is not JSON lines") from None
                if not isinstance(obj, dict) or "t" not in obj:
                    raise BadInputError(f'{path}:{n}: telemetry sample needs a "t" field')
                sample = {"line": float(n)}
                for key in ("t", "gpu_util", "mem_used", "gpu", "cpu_util"):
                    value = obj.get(key)
                    if isinstance(value, (int, float)) and math.isfinite(value):
                        sample[key] = float(value)
                samples.append(sample)
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such telemetry file") from None
    except IsADirectoryError:
        raise BadInputError(f"{path}: is a directory, not a telemetry file") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read telemetry ({exc.strerror or exc})") from None
    return samples


def _ev(s: dict[str, float], text: str) -> Evidence:
    return Evidence(int(s["line"]), text, source="telemetry")


def detect(ctx: Context) -> list[Symptom]:
    out: list[Symptom] = []
    by_gpu: dict[float, list[dict[str, float]]] = {}
    host: list[dict[str, float]] = []
    for s in ctx.telemetry:
        if "cpu_util" in s and "gpu_util" not in s:
            host.append(s)
        else:
            by_gpu.setdefault(s.get("gpu", 0.0), []).append(s)
    out.extend(_host_memory(sorted(host, key=lambda s: s["t"])))
    for gpu, samples in sorted(by_gpu.items()):
        samples.sort(key=lambda s: s["t"])
        util = [s for s in samples if "gpu_util" in s]
        if len(util) >= 5:
            tail_n = max(2, len(util) // 5)
            head, tail = util[:-tail_n], util[-tail_n:]
            busy = median(s["gpu_util"] for s in head)
            if busy >= 30 and all(s["gpu_util"] <= 5 for s in tail) and tail[-1]["t"] - tail[0]["t"] >= 30:
                out.append(
                    Symptom(
                        "gpu-idle",
                        f"GPU {gpu:.0f} dropped from {busy:.0f}% to idle for the last "
                        f"{tail[-1]['t'] - tail[0]['t']:.0f} s",
                        (
                            _ev(tail[0], f"t={tail[0]['t']:.6g} gpu_util={tail[0]['gpu_util']:.0f}"),
                            _ev(tail[-1], f"t={tail[-1]['t']:.6g} gpu_util={tail[-1]['gpu_util']:.0f}"),
                        ),
                    )
                )
            else:
                level = median(s["gpu_util"] for s in util)
                if 5 < level < 50:
                    mid = util[len(util) // 2]
                    out.append(
                        Symptom(
                            "gpu-low-util",
                            f"GPU {gpu:.0f} was only {level:.0f}% busy (median)",
                            (_ev(mid, f"t={mid['t']:.6g} gpu_util={mid['gpu_util']:.0f}"),),
                            value=level,
                        )
                    )
        mem = [s for s in samples if "mem_used" in s]
        if len(mem) >= 5:
            vals = [s["mem_used"] for s in mem]
            ups = sum(1 for a, b in zip(vals, vals[1:], strict=False) if b > a) / (len(vals) - 1)
            if ups >= 0.6 and vals[-1] > 1.1 * vals[0] > 0:
                out.append(
                    Symptom(
                        "gpu-memory-climbing",
                        f"GPU {gpu:.0f} memory climbed from {vals[0]:.6g} to {vals[-1]:.6g}",
                        (
                            _ev(mem[0], f"t={mem[0]['t']:.6g} mem_used={vals[0]:.6g}"),
                            _ev(mem[-1], f"t={mem[-1]['t']:.6g} mem_used={vals[-1]:.6g}"),
                        ),
                        value=vals[-1] / vals[0],
                    )
                )
    return out


HOST_WARMUP = 0.2  # share of the first host samples left out: imports and data loading grow memory


def _host_memory(samples: list[dict[str, float]]) -> list[Symptom]:
    """Resident memory of a CPU run that keeps climbing after its start-up: a leak."""
    mem = [s for s in samples if "mem_used" in s]
    mem = mem[int(len(mem) * HOST_WARMUP) :]
    if len(mem) < 5:
        return []
    vals = [s["mem_used"] for s in mem]
    # a few pages of allocator jitter is not growth: count rises of at least 0.5%
    ups = sum(1 for a, b in zip(vals, vals[1:], strict=False) if b > a * 1.005) / (len(vals) - 1)
    half = len(vals) // 2
    # the very last sample may catch the run freeing memory on its way out
    peak = max(mem[-3:], key=lambda s: s["mem_used"])
    end = peak["mem_used"]
    if not (ups >= 0.6 and end > 1.1 * vals[0] > 0 and end > vals[half] > vals[0]):
        return []
    mib = 2**20
    return [
        Symptom(
            "memory-growing",
            f"the run's resident memory climbed from {vals[0] / mib:.0f} MiB to {end / mib:.0f} MiB "
            f"over {peak['t'] - mem[0]['t']:.0f} s (rising in {100 * ups:.0f}% of the samples)",
            (
                _ev(mem[0], f"t={mem[0]['t']:.6g} mem_used={vals[0]:.6g}"),
                _ev(peak, f"t={peak['t']:.6g} mem_used={end:.6g}"),
            ),
            value=end / vals[0],
        )
    ]
