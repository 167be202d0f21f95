"""Regenerate triage's labelled corpus: run `train.py` once per (fault, style, seed), keep the logs.

Run from anywhere: `python tests/triage/corpus/generate.py [--set corpus|heldout] [--jobs N]`.
It rewrites the set's `logs/` and `manifest.json` (file, cause, style, seed, ranks). Every byte of
every log is what the program and torch printed (stdout and stderr interleaved, as CI captures
them); a few logs are stored gzipped, as CI artifacts often are. Nothing here runs at test time:
the tests read the committed logs.

Two sets: `corpus` (this directory) is what detectors and weights are tuned and tested on;
`heldout` (`heldout/`) has other seeds and other logging styles per fault and is only ever
measured (`bench/triage_accuracy.py`), never tuned on, so it shows how far the tuning carries.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = {"corpus": HERE, "heldout": HERE / "heldout"}
STYLES = ("kv", "colon", "epoch", "json", "hf", "logging", "lightning", "tqdm")

# Faults seeded into the single-process program, three logging styles each.
FAULTS = (
    "missing-zero-grad",
    "lr-too-high",
    "missing-epsilon",
    "inplace-activation",
    "no-grad-training",
    "detached-graph",
    "missing-backward",
    "missing-optimizer-step",
    "scheduler-step-misaligned",
    "loss-tensor-leak",
    "double-softmax",
    "wrong-softmax-dim",
    "no-shuffle",
    "missing-eval-mode",
    "missing-train-mode",
    "backward-twice",
    "non-scalar-backward",
    "shape-mismatch",
    "broadcast-shape",
    "label-out-of-range",
    "dtype-mismatch",
    "frozen-parameters",
    "cuda-oom",
    "graph-break",
    "dataloader-bottleneck",
    "wrong-loss-reduction",
    "missing-no-grad-eval",
)
# Faults that need two ranks: run under torchrun, with and without its per-rank output prefix.
DISTRIBUTED = ("ddp-unused-parameters", "rank-skip")


def runs(which: str = "corpus") -> list[dict]:
    """The runs of one set: fault, logging style, seed, ranks."""
    out: list[dict] = []
    if which == "heldout":
        # seeds the corpus never used, and for each fault the styles it was not tuned on
        for n, fault in enumerate(FAULTS):
            for k in (3, 4):
                style = STYLES[(n + 3 * k) % len(STYLES)]
                out.append({"fault": fault, "style": style, "seed": 100 + k, "ranks": 1})
        for k, style in enumerate(("colon", "hf", "tqdm", "json", "epoch", "logging")):
            out.append({"fault": "healthy", "style": style, "seed": 120 + k, "ranks": 1})
        for fault in DISTRIBUTED:
            for k, style in enumerate(("json", "kv")):
                out.append({"fault": fault, "style": style, "seed": 100 + k, "ranks": 2, "tee": k == 1})
        return out
    for n, fault in enumerate(FAULTS):
        for k in range(3):
            style = STYLES[(n + 3 * k) % len(STYLES)]
            out.append({"fault": fault, "style": style, "seed": k, "ranks": 1})
    for k, style in enumerate(STYLES):
        for seed in (0, 1):
            out.append({"fault": "healthy", "style": style, "seed": 10 * seed + k, "ranks": 1})
    out.append({"fault": "healthy-timed", "style": "kv", "seed": 3, "ranks": 1})
    for fault in DISTRIBUTED + ("healthy-ddp",):
        for k, style in enumerate(("kv", "json")):
            out.append({"fault": fault, "style": style, "seed": k, "ranks": 2, "tee": k == 0})
    return out


def name(run: dict) -> str:
    return f"{run['fault']}__{run['style']}__s{run['seed']}.log"


def execute(run: dict, logs: Path) -> dict:
    args = ["train.py", "--fault", run["fault"], "--style", run["style"], "--seed", str(run["seed"])]
    if run["fault"] == "dataloader-bottleneck":
        args += ["--epochs", "2"]
    if run["ranks"] > 1:
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(
                29500 + run["seed"] + 10 * DISTRIBUTED.index(run["fault"])
                if run["fault"] in DISTRIBUTED
                else 29590 + run["seed"]
            ),
        ]
        if run.get("tee"):
            launcher += ["--tee", "3"]
        cmd = launcher + args
    else:
        cmd = [sys.executable] + args
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    if run["fault"] == "graph-break":
        env["TORCH_LOGS"] = "recompiles"
    proc = subprocess.run(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    data = proc.stdout
    path = logs / name(run)
    if run["fault"] == "healthy" and run["style"] in ("kv", "lightning") and run["seed"] < 10:
        path = path.with_suffix(".log.gz")
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    cause = None if run["fault"].startswith("healthy") else run["fault"]
    return {
        "file": path.name,
        "cause": cause,
        "style": run["style"],
        "seed": run["seed"],
        "ranks": run["ranks"],
        "exit_code": proc.returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="corpus", dest="which")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="regenerate only runs whose fault contains this text")
    parser.add_argument("--out", type=Path, help="write logs/ and manifest.json here instead (a scratch copy)")
    a = parser.parse_args()
    root = a.out or SETS[a.which]
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    todo = [r for r in runs(a.which) if not a.only or a.only in r["fault"]]
    with ThreadPoolExecutor(a.jobs) as pool:
        done = list(pool.map(lambda r: execute(r, logs), todo))
    manifest_path = root / "manifest.json"
    old = json.loads(manifest_path.read_text()) if a.only and manifest_path.exists() else []
    keep = {m["file"]: m for m in old}
    keep.update({m["file"]: m for m in done})
    manifest = sorted(keep.values(), key=lambda m: m["file"])
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(done)} logs written to {logs}")


if __name__ == "__main__":
    main()
