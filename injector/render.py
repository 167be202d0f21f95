"""Terminal output for people (rich): operator listings and mutant listings."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _diff(console: Console, text: str) -> None:
    """Colour a diff on a terminal; elsewhere print it byte for byte (it may be applied)."""
    if console.is_terminal:
        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    else:
        console.out(text, highlight=False, end="")


def operators(entries: list[dict]) -> None:
    """Each operator: id, what it injects, what it shows, what catches it, one example diff."""
    console = _console()
    for entry in entries:
        console.rule(f"[bold]{entry['id']}[/bold]", align="left")
        console.print(entry["summary"])
        console.print(f"[dim]shows:[/dim] {entry['symptoms']}")
        console.print(f"[dim]caught by:[/dim] {entry['guard']}")
        _diff(console, entry["examples"][0]["diffs"][0].split("\n", 2)[2])
    console.print(f"{len(entries)} operators")


def mutants(generation) -> None:
    """Every mutant with its diff, then a count per operator."""
    console = _console()
    for mutant in generation.mutants:
        silenced = f"  [dim]ignored: {escape(mutant.ignored)}[/dim]" if mutant.ignored else ""
        console.print(
            f"[bold]{mutant.id}[/bold] [cyan]{mutant.operator}[/cyan] "
            f"{mutant.file}:{mutant.line}  {mutant.description}{silenced}"
        )
        _diff(console, mutant.diff)
    counts = Counter(m.operator for m in generation.mutants)
    ignored = sum(1 for m in generation.mutants if m.ignored)
    table = Table(
        title=f"{len(generation.mutants)} mutants in {generation.files} files "
        f"({generation.lines} lines)" + (f", {ignored} ignored" if ignored else ""),
        title_justify="left",
    )
    table.add_column("operator")
    table.add_column("mutants", justify="right")
    for operator, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(operator, str(count))
    console.print(table)


def mutant_outcome(outcome) -> None:
    """One mutant of a report: what it is, how it fared, and its diff."""
    from injector.report.facts import LABELS

    console = _console()
    console.print(
        f"[bold]{outcome.mutant_id}[/bold] [cyan]{outcome.operator}[/cyan] "
        f"{escape(outcome.file)}:{outcome.line}  {escape(outcome.description)}"
    )
    status = LABELS.get(outcome.status, outcome.status)
    if outcome.test:
        status += f" by {outcome.test}" if outcome.status == "killed" else f" in {outcome.test}"
    console.print(f"[dim]outcome:[/dim] {escape(status)}")
    if outcome.message:
        console.print(f"[dim]message:[/dim] {escape(outcome.message)}")
    if outcome.note:
        console.print(f"[dim]note:[/dim] {escape(outcome.note)}")
    if outcome.covered_by:
        count = len(outcome.covered_by)
        console.print(f"[dim]reached by:[/dim] {count} guard test{'s' if count != 1 else ''}")
    _diff(console, outcome.diff)


class CampaignProgress:
    """A live progress bar for a campaign: baseline, then mutants done, kills, time left."""

    def __init__(self, total: int, project_name: str, guard: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True, highlight=False)
        self.total = total
        self.counts: Counter[str] = Counter()
        self.cached = 0
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.header = f"{project_name}: {total} mutants, guard `{guard}`"
        self.task = self.progress.add_task("baseline", total=None, counts="")

    def __enter__(self) -> CampaignProgress:
        self.console.print(self.header)
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def update(self, kind: str, data: dict) -> None:
        if kind == "baseline_run":
            self.progress.update(self.task, description=f"baseline {data['run']}/{data['of']}")
        elif kind == "baseline":
            flaky = f", {len(data['flaky'])} flaky (left out)" if data["flaky"] else ""
            self.progress.console.print(
                f"baseline: {data['tests']} guard tests pass in {data['duration']:.1f} s{flaky}"
            )
            if data.get("cold"):
                self.progress.console.print(escape(data["cold"]))
            self.progress.update(self.task, description="mutants", total=self.total, completed=0)
        elif kind == "outcome":
            self.counts[data["status"]] += 1
            self.cached += bool(data.get("cached"))
            shown = " ".join(
                f"{name} {self.counts[name]}"
                for name in ("killed", "timeout", "survived", "no_coverage", "error", "ignored")
                if self.counts[name]
            )
            if self.cached:
                shown += f" (cached {self.cached})"
            self.progress.update(self.task, advance=1, counts=shown)


def cache_status(line: str) -> None:
    """One line about the outcome cache, on the progress stream."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(escape(line))


def campaign_summary(report, written: list) -> None:
    """The score, a table per fault id, and where the reports are."""
    from injector.report import cached_text

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    columns = ("killed", "timeout", "survived", "no_coverage", "error", "ignored")
    table = Table(
        title_justify="left",
        title=(
            f"mutation score {report.percent}% ({report.covered} covered mutants, device {report.device})"
            if report.percent is not None
            else f"no mutant was covered by the guards (device {report.device})"
        ),
    )
    table.add_column("fault id")
    for name in columns:
        table.add_column(name.replace("_", " "), justify="right")
    for operator, counts in sorted(report.by_operator().items()):
        table.add_row(operator, *(str(counts[name]) if counts[name] else "" for name in columns))
    console.print(table)
    if report.cached:
        console.print(escape(cached_text(report)) + " (nothing they depend on changed; --no-cache runs them all)")
    if report.calibration is not None:
        calibration_summary(console, report.calibration)
    for path in written:
        console.print(f"report: {path}")


def calibration_summary(console: Console, calibration) -> None:
    """`--calibrate`: what triage made of each fault's caught mutants, and why not, if empty."""
    from injector.calibrate import VERDICTS, headline

    rows = calibration.rows()
    if rows:
        table = Table(title_justify="left", title="triage calibration: did triage name the injected fault?")
        table.add_column("fault id")
        table.add_column("caught", justify="right")
        for label in ("first", "top 3", "other", "none", "no log"):  # the verdicts, short
            table.add_column(label, justify="right")
        table.add_column("symptom", justify="right")
        table.add_column("first of those", justify="right")
        for row in [*rows, calibration.total()]:
            rate = f"{row.first_symptomatic}/{row.symptomatic}" + (f" {row.rate}%" if row.rate is not None else "")
            cells = [str(row.verdicts[v]) if row.verdicts[v] else "" for v in VERDICTS]
            table.add_row(escape(row.fault), str(row.caught), *cells, str(row.symptomatic), rate)
        console.print(table)
    console.print(escape(headline(calibration)))
    if calibration.note and rows:
        console.print(escape(f"note: {calibration.note}"))
    console.print(f"calibration corpus: {escape(calibration.folder)}")
