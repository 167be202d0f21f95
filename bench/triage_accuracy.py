"""Triage accuracy, set by set: logs nobody here wrote, other programs, our own corpus, healthy runs.

    python bench/triage_accuracy.py [--ci] [--json F] [--misses]
    python bench/triage_accuracy.py --calibration DIR [--calibration DIR ...] [--json F]

Five measurements, reported separately (a run counts as top-k correct when its labelled cause is
among the first k causes `triage explain` reports above the reporting threshold; a healthy run
counts as a false alarm when any cause is reported):

1. real world (`tests/triage/world/`): excerpts quoted from public GitHub issues, each labelled
   with the cause its thread confirmed. Split by source repository into `dev` and `test` and
   later batches, `fresh`, `fresh2`, ... (see tests/triage/world/README.md: each was measured
   once before any change; those first figures, not today's, are the held-out ones).
2. leave-one-program-out (`tests/triage/programs/`): five independent training programs. For
   each program in turn, the reporting threshold is calibrated on the other four (the value
   that maximises top-1 hits minus three times the false alarms) and the fifth is scored with
   it; the table shows each held-out program and the total. (The rules themselves were written
   with all five in view: this measures the calibration, not the rules. The programs written
   after the rules froze, a sixth to a tenth, are scored last, each on its own
   line, with the threshold calibrated on all five.)
3. our corpus (`tests/triage/corpus/` and its held-out set): one generator program, the set the
   first rules were fitted to.
4. the fresh programs again, each run read beside its program's healthy seed-0 run
   (`triage explain --baseline`, as CI would hand it the base branch's last green run), over every
   run and over the runs that failed; the healthy seed-1 runs are its false-alarm check.
5. false alarms on every healthy run of every set, listed.

6. (`--calibration DIR`, alone) a corpus `injector run --calibrate` wrote: each caught mutant's
   guard output, labelled with the fault the injector put in.

Then a confusion table over all faulty runs: for each labelled cause, what was named first
("-": nothing reported). `--ci` adds the corpus figures with the PR diff given, as the triage
workflow runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRIAGE_TESTS = ROOT / "tests" / "triage"
WORLD = TRIAGE_TESTS / "world"
PROGRAMS = TRIAGE_TESTS / "programs"
CORPUS = TRIAGE_TESTS / "corpus"
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
ALARM_COST = 3  # a false alarm on a healthy run costs as much as three missed causes
REFERENCE_SCRIPTS = ("image_classifier.py", "gpt_train.py")


@dataclass
class Run:
    """One triaged log: its label and every cause with its confidence, best first."""

    name: str
    group: str
    cause: str | None
    ranked: list[tuple[str, float]]

    def named(self, threshold: float) -> list[str]:
        return [cid for cid, conf in self.ranked if conf >= threshold]

    def tied(self, threshold: float) -> list[str]:
        """The causes tied first among those named (triage.ties); [] when the first stands alone."""
        from triage.ties import TIE_MARGIN, score_of

        named = [conf for _, conf in self.ranked if conf >= threshold]
        if len(named) < 2:
            return []
        top = score_of(named[0])
        tied = [cid for cid, conf in self.ranked[: len(named)] if top - score_of(conf) <= TIE_MARGIN + 1e-6]
        return tied if len(tied) > 1 else []


@dataclass
class Tally:
    runs: int = 0
    top1: int = 0
    top3: int = 0
    healthy: int = 0
    alarms: int = 0
    tied: int = 0  # faulty runs whose answer is a tie at the top (triage.ties): said as a tie
    tied_top1: int = 0  # of which top-1 was right: counted in top-1 here, but said as a tie
    misses: list[str] = field(default_factory=list)

    def add(self, run: Run, threshold: float) -> None:
        ids = run.named(threshold)
        if run.cause is None:
            self.healthy += 1
            if ids:
                self.alarms += 1
                self.misses.append(f"false alarm  {run.name}: {ids[:3]}")
            return
        self.runs += 1
        self.top1 += ids[:1] == [run.cause]
        self.top3 += run.cause in ids[:3]
        if run.tied(threshold):
            self.tied += 1
            self.tied_top1 += ids[:1] == [run.cause]
        if ids[:1] != [run.cause]:
            kind = "top-3" if run.cause in ids[:3] else "miss "
            self.misses.append(f"{kind}        {run.name} ({run.cause}): {ids[:3] or 'no cause'}")

    def line(self) -> str:
        if not self.runs:
            return f"no faulty runs; healthy {self.healthy}, false alarms {self.alarms}"
        return (
            f"{self.runs:3d} runs  top-1 {100 * self.top1 / self.runs:5.1f}%  "
            f"top-3 {100 * self.top3 / self.runs:5.1f}%   healthy {self.healthy:2d}, "
            f"false alarms {self.alarms}"
            + (f", tied first {self.tied} ({self.tied_top1} of them top-1)" if self.tied else "")
        )

    def to_json(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "top1": self.top1 / self.runs if self.runs else None,
            "top3": self.top3 / self.runs if self.runs else None,
            "healthy": self.healthy,
            "false_alarms": self.alarms,
            "tied": self.tied,
            "tied_top1": self.tied_top1,
        }


def triage(
    path: Path, name: str, group: str, cause: str | None, tab, diff: Path | None = None, baseline: Path | None = None
) -> Run:
    """Explain one log and keep every cause's confidence (the threshold is applied later)."""
    from triage import table
    from triage.explain import explain

    report = explain(path, diff=diff, baseline=baseline)
    ranked = table.rank(list(report.symptoms), tab, all_causes=True)
    return Run(name, group, cause, [(c.id, c.confidence) for c in ranked])


