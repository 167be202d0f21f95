"""What the training probe (trainwreck.probe) costs a training loop: the same loop timed with and
without it, in fresh processes, alternating.

    python bench/probe_overhead.py [--repeats 5] [--steps 300] [--width 256] [--depth 8]

The loop: an MLP of `depth` Linear+ReLU layers of `width` units (plus LayerNorm and dropout:
modules the forward pre-hook visits), AdamW, zero_grad/backward/clip/step on random batches of
64, one thread. Each process imports torch, warms up for 20 steps, then times `steps` steps; the
probe run installs the probe before torch is imported, as the sitecustomize does under
`triage watch` and `injector run --calibrate`. Prints each pair and the median of the per-pair
ratios (probe / bare): small layers on a CPU are the worst case for a per-call cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
steps, width, depth, probed = (int(v) for v in sys.argv[1:5])
if probed:
    from trainwreck import probe
    probe.install(Path(tempfile.mkdtemp()))
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
layers = []
for _ in range(depth):
    layers += [torch.nn.Linear(width, width), torch.nn.LayerNorm(width), torch.nn.ReLU(), torch.nn.Dropout(0.1)]
model = torch.nn.Sequential(torch.nn.Linear(32, width), *layers, torch.nn.Linear(width, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))

def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()

for _ in range(20):
    step()
started = time.perf_counter()
for _ in range(steps):
    step()
print(json.dumps({"seconds": time.perf_counter() - started}))
"""


def timed(steps: int, width: int, depth: int, probed: bool) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps), str(width), str(depth), str(int(probed))],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=8)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    ratios = []
    for repeat in range(args.repeats):
        bare = timed(args.steps, args.width, args.depth, probed=False)
        probed = timed(args.steps, args.width, args.depth, probed=True)
        ratios.append(probed / bare)
        per_step = 1000 * bare / args.steps
        print(
            f"pair {repeat + 1}: bare {bare:.3f} s ({per_step:.2f} ms/step), probe {probed:.3f} s, ratio {probed / bare:.3f}"
        )
    modules = 2 + 4 * args.depth
    print(
        f"median ratio probe/bare: {statistics.median(ratios):.3f} over {args.repeats} pairs "
        f"({args.steps} steps, {modules} modules a forward)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
