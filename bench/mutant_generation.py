"""How fast mutants are made: a large synthetic training codebase, timed end to end.

    python bench/mutant_generation.py [--lines 5000] [--jobs N]
    python bench/mutant_generation.py --corpus [--jobs N]

It writes a codebase of realistic training modules (the test fixtures, each copy renamed)
to a temporary folder, then times what `injector mutants` does: walk, read, parse, run all
23 operators, build ids and diffs. It prints lines/s, mutants/s and seconds per 1,000 lines,
once in one process and once over every core.

`--corpus` times the same over the public training code of the operator corpus
(tests/injector/corpus: trainers of timm, OLMo, llm.c, composer, ...), whose long functions and
classes cost the operators more per line than the fixtures do.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

from injector import discovery
from injector.generate import mutants_for_files
from injector.operators import all_operators

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "injector" / "fixtures"
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "injector" / "corpus"


def write_codebase(root: Path, lines: int) -> int:
    templates = [p.read_text() for p in sorted(FIXTURES.glob("*.py"))]
    written = index = 0
    while written < lines:
        text = templates[index % len(templates)]
        # Rename the classes and functions so no two modules are the same text.
        text = re.sub(r"\b(class|def) (\w+)", rf"\1 \2_{index}", text)
        folder = root / f"pkg_{index // 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{index}.py").write_text(text)
        written += text.count("\n")
        index += 1
    return index


def copy_corpus(root: Path) -> int:
    files = sorted(CORPUS.glob("*.py"))
    for path in files:
        (root / path.name).write_bytes(path.read_bytes())
    return len(files)


def measure(root: Path, jobs: int) -> tuple[float, int, int]:
    start = time.perf_counter()
    files, _ = discovery.collect([root], root)
    generation = mutants_for_files(files, all_operators(), jobs=jobs)
    return time.perf_counter() - start, generation.lines, len(generation.mutants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--corpus", action="store_true", help="time the operator corpus's public training code")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        modules = copy_corpus(root) if args.corpus else write_codebase(root, args.lines)
        all_operators()  # import the operators before timing, as a warm CLI would
        print(f"codebase: {modules} modules under {root}")
        for jobs in sorted({1, args.jobs}):
            seconds, lines, mutants = measure(root, jobs)
            print(
                f"jobs={jobs}: {lines} lines, {mutants} mutants in {seconds:.2f} s: "
                f"{lines / seconds:,.0f} lines/s, {mutants / seconds:,.0f} mutants/s, "
                f"{1000 * seconds / lines:.2f} s per 1,000 lines"
            )


if __name__ == "__main__":
    main()