def world_runs(tab) -> list[Run]:
    manifest = json.loads((WORLD / "manifest.json").read_text())
    return [triage(WORLD / "excerpts" / m["file"], m["file"], m["split"], m["cause"], tab) for m in manifest]


def program_runs(tab, fresh: bool = False) -> list[Run]:
    """The five programs' runs, or (`fresh`) those of the programs written after the rules froze."""
    manifest = json.loads((PROGRAMS / "manifest.json").read_text())
    return [
        triage(PROGRAMS / "logs" / m["file"], m["file"], m["program"], m["cause"], tab)
        for m in manifest
        if m.get("fresh", False) == fresh
    ]


def baseline_runs(tab) -> list[Run]:
    """The fresh programs' runs read beside the program's healthy seed-0 run (`--baseline`), as
    the base branch's last green run would be; the healthy seed-1 run is the false-alarm check."""
    manifest = json.loads((PROGRAMS / "manifest.json").read_text())
    logs = PROGRAMS / "logs"
    return [
        triage(
            logs / m["file"],
            m["file"],
            m["program"],
            m["cause"],
            tab,
            baseline=logs / f"{m['program']}__healthy__s0.log",
        )
        for m in manifest
        if m.get("fresh", False) and not (m["cause"] is None and m["seed"] == 0)
    ]


def fresh_outcomes() -> dict[str, bool]:
    """Log file -> whether that faulty run of a fresh program failed by its own headline figure."""
    sys.path.insert(0, str(PROGRAMS))
    from outcomes import outcomes

    return outcomes(json.loads((PROGRAMS / "manifest.json").read_text()), PROGRAMS / "logs")


def corpus_runs(tab, diffs: dict[str, Path] | None = None) -> list[Run]:
    out = []
    spare = sorted(diffs.values()) if diffs else []
    for group, root in (("corpus", CORPUS), ("corpus held-out", CORPUS / "heldout")):
        for i, m in enumerate(json.loads((root / "manifest.json").read_text())):
            diff = None
            if diffs is not None:
                diff = spare[i % len(spare)] if m["cause"] is None else diffs.get(m["cause"])
            out.append(triage(root / "logs" / m["file"], m["file"], group, m["cause"], tab, diff))
    return out


