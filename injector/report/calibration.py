"""The calibration table (`injector run --calibrate`) as the markdown and HTML reports show it:
per injected fault id, what triage made of the caught mutants' guard output."""

from __future__ import annotations

from injector.calibrate import FIRST, VERDICT_LABELS, VERDICTS, Calibration, Row, headline
from trainwreck.markdown import code_span as md_code
from trainwreck.markdown import inline as md_inline

# a tie is said as a tie, neither right nor wrong: the colour of an errored outcome, apart from both
COLOURS = {
    FIRST: "killed",
    "tied": "error",
    "top3": "timeout",
    "other": "survived",
    "nothing": "no_coverage",
    "no_log": "ignored",
}


def _segments(row: Row) -> list[dict[str, object]]:
    """The row's verdicts as bar segments (their CSS classes reuse the outcome colours)."""
    total = row.caught or 1
    return [
        {
            "status": COLOURS[v],
            "label": VERDICT_LABELS[v],
            "count": row.verdicts[v],
            "width": f"{100 * row.verdicts[v] / total:.3f}",
        }
        for v in VERDICTS
        if row.verdicts[v]
    ]


def _rate(row: Row) -> str:
    return f"{row.first_symptomatic}/{row.symptomatic} ({row.rate}%)" if row.rate is not None else "n/a"


def _bar(row: Row, width: int = 10) -> str:
    """Named first among the caught mutants whose log shows a symptom, as a text bar."""
    if row.rate is None:
        return ""
    filled = (row.rate * width + 50) // 100
    return "█" * filled + "░" * (width - filled)


def markdown_context(calibration: Calibration | None) -> dict[str, object] | None:
    """What `report.md.j2` shows of a calibration (values escaped here), or None without one."""
    if calibration is None:
        return None

    def line(row: Row, strong: bool = False) -> dict[str, object]:
        instead = ", ".join(f"{md_code(cause)} {n}" for cause, n in row.instead.most_common())
        return {
            "fault": "**total**" if strong else md_code(row.fault),
            "caught": row.caught,
            "counts": [row.verdicts[v] for v in VERDICTS],
            "symptomatic": row.symptomatic,
            "rate": f"{_bar(row)} {_rate(row)}".strip(),
            "instead": instead or "",
        }

    rows = calibration.rows()
    return {
        "headline": md_inline(headline(calibration)),
        "labels": [VERDICT_LABELS[v] for v in VERDICTS],
        "rows": [line(r) for r in rows],
        "total": line(calibration.total(), strong=True) if rows else None,
        "note": md_inline(calibration.note) if calibration.note else None,
        "folder": md_code(calibration.folder),
    }


def html_context(calibration: Calibration | None) -> dict[str, object] | None:
    """What `report.html.j2` shows of a calibration (autoescaped there), or None without one."""
    if calibration is None:
        return None

    def line(row: Row) -> dict[str, object]:
        return {
            "fault": row.fault,
            "caught": row.caught,
            "counts": [row.verdicts[v] for v in VERDICTS],
            "segments": _segments(row),
            "symptomatic": row.symptomatic,
            "rate": _rate(row),
            "percent": -1 if row.rate is None else row.rate,
            "instead": ", ".join(f"{cause} {n}" for cause, n in row.instead.most_common()),
        }

    rows = calibration.rows()
    return {
        "headline": headline(calibration),
        "labels": [VERDICT_LABELS[v] for v in VERDICTS],
        "legend": [{"status": COLOURS[v], "label": VERDICT_LABELS[v]} for v in VERDICTS],
        "rows": [line(r) for r in rows],
        "total": line(calibration.total()) if rows else None,
        "note": calibration.note,
        "folder": calibration.folder,
    }
