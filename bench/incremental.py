"""Incremental runs on the bundled demo: a first campaign, a re-run on the unchanged tree, and
re-runs after a one-line change to training code and to a guard test.

    python bench/incremental.py [--jobs 1] [--operators ID,...]

Each campaign is `injector run` in a new process, on a copy of the demo (the cache lives in
the copy's `.trainwreck-cache/`), timed from start to exit. After each change the same tree is
also run with `--no-cache`: every outcome of the cached re-run must equal it (status and the
test that killed), or the bench fails. It prints each run's wall time, its ratio to the first
run, and how many mutants ran (the rest came from the cache). The goal: the unchanged re-run
under 0.1x of the first run.
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

DEMO = Path(__file__).resolve().parent.parent / "injector" / "demo"
# (file, line as it is, line after): behaviour-preserving edits a developer might make.
SOURCE_CHANGE = (
    "demo_train/model.py",
    "        return F.softmax(logits, dim=-1)\n",
    "        return F.softmax(logits, dim=1)\n",
)
TEST_CHANGE = ("tests/test_model.py", None, None)  # the first `assert` line gets a message


def campaign(project: Path, out: Path, jobs: int, operators: str, *extra: str) -> tuple[float, dict]:
    command = [
        sys.executable,
        "-m",
        "injector.cli",
        "run",
        str(project),
        "--jobs",
        str(jobs),
        "--json",
        str(out),
        *extra,
    ]
    if operators:
        command += ["--operators", operators]
    started = time.perf_counter()
    run = subprocess.run(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        sys.exit(f"bench: {' '.join(command[2:])} exited {run.returncode}:\n{run.stderr[-3000:]}")
    return seconds, json.loads(out.read_text())


def differences(cached: dict, fresh: dict) -> list[str]:
    """Mutants whose status differs, and (apart) kills credited to another test: with tests
    run fastest first by their baseline times, two runs may order them differently."""
    fresh_by_id = {o["mutant_id"]: o for o in fresh["outcomes"]}
    found = []
    for outcome in cached["outcomes"]:
        other = fresh_by_id.get(outcome["mutant_id"])
        where = f"{outcome['operator']} {outcome['file']}:{outcome['line']}"
        if other is None or other["status"] != outcome["status"]:
            found.append(
                f"{where}: {outcome['status']}{' (cached)' if outcome['cached'] else ''} "
                f"vs {other['status'] if other else 'absent'} without the cache"
            )
        elif outcome["test"] != other["test"]:
            print(f"    note: {where} killed by {outcome['test']} vs {other['test']} without the cache")
    return found


def edit(project: Path, file: str, old: str | None, new: str | None) -> str:
    path = project / file
    text = path.read_text()
    if old is None:  # the first assert: give it a message
        line = next(line for line in text.splitlines(keepends=True) if line.lstrip().startswith("assert "))
        old, new = line, line.rstrip("\n") + ', "see the guard test"\n'
    if text.count(old) != 1:
        sys.exit(f"bench: the line to change is not in {file} once: {old!r}")
    path.write_text(text.replace(old, new))
    return f"{file}: {old.strip()} -> {new.strip()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--operators", default="", help="comma-separated fault ids (default: all)")
    args = parser.parse_args()
    rows = []
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        project = work / "demo"
        shutil.copytree(
            DEMO, project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".trainwreck-cache")
        )
        first_seconds, first = campaign(project, work / "first.json", args.jobs, args.operators)
        total = len(first["outcomes"])
        rows.append(("first run", first_seconds, total - first["cached"], first))
        seconds, again = campaign(project, work / "again.json", args.jobs, args.operators)
        rows.append(("re-run, unchanged", seconds, total - again["cached"], again))
        failures += differences(again, first)
        for label, change in (
            ("re-run, one line of training code", SOURCE_CHANGE),
            ("re-run, one line of a guard test", TEST_CHANGE),
        ):
            what = edit(project, *change)
            seconds, cached = campaign(project, work / "cached.json", args.jobs, args.operators)
            fresh_seconds, fresh = campaign(project, work / "fresh.json", args.jobs, args.operators, "--no-cache")
            rows.append((f"{label} ({what})", seconds, len(cached["outcomes"]) - cached["cached"], cached))
            rows.append(("  the same tree with --no-cache", fresh_seconds, len(fresh["outcomes"]), fresh))
            failures += differences(cached, fresh)

    print(f"{total} mutants of the demo project, --jobs {args.jobs}")
    for label, seconds, ran, _ in rows:
        print(
            f"{label}\n    {seconds:7.2f} s  {seconds / first_seconds:6.3f}x of the first run  "
            f"{ran:3d} of {total} mutants run"
        )
    unchanged = rows[1][1] / first_seconds
    print(f"unchanged re-run: {unchanged:.3f}x of the first run (goal: under 0.1x)")
    if failures:
        sys.exit("bench: cached outcomes differ from a --no-cache run:\n  " + "\n  ".join(failures))
    print("every cached re-run gave the statuses of a --no-cache run of the same tree")


if __name__ == "__main__":
    main()
