"""What every rendering for people says the same way: status labels, durations, a fault's
catalog entry, and the verdicts that needed a second look."""

from __future__ import annotations

from injector import catalog
from injector.outcomes import ERROR, IGNORED, KILLED, NO_COVERAGE, SURVIVED, TIMEOUT, Outcome, Report

LABELS: dict[str, str] = {
    KILLED: "killed",
    TIMEOUT: "timeout",
    SURVIVED: "survived",
    NO_COVERAGE: "no coverage",
    ERROR: "error",
    IGNORED: "ignored",
}


def catalog_entry(fault_id: str) -> catalog.Fault | None:
    """The catalog's entry for a fault id; None for a fault of the project's own."""
    try:
        return catalog.get(fault_id)
    except KeyError:
        return None


def duration_text(seconds: float) -> str:
    """`4.2s`, `3m 05s` or `1h 02m`."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def where(outcome: Outcome) -> str:
    """`file:line` of a mutant."""
    return f"{outcome.file}:{outcome.line}"


def second_looks(report: Report) -> list[str]:
    """Sentences on the verdicts that needed a second run to be right (empty when none did)."""
    order = sum(1 for o in report.outcomes if o.note and "collection order" in o.note)
    alone = sum(1 for o in report.outcomes if o.note and "alone" in o.note)
    said = []
    if order:
        said.append(
            f"{order} kill{'s' if order != 1 else ''} re-judged in collection order: run "
            "fastest first, the guard tests also fail on the unmutated code (they share state)."
        )
    if alone:
        were = "were" if alone != 1 else "was"
        said.append(
            f"{alone} mutant{'s' if alone != 1 else ''} timed out or crashed beside another "
            f"mutant and {were} run again alone; the report gives that run's outcome."
        )
    return said
