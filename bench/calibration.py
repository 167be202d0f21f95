"""Triage calibrated on real mutants: `injector run --calibrate` on the demo and the fixture projects.

    python bench/calibration.py [--projects NAME,...] [--jobs N] [--keep DIR]

For each project (the bundled demo, and the small projects under tests/injector/ that the
campaign tests run: one per execution model, pytest guards and a smoke-training command guard)
this runs a whole campaign with `--calibrate --no-cache`, then prints the project's confusion
table (what triage named for each caught mutant's guard output) and the time the campaign and
triage took. The last table pools every project: the headline rate is the share of caught
mutants whose log shows a training symptom (see injector/calibrate.py) that triage named first.

The projects are read, never written: the reports and corpora go to a temporary folder (kept
with --keep, to read the logs or rerun `python bench/triage_accuracy.py --calibration DIR`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "injector"
MORE = ROOT / "tests" / "triage" / "calibration" / "projects"
PROJECTS = {
    "demo": None,  # `injector run --demo`
    "campaign_project": FIXTURES / "campaign_project",
    **{
        path.name: path
        for path in sorted((FIXTURES / "differential").iterdir())
        # `symlinked` gets its link to a file outside the project from its test, at run time
        if (path / "pyproject.toml").is_file() and path.name != "symlinked"
    },
    # shaped like real projects: a library with a Trainer and pytest guards, a smoke command
    "library_trainer": MORE / "library_trainer",
    "smoke_cli": MORE / "smoke_cli",
    # written before any rule was tuned on calibration logs and never tuned on since
    "heldout_denoise": MORE / "heldout_denoise",
}
# Which projects' logs the triage rules were tuned on: the headline is reported per split.
HELD_OUT = frozenset({"heldout_denoise"})


def run_project(name: str, project: Path | None, out: Path, jobs: int) -> tuple[dict | None, float, str]:
    """One campaign with --calibrate: (its report's calibration, seconds, the last stderr line)."""
    report = out / name / "report.json"
    target = ["--demo"] if project is None else [str(project)]
    command = [
        sys.executable,
        "-m",
        "injector.cli",
        "run",
        *target,
        "--calibrate",
        "--no-cache",
        "--jobs",
        str(jobs),
        "--json",
        str(report),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", cwd=out)
    seconds = time.perf_counter() - started
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if not report.is_file():
        return None, seconds, last
    return json.loads(report.read_text()).get("calibration"), seconds, last


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from injector.calibrate import Calibration, table_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", help=f"a comma-separated subset of: {', '.join(PROJECTS)}")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run in parallel per campaign")
    parser.add_argument("--keep", type=Path, help="write the reports and corpora here (kept)")
    args = parser.parse_args()
    names = [n.strip() for n in args.projects.split(",")] if args.projects else list(PROJECTS)
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        parser.error(f"unknown project(s): {', '.join(unknown)}")
    out = args.keep or Path(tempfile.mkdtemp(prefix="trainwreck-calibration-"))
    out.mkdir(parents=True, exist_ok=True)
    pooled = []
    for name in names:
        data, seconds, last = run_project(name, PROJECTS[name], out, args.jobs)
        print(f"\n== {name}: {seconds:.1f} s")
        if data is None:
            print(f"   no report: {last}")
            continue
        calibration = Calibration.from_json(data)
        pooled.extend(calibration.entries)
        print(f"   triage read the logs in {calibration.seconds:.1f} s; corpus {calibration.folder}")
        for line in table_lines(calibration):
            print("   " + line)
    print("\n== every project pooled")
    for line in table_lines(Calibration(tuple(pooled), str(out))):
        print("   " + line)
    if args.keep is None:
        print(f"\n(reports and corpora in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
