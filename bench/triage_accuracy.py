"""Triage accuracy on the labelled corpus and its held-out set: top-1/top-3 per cause, false alarms.

    python bench/triage_accuracy.py [--corpus tests/triage/corpus] [--heldout DIR] [--no-ci] [--json F]

Every log comes from a real run of `tests/triage/corpus/train.py` with one seeded fault (or
none); each set's `manifest.json` holds the labels. A faulty run counts as top-k correct when its
fault id is among the first k causes `triage explain` reports (above the reporting threshold);
a healthy run counts as a false alarm when any cause is reported.

Two sets: the corpus, which the detectors and weights were tuned on, and the held-out set
(`heldout/`: other seeds, other logging styles per fault), which was only ever measured. The
headline figures are log-only: what `triage explain run.log` says. The secondary "CI mode" line
gives each run the pull-request diff that would have introduced its fault, as the triage
workflow always passes `--diff`: for an injectable fault, the injector's own mutant of a clean
reference training script (`tests/injector/fixtures/`); a cause triage only observes has no
diff. In CI mode a healthy run gets some other mutant's diff, as a PR that touched a fault
site and still trained fine, so a diff alone must not raise an alarm.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "triage" / "corpus"
# Clean training scripts the PR diffs are made from, in order of preference: the first that
# has a site for a fault gives that fault's diff.
REFERENCE_SCRIPTS = ("image_classifier.py", "gpt_train.py")


@dataclass
class Tally:
    """One set's figures, for log-only or CI-mode triage."""

    per: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))
    healthy: int = 0
    alarms: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, entry: dict, ids: list[str]) -> None:
        if entry["cause"] is None:
            self.healthy += 1
            if ids:
                self.alarms += 1
                self.misses.append(f"false alarm  {entry['file']}: {ids[:3]}")
            return
        row = self.per[entry["cause"]]
        row[0] += 1
        row[1] += ids[:1] == [entry["cause"]]
        row[2] += entry["cause"] in ids[:3]
        if ids[:1] != [entry["cause"]]:
            kind = "top-3" if entry["cause"] in ids[:3] else "miss "
            self.misses.append(f"{kind}        {entry['file']}: {ids[:3]}")

    def totals(self) -> tuple[int, int, int]:
        rows = list(self.per.values())
        return sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows)

    def line(self) -> str:
        n, t1, t3 = self.totals()
        if not n:
            return "no seeded runs"
        return (f"{n} runs, top-1 {100 * t1 / n:.1f}%, top-3 {100 * t3 / n:.1f}%; "
                f"healthy {self.healthy}, false alarms {self.alarms}")

    def to_json(self) -> dict[str, object]:
        n, t1, t3 = self.totals()
        return {"per_cause": {c: {"runs": r[0], "top1": r[1], "top3": r[2]} for c, r in sorted(self.per.items())},
                "runs": n, "top1": t1 / n if n else None, "top3": t3 / n if n else None,
                "healthy": self.healthy, "false_alarms": self.alarms}


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


def measure(root: Path, diffs: dict[str, Path] | None) -> Tally:
    """Triage every log of one set; with `diffs`, in CI mode."""
    from triage.explain import explain

    manifest = json.loads((root / "manifest.json").read_text())
    tally = Tally()
    spare = sorted(diffs.values()) if diffs else []
    healthy_seen = 0
    for entry in manifest:
        diff = None
        if diffs is not None:
            if entry["cause"] is None:
                diff = spare[healthy_seen % len(spare)]
                healthy_seen += 1
            else:
                diff = diffs.get(entry["cause"])
        report = explain(root / "logs" / entry["file"], diff=diff)
        tally.add(entry, [c.id for c in report.causes])
    return tally


def table(sets: dict[str, Tally]) -> None:
    names = list(sets)
    causes = sorted({c for t in sets.values() for c in t.per})
    head = "".join(f" | {n:^19s}" for n in names)
    print(f"{'cause':28s}{head}")
    print(f"{'':28s}" + "".join(f" | {'runs':>5s} {'top-1':>6s} {'top-3':>6s}" for _ in names))
    for cause in causes:
        cells = []
        for n in names:
            r = sets[n].per.get(cause)
            cells.append(f" | {r[0]:5d} {100 * r[1] / r[0]:5.0f}% {100 * r[2] / r[0]:5.0f}%" if r and r[0]
                         else f" | {'':5s} {'':6s} {'':6s}")
        print(f"{cause:28s}" + "".join(cells))


def main() -> int:
    sys.path.insert(0, str(ROOT))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(CORPUS))
    p.add_argument("--heldout", help="the held-out set (default: CORPUS/heldout)")
    p.add_argument("--no-ci", action="store_true", help="skip the CI-mode (log + diff) figures")
    p.add_argument("--json", help="also write the figures as JSON here")
    a = p.parse_args()
    corpus = Path(a.corpus)
    heldout = Path(a.heldout) if a.heldout else corpus / "heldout"
    roots = {"corpus": corpus}
    if (heldout / "manifest.json").is_file():
        roots["held-out"] = heldout
    t0 = time.perf_counter()
    log_only = {name: measure(root, None) for name, root in roots.items()}
    ci: dict[str, Tally] = {}
    if not a.no_ci:
        with tempfile.TemporaryDirectory() as tmp:
            diffs = fault_diffs(Path(tmp))
            ci = {name: measure(root, diffs) for name, root in roots.items()}
    elapsed = time.perf_counter() - t0

    print("log only (`triage explain run.log`):\n")
    table(log_only)
    print()
    for name, tally in log_only.items():
        print(f"{name + ', log only:':28s} {tally.line()}")
    for name, tally in ci.items():
        print(f"{name + ', CI mode (+ PR diff):':28s} {tally.line()}   (secondary)")
    logs = sum(len(json.loads((r / "manifest.json").read_text())) for r in roots.values())
    print(f"{'time:':28s} {elapsed:.1f} s for {logs} logs" + (", each twice" if ci else ""))
    for name, tally in log_only.items():
        if tally.misses:
            print(f"\nnot top-1 ({name}, log only):")
            for line in tally.misses:
                print("  " + line)
    for name, tally in ci.items():
        if tally.misses:
            print(f"\nnot top-1 ({name}, CI mode):")
            for line in tally.misses:
                print("  " + line)
    if a.json:
        Path(a.json).write_text(json.dumps({
            "log_only": {name: t.to_json() for name, t in log_only.items()},
            "ci_mode": {name: t.to_json() for name, t in ci.items()},
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
