"""Where the operators now differ from the operator corpus's review, file by file.

    python scripts/corpus_delta.py [NAME ...] [--jobs N]

The corpus test (tests/injector/test_operator_corpus.py) fails file by file when the operators'
mutants no longer match a file's reviewed flags; after a change to an operator this lists every
difference at once, without loading the mutated modules (the slow part the test also does):
sites now found that the manifest marks `known_miss`, new misses, equivalent mutants gone or new,
mutants on no reviewed list, and `real` sites no mutant reaches. An empty output means every
flag still holds. NAME limits the run to those corpus files.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _differences(name: str) -> list[str]:
    from operator_corpus import corpus_files, judge

    [file] = [f for f in corpus_files() if f.name == name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = judge(file, load=False)
    out = [f"now found    {s.label}" for s in verdict.found if s.known]
    out += [f"new miss     {s.label}" for s in verdict.missed if not s.known]
    out += [f"new equiv    {s.label}" for s in verdict.mutated_untouched if not s.known]
    gone = {s.label for s in file.untouched if s.known} - {s.label for s in verdict.mutated_untouched}
    out += [f"equiv gone   {label}" for label in sorted(gone)]
    out += [
        f"unreviewed   {m.operator} @ {m.line}: {m.description}"
        for m in verdict.unreviewed
        if f"{m.operator} @ {m.line}" not in file.known_broken
    ]
    out += [f"real gone    {s.label}" for s in verdict.real_unreached]
    return [f"{file.split}:{name}: {line}" for line in out]


def _setup() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "injector"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="corpus file names (all when none)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    _setup()
    from operator_corpus import corpus_files

    names = [f.name for f in corpus_files() if not args.names or f.name in args.names]
    unknown = set(args.names) - set(names)
    if unknown:
        print(f"not in the corpus (or not fetched here): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    with ProcessPoolExecutor(args.jobs, initializer=_setup) as pool:
        found = [line for lines in pool.map(_differences, names) for line in lines]
    print("\n".join(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
