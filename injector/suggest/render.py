"""What `injector suggest` shows: live progress, the verdict per survivor, and the report with
each survivor's suggestion attached."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from injector.outcomes import Report, Suggestion
from injector.suggest.verify import Verdict


class Progress:
    """A rich progress bar over the survivors being verified."""

    def __init__(self, total: int, project: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.console = Console(stderr=True, highlight=False)
        self.bar = Bar(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.header = f"{project}: suggesting guards for {total} survivor{'s' if total != 1 else ''}"
        self.task = self.bar.add_task("drafting", total=total)
        self.verified = 0

    def __enter__(self) -> Progress:
        self.console.print(self.header)
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def update(self, kind: str, verdict: Verdict | None) -> None:
        if kind == "prefilter":
            self.bar.update(self.task, description="running the drafts on the unmutated code")
        elif verdict is not None:
            self.verified += verdict.verified
            self.bar.update(self.task, advance=1, description=f"verifying ({self.verified} verified)")


def summary(verdicts: list[Verdict], written: list[Path], write: Path | None, folder: str) -> None:
    """One row per survivor: fault, place, verdict; then what was written."""
    console = Console(highlight=False)
    table = Table(show_lines=False)
    for column in ("mutant", "fault", "where", "suggestion"):
        table.add_column(column)
    for v in verdicts:
        o = v.outcome
        colour = "green" if v.verified else ("yellow" if v.draft.stub is None else "red")
        table.add_row(o.mutant_id, o.operator, f"{o.file}:{o.line}", f"[{colour}]{escape(v.note)}[/]")
    console.print(table)
    verified = sum(v.verified for v in verdicts)
    stubs = [v for v in verdicts if v.draft.stub is not None]
    console.print(f"{verified} of {len(verdicts)} survivors have a verified guard")
    if stubs:
        console.print(
            f"{len(stubs)} stub{'s' if len(stubs) != 1 else ''}: fill in check_guard() in each "
            "(written only with --all)"
        )
    if written:
        console.print(f"wrote {len(written)} test file{'s' if len(written) != 1 else ''} to {write}")
    elif write is None:
        console.print(f"nothing written: add --write PATH (a new folder, e.g. {folder}) to write them")
    else:
        console.print("nothing written: no verified suggestion (--all writes the others)")


def with_suggestions(report: Report, verdicts: list[Verdict], folder: str) -> Report:
    """`report` with each verdict's suggestion on its survivor's outcome."""
    by_id = {v.outcome.mutant_id: v for v in verdicts}
    outcomes = []
    for outcome in report.outcomes:
        v = by_id.get(outcome.mutant_id)
        if v is not None:
            suggestion = Suggestion(f"{folder}/{v.draft.module}", v.draft.text, v.verified, v.note, v.seconds)
            outcome = replace(outcome, suggestion=suggestion)
        outcomes.append(outcome)
    return replace(report, outcomes=tuple(outcomes))
