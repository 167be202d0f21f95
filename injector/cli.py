"""The `injector` command line: list operators, show mutants, run campaigns, merge and post reports.

Exit codes: 0 success, 2 bad input (a one-line `injector: error: ...` on stderr),
3 the mutation score is below `--fail-under` (the reports are written),
4 the `--comment` could not be posted (the reports are written), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from dataclasses import replace
from datetime import UTC
from pathlib import Path

from injector import catalog, config
from trainwreck import arguments
from trainwreck.errors import TrainwreckError, UsageError

DEMO = Path(__file__).parent / "demo"
EXIT_UNDER = 3  # the mutation score is below --fail-under
REPORT_EXITS = (
    f"exit codes: 0 done; 2 bad input; {EXIT_UNDER} the score is below --fail-under; "
    "4 the --comment could not be posted; 130 interrupted (the reports are written "
    f"before {EXIT_UNDER} and 4)"
)


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
    parser = arguments.Parser(
        prog="injector",
        description="Mutation testing for PyTorch training code: inject the "
        "catalogued training faults and see which ones your guards catch.",
    )
    arguments.add_version(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the operators, with their fault ids and examples")
    listing.add_argument("--format", choices=["text", "json"], default="text")
    listing.set_defaults(handler=_list)

    mutants = commands.add_parser(
        "mutants",
        help="every mutant that would be made of PATH (default: the bundled demo)",
        description="Show every mutant that would be made: id, operator, file, line and diff. "
        "Folders are walked, honouring .gitignore and skipping tests and virtualenvs. "
        "Nothing is written.",
    )
    mutants.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    mutants.add_argument(
        "--operators",
        type=_ids,
        metavar="ID,...",
        help="only these fault ids (default: [tool.trainwreck] operators, else all)",
    )
    mutants.add_argument("--format", choices=["text", "json"], default="text")
    mutants.set_defaults(handler=_mutants)

    run = commands.add_parser(
        "run",
        help="run the guards against every mutant of PROJECT (default: the project here)",
        description="A mutation campaign: every mutant against the project's guards, in scratch "
        "copies (the project is never written), with a mutation-coverage report. With no PROJECT, "
        "the project in the current folder (one with a pyproject.toml, setup.py, setup.cfg or "
        "tests/ folder); --demo runs the bundled demo project instead.",
        epilog=REPORT_EXITS,
    )
    run.add_argument(
        "project",
        nargs="?",
        type=Path,
        metavar="PROJECT",
        help="the project's folder (default: the current folder's project)",
    )
    run.add_argument(
        "--demo", action="store_true", help="run the bundled demo training project (a minute or two on 2 cores)"
    )
    run.add_argument(
        "--guard", metavar="CMD", help="what must fail on a mutant (default: [tool.trainwreck] guard, else pytest)"
    )
    run.add_argument("--operators", type=_ids, metavar="ID,...", help="only these fault ids")
    run.add_argument("--jobs", type=_positive_int, default=1, metavar="N", help="mutants run in parallel")
    run.add_argument(
        "--timeout-factor",
        type=_positive_float,
        metavar="F",
        help="a mutant's time limit: F x its tests' baseline time + 5 s (default 3)",
    )
    run.add_argument(
        "--repeat",
        type=_positive_int,
        default=1,
        metavar="K",
        help="run the baseline K times; tests that disagree are flaky and left out",
    )
    run.add_argument(
        "--baseline-timeout",
        type=_positive_float,
        default=600.0,
        metavar="S",
        help="give up if the unmutated guard takes longer (default 600 s)",
    )
    run.add_argument(
        "--fresh",
        action="store_true",
        help="run a `python script.py` / `python -m module` guard in a new interpreter "
        "for every mutant instead of a forked warm one, and import pytest guard tests "
        "afresh for every mutant instead of once (slower; for code that does not "
        "survive a fork; a guard whose tests start CUDA when imported gets this anyway)",
    )
    run.add_argument("--since", metavar="GIT_REF", help="only mutate lines changed since this git ref")
    run.add_argument(
        "--shard",
        type=_shard,
        default=(1, 1),
        metavar="I/N",
        help="run shard I of N (split by mutant id; merge with `injector merge`)",
    )
    cached = run.add_mutually_exclusive_group()
    cached.add_argument(
        "--cache",
        type=Path,
        metavar="PATH",
        help="the outcome cache folder (default: PROJECT/.trainwreck-cache): a mutant "
        "whose code, reaching tests and settings are unchanged takes its last outcome",
    )
    cached.add_argument("--no-cache", action="store_true", help="run every mutant; read and write no cache")
    run.add_argument(
        "--calibrate",
        action="store_true",
        help="keep each caught mutant's guard output as a labelled log (in calibration/ beside "
        "the JSON report, else trainwreck-report/calibration/), have triage explain every log, "
        "and add to the reports how often it named the injected fault (every mutant is run: "
        "a cached outcome has no log)",
    )
    _report_options(run)
    run.set_defaults(handler=_run)

    merge = commands.add_parser("merge", help="join shard reports (JSON) into one report", epilog=REPORT_EXITS)
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    _report_options(merge)
    merge.set_defaults(handler=_merge)

    show = commands.add_parser(
        "show",
        help="one mutant of the last report: its diff and its outcome",
        description="Show one mutant of a campaign's report: its fault, place, outcome (the test "
        "that killed it and its first failure line, or why not) and diff. ID may be a unique "
        "prefix of the mutant's id.",
    )
    show.add_argument("mutant", metavar="ID")
    _report_path_option(show)
    show.set_defaults(handler=_show)

    apply = commands.add_parser(
        "apply",
        help="write one mutant into your files, to debug it (undo with --revert)",
        description="Write one mutant of a campaign's report into the project's own file, to run "
        "and debug it by hand. Refused if the file changed since the report. `--revert` puts the "
        "original back.",
    )
    apply.add_argument("mutant", metavar="ID")
    _report_path_option(apply)
    apply.add_argument(
        "--project",
        type=Path,
        default=Path("."),
        metavar="PATH",
        help="the project the report is about (default: the current folder's)",
    )
    apply.add_argument(
        "--revert", action="store_true", help="take the mutant out again: write back the text the campaign mutated"
    )
    apply.set_defaults(handler=_apply)

    suggest = commands.add_parser(
        "suggest",
        help="a verified guard test for every survivor of the last campaign",
        description="For each surviving mutant (of --report, else of a campaign run now), write a "
        "pytest test from injector.guards that reuses the fixtures and calls of the tests that "
        "reach the mutant, and verify it in a scratch copy: it must pass on the unmutated code "
        "and kill the mutant. Only verified tests are written (with --write), unless --all.",
    )
    suggest.add_argument(
        "project", nargs="?", type=Path, metavar="PROJECT", help="the project's folder (default: the current folder's)"
    )
    suggest.add_argument("--demo", action="store_true", help="the bundled demo project")
    suggest.add_argument(
        "--report", type=Path, metavar="F", help="the campaign's JSON report (default: run a campaign now)"
    )
    suggest.add_argument(
        "--write",
        type=Path,
        metavar="PATH",
        help="a new folder to write the tests to (refused if it exists; default: write nothing)",
    )
    suggest.add_argument(
        "--all", action="store_true", help="write unverified suggestions and stubs too, each marked as such"
    )
    suggest.add_argument(
        "--mutant", action="append", metavar="ID", help="only this survivor (a unique id prefix; repeatable)"
    )
    suggest.add_argument(
        "--max-seconds",
        type=_positive_float,
        default=None,
        metavar="S",
        help="drop suggested tests taking more CPU seconds than this (own and child processes) on the unmutated code (default 2)",
    )
    suggest.add_argument("--json", type=Path, metavar="F", help="the report with each survivor's suggestion, as JSON")
    suggest.add_argument("--markdown", type=Path, metavar="F", help="the same report as markdown")
    suggest.add_argument("--html", type=Path, metavar="F", help="the same report as one HTML file")
    suggest.set_defaults(handler=_suggest)

    init = commands.add_parser(
        "init",
        help="add trainwreck's GitHub Actions workflows and [tool.trainwreck] to a repository",
        description="Add the mutation-campaign and triage workflows to PATH/.github/workflows/ and a "
        "[tool.trainwreck] section to PATH/pyproject.toml. Existing files are edited, not "
        "overwritten (your steps and comments stay); every change is shown as a diff.",
    )
    init.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=Path("."),
        metavar="PATH",
        help="the repository's top folder (default: the current folder)",
    )
    init.add_argument(
        "--shards",
        type=_positive_int,
        metavar="N",
        help="mutation campaign jobs per pull request (default: as installed, else 4)",
    )
    init.add_argument(
        "--runner-labels",
        metavar="LABEL,...",
        help="the GPU runners' labels (default: as installed, else self-hosted,gpu)",
    )
    init.add_argument(
        "--package",
        metavar="SPEC",
        help="what the workflows pip-install as trainwreck, best a git URL pinned to a "
        "commit: 'trainwreck @ git+https://github.com/OWNER/trainwreck@<commit>' "
        "(default: $TRAINWRECK_PACKAGE, else where this trainwreck was installed from: "
        "its git URL and commit, its checkout's origin and HEAD, or its index)",
    )
    init.add_argument("--dry-run", action="store_true", help="show the changes; write nothing")
    init.set_defaults(handler=_init)
    return parser


def _report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="F", help="the report as JSON")
    parser.add_argument("--markdown", type=Path, metavar="F", help="the report as markdown")
    parser.add_argument("--html", type=Path, metavar="F", help="the report as one HTML file")
    parser.add_argument("--mte", type=Path, metavar="F", help="the report in the mutation-testing-elements JSON schema")
    parser.add_argument(
        "--comment",
        type=_pull_request,
        metavar="OWNER/NAME#N",
        help="also keep the markdown report as one comment on this pull request, "
        "edited in place on every run (token from GITHUB_TOKEN; the reports are "
        "written first, and a GitHub failure exits 4)",
    )
    parser.add_argument(
        "--base-report",
        type=_base_report,
        metavar="PATH",
        help="the base branch's last JSON report: the markdown (and the PR comment) shows the score change against it",
    )
    parser.add_argument(
        "--sha",
        type=_sha,
        metavar="SHA",
        help="for --comment: the commit the campaign ran on, to link each survivor "
        "to its line in the pull request (default: $GITHUB_SHA)",
    )
    parser.add_argument(
        "--fail-under",
        type=_percentage,
        metavar="PERCENT",
        help=f"exit {EXIT_UNDER} when the mutation score (as shown: a whole "
        "percentage, floored) is below PERCENT, after writing the reports "
        "(default: [tool.trainwreck] fail-under, else no gate)",
    )
    parser.add_argument(
        "--api-url",
        type=_api_url,
        metavar="URL",
        help="for --comment: the REST API's base URL, for GitHub Enterprise "
        "(default: $GITHUB_API_URL, else https://api.github.com)",
    )


def _report_path_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="a JSON report, or the folder holding report.json "
        "(default: ./trainwreck-report/, where `injector run` writes it)",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, not {text!r}")
    return value


def _base_report(text: str) -> object:
    from injector.report import from_file

    try:
        return from_file(text)  # read now: a bad path fails before the campaign, not after it
    except TrainwreckError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _sha(text: str) -> str:
    sha = text.strip().lower()
    if not (7 <= len(sha) <= 64 and all(c in "0123456789abcdef" for c in sha)):
        raise argparse.ArgumentTypeError(f"not a commit id: {text!r} (expected 7 to 64 hex digits)")
    return sha


def _percentage(text: str) -> float:
    try:
        value = float(text.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 0 to 100, not {text!r}")
    return value


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    try:
        shard = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 2/4, got {text!r}") from None
    if not 1 <= shard[0] <= shard[1]:
        raise argparse.ArgumentTypeError(f"shard {text} does not exist (I must be 1..N)")
    return shard


def _pull_request(text: str) -> object:
    from trainwreck.comment import Target

    try:
        return Target.parse(text)
    except TrainwreckError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _api_url(text: str) -> str:
    from trainwreck.github import api_url

    try:
        return api_url(text)
    except TrainwreckError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
            examples.append({"before": example.before, "after": list(example.after), "diffs": [m.diff for m in made]})
        entries.append(
            {
                "id": op.id,
                "summary": op.summary,
                "title": fault.title,
                "symptoms": fault.symptoms,
                "guard": fault.guard,
                "fix": fault.fix,
                "examples": examples,
            }
        )
    if args.format == "json":
        json.dump({"operators": entries}, sys.stdout, indent=2)
        print()
        return 0
    from injector import render

    render.operators(entries)
    return 0


def _generate(paths: list[Path], operator_ids: list[str] | None):
    """Mutants of `paths` under their project's configuration: (root, settings, files, generation)."""
    from injector import discovery
    from injector.generate import mutants_for_files, skip_listed
    from injector.operators import select

    root = config.find_root(paths[0].resolve() if paths[0].exists() else paths[0])
    settings = config.load(root)
    if settings.paths and any(p.exists() and p.resolve() == root.resolve() for p in paths):
        paths = [root / p for p in settings.paths]
    operators = select(operator_ids or list(settings.operators), list(settings.exclude_operators))
    files, unreadable = discovery.collect(paths, root, settings.exclude_paths)
    if not files:
        raise UsageError(f"no Python files to mutate under {', '.join(map(str, paths))}")
    generation = mutants_for_files(files, operators)
    if settings.skip_mutants:
        marked, stale = skip_listed(generation.mutants, settings.skip_mutants)
        generation = replace(generation, mutants=marked)
        for mutant_id in stale:
            print(f"injector: skip-mutants lists {mutant_id}, which is no mutant of these files", file=sys.stderr)
    for entry in unreadable + generation.skipped:
        print(f"injector: skipped {entry}", file=sys.stderr)
    if generation.files == 0:
        raise UsageError("none of the files could be parsed")
    return root, settings, files, generation, unreadable + generation.skipped


