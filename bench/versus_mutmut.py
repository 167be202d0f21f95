"""trainwreck's campaign against mutmut 3 on the bundled demo, with the same guard tests.

    python bench/versus_mutmut.py --mutmut /path/to/venv-with-mutmut/bin/mutmut [--jobs 2]

mutmut makes its own generic mutants (operators, literals, arguments) and trainwreck makes
catalogued training faults, so the two sets differ; what is compared is the cost per mutant
on the same code and tests: overall mutants per second, and the mean time per mutant inside
each function both tools mutate (the training loop, the model's forward, ...), where the
same guard tests run. mutmut is not a dependency: install it in a separate virtualenv
(`pip install mutmut torch==2.13.0 pytest`) and pass its `mutmut` executable.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from injector import config, discovery
from injector.cli import DEMO
from injector.generate import mutants_for_files
from injector.operators import all_operators


def run_mutmut(mutmut: str, jobs: int, work: Path) -> tuple[float, dict[str, list[float]], int]:
    project = work / "mutmut-demo"
    shutil.copytree(DEMO, project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (project / "setup.cfg").write_text("[mutmut]\npaths_to_mutate=demo_train/\ntests_dir=tests/\n")
    started = time.perf_counter()
    subprocess.run(
        [mutmut, "run", "--max-children", str(jobs)],
        cwd=project,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    by_function: dict[str, list[float]] = defaultdict(list)
    count = 0
    for meta in (project / "mutants").rglob("*.meta"):
        data = json.loads(meta.read_text())
        for key, duration in data.get("durations_by_key", {}).items():
            # demo_train.model.xǁSequenceClassifierǁforward__mutmut_3 -> SequenceClassifier.forward
            name = key.rsplit(".", 1)[1].split("__mutmut_")[0].removeprefix("x_").removeprefix("x")
            by_function[".".join(part for part in name.split("ǁ") if part)].append(duration)
        count += len(data.get("exit_code_by_key", {}))
    return seconds, by_function, count


def run_trainwreck(jobs: int, work: Path) -> tuple[float, dict[str, list[float]], int]:
    settings = config.load(DEMO)
    files, _ = discovery.collect([DEMO / p for p in settings.paths], DEMO)
    function_of = {m.id: m.function for m in mutants_for_files(files, all_operators()).mutants}
    report_path = work / "trainwreck.json"
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "injector.cli",
            "run",
            str(DEMO),
            "--jobs",
            str(jobs),
            "--json",
            str(report_path),
            "--no-cache",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    outcomes = json.loads(report_path.read_text())["outcomes"]
    by_function: dict[str, list[float]] = defaultdict(list)
    for outcome in outcomes:
        if outcome["status"] != "no_coverage":
            by_function[function_of[outcome["mutant_id"]] or "<module>"].append(outcome["duration"])
    return seconds, by_function, len(outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutmut", required=True, help="the mutmut executable (in its own venv)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        ours_seconds, ours, ours_count = run_trainwreck(args.jobs, work)
        theirs_seconds, theirs, theirs_count = run_mutmut(args.mutmut, args.jobs, work)
    print(
        f"mutmut:     {theirs_count} mutants in {theirs_seconds:.1f} s = "
        f"{theirs_count / theirs_seconds:.2f} mutants/s (--max-children {args.jobs})"
    )
    print(
        f"trainwreck: {ours_count} mutants in {ours_seconds:.1f} s = "
        f"{ours_count / ours_seconds:.2f} mutants/s (--jobs {args.jobs})"
    )
    print(
        "mean seconds per mutant in the functions both mutate (mutmut: its test time; "
        "trainwreck: its child's whole time):"
    )
    shared = sorted(set(ours) & set(theirs), key=lambda name: -len(theirs[name]))
    for name in shared:
        print(
            f"  {name:40s} mutmut {statistics.mean(theirs[name]):.3f} s ({len(theirs[name])}) | "
            f"trainwreck {statistics.mean(ours[name]):.3f} s ({len(ours[name])})"
        )
    both_theirs = [d for name in shared for d in theirs[name]]
    both_ours = [d for name in shared for d in ours[name]]
    if shared:
        print(
            f"  all shared functions: mutmut {statistics.mean(both_theirs):.3f} s, "
            f"trainwreck {statistics.mean(both_ours):.3f} s per mutant"
        )


if __name__ == "__main__":
    main()
