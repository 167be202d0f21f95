"""The campaign against the naive way, on the same mutants of the bundled demo.

    python bench/campaign_speed.py [--operators ID,...] [--jobs 1]

Naive: for every mutant, a fresh copy of the project with the mutant written in, and a
fresh `python -m pytest` running every guard test. trainwreck: `injector run --jobs N`.
It checks that both ways catch the same mutants (killed, timeout or error against a failing
naive run; survived or no coverage against a passing one), then prints the wall time of
each, the ratio, and the campaign's per-mutant overhead: its wall time minus the time the
guard tests actually ran (baseline and mutants), as a share of the campaign's time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from injector import config, discovery
from injector.cli import DEMO
from injector.generate import mutants_for_files
from injector.operators import select

NAIVE_TIMEOUT = 300


def naive(mutants, root: Path, sources: dict[str, str], work: Path) -> dict[str, str]:
    caught = {}
    for index, mutant in enumerate(mutants, 1):
        copy = work / f"naive-{mutant.id}"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (copy / mutant.file).write_text(mutant.apply(sources[mutant.file]))
        try:
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                cwd=copy,
                capture_output=True,
                timeout=NAIVE_TIMEOUT,
            )
            caught[mutant.id] = "caught" if run.returncode else "missed"
        except subprocess.TimeoutExpired:
            caught[mutant.id] = "caught"
        shutil.rmtree(copy)
        print(f"  naive {index}/{len(mutants)}: {mutant.operator} {caught[mutant.id]}", file=sys.stderr)
    return caught


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", default="", help="comma-separated fault ids (default: all)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    operators = [o for o in args.operators.split(",") if o]
    settings = config.load(DEMO)
    files, _ = discovery.collect([DEMO / p for p in settings.paths], DEMO)
    sources = {f.relative: f.text for f in files}
    mutants = mutants_for_files(files, select(operators)).mutants
    print(f"{len(mutants)} mutants of the demo project")

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        report_path = work / "report.json"
        started = time.perf_counter()
        command = [
            sys.executable,
            "-m",
            "injector.cli",
            "run",
            str(DEMO),
            "--jobs",
            str(args.jobs),
            "--json",
            str(report_path),
            "--no-cache",
        ]
        if operators:
            command += ["--operators", ",".join(operators)]
        subprocess.run(command, check=True)
        campaign_seconds = time.perf_counter() - started
        report = json.loads(report_path.read_text())

        started = time.perf_counter()
        expected = naive(mutants, DEMO, sources, work)
        naive_seconds = time.perf_counter() - started

    got = {
        o["mutant_id"]: "caught" if o["status"] in {"killed", "timeout", "error"} else "missed"
        for o in report["outcomes"]
    }
    disagree = sorted(m for m in expected if expected[m] != got.get(m))
    guard = report["baseline"]["duration"] * report["baseline"]["repeat"] + sum(
        o["guard_seconds"] for o in report["outcomes"]
    )
    overhead = campaign_seconds - guard
    print(f"naive (fresh interpreter, copy and all tests per mutant): {naive_seconds:.1f} s")
    print(f"injector run --jobs {args.jobs}: {campaign_seconds:.1f} s ({naive_seconds / campaign_seconds:.1f}x faster)")
    print(
        f"guard tests ran {guard:.1f} s of it; overhead {overhead:.1f} s = "
        f"{overhead / campaign_seconds:.0%} of the campaign "
        f"({overhead / max(1, len(mutants)):.2f} s per mutant)"
    )
    print(f"outcomes agree on {len(expected) - len(disagree)} of {len(expected)} mutants")
    for mutant_id in disagree:
        print(f"  disagree: {mutant_id} naive={expected[mutant_id]} campaign={got.get(mutant_id)}")
    sys.exit(1 if disagree else 0)


if __name__ == "__main__":
    main()