def _mutants(args: argparse.Namespace) -> int:
    from injector import render

    root, _, _, generation, skipped = _generate(args.paths or [DEMO], args.operators)
    if args.format == "json":
        json.dump(
            {
                "schema": "trainwreck.mutants/1",
                "root": str(root),
                "mutants": [m.to_json() for m in generation.mutants],
                "skipped": [{"file": s.relative, "line": s.line, "reason": s.reason} for s in skipped],
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        render.mutants(generation)
    return 0


def _run(args: argparse.Namespace) -> int:
    from injector import campaign, render

    project = _project(args.project, demo=args.demo)
    root = config.find_root(project.resolve())
    settings = config.load(root)
    guard = campaign.Guard.parse(args.guard or settings.guard or "python -m pytest", root)
    corpus = None
    if args.calibrate:
        from injector import calibrate

        corpus = Path(os.path.abspath(calibrate.folder_for(args.json)))
        calibrate.check_writable(corpus)  # now, not after the campaign
    cache = None
    if not args.no_cache:
        from injector.cache import FOLDER, Cache

        folder = Path(os.path.abspath(args.cache if args.cache is not None else root / FOLDER))
        cache = Cache.open(folder, warn=lambda line: print(f"injector: warning: {line}", file=sys.stderr))
    run_settings = campaign.Settings(
        root=root,
        guard=guard,
        jobs=args.jobs,
        repeat=args.repeat,
        timeout_factor=args.timeout_factor or settings.timeout_factor,
        baseline_timeout=args.baseline_timeout,
        fresh=args.fresh,
        # the corpus folder is the campaign's output: never copied into scratch, never digested
        exclude=((cache.folder,) if cache is not None else ()) + ((corpus,) if corpus is not None else ()),
        keep_logs=args.calibrate,
    )
    reuse = None
    if cache is not None:
        reuse, report = _from_cache(cache, run_settings, args, project)
        if report is not None:
            _write_reports(report, args)
            return 0
    # SIGTERM (a cancelled CI job) ends the campaign the way Ctrl-C does: with its clean-up.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        # The workers import the guard and run the baseline while the mutants are made.
        with campaign.Campaign(run_settings) as running:
            mutants, sources = _selected(project, root, args)
            to_run = sum(1 for m in mutants if not m.ignored)  # ignored ones are reported, never run
            with render.CampaignProgress(to_run, project_name=root.name, guard=guard.text) as progress:
                report = running.run(mutants, sources, progress=progress.update, reuse=reuse)
    finally:
        signal.signal(signal.SIGTERM, previous)  # a program calling main() gets its own back
        if cache is not None:
            cache.save()  # what was found, even when interrupted
    if args.shard != (1, 1):
        report = replace(report, shards=(f"{args.shard[0]}/{args.shard[1]}",))
    if corpus is not None:
        from injector import calibrate

        report = replace(report, calibration=calibrate.calibrate(report, running.logs, corpus))
    _write_reports(report, args)
    fail_under = args.fail_under
    if fail_under is None and args.shard == (1, 1):
        # a shard's score is part of one: the configured gate applies to `injector merge`'s
        fail_under = settings.fail_under
    return _gate(report, fail_under)


# What makes a folder a Python project `injector run` can run with no PROJECT argument.
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def _project(given: Path | None, *, demo: bool) -> Path:
    """The folder `injector run` runs: PROJECT, the bundled demo (--demo), else the current
    folder when it is a project (never the demo by surprise)."""
    if demo:
        if given is not None:
            raise UsageError(f"give PROJECT or --demo, not both (PROJECT: {given})")
        return DEMO
    if given is not None:
        if not given.is_dir():
            raise UsageError(f"no such project folder: {given}")
        return given
    here = Path.cwd()
    if any((here / name).is_file() for name in PROJECT_FILES) or (here / "tests").is_dir():
        return Path(".")
    root = config.find_root(here)
    if (root / "pyproject.toml").is_file():  # a subfolder of a project: that project
        return root
    raise UsageError(
        f"no project here ({here} has no pyproject.toml, setup.py, setup.cfg or "
        "tests/ folder): give its folder, `injector run PATH`, or run the bundled "
        "demo with `injector run --demo`"
    )


def _selected(project: Path, root: Path, args: argparse.Namespace):
    """The mutants this run covers: (mutants, sources)."""
    from injector import campaign

    _, _, files, generation, _ = _generate([project], args.operators)
    sources = {file.relative: file.text for file in files}
    mutants = generation.mutants
    if args.since:
        mutants = campaign.select_changed(mutants, sources, campaign.changed_lines(root, args.since))
    return campaign.select_shard(mutants, args.shard), sources


def _from_cache(cache, run_settings, args: argparse.Namespace, project: Path):
    """(the cache as this campaign uses it, the whole report when the last run on a tree where
    not one byte has changed since already has every outcome: then no worker starts)."""
    import time
    from datetime import datetime

    from injector import campaign, fingerprint, render

    started = time.monotonic()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    root = run_settings.root
    gpus = campaign.gpu_count()
    key = campaign.settings_digest(run_settings, gpus)
    outputs = [args.json, args.markdown, args.html, args.mte]
    tree = fingerprint.digest_tree(
        root, exclude=(*run_settings.exclude, *(Path(os.path.abspath(p)) for p in outputs if p))
    )
    reuse = campaign.Reuse(cache, key, tree)
    if args.calibrate:  # every mutant runs, for its log; the cache still learns the outcomes
        return reuse, None
    last = cache.last_run(key)
    if last is None or last.tree != tree.whole:
        return reuse, None
    mutants, sources = _selected(project, root, args)
    wanted = [m for m in mutants if not m.ignored]
    if not wanted or any(m.id not in last.outcomes for m in wanted):
        return reuse, None
    results = {m.id: last.outcomes[m.id] for m in wanted}
    render.cache_status(
        f"{root.name}: nothing changed since the last run; all {len(wanted)} outcomes "
        f"from the cache ({cache.folder}), no guard was run"
    )
    report = campaign.build_report(
        run_settings,
        mutants,
        {**results, **campaign.ignored_results(mutants)},
        last.baseline,
        sources,
        gpus=gpus,
        started=started,
        created=created,
        cached=set(results),
        covering=last.covering,
    )
    if args.shard != (1, 1):
        report = replace(report, shards=(f"{args.shard[0]}/{args.shard[1]}",))
    return reuse, report


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _merge(args: argparse.Namespace) -> int:
    from injector import outcomes, report

    fail_under = args.fail_under
    if fail_under is None:  # the shards' project is the one merging them, in CI
        fail_under = config.load(config.find_root(Path.cwd())).fail_under
    merged = outcomes.merge([report.from_file(path) for path in args.reports])
    _write_reports(merged, args)
    return _gate(merged, fail_under)


def _gate(result, fail_under: float | None) -> int:
    """The CI gate: EXIT_UNDER, with one line saying so, when the score is below `fail_under`."""
    if fail_under is None:
        return 0
    if result.percent is None:
        print(
            f"injector: no mutant was covered, so there is no score to hold to --fail-under {fail_under:g}%",
            file=sys.stderr,
        )
        return 0
    if result.percent < fail_under:
        print(f"injector: mutation score {result.percent}% is below --fail-under {fail_under:g}%", file=sys.stderr)
        return EXIT_UNDER
    return 0


def _show(args: argparse.Namespace) -> int:
    from injector import apply, render

    path, result = apply.load(args.report)
    render.mutant_outcome(apply.find(result, args.mutant, str(path)))
    return 0


def _apply(args: argparse.Namespace) -> int:
    from injector import apply

    path, result = apply.load(args.report)
    outcome = apply.find(result, args.mutant, str(path))
    root = config.find_root(args.project.resolve())
    clean = _git_clean(root, outcome.file)
    written = apply.apply(result, outcome, root, revert=args.revert)
    if args.revert:
        print(
            f"injector: took mutant {outcome.mutant_id} out of {written.path}: it is as the campaign found it",
            file=sys.stderr,
        )
        return 0
    undo = f"`injector apply {outcome.mutant_id} --revert`"
    if clean:
        undo += f" or `git checkout -- {outcome.file}`"
    print(
        f"injector: wrote mutant {outcome.mutant_id} ({outcome.operator}: {outcome.description}) "
        f"into {written.path}\n"
        f"injector: warning: that file now holds a deliberately broken training step; "
        f"do not commit it. Undo with {undo}",
        file=sys.stderr,
    )
    return 0


def _git_clean(root: Path, file: str) -> bool:
    """Whether git tracks `file` with no change, so `git checkout` would restore exactly it."""
    import subprocess

    try:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "--", file], cwd=root, capture_output=True)
        changed = subprocess.run(["git", "status", "--porcelain", "--", file], cwd=root, capture_output=True, text=True)
    except OSError:
        return False
    return tracked.returncode == 0 and changed.returncode == 0 and not changed.stdout.strip()


