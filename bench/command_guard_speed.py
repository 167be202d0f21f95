"""A smoke-training command guard, warm against fresh, on the same mutants.

    python bench/command_guard_speed.py [--guard "python -m demo_train.train --epochs 1"]
                                        [--operators ID,...] [--jobs 1] [--project DIR]

Runs `injector run` twice on the project (default: the bundled demo) with a guard that trains
for a moment and exits non-zero when training looks wrong:

    fresh: `--fresh`, a new interpreter per mutant (interpreter start-up and `import torch`
           paid by every mutant), as a command guard ran before;
    warm:  the default, one interpreter per job slot that has imported what the script
           imports; each mutant runs the script in a forked child via runpy.

It checks that both give every mutant the same outcome, then prints both wall times, the
ratio, and the time per covered mutant.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parent.parent / "injector" / "demo"


def campaign(project: Path, guard: str, operators: str, jobs: int, fresh: bool, out: Path) -> tuple[float, dict]:
    command = [
        sys.executable,
        "-m",
        "injector.cli",
        "run",
        str(project),
        "--guard",
        guard,
        "--jobs",
        str(jobs),
        "--json",
        str(out),
        "--no-cache",
    ]
    if operators:
        command += ["--operators", operators]
    if fresh:
        command.append("--fresh")
    started = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=DEMO)
    parser.add_argument("--guard", default="python -m demo_train.train --epochs 1")
    parser.add_argument("--operators", default="")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        fresh_time, fresh = campaign(
            args.project, args.guard, args.operators, args.jobs, True, Path(work) / "fresh.json"
        )
        warm_time, warm = campaign(args.project, args.guard, args.operators, args.jobs, False, Path(work) / "warm.json")
    caught = {"killed": "caught", "timeout": "caught"}
    fresh_outcomes = {o["mutant_id"]: caught.get(o["status"], o["status"]) for o in fresh["outcomes"]}
    warm_outcomes = {o["mutant_id"]: caught.get(o["status"], o["status"]) for o in warm["outcomes"]}
    differ = sorted(m for m in fresh_outcomes if fresh_outcomes[m] != warm_outcomes.get(m))
    covered = sum(1 for status in warm_outcomes.values() if status != "no_coverage")
    print(f"guard: {args.guard}   mutants: {len(warm_outcomes)} ({covered} covered)   jobs: {args.jobs}")
    print(
        f"fresh (new interpreter per mutant): {fresh_time:7.1f} s   "
        f"{fresh_time / max(covered, 1):.2f} s per covered mutant"
    )
    print(
        f"warm  (forked, imports paid once):  {warm_time:7.1f} s   "
        f"{warm_time / max(covered, 1):.2f} s per covered mutant"
    )
    print(
        f"warm is {fresh_time / warm_time:.2f}x faster; outcomes agree on "
        f"{len(fresh_outcomes) - len(differ)} of {len(fresh_outcomes)} mutants"
    )
    for mutant_id in differ:
        print(f"  differs: {mutant_id} fresh {fresh_outcomes[mutant_id]} warm {warm_outcomes.get(mutant_id)}")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
