"""The `triage` command: explain why a training run failed, from its log.

    triage explain LOG [--format text|markdown|json] [--diff PATCH] [--telemetry F] [--causes F]

Exit codes (the same for every format, so CI can branch on them):

    0  no failure found: the log looks like a healthy run (or holds no metrics at all)
    1  failure explained: at least one catalogued cause above the reporting threshold
    2  bad input: a missing, empty, binary or unreadable log, diff, telemetry or cause table
    3  failure found but not explained: the run crashed or went non-finite, no cause fits

`--telemetry F` reads JSON lines of GPU samples, `{"t": 12.5, "gpu_util": 87, "mem_used": 10240}`
(seconds, percent, any memory unit; optional "gpu" index). `--causes F` extends the built-in
symptom->cause table (triage/causes.yaml) with your own; `trainwreck-causes.yaml` in the
current directory is picked up without the flag.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from injector.errors import TrainwreckError

EXIT_HEALTHY = 0
EXIT_EXPLAINED = 1
EXIT_BAD_INPUT = 2
EXIT_UNEXPLAINED = 3
_STATUS_EXIT = {"healthy": EXIT_HEALTHY, "explained": EXIT_EXPLAINED, "unexplained": EXIT_UNEXPLAINED}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, exit 2 as usual
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    epilog = ("exit codes: 0 no failure found, 1 failure explained, 2 bad input, "
              "3 failure found but not explained")
    parser = _Parser(prog="triage", description="Explain why a PyTorch training run failed, from its log.",
                     epilog=epilog)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    ex = sub.add_parser("explain", help="rank the likely causes of a failed run, with evidence and fixes",
                        description=__doc__.split("\n\n")[1].strip() if __doc__ else None,
                        epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("log", metavar="LOG", help="the run's log (plain text or .gz)")
    ex.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                    help="terminal text (default), the PR-comment markdown, or JSON")
    ex.add_argument("--diff", metavar="PATCH", help="a unified diff (e.g. the PR's): causes whose fault "
                    "sites it removes or changes are raised, citing the hunk")
    ex.add_argument("--telemetry", metavar="F", help='JSON lines of GPU samples: {"t":..., "gpu_util":..., '
                    '"mem_used":...}')
    ex.add_argument("--causes", metavar="F", help="your own cause table (YAML) to extend or override ours")
    ex.add_argument("--max-bytes", metavar="SIZE", type=_size, default=None,
                    help="read at most SIZE of a bigger log: its first and last halves (default 4G)")
    ex.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                    help="colour the text output (default: when stdout is a terminal)")
    return parser


def _size(text: str) -> int:
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in units else ""
    try:
        value = float(t[: len(t) - len(unit)] if unit else t) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 4G)") from None
    if value < 2**16:
        raise argparse.ArgumentTypeError(f"too small: {text!r} (at least 64K)")
    return int(value)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "explain":
            return _explain(args)
    except TrainwreckError as exc:
        print(f"triage: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("triage: error: interrupted", file=sys.stderr)
        return 130
    return EXIT_BAD_INPUT


def _explain(args: argparse.Namespace) -> int:
    from triage import render
    from triage.explain import explain

    kwargs = {"max_bytes": args.max_bytes} if args.max_bytes else {}
    report = explain(args.log, diff=args.diff, telemetry=args.telemetry, causes=args.causes, **kwargs)
    if args.format == "json":
        out = render.json_text(report)
    elif args.format == "markdown":
        out = render.markdown(report)
    else:
        color = sys.stdout.isatty() if args.color is None else args.color
        out = render.text(report, color=color)
    sys.stdout.write(out)
    sys.stdout.flush()
    return _STATUS_EXIT[report.status]


if __name__ == "__main__":
    sys.exit(main())