def _suggest(args: argparse.Namespace) -> int:
    import tempfile

    from injector import report as reports
    from injector import suggest
    from injector.suggest import render as shown

    project = _project(args.project, demo=args.demo)
    root = config.find_root(project.resolve())
    if args.write is not None and os.path.lexists(args.write):
        raise UsageError(f"{args.write} exists: give --write a new folder (suggest never overwrites a file)")
    if args.report is not None:
        result = reports.from_file(args.report)
    else:
        with tempfile.TemporaryDirectory(prefix="trainwreck-suggest-") as folder:
            path = Path(folder) / "report.json"
            code = main(["run", str(project), "--json", str(path)])
            if code not in (0, EXIT_UNDER):
                return code
            result = reports.from_file(path)
    outcomes = suggest.survivors(result, args.mutant)
    if not outcomes:
        print("injector: no survivor in the report: nothing to suggest")
        return 0
    folder = _suggest_folder(args.write, root, outcomes)
    limit = args.max_seconds or suggest.MAX_SECONDS
    made = suggest.mutants_of(root, result, outcomes)  # a stale report is refused before any work
    with shown.Progress(len(outcomes), root.name) as progress:
        verdicts = suggest.suggest(result, root, outcomes, folder, progress.update, max_seconds=limit, made=made)
    written = _write_suggestions(verdicts, args.write, include_all=args.all)
    shown.summary(verdicts, written, args.write, folder)
    if args.json or args.markdown or args.html:
        updated = shown.with_suggestions(result, verdicts, folder)
        for path in reports.write(updated, json_path=args.json, markdown_path=args.markdown, html_path=args.html):
            print(f"report: {path}")
    return 0


