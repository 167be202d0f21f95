"""The `injector` command line: list operators, show mutants (and, later, run campaigns).

Exit codes: 0 success, 2 bad input (a one-line `injector: error: ...` on stderr),
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from injector import __version__, catalog, config
from injector.errors import TrainwreckError, UsageError

DEMO = Path(__file__).parent / "demo"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except TrainwreckError as error:
        print(f"injector: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("injector: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `injector mutants | head`
        sys.stderr.close()
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="injector", description="Mutation testing for PyTorch training code: inject the "
        "catalogued training faults and see which ones your guards catch.")
    parser.add_argument("--version", action="version", version=f"trainwreck {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the operators, with their fault ids and examples")
    listing.add_argument("--format", choices=["text", "json"], default="text")
    listing.set_defaults(handler=_list)

    mutants = commands.add_parser(
        "mutants", help="every mutant that would be made of PATH (default: the bundled demo)",
        description="Show every mutant that would be made: id, operator, file, line and diff. "
        "Folders are walked, honouring .gitignore and skipping tests and virtualenvs. "
        "Nothing is written.")
    mutants.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    mutants.add_argument("--operators", type=_ids, metavar="ID,...",
                         help="only these fault ids (default: [tool.trainwreck] operators, else all)")
    mutants.add_argument("--format", choices=["text", "json"], default="text")
    mutants.set_defaults(handler=_mutants)
    return parser


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _list(args: argparse.Namespace) -> int:
    from injector.generate import mutants_for_source
    from injector.operators import all_operators

    entries = []
    for op in all_operators():
        fault = catalog.get(op.id)
        examples = []
        for example in op.examples:
            made = mutants_for_source(example.before, "example.py", [op])
            examples.append({"before": example.before, "after": list(example.after),
                             "diffs": [m.diff for m in made]})
        entries.append({"id": op.id, "summary": op.summary, "title": fault.title,
                        "symptoms": fault.symptoms, "guard": fault.guard, "fix": fault.fix,
                        "examples": examples})
    if args.format == "json":
        json.dump({"operators": entries}, sys.stdout, indent=2)
        print()
        return 0
    from injector import render
    render.operators(entries)
    return 0


def _mutants(args: argparse.Namespace) -> int:
    from injector import discovery, render
    from injector.generate import mutants_for_files
    from injector.operators import select

    paths = args.paths or [DEMO]
    root = config.find_root(paths[0].resolve() if paths[0].exists() else paths[0])
    settings = config.load(root)
    if settings.paths and any(p.exists() and p.resolve() == root.resolve() for p in paths):
        paths = [root / p for p in settings.paths]
    operators = select(args.operators or list(settings.operators), list(settings.exclude_operators))
    files, unreadable = discovery.collect(paths, root, settings.exclude_paths)
    if not files:
        raise UsageError(f"no Python files to mutate under {', '.join(map(str, paths))}")
    generation = mutants_for_files(files, operators)
    skipped = unreadable + generation.skipped
    for entry in skipped:
        print(f"injector: skipped {entry}", file=sys.stderr)
    if generation.files == 0:
        raise UsageError("none of the files could be parsed")
    if args.format == "json":
        json.dump({"schema": "trainwreck.mutants/1", "root": str(root),
                   "mutants": [m.to_json() for m in generation.mutants],
                   "skipped": [{"file": s.relative, "line": s.line, "reason": s.reason}
                               for s in skipped]},
                  sys.stdout, indent=2)
        print()
    else:
        render.mutants(generation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
