"""The report as one self-contained HTML page (inline CSS, a few lines of inline JS)."""

from __future__ import annotations

import html
from collections import Counter

from markupsafe import Markup
from trainwreck_templates import render

from injector.outcomes import ERROR, STATUSES, SURVIVED, Outcome, Report
from injector.report import calibration
from injector.report.facts import LABELS, catalog_entry, duration_text, where
from injector.report.score import Row, cached_text, headline, percent_text, rows
from trainwreck.markdown import split_code


def html_inline(text: str) -> Markup:
    """The same markdown as HTML: code spans become `<code>`, everything else is escaped."""
    out = []
    for is_code, piece in split_code(" ".join(text.split())):
        escaped = html.escape(piece.strip() if is_code else piece)
        out.append(f"<code>{escaped}</code>" if is_code else escaped)
    return Markup("".join(out))


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, text) per diff line: the two header lines, hunk headers, additions, deletions."""
    out = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
            kind = "hunk"
        elif not in_hunk or line.startswith("\\"):
            kind = "meta"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


def _html_mutant(outcome: Outcome) -> dict[str, object]:
    fault = catalog_entry(outcome.operator)
    return {
        "id": outcome.mutant_id,
        "fault": outcome.operator,
        "status": outcome.status,
        "label": LABELS.get(outcome.status, outcome.status),
        "where": where(outcome),
        "file": outcome.file,
        "line": outcome.line,
        "description": html_inline(outcome.description),
        "test": outcome.test,
        "message": outcome.message + (f" ({outcome.note})" if outcome.note else "")
        if outcome.message
        else outcome.note,
        "duration": f"{outcome.duration:.2f}s",
        "diff": _diff_lines(outcome.diff),
        "guard": html_inline(fault.guard) if fault else None,
        "fix": html_inline(fault.fix) if fault else None,
        "suggestion": _suggestion(outcome),
    }


def _suggestion(outcome: Outcome) -> dict[str, object] | None:
    """A survivor's suggested guard test (`injector suggest`), for the card beside its diff."""
    s = outcome.suggestion
    if s is None:
        return None
    return {"path": s.path, "test": s.test, "verified": s.verified, "note": s.note}


def _segments(counts: Counter[str]) -> list[dict[str, object]]:
    total = sum(counts[s] for s in STATUSES)
    return [
        {"status": s, "label": LABELS[s], "count": counts[s], "width": f"{100 * counts[s] / total:.3f}"}
        for s in STATUSES
        if counts[s]
    ]


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, a few lines of inline JS)."""
    counts = report.counts()
    total = Row("total", counts)
    outcomes = sorted(report.outcomes, key=lambda o: (o.file, o.line, o.operator, o.mutant_id))
    table = []
    for row in rows(report):
        fault = catalog_entry(row.id)
        table.append(
            {
                "id": row.id,
                "title": html_inline(fault.title) if fault else "",
                "counts": {s: row.counts[s] for s in STATUSES},
                "total": row.total,
                "percent": row.percent,
                "score": percent_text(row.percent),
                "segments": _segments(row.counts),
            }
        )
    return render(
        "report.html.j2",
        title=headline(report),
        project=report.project,
        guard=report.guard,
        device=report.device,
        shards=", ".join(report.shards),
        duration=duration_text(report.duration),
        baseline=report.baseline,
        baseline_duration=duration_text(report.baseline.duration),
        percent=total.percent,
        score=percent_text(total.percent),
        caught=total.caught,
        covered=total.covered,
        total=total.total,
        counts=[{"status": s, "label": LABELS[s], "count": counts[s]} for s in STATUSES],
        segments=_segments(counts),
        labels=[(s, LABELS[s]) for s in STATUSES],
        rows=table,
        survivors=[_html_mutant(o) for o in outcomes if o.status == SURVIVED],
        errors=[_html_mutant(o) for o in outcomes if o.status == ERROR],
        mutants=[_html_mutant(o) for o in outcomes],
        flaky=list(report.baseline.flaky),
        cached=cached_text(report) if report.cached else None,
        calibration=calibration.html_context(report.calibration),
    )
