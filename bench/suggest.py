"""`injector suggest` on the bundled demo and the fixture projects: how many survivors get a
verified guard, and whether the written guards pass on the unmutated code, fast.

    python bench/suggest.py [--projects demo,campaign_project,...]

For each project: a copy, a campaign (`injector run --no-cache`), then `injector suggest
--report ... --write <copy>/tests/trainwreck_guards`, each a new process. The written tests are
then run on the unmutated copy with pytest, and each one's time is read from its JUnit XML.

Equivalent survivors (listed in EQUIVALENT with the reason) are left out of the ratio; a
`device-mismatch` mutant on a CPU-only run counts, since the device-mismatch check sees a
dropped `.to(device)` without a GPU. It prints per project: survivors, equivalent ones,
verified, the ratio over the non-equivalent, the written tests passing on the unmutated code,
and each one's wall and CPU time (injector/suggest/timing.py: own process plus waited-for
children; torch's one-off lazy start-up is paid before the first test); then the totals.
Goal: ratio >= 80%, every written test passes, each under 2 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PROJECTS = {
    "demo": HERE / "injector" / "demo",
    "campaign_project": HERE / "tests" / "injector" / "campaign_project",
    "suggest_project": HERE / "tests" / "injector" / "suggest_project",
    **{
        name: HERE / "tests" / "injector" / "differential" / name
        for name in (
            "command_guard",
            "fork_ddp",
            "nested_factory",
            "shared_state",
            "spawn_ddp",
            "subprocess_script",
            "torchrun_test",
        )
    },
}
# mutant id -> why no test can tell it from the original
EQUIVALENT = {
    "f77efa8687c1": "demo LayerNorm `x *= self.weight`: the division's backward saves its inputs, "
    "not its output, so the in-place multiply leaves every gradient as it was",
}
WRITTEN = "tests/trainwreck_guards"


def injector(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "injector.cli", *args]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode not in (0, 3):
        sys.exit(f"bench: injector {' '.join(args)} exited {run.returncode}:\n{run.stderr[-3000:]}")
    return run


def written_times(project: Path) -> tuple[int, int, list[dict]]:
    """Run the written guards on the unmutated project: (passed, total, per-test times), each
    time with the test's wall and CPU seconds (its own process and the children it waited for:
    injector/suggest/timing.py)."""
    folder = project / WRITTEN
    if not folder.is_dir():
        return 0, 0, []
    xml = project.parent / "written.xml"
    times = project.parent / "written_times.json"
    env = dict(os.environ, TRAINWRECK_TEST_TIMES=str(times))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "injector.suggest.timing",
            f"--junitxml={xml}",
            WRITTEN,
        ],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
    )
    if not xml.exists():
        sys.exit(
            f"bench: pytest on the written guards of {project} gave no report:\n{(run.stdout + run.stderr)[-3000:]}"
        )
    cases = list(ET.parse(xml).iter("testcase"))
    passed = sum(1 for case in cases if not any(c.tag in ("failure", "error", "skipped") for c in case))
    measured = json.loads(times.read_text())["tests"] if times.exists() else []
    return passed, len(cases), measured


def bench(name: str, source: Path, scratch: Path) -> dict:
    project = scratch / name / "project"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns("__pycache__", ".trainwreck-cache"))
    (project / ".git").mkdir()  # its own repository top: no .gitignore above applies
    report = scratch / name / "report.json"
    started = time.perf_counter()
    injector("run", str(project), "--no-cache", "--json", str(report))
    campaign = time.perf_counter() - started
    suggested = scratch / name / "suggested.json"
    started = time.perf_counter()
    injector(
        "suggest", str(project), "--report", str(report), "--write", str(project / WRITTEN), "--json", str(suggested)
    )
    seconds = time.perf_counter() - started
    data = json.loads(suggested.read_text()) if suggested.exists() else json.loads(report.read_text())
    survivors = [o for o in data["outcomes"] if o["status"] == "survived"]
    equivalent = [o for o in survivors if o["mutant_id"] in EQUIVALENT]
    verified = [o for o in survivors if (o.get("suggestion") or {}).get("verified")]
    passed, total, times = written_times(project)
    return {
        "project": name,
        "survivors": len(survivors),
        "equivalent": len(equivalent),
        "verified": len(verified),
        "written_passed": passed,
        "written": total,
        "times": times,
        "slowest": max((t["wall"] for t in times), default=0.0),
        "slowest_cpu": max((t["cpu"] + t["children_cpu"] for t in times), default=0.0),
        "campaign_s": campaign,
        "suggest_s": seconds,
        "missed": [
            f"{o['mutant_id']} {o['operator']}: {(o.get('suggestion') or {}).get('note', '')}"
            for o in survivors
            if o not in verified and o not in equivalent
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", default=",".join(PROJECTS), help="comma-separated names")
    args = parser.parse_args()
    names = [n.strip() for n in args.projects.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        sys.exit(f"bench: unknown project {unknown[0]!r}; known: {', '.join(PROJECTS)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainwreck-bench-suggest-") as folder:
        for name in names:
            row = bench(name, PROJECTS[name], Path(folder))
            rows.append(row)
            real = row["survivors"] - row["equivalent"]
            ratio = f"{100 * row['verified'] / real:.0f}%" if real else "-"
            print(
                f"{name:18} survivors {row['survivors']:2}  equivalent {row['equivalent']}  "
                f"verified {row['verified']:2}/{real:<2} {ratio:>4}  written pass "
                f"{row['written_passed']}/{row['written']}  slowest {row['slowest']:.2f} s wall, "
                f"{row['slowest_cpu']:.2f} s CPU  (campaign {row['campaign_s']:.0f} s, suggest {row['suggest_s']:.0f} s)",
                flush=True,
            )
            for t in row["times"]:
                print(
                    f"{'':18} {t['wall']:5.2f} s wall  {t['cpu']:5.2f} s CPU (+{t['children_cpu']:.2f} s in "
                    f"child processes)  {t['test'].rsplit('/', 1)[-1]}",
                    flush=True,
                )
            for line in row["missed"]:
                print(f"{'':18} not verified: {line[:150]}", flush=True)
    real = sum(r["survivors"] - r["equivalent"] for r in rows)
    verified = sum(r["verified"] for r in rows)
    print(
        f"{'total':18} survivors {sum(r['survivors'] for r in rows)}  equivalent "
        f"{sum(r['equivalent'] for r in rows)}  verified {verified}/{real} "
        f"({100 * verified / real if real else 0:.0f}%)  written pass "
        f"{sum(r['written_passed'] for r in rows)}/{sum(r['written'] for r in rows)}  slowest "
        f"{max((r['slowest'] for r in rows), default=0):.2f} s wall, "
        f"{max((r['slowest_cpu'] for r in rows), default=0):.2f} s CPU"
    )


if __name__ == "__main__":
    main()
