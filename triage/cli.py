"""The `triage` command: explain why a training run failed, from its log.

    triage explain LOG|- [--format text|markdown|json] [--diff PATCH] [--baseline LOG] [--telemetry F] [--causes F]
    triage calibrate DIR [--format text|json]   (a corpus from `injector run --calibrate`)

Exit codes (the same for every format, so CI can branch on them):

    0  no failure found: the log looks like a healthy run (or holds no metrics at all)
    1  failure explained: at least one catalogued cause above the reporting threshold
    2  bad input: a missing, empty, binary or unreadable log, diff, telemetry or cause table
    3  failure found but not explained: the run crashed or went non-finite, no cause fits

`--telemetry F` reads JSON lines of GPU samples, `{"t": 12.5, "gpu_util": 87, "mem_used": 10240}`
(seconds, percent, any memory unit; optional "gpu" index). `--causes F` extends the built-in
symptom->cause table (triage/causes.yaml) with your own; without the flag, `explain` picks up
`trainwreck-causes.yaml` in the current directory (a convenience in your own checkout).
`triage comment` never does: it reads a cause table only from an explicit `--causes`, since a
file beside a CI log may have been written by the code under test.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from trainwreck import arguments
from trainwreck.errors import TrainwreckError

EXIT_HEALTHY = 0
EXIT_EXPLAINED = 1
EXIT_BAD_INPUT = 2
EXIT_UNEXPLAINED = 3
_STATUS_EXIT = {"healthy": EXIT_HEALTHY, "explained": EXIT_EXPLAINED, "unexplained": EXIT_UNEXPLAINED}


def build_parser() -> argparse.ArgumentParser:
    epilog = "exit codes: 0 no failure found, 1 failure explained, 2 bad input, 3 failure found but not explained"
    parser = arguments.Parser(
        prog="triage", description="Explain why a PyTorch training run failed, from its log.", epilog=epilog
    )
    arguments.add_version(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    ex = sub.add_parser(
        "explain",
        help="rank the likely causes of a failed run, with evidence and fixes",
        description=__doc__.split("\n\n")[1].strip() if __doc__ else None,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ex.add_argument(
        "log",
        metavar="LOG",
        help="the run's log (plain text or .gz; - reads standard input, e.g. `cmd | triage explain -`)",
    )
    ex.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="terminal text (default), the PR-comment markdown, or JSON",
    )
    ex.add_argument(
        "--diff",
        metavar="PATCH",
        help="a unified diff (e.g. the PR's): causes whose fault "
        "sites it removes or changes are raised, citing the hunk",
    )
    ex.add_argument(
        "--baseline",
        metavar="LOG",
        help="the log of a healthy run of the same program (e.g. the base branch's last green run): "
        "a run that ends far behind it fails, and fewer trained parameters, a higher rate or a "
        "schedule apart from it are evidence",
    )
    ex.add_argument(
        "--telemetry", metavar="F", help='JSON lines of GPU samples: {"t":..., "gpu_util":..., "mem_used":...}'
    )
    ex.add_argument(
        "--causes",
        metavar="F",
        help="your own cause table (YAML) to extend or override ours "
        "(default: ./trainwreck-causes.yaml when it exists; `triage comment` never loads "
        "one unasked)",
    )
    ex.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the text output (default: when stdout is a terminal)",
    )
    from triage import watch

    watch.add_parser(sub)
    _add_comment_parser(sub)
    _add_calibrate_parser(sub)
    return parser


def _add_calibrate_parser(sub: argparse._SubParsersAction) -> None:
    cal = sub.add_parser(
        "calibrate",
        help="explain every log of a labelled corpus (`injector run --calibrate`) and score the answers",
        description="Read DIR/manifest.json (written by `injector run --calibrate`: one log per "
        "mutant the guards caught, labelled with the injected fault), explain every log with the "
        "built-in cause table, and show, per fault id, how often the injected fault was named "
        "first, in the top three, another cause instead, or nothing. --format json gives the "
        "answer per log (what `injector run --calibrate` reads back).",
    )
    cal.add_argument("folder", metavar="DIR", help="the calibration corpus folder")
    cal.add_argument("--format", choices=("text", "json"), default="text", help="the table (default) or JSON")


def _add_comment_parser(sub: argparse._SubParsersAction) -> None:
    epilog = (
        "exit codes: 0 posted, updated or already up to date, 2 bad input, 4 GitHub failed "
        "(no token, no permission, no such PR, API down, rate limit)"
    )
    cm = sub.add_parser(
        "comment",
        help="post the triage as one PR comment, edited in place on every run",
        description="Explain the run (as `triage explain --format markdown`) and keep the result as "
        "one comment on the pull request: found again by its hidden marker and edited in place, "
        "never written when unchanged. The token comes from GITHUB_TOKEN.",
        epilog=epilog,
    )
    cm.add_argument("log", metavar="LOG", help="the run's log (plain text or .gz)")
    cm.add_argument(
        "--repo",
        required=True,
        metavar="OWNER/NAME",
        type=_checked("parse_repo"),
        help="the repository of the pull request",
    )
    cm.add_argument("--pr", required=True, metavar="N", type=_checked("parse_number"), help="the pull request's number")
    cm.add_argument("--telemetry", metavar="F", help="JSON lines of GPU samples (as for explain)")
    cm.add_argument("--diff", metavar="PATCH", help="the PR's unified diff (as for explain)")
    cm.add_argument("--baseline", metavar="LOG", help="the base branch's healthy run's log (as for explain)")
    cm.add_argument(
        "--causes",
        metavar="F",
        help="your own cause table (YAML), as for explain; only this "
        "flag loads one (a trainwreck-causes.yaml beside the log is ignored: in CI, pass the base "
        "branch's copy, never one from the PR's artifact)",
    )
    cm.add_argument(
        "--api-url",
        metavar="URL",
        type=_checked("api_url"),
        help="the REST API's base URL, for GitHub Enterprise (e.g. https://github.example.com/"
        "api/v3; default: $GITHUB_API_URL, else https://api.github.com)",
    )
    cm.add_argument(
        "--dry-run",
        action="store_true",
        help="print the body and what would happen (create, update, unchanged); write nothing",
    )


def _checked(name: str):
    """An argparse type from a parser in trainwreck.comment or trainwreck.github (imported only when
    used: github3.py is not needed to explain a log), its UsageError as argparse's one line."""

    def convert(text: str) -> object:
        from trainwreck import comment, github

        parse = getattr(comment, name, None) or getattr(github, name)
        try:
            return parse(text)
        except TrainwreckError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "explain":
            return _explain(args)
        if args.command == "watch":
            from triage import watch

            return watch.main(args)
        if args.command == "comment":
            return _comment(args)
        if args.command == "calibrate":
            return _calibrate(args)
    except TrainwreckError as exc:
        print(f"triage: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("triage: error: interrupted", file=sys.stderr)
        return 130
    return EXIT_BAD_INPUT


def _explain(args: argparse.Namespace) -> int:
    from triage import reader

    with reader.start(args.log) as begun:  # a big log's workers read while the rest is imported
        from triage import render
        from triage.explain import explain

        report = explain(
            begun,
            diff=args.diff,
            telemetry=args.telemetry,
            causes=args.causes,
            search_cwd=True,
            baseline=args.baseline,
        )
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


def _calibrate(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from injector import calibrate
    from triage.calibration import answer_corpus

    folder = Path(args.folder)
    answers = answer_corpus(folder)
    if args.format == "json":
        json.dump({"schema": "trainwreck.triage-calibration/1", "logs": answers}, sys.stdout, indent=2)
        print()
        return 0
    entries = calibrate.read_manifest(folder)["entries"]
    by_id = {answer["mutant_id"]: answer for answer in answers}
    result = calibrate.Calibration(
        tuple(calibrate.answered(calibrate.Entry.from_json(e), by_id.get(e["mutant_id"]), folder) for e in entries),
        str(folder),
    )
    print("\n".join(calibrate.table_lines(result)))
    return 0


def _comment(args: argparse.Namespace) -> int:
    from trainwreck import comment, github
    from triage import render
    from triage.explain import explain

    api = github.api_url(args.api_url)
    owner, name = args.repo
    target = comment.Target(owner, name, args.pr)
    # the whole body first: a bad log fails here, before anything is read from or sent to GitHub
    body = render.markdown(
        explain(args.log, diff=args.diff, telemetry=args.telemetry, causes=args.causes, baseline=args.baseline)
    )
    policy = github.Policy(notify=lambda line: print(f"triage: {line}", file=sys.stderr, flush=True))
    posted = comment.post(
        body,
        marker=render.MARKER,
        target=target,
        token=github.token_from_env(),
        api=api,
        policy=policy,
        dry_run=args.dry_run,
    )
    if args.dry_run:
        sys.stdout.write(posted.body)
        sys.stdout.flush()
        print(f"triage: {posted.describe()}", file=sys.stderr)
    else:
        print(f"triage: {posted.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
