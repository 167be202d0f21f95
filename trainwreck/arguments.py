"""What the `injector` and `triage` command lines share: one-line argument errors and `--version`."""

from __future__ import annotations

import argparse
from typing import NoReturn

DISTRIBUTION = "trainwreck"
EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: `injector: error: ... (see injector run --help)`.

    argparse's own error prints the whole usage block above the message; a CI log then shows six
    lines where one says what is wrong. Subcommand parsers made through `add_subparsers` are of
    this class too (argparse passes the class on), so every subcommand answers the same way.
    """

    def error(self, message: str) -> NoReturn:
        command = self.prog.split()[0]
        self.exit(EXIT_USAGE, f"{command}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            # argparse reports these from the top parser; the subcommand's --help is the one to read
            self._subcommand(parsed).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def _subcommand(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest or "", None) or "")
                if isinstance(chosen, Parser):
                    return chosen._subcommand(parsed)
        return self


def version() -> str:
    """The installed trainwreck's version, from its package metadata."""
    from importlib import metadata  # imported here: it costs every command's start-up a few ms

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
        return "(not installed)"


class _Version(argparse.Action):
    """argparse's own `version` action, but the version is looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        print(f"{parser.prog} {version()}")  # on stdout, as argparse's own action prints it
        parser.exit()


def add_version(parser: argparse.ArgumentParser) -> None:
    """`--version`: prints `<command> <version>` and exits 0."""
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