def calibration_runs(folder: Path, tab) -> list[Run]:
    """The caught mutants of a corpus `injector run --calibrate` wrote, each labelled with its
    injected fault (errored mutants and those that left no log are not training failures)."""
    from injector.calibrate import CAUGHT, read_manifest

    return [
        triage(folder / m["log"], m["log"], f"calibration {folder.name}", m["cause"], tab)
        for m in read_manifest(folder)["entries"]
        if m.get("log") and m.get("status") in CAUGHT
    ]


def shows_symptom(path: Path) -> bool:
    """Whether a calibration log shows a training symptom, by injector/calibrate.py's rule."""
    from injector.calibrate import NOT_SYMPTOMS, SERIES_POINTS, raises, shows_behaviour
    from triage.explain import explain

    report = explain(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    return (
        bool({s.name for s in report.symptoms} - NOT_SYMPTOMS)
        or max((len(series.points) for series in report.series.values()), default=0) >= SERIES_POINTS
        or raises(text)
        or shows_behaviour(text)
    )


def print_calibration(folders: list[Path], tab, threshold: float) -> dict[str, object]:
    """Section 5 (`--calibration DIR`): each corpus's tally and its confusion table."""
    figures: dict[str, object] = {}
    print(f"5. calibration corpora from `injector run --calibrate` (threshold {threshold})")
    for folder in folders:
        started = time.perf_counter()
        runs = calibration_runs(folder, tab)
        tl = tally(runs, threshold)
        print(f"   {str(folder):24s} {tl.line()}   ({time.perf_counter() - started:.1f} s)")
        shown = tally([r for r in runs if shows_symptom(folder / r.name)], threshold)
        print(f"   {'  showing a symptom':24s} {shown.line()}")
        conf = confusion(runs, threshold)
        print_confusion(conf)
        figures[str(folder)] = {
            **tl.to_json(),
            "showing_a_symptom": shown.to_json(),
            "confusion": {k: dict(v) for k, v in conf.items()},
        }
    return figures


def calibrate(runs: list[Run]) -> float:
    """The threshold that does best on `runs`: top-1 hits minus ALARM_COST per false alarm."""

    def score(t: float) -> tuple[float, float]:
        hits = sum(1 for r in runs if r.cause is not None and r.named(t)[:1] == [r.cause])
        alarms = sum(1 for r in runs if r.cause is None and r.named(t))
        return hits - ALARM_COST * alarms, -abs(t - 0.4)

    return max(THRESHOLDS, key=score)


def leave_one_program_out(runs: list[Run]) -> tuple[dict[str, tuple[float, Tally]], Tally]:
    by_program: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        by_program[r.group].append(r)
    out: dict[str, tuple[float, Tally]] = {}
    total = Tally()
    for held, held_runs in sorted(by_program.items()):
        t = calibrate([r for r in runs if r.group != held])
        tally = Tally()
        for r in held_runs:
            tally.add(r, t)
            total.add(r, t)
        out[held] = (t, tally)
    return out, total


def tally(runs: list[Run], threshold: float) -> Tally:
    t = Tally()
    for r in runs:
        t.add(r, threshold)
    return t


def confusion(runs: list[Run], threshold: float) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for r in runs:
        if r.cause is not None:
            table[r.cause][(r.named(threshold)[:1] or ["-"])[0]] += 1
    return table


def print_confusion(table: dict[str, Counter]) -> None:
    print(f"{'labelled cause':28s} {'runs':>4s}  named first (count)")
    for cause in sorted(table):
        row = table[cause]
        n = sum(row.values())
        right = row.get(cause, 0)
        wrong = ", ".join(f"{k} {v}" for k, v in row.most_common() if k != cause)
        print(f"{cause:28s} {n:4d}  {right:3d} right" + (f"; {wrong}" if wrong else ""))


def fault_diffs(out: Path) -> dict[str, Path]:
    """fault id -> a unified diff that injects it into a clean reference training script."""
    from injector.generate import mutants_for_source

    diffs: dict[str, Path] = {}
    for name in REFERENCE_SCRIPTS:
        text = (ROOT / "tests" / "injector" / "fixtures" / name).read_text(encoding="utf-8")
        for mutant in mutants_for_source(text, f"train/{name}"):
            if mutant.operator not in diffs:
                path = out / f"{mutant.operator}.patch"
                path.write_text(mutant.diff, encoding="utf-8")
                diffs[mutant.operator] = path
    return diffs


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from triage import table as table_mod

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ci", action="store_true", help="also the corpus with each run's PR diff given")
    p.add_argument("--misses", action="store_true", help="list every run not named first")
    p.add_argument("--json", help="also write the figures as JSON here")
    p.add_argument(
        "--calibration",
        action="append",
        type=Path,
        metavar="DIR",
        help="score a corpus `injector run --calibrate` wrote, alone (repeatable)",
    )
    a = p.parse_args()
    tab = table_mod.load(search_cwd=False)
    shipped = tab.threshold
    if a.calibration:
        from trainwreck.errors import TrainwreckError

        try:
            figures = print_calibration(a.calibration, tab, shipped)
        except TrainwreckError as error:
            print(f"triage_accuracy: error: {error}", file=sys.stderr)
            return 2
        if a.json:
            Path(a.json).write_text(json.dumps({"calibration": figures}, indent=2) + "\n")
        return 0
    t0 = time.perf_counter()
    world = world_runs(tab)
    programs = program_runs(tab)
    fresh_program = program_runs(tab, fresh=True)
    with_baseline = baseline_runs(tab)
    corpus = corpus_runs(tab)
    ci = None
    if a.ci:
        with tempfile.TemporaryDirectory() as tmp:
            ci = corpus_runs(tab, fault_diffs(Path(tmp)))
    elapsed = time.perf_counter() - t0

    figures: dict[str, object] = {"threshold": shipped}
    print(f"1. real world: excerpts from public issues, by source repository (threshold {shipped})")
    sets = {}
    later = sorted({r.group for r in world if r.group.startswith("fresh")}, key=lambda s: int(s[5:] or 1))
    for split in ("dev", "test", *later):
        sets[split] = tally([r for r in world if r.group == split], shipped)
        print(f"   {split:24s} {sets[split].line()}")
    sets["all"] = tally(world, shipped)
    print(f"   {'all':24s} {sets['all'].line()}")
    figures["real_world"] = {k: v.to_json() for k, v in sets.items()}

    print("\n2. leave-one-program-out: threshold calibrated on four programs, the fifth scored")
    folds, total = leave_one_program_out(programs)
    for prog, (t, tl) in folds.items():
        print(f"   {prog:16s} thr {t:4.2f}  {tl.line()}")
    print(f"   {'all five':16s}           {total.line()}")
    shipped_programs = tally(programs, shipped)
    print(f"   {'(shipped table)':16s} thr {shipped:4.2f}  {shipped_programs.line()}")
    figures["leave_one_program_out"] = {
        "folds": {k: {"threshold": t, **tl.to_json()} for k, (t, tl) in folds.items()},
        "total": total.to_json(),
        "shipped": shipped_programs.to_json(),
    }
    if fresh_program:
        t = calibrate(programs)
        failed = fresh_outcomes()
        figures["fresh_programs"] = {}
        for prog in sorted({r.group for r in fresh_program}):
            fresh_t = tally([r for r in fresh_program if r.group == prog], t)
            print(f"   {prog + ' (fresh)':22s} thr {t:4.2f}  {fresh_t.line()}")
            figures["fresh_programs"][prog] = {"threshold": t, **fresh_t.to_json()}
        print("   (fresh: written after the rules froze; first measurements in tests/triage/programs/README.md)")
        every = tally(fresh_program, t)
        failing = tally([r for r in fresh_program if r.cause is None or failed.get(r.name, True)], t)
        print(f"   {'fresh, every run':22s} thr {t:4.2f}  {every.line()}")
        print(f"   {'fresh, failed runs':22s} thr {t:4.2f}  {failing.line()}")
        spoke = [r for r in fresh_program if r.cause is not None and failed.get(r.name, True) and r.named(t)]
        right = sum(r.named(t)[:1] == [r.cause] for r in spoke)
        in_tie = sum(r.named(t)[:1] != [r.cause] and r.cause in r.tied(t) for r in spoke)
        wrong = len(spoke) - right - in_tie
        print(
            f"   {'fresh, failed, answered':22s} a cause named on {len(spoke)} of {failing.runs} failed runs:"
            f" first right {right} ({100 * right / max(len(spoke), 1):.1f}%), right within a tie said as one"
            f" {in_tie}, wrong {wrong}; silent on {failing.runs - len(spoke)}"
        )
        figures["fresh_programs_failed_answered"] = {
            "named": len(spoke),
            "right": right,
            "in_tie": in_tie,
            "wrong": wrong,
        }
        passed = [r for r in fresh_program if r.cause is not None and not failed.get(r.name, True)]
        said = Counter(
            "right" if r.named(t)[:1] == [r.cause] else ("silent" if not r.named(t) else "another cause")
            for r in passed
        )
        print(
            f"   {'fresh, runs that passed':22s} {len(passed)} faulty runs as good as a healthy one"
            f" (tests/triage/programs/outcomes.py): {said['silent']} silent, {said['right']} named right,"
            f" {said['another cause']} named another cause"
        )
        figures["fresh_programs_all"] = every.to_json()
        figures["fresh_programs_failed"] = failing.to_json()
        figures["fresh_programs_passed"] = dict(said)

    print(f"\n3. our corpus: one generator program (threshold {shipped})")
    corp = {g: tally([r for r in corpus if r.group == g], shipped) for g in ("corpus", "corpus held-out")}
    for g, tl in corp.items():
        print(f"   {g:24s} {tl.line()}")
    figures["corpus"] = {k: v.to_json() for k, v in corp.items()}
    if ci is not None:
        ci_t = {g: tally([r for r in ci if r.group == g], shipped) for g in ("corpus", "corpus held-out")}
        for g, tl in ci_t.items():
            print(f"   {g + ' + PR diff':24s} {tl.line()}   (secondary)")
        figures["corpus_ci_mode"] = {k: v.to_json() for k, v in ci_t.items()}

    print(
        f"\n4. fresh programs with a baseline: each run beside its program's healthy seed-0 run (threshold {shipped})"
    )
    failed = fresh_outcomes()
    base_every = tally(with_baseline, shipped)
    base_failing = tally([r for r in with_baseline if r.cause is None or failed.get(r.name, True)], shipped)
    print(f"   {'fresh, every run':22s} {base_every.line()}")
    print(f"   {'fresh, failed runs':22s} {base_failing.line()}")
    print("   (the comparisons were designed with these programs' logs in view: no program held out from them yet)")
    figures["fresh_programs_with_baseline"] = {"all": base_every.to_json(), "failed": base_failing.to_json()}

    everything = world + programs + fresh_program + corpus
    healthy = [r for r in everything + with_baseline if r.cause is None]
    alarms = [r for r in healthy if r.named(shipped)]
    print(f"\n5. healthy runs: {len(healthy)} across every set, {len(alarms)} false alarm(s)")
    for r in alarms:
        print(f"   false alarm  {r.group}/{r.name}: {r.named(shipped)[:3]}")
    figures["healthy"] = {"runs": len(healthy), "false_alarms": [f"{r.group}/{r.name}" for r in alarms]}

    print("\nconfusion over every faulty run of every set (threshold as shipped):")
    conf = confusion(everything, shipped)
    print_confusion(conf)
    figures["confusion"] = {k: dict(v) for k, v in conf.items()}
    print(f"\ntime: {elapsed:.1f} s for {len(everything) + len(with_baseline) + (len(ci) if ci else 0)} logs")

    if a.misses:
        for title, runs in (("real world", world), ("programs", programs + fresh_program), ("corpus", corpus)):
            misses = tally(runs, shipped).misses
            if misses:
                print(f"\nnot named first ({title}):")
                for line in misses:
                    print("  " + line)
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