def _suggest_folder(write: Path | None, root: Path, outcomes) -> str:
    """Where the suggestions are verified in the scratch copy: where --write puts them when
    that is inside the project, else beside the reaching tests."""
    from injector import suggest

    if write is not None:
        target = Path(os.path.abspath(write))
        try:
            return target.relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return suggest.default_folder(outcomes)


def _write_suggestions(verdicts, write: Path | None, *, include_all: bool) -> list[Path]:
    """Write the (verified, or with --all every) suggestion as new files in the new folder `write`."""
    chosen = [v for v in verdicts if v.verified or include_all]
    if write is None or not chosen:
        return []
    try:
        write.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UsageError(f"{write} exists: give --write a new folder (suggest never overwrites a file)") from None
    except OSError as error:
        raise UsageError(f"{write}: cannot create the folder ({error.strerror or error})") from None
    paths = []
    for verdict in chosen:
        path = write / verdict.draft.module
        with open(path, "x", encoding="utf-8") as handle:  # "x": never over an existing file
            handle.write(verdict.draft.text)
        paths.append(path)
    return paths


def _init(args: argparse.Namespace) -> int:
    from injector import init, package

    labels = init.parse_labels(args.runner_labels) if args.runner_labels is not None else None
    if not args.path.is_dir():
        raise UsageError(f"not a folder: {args.path}")
    source = package.resolve(args.package, os.environ)
    if source.spec is None:
        kept = init.installed_package(args.path)
        if kept is None:
            raise UsageError(
                f"cannot tell what CI should install as trainwreck ({source.origin}): "
                f"pass --package '{package.EXAMPLE}' or set ${package.ENV}"
            )
        source = package.Source(kept, "the workflows already installed")
    spec = source.spec
    assert spec is not None  # resolved above, or the error
    plan = init.plan(args.path, package=spec, shards=args.shards, runner_labels=labels)
    if not args.dry_run:
        init.apply(plan)
    init.report(plan, dry_run=args.dry_run)
    print(
        f"package: the workflows install {spec} (from {source.origin}); the repository "
        f"variable {package.ENV} overrides it"
    )
    why = package.unpinned(spec)
    if why:
        print(f"note: {why}; pin a commit for reproducible CI")
    return 0


