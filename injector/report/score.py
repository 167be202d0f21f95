"""The mutation score as every rendering shows it: per fault id and in total."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from injector.outcomes import IGNORED, KILLED, STATUSES, SURVIVED, TIMEOUT, Report, percent


@dataclass(frozen=True)
class Row:
    """One fault id's outcomes."""

    id: str
    counts: Counter[str]

    @property
    def caught(self) -> int:
        return self.counts[KILLED] + self.counts[TIMEOUT]

    @property
    def covered(self) -> int:
        return self.caught + self.counts[SURVIVED]

    @property
    def total(self) -> int:
        return sum(self.counts[s] for s in STATUSES)

    @property
    def percent(self) -> int | None:
        return percent(self.caught, self.covered)


def rows(report: Report) -> list[Row]:
    """One row per fault id: the weakest-guarded faults first, then by id."""
    table = [Row(fault, counts) for fault, counts in report.by_operator().items()]
    return sorted(table, key=lambda r: (r.percent is None, r.percent or 0, r.id))


def percent_text(percent: int | None) -> str:
    """`41%`, or `n/a` when nothing was covered."""
    return "n/a" if percent is None else f"{percent}%"


def headline(report: Report) -> str:
    """`Mutation score 71% (15 of 21 covered mutants caught)`, or why there is no score."""
    total = Row("", report.counts())
    if not report.outcomes:
        return "Mutation score n/a (no mutants)"
    if not total.covered:
        return "Mutation score n/a (no guard reached any mutant)"
    return (
        f"Mutation score {total.percent}% ({total.caught} of {total.covered} covered "
        f"mutant{'s' if total.covered != 1 else ''} caught)"
    )


def cached_text(report: Report) -> str:
    """How many outcomes came from the outcome cache (nothing they depend on had changed)."""
    run = sum(1 for o in report.outcomes if o.status != IGNORED)
    return f"{report.cached} of {run} outcomes from the cache"
