"""Campaign verdicts against the naive truth, one fixture project per execution model: the
helpers of test_differential_ddp.py and test_differential_processes.py (two files, so that
`pytest -n 2 --dist loadfile` can run them side by side).

For every mutant of every fixture, the naive truth is what a user gets by hand: copy the
project, apply the mutant's change, run the guard afresh (pytest in collection order, or the
guard command). A campaign's outcome must agree with it: killed or timeout where the naive
run fails or hangs, survived or no_coverage where it passes (no_coverage only where no guard
test runs the mutated line). Every fixture is judged on `--jobs 2`: two workers at once, each
running several mutants one after the other, so what one mutant leaves behind (a process, a
port, a file, module state) and what runs beside it both have their chance to change a
verdict. The fixtures where a single worker's order matters most (shared state, code built at
import) are judged on `--jobs 1` too, and so is command_guard, with a GPU pretended. The project, and the file a
symlinked source points to, are byte-identical afterwards, and no process is left behind.

The fixtures (tests/injector/differential/): DDP ranks started with fork, with
`mp.spawn`, and under torchrun from a test; a test that runs `python train.py`; a smoke-training
command guard run as `python -m`; tests that share module-level state (fastest-first order fails
on the unmutated code); a step function built by a factory with branches the CPU never takes;
a source file that is a symlink to a file outside the project. Each has several mutants per file.

The naive runs cost a fresh Python each (torch's import, then torch._dynamo's at the first
optimizer: about 5 s of CPU before the guard's own work), about 370 s of CPU for all the
fixtures, half of what these tests cost. So their verdicts are recorded in
differential/naive_truth.json, each case under a key: every byte of the laid-out project, every
mutant's id and mutated text and the guard, beside the machine's torch and Python versions,
platform and GPU count. A record is used only where both are those of what would run now;
anything else runs the naive truth afresh, slower but right, and where the fixture or the
operators' mutants changed, test_the_recorded_naive_truth_is_current asks for a new record. Even
a current record has one mutant, of its rarer verdict, run by hand again, which must agree with
it: a record is a shortcut to the same runs, checked each time, never a substitute for them. Record with
`python tests/injector/differential_truth.py --record [CASE ...]` (about three minutes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

from injector import config
from injector.campaign import gpu_count  # bound now: a test may pretend a GPU in the module
from injector.cli import main
from injector.generate import mutants_for_source
from injector.operators import select

FIXTURES = Path(__file__).parent / "differential"
RECORD = FIXTURES / "naive_truth.json"
# the fixtures judged on this CPU (cuda_amp's truth is a GPU's, run afresh where one is)
RECORDED_CASES = (
    "subprocess_script",
    "command_guard",
    "shared_state",
    "nested_factory",
    "symlinked",
    "fork_ddp",
    "spawn_ddp",
    "torchrun_test",
)
NAIVE_TIMEOUT = 90
CAUGHT, PASSED = "caught", "passed"
_naive_cache: dict[str, dict[str, str]] = {}
# (case, jobs) -> (project, report, markdown) of the campaign the differential test ran, for the
# tests below that read more of that same campaign's report (run again when selected alone)
_campaigns: dict[tuple[str, int], tuple[Path, dict, str]] = {}


def digest(*roots: Path) -> dict[str, str]:
    found = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in paths:
            # the outcome cache is the one folder a campaign writes in the project
            if path.is_file() and "__pycache__" not in path.parts and ".trainwreck-cache" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def lay_out(case: str, base: Path) -> tuple[Path, list[Path]]:
    """The fixture as a user has it; for `symlinked`, trainer/loop.py links outside the project."""
    project = base / case
    shutil.copytree(FIXTURES / case, project, ignore=shutil.ignore_patterns("__pycache__"))
    watched = [project]
    if case == "symlinked":
        outside = base / "elsewhere"
        outside.mkdir()
        (project / "shared_loop.py").rename(outside / "shared_loop.py")
        (project / "trainer" / "loop.py").symlink_to(os.path.relpath(outside / "shared_loop.py", project / "trainer"))
        watched.append(outside)
    return project, watched


def fixture_mutants(project: Path):
    settings = config.load(project)
    operators = select(list(settings.operators), [])
    found = []
    for path in settings.paths:
        target = project / path
        files = [target] if target.is_file() else sorted(p for p in target.rglob("*.py"))
        for file in files:
            relative = file.relative_to(project).as_posix()
            found.extend(mutants_for_source(file.read_text(), relative, operators))
    return found, settings.guard or "python -m pytest"


def naive_outcome(project: Path, mutant, guard: str) -> str:
    """Apply the mutant by hand to a fresh copy and run the guard afresh."""
    with tempfile.TemporaryDirectory(prefix="naive-") as folder:
        copy = Path(folder) / "project"
        shutil.copytree(project, copy, symlinks=False)  # a linked source becomes the user's own edit
        target = copy / mutant.file
        target.write_text(mutant.apply(target.read_text()))
        argv = shlex.split(guard)
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        if argv[1:3] == ["-m", "pytest"]:
            argv += ["-q", "-p", "no:cacheprovider"]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            run = subprocess.run(
                argv, cwd=copy, capture_output=True, timeout=NAIVE_TIMEOUT, env=env, start_new_session=True
            )
        except subprocess.TimeoutExpired:
            return CAUGHT
        return CAUGHT if run.returncode != 0 else PASSED


def truth_key(project: Path, mutants, guard: str) -> str:
    """What of the project a naive run's verdict can depend on, hashed: its bytes (a linked
    source read through its link), each mutant's mutated text and the guard."""
    key = hashlib.sha256()
    for path in sorted(project.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            key.update(path.relative_to(project).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for mutant in sorted(mutants, key=lambda m: m.id):
        mutated = mutant.apply((project / mutant.file).read_text())
        key.update(f"{mutant.id} {mutant.file}\0".encode() + mutated.encode() + b"\0")
    key.update(guard.encode())
    return key.hexdigest()


def machine() -> str:
    """What of the machine a naive verdict can depend on: a record made on another one (another
    torch or Python, a GPU) is not used there, and is not stale either."""
    return f"torch {version('torch')}, Python {'.'.join(platform.python_version_tuple()[:2])}, {sys.platform}, {gpu_count()} GPU"


def recorded() -> dict[str, dict]:
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


def run_by_hand(project: Path, mutants, guard: str) -> dict[str, str]:
    with ThreadPoolExecutor(max(2, min(8, (os.cpu_count() or 2) // 2))) as pool:
        verdicts = pool.map(lambda m: naive_outcome(project, m, guard), mutants)
        return {m.id: verdict for m, verdict in zip(mutants, verdicts, strict=True)}


def spot_checks(truth: dict[str, str]) -> list[str]:
    """The mutant a recorded truth is checked on afresh: the first (by id) of its rarer verdict,
    the one a change of machine or environment is likeliest to turn."""
    verdicts = sorted(set(truth.values()), key=lambda v: (list(truth.values()).count(v), v))
    return [min(i for i, v in truth.items() if v == verdicts[0])]


def naive_truth(case: str, project: Path) -> dict[str, str]:
    """Every mutant's verdict by hand: from the record where its key is current (after running
    one mutant of each verdict afresh, which must agree), else all run afresh."""
    if case not in _naive_cache:
        mutants, guard = fixture_mutants(project)
        entry = recorded().get(case)
        if entry and entry["machine"] == machine() and entry["key"] == truth_key(project, mutants, guard):
            truth = entry["verdicts"]
            checked = spot_checks(truth)
            again = run_by_hand(project, [m for m in mutants if m.id in checked], guard)
            assert again == {i: truth[i] for i in checked}, (
                f"{case}: the recorded naive truth disagrees with running these mutants by hand "
                f"again: recorded {[truth[i] for i in checked]}, now {[again[i] for i in checked]}"
            )
            _naive_cache[case] = truth
        else:
            _naive_cache[case] = run_by_hand(project, mutants, guard)
    return _naive_cache[case]


def stale_records() -> list[str]:
    """The recorded cases whose key is no longer that of the fixture and the operators' mutants
    (a record of another machine is merely not used: the naive runs are made afresh there)."""
    stale = []
    record = recorded()
    with tempfile.TemporaryDirectory(prefix="keys-") as folder:
        for case in RECORDED_CASES:
            project, _ = lay_out(case, Path(folder))
            mutants, guard = fixture_mutants(project)
            if case not in record or record[case]["key"] != truth_key(project, mutants, guard):
                stale.append(case)
    return stale


def record(cases: list[str]) -> None:
    """Run the naive truth of these cases afresh and write it to the record."""
    entries = recorded()
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="record-") as folder:
            project, _ = lay_out(case, Path(folder))
            mutants, guard = fixture_mutants(project)
            verdicts = run_by_hand(project, mutants, guard)
            entries[case] = {
                "key": truth_key(project, mutants, guard),
                "machine": machine(),
                "verdicts": dict(sorted(verdicts.items())),
            }
            print(f"{case}: {len(verdicts)} mutants, {list(verdicts.values()).count(CAUGHT)} caught by hand")
    RECORD.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")


def leftovers() -> list[int]:
    """Processes still working in this test process's scratch copies."""
    prefix = os.path.join(os.path.realpath(tempfile.gettempdir()), f"trainwreck-{os.getpid()}-")
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(entry / "cwd").startswith(prefix):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def check_case(case: str, jobs: int, tmp_path: Path, capsys, *options: str) -> dict:
    """A campaign on the fixture agrees with the naive truth, mutant by mutant, and leaves the
    project as it was and no process or scratch copy behind. Its report."""
    project, watched = lay_out(case, tmp_path)
    truth = naive_truth(case, project)
    before = digest(*watched)
    report_path, markdown = tmp_path / "report.json", tmp_path / "report.md"
    code = main(
        ["run", str(project), "--jobs", str(jobs), "--json", str(report_path), "--markdown", str(markdown), *options]
    )
    assert code == 0, capsys.readouterr().err[-2000:]
    report = json.loads(report_path.read_text())
    if not options:
        _campaigns[case, jobs] = (project, report, markdown.read_text())
    outcomes = {o["mutant_id"]: o for o in report["outcomes"]}

    assert set(outcomes) == set(truth), "the campaign and the naive run saw different mutants"
    disagreements = []
    for mutant_id, expected in truth.items():
        outcome = outcomes[mutant_id]
        got = {"killed": CAUGHT, "timeout": CAUGHT, "survived": PASSED, "no_coverage": PASSED}.get(outcome["status"])
        if got != expected:
            disagreements.append(
                f"{outcome['file']}:{outcome['line']} {outcome['operator']}: campaign "
                f"{outcome['status']} ({outcome['message']}), by hand {expected}"
            )
    assert not disagreements, "\n".join(disagreements)
    assert len(truth) >= 2 and CAUGHT in truth.values()
    assert digest(*watched) == before
    assert leftovers() == []
    assert not [d for d in Path(tempfile.gettempdir()).glob(f"trainwreck-{os.getpid()}-*")]
    return report


def campaign(case: str, tmp_path: Path) -> tuple[Path, dict, str]:
    """The `--jobs 1` campaign on a fixture: the one the differential test ran, else a new one."""
    if (case, 1) not in _campaigns:
        project, _ = lay_out(case, tmp_path)
        report_path, markdown = tmp_path / "report.json", tmp_path / "report.md"
        assert main(["run", str(project), "--json", str(report_path), "--markdown", str(markdown)]) == 0
        _campaigns[case, 1] = (project, json.loads(report_path.read_text()), markdown.read_text())
    return _campaigns[case, 1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Record the naive truth of the differential fixtures.")
    parser.add_argument("--record", nargs="*", metavar="CASE", required=True, help="the cases (all by default)")
    cases = parser.parse_args().record or list(RECORDED_CASES)
    unknown = sorted(set(cases) - set(RECORDED_CASES))
    if unknown:
        parser.error(f"no recorded fixture called {', '.join(unknown)}")
    record(cases)
