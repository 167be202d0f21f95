"""Operator recall on real public training code, with broken and equivalent mutants per file.

    python bench/operator_recall.py [--split tuned|held-out] [--no-load] [--verbose]

The corpus is `tests/injector/corpus/` (files from public repositories, reviewed site lists in
`tuned.toml` and `heldout.toml`; see `tests/injector/operator_corpus.py`). Recall is the share
of reviewed sites that get a mutant of their operator; *broken* mutants do not compile, read a
method off a number (`(0).detach()`: it loads, then fails on the first step) or do not load (the
mutated module is imported with stubs for packages that are not installed, and what the manifest
constructs is built); *equivalent* mutants land on a reviewed untouched site;
*unreviewed* mutants land on neither list. The tuned and held-out sets are reported apart: the
held-out files come from other repositories and were never tuned on.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tuned", "held-out"))
    parser.add_argument("--no-load", action="store_true", help="skip loading mutated modules")
    parser.add_argument("--verbose", action="store_true", help="list missed sites and unreviewed mutants")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "injector"))
    warnings.filterwarnings("ignore")
    from operator_corpus import absent_files, corpus_files, judge

    for split in ("tuned", "held-out"):
        if args.split and split != args.split:
            continue
        print(f"== {split}")
        files = corpus_files(split)
        for absent in absent_files(split):
            print(f"   not in this checkout (fetched code is not committed): {absent}")
        if not files:
            print("   no files in this split yet (a held-out batch is listed before it is measured)")
            continue
        print(f"{'file':44} {'recall':>12} {'mutants':>8} {'broken':>7} {'equiv':>6} {'unrev':>6}")
        sites = found = mutants = broken = equivalent = unreviewed = 0
        for file in files:
            verdict = judge(file, load=not args.no_load)
            total = len(verdict.found) + len(verdict.missed)
            print(
                f"{file.name:44} {len(verdict.found):>4}/{total:<3} {verdict.recall:>4.0%} "
                f"{len(verdict.mutants):>8} {len(verdict.broken):>7} {len(verdict.equivalent):>6} "
                f"{len(verdict.unreviewed):>6}"
            )
            if args.verbose:
                for site in verdict.missed:
                    print(f"    missed      {site.label}")
                for mutant in verdict.unreviewed:
                    print(f"    unreviewed  {mutant.operator} @ {mutant.line}: {mutant.description}")
                for mutant in verdict.equivalent:
                    print(f"    equivalent  {mutant.operator} @ {mutant.line}: {mutant.description}")
                for mutant in verdict.real:
                    print(f"    real        {mutant.operator} @ {mutant.line}: {mutant.description}")
                for mutant, why in verdict.broken:
                    print(f"    broken      {mutant.operator} @ {mutant.line}: {why}")
            sites += total
            found += len(verdict.found)
            mutants += len(verdict.mutants)
            broken += len(verdict.broken)
            equivalent += len(verdict.equivalent)
            unreviewed += len(verdict.unreviewed)
        share = equivalent / mutants if mutants else 0.0
        print(
            f"{'total':44} {found:>4}/{sites:<3} {found / sites if sites else 1:>4.0%} {mutants:>8} "
            f"{broken:>7} {equivalent:>6} {unreviewed:>6}   (equivalent {share:.1%} of mutants)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