def _write_reports(result, args: argparse.Namespace) -> None:
    """Write the requested reports (all four under ./trainwreck-report/ if none is named)."""
    from injector import render, report

    base, links = args.base_report, _links(result, args)
    paths = {"json_path": args.json, "markdown_path": args.markdown, "html_path": args.html, "mte_path": args.mte}
    if not any(paths.values()):
        folder = Path("trainwreck-report")
        paths = {
            "json_path": folder / "report.json",
            "markdown_path": folder / "report.md",
            "html_path": folder / "report.html",
            "mte_path": folder / "mutation-testing.json",
        }
    written = report.write(result, **paths, base=base, links=links)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(report.render_markdown(result, base=base, links=links))
    render.campaign_summary(result, written)
    if args.comment is not None:
        _post_comment(result, args, base, links)


def _links(result, args: argparse.Namespace):
    """In PR mode (--comment), links to the pull request's lines: its repository, at the commit
    the campaign ran on (--sha, else GitHub Actions' $GITHUB_SHA); None where either is unknown."""
    from injector.report import SourceLinks

    sha = args.sha or os.environ.get("GITHUB_SHA")
    if args.comment is None or not sha:
        return None
    try:
        sha = _sha(sha)
    except argparse.ArgumentTypeError:
        print("injector: $GITHUB_SHA is not a commit id: survivors are not linked", file=sys.stderr)
        return None
    server = os.environ.get("GITHUB_SERVER_URL") or "https://github.com"
    try:
        return SourceLinks(args.comment.owner, args.comment.name, sha, result.repo_path, server.rstrip("/"))
    except TrainwreckError:  # a $GITHUB_SERVER_URL we cannot link to
        return None


def _post_comment(result, args: argparse.Namespace, base=None, links=None) -> None:
    """Keep the markdown report as the PR's mutation-report comment (the reports are already
    written, so a GitHub failure loses nothing)."""
    from injector import report
    from trainwreck import comment, github

    policy = github.Policy(notify=lambda line: print(f"injector: {line}", file=sys.stderr, flush=True))
    body = report.render_markdown(result, base=base, links=links)
    posted = comment.post(
        body,
        marker=report.MARKER,
        target=args.comment,
        token=github.token_from_env(),
        api=github.api_url(args.api_url),
        policy=policy,
        hint="The JSON and HTML reports have all of it.",
    )
    print(f"injector: {posted.describe()}")


if __name__ == "__main__":
    sys.exit(main())
