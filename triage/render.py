"""Render a triage report for people and machines: terminal text, PR-comment markdown, JSON."""

from __future__ import annotations

import io
import json
import math
import os

from trainwreck.markdown import GITHUB_LIMIT, code_span, defuse_backticks, fit, inline, plain, unping
from triage.explain import Diagnosis
from triage.reader import BLOCK, MAX_LINE
from triage.series import Series

MARKER = "<!-- trainwreck:triage -->"
MAX_EVIDENCE = 6
MAX_CHART_POINTS = 48


def _clean_floats(obj: object) -> object:
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean_floats(v) for v in obj]
    return obj


def json_text(report: Diagnosis) -> str:
    """The report as JSON: `causes` ranked best first, `symptoms`, `series` summaries."""
    return json.dumps(_clean_floats(report.to_json()), indent=2) + "\n"


def _where(report: Diagnosis) -> str:
    name = os.path.basename(report.log)
    extra = []
    if report.sampled:
        extra.append("large log: every line searched, metrics sampled")
    if report.cut_lines:
        lines = "line" if report.cut_lines == 1 else "lines"
        extra.append(f"{report.cut_lines:,} over-long {lines} cut to {MAX_LINE // 1024} KiB for matching")
    if report.events_thinned:
        extra.append(f"{report.events_thinned:,} repeats of event lines not kept")
    if report.crowded_blocks:
        extra.append(
            f"{report.crowded_blocks:,} blocks of {BLOCK // 1024} KiB so crowded with event lines "
            "that only the first line per keyword was read"
        )
    if len(report.ranks) > 1:
        extra.append(f"ranks {', '.join(map(str, report.ranks))}")
    return f"{name} ({report.lines:,} lines" + (", " + "; ".join(extra) if extra else "") + ")"


def text(report: Diagnosis, *, color: bool | None = None, width: int = 100) -> str:
    """The report for a terminal, rendered with rich."""
    from rich.console import Console  # imported here: a JSON or markdown answer needs none of rich
    from rich.markup import escape
    from rich.text import Text

    buf = io.StringIO()
    console = Console(
        file=buf, force_terminal=bool(color), no_color=not color, width=width, highlight=False, soft_wrap=False
    )
    console.print(f"[bold]triage[/bold] {escape(_where(report))}")
    if report.status == "healthy":
        console.print("[green]No failure found.[/green] " + escape(_series_line(report)))
        from triage.detectors.signatures import WARNINGS

        warned = [s for s in report.symptoms if s.name in WARNINGS]
        if warned:
            # a warning PyTorch printed is worth a look even where nothing failed: where the run
            # did not train as it should, these are the causes it points at (named, not asserted)
            console.print("Warnings worth a look (not failures on their own):")
            for s in warned:
                console.print(f"  - {escape(s.name)}: {escape(s.summary)}")
                for e in s.evidence[:1]:
                    console.print(Text(f"      {_loc(e.line)}  {e.text[:80]}"))
            near = _closest(report)
            if near:
                console.print("  if the run did not train as it should, look first at: " + escape(near))
        return buf.getvalue()
    if report.status == "unexplained":
        console.print("[yellow]The run failed, but no catalogued cause fits well enough.[/yellow]")
        near = _closest(report)
        if near:
            console.print("  closest, below the reporting threshold: " + escape(near))
        for s in report.symptoms:
            console.print(f"  - {escape(s.name)}: {escape(s.summary)}")
            for e in s.evidence[:2]:
                console.print(Text(f"      {_loc(e.line)}  {e.text}"))
        return buf.getvalue()
    tied = report.tied
    if tied:
        from triage.ties import TIE_MARGIN, sentence

        console.print(
            f"[yellow]No single answer: {escape(sentence(tied))}[/yellow] (their evidence differs by at most "
            f"{TIE_MARGIN:g} of weight, one hint or one prior; the order below is not a verdict)"
        )
    for n, cause in enumerate(report.causes, 1):
        console.print()
        console.print(
            f"[bold]{n}. {cause.id}[/bold]  [cyan]{100 * cause.confidence:.0f}%[/cyan]  {escape(cause.title)}"
        )
        why = ", ".join(f"{c.symptom} {c.weight:+.2g}" for c in cause.reasons)
        console.print(f"   [dim]because:[/dim] {escape(why)}")
        shown = _shown_before(report, n - 1)
        if shown:
            console.print(f"   [dim]evidence: the same lines as cause {shown}[/dim]")
        for e in () if shown else cause.evidence[:MAX_EVIDENCE]:
            first, *rest = e.text.splitlines() or [""]
            console.print(Text(f"   {_loc(e.line, e.source)}  {first[:160]}", style="dim"))
            for more in rest[:12]:
                console.print(Text(f"                {more[:160]}", style="dim"))
        console.print(f"   [dim]what it looks like:[/dim] {escape(cause.explanation)}")
        console.print(f"   [green]fix:[/green] {escape(cause.fix)}")
    if report.failure_step is not None:
        console.print(f"\nfailure at step {report.failure_step}")
    return buf.getvalue()


def _shown_before(report: Diagnosis, n: int) -> int | None:
    """The number (from 1) of an earlier cause whose evidence, as shown, is cause `n`'s too: a
    candidate named on the same line as the answer above it (an out-of-memory's other causes)
    points back to it instead of quoting the line again."""
    mine = [(e.source, e.line, e.text) for e in report.causes[n].evidence[:MAX_EVIDENCE]]
    if not mine:
        return None
    for k, other in enumerate(report.causes[:n]):
        if mine == [(e.source, e.line, e.text) for e in other.evidence[:MAX_EVIDENCE]]:
            return k + 1
    return None


def _closest(report: Diagnosis) -> str:
    """The causes that came nearest, for a run no cause explains: named, never asserted."""
    from trainwreck.errors import TableError
    from triage import table

    try:
        near = table.rank(list(report.symptoms), table.load(), all_causes=True)[:2]
    except TableError:  # `explain` reports a broken user table itself; here it only costs a hint
        return ""
    return ", ".join(f"{c.id} ({100 * c.confidence:.0f}%)" for c in near)


def _loc(line: int | None, source: str = "log") -> str:
    prefix = {"log": "line", "diff": "diff", "telemetry": "telemetry"}.get(source, source)
    return f"{prefix} {line if line is not None else '?':>6}"


def _series_line(report: Diagnosis) -> str:
    if not report.series:
        return "No metrics recognised in the log."
    parts = []
    for name in ("loss", "val_loss", "accuracy", "val_accuracy", "grad_norm", "lr"):
        s = report.series.get(name)
        if s and s.finite():
            fin = s.finite()
            parts.append(f"{name} {fin[0].value:.4g} -> {fin[-1].value:.4g}")
    return ("Metrics: " + ", ".join(parts) + ".") if parts else "No failure-relevant metrics recognised."


def chart(series: Series, failure_step: int | None) -> str | None:
    """A mermaid xychart of one series, the failure step marked by a bar.

    GitHub's mermaid reads no e-notation (`5.337e+08` breaks the whole block), so every number
    is a plain decimal, and a series too large or too small for four digits is drawn scaled,
    the axis title saying by what. A NaN or inf has no place on a line: its step keeps the
    last finite value on the line, is named in the x label and gets a bar of its own, and the
    title says so. A loss that diverges would flatten the rest, so the line is clipped at ten
    times its early level, and the title says that too.
    """
    pts = series.points
    if len(pts) < 2:
        return None
    stride = max(1, math.ceil(len(pts) / MAX_CHART_POINTS))
    chosen = pts[::stride]
    must = [p for p in pts if not math.isfinite(p.value)][:1]  # the first non-finite one is news
    if failure_step is not None and not any(p.step == failure_step for p in chosen):
        must.append(min(pts, key=lambda p: abs(p.step - failure_step)))
    if must:
        chosen = sorted(set(chosen) | set(must), key=lambda p: (p.line or 0, p.step))
    finite = [p.value for p in chosen if math.isfinite(p.value)]
    if not finite:
        return None
    early = sorted(finite[: max(3, len(finite) // 4)])
    cap = max(10 * abs(early[len(early) // 2]), 1e-12)
    clipped = any(v > cap for v in finite)
    ys: list[float] = []
    last = finite[0]
    for p in chosen:
        if math.isfinite(p.value):
            last = p.value
        ys.append(min(last, cap))
    bad = [not math.isfinite(p.value) for p in chosen]
    scale = _scale(max(abs(v) for v in ys))
    ys = [v / 10**scale for v in ys]
    labels = [f"{p.step} ({_word(p.value)})" if b else str(p.step) for p, b in zip(chosen, bad, strict=False)]
    lines = ["```mermaid", "xychart-beta"]
    title = f"{series.name} by step"
    notes = []
    if failure_step is not None:
        notes.append(f"failure at step {failure_step}")
    if any(bad):
        notes.append(
            f"{sum(bad)} non-finite point{'s' if sum(bad) > 1 else ''} marked by bars, "
            "the line holding the last finite value"
        )
    if clipped:
        notes.append(f"clipped at {_plain(cap)}")
    if notes:
        title += " (" + "; ".join(notes) + ")"
    lines.append(f'    title "{title}"')
    lines.append("    x-axis [" + ", ".join(f'"{label}"' for label in labels) + "]")
    axis = series.name if scale == 0 else f"{series.name} (x 10^{scale})"
    lines.append(f'    y-axis "{axis}"')
    top = max(ys)
    if failure_step is not None:
        at = next((i for i, p in enumerate(chosen) if p.step >= failure_step), len(chosen) - 1)
        marker = [top if i == at else 0.0 for i in range(len(chosen))]
        lines.append("    bar [" + ", ".join(_plain(v) for v in marker) + "]")
    if any(bad):
        lines.append("    bar [" + ", ".join(_plain(top if b else 0.0) for b in bad) + "]")
    lines.append("    line [" + ", ".join(_plain(v) for v in ys) + "]")
    lines.append("```")
    return "\n".join(lines)


def _scale(biggest: float) -> int:
    """The power of ten to divide by so the largest value has at most four integer digits
    (or, for tiny series, so it is at least 0.01)."""
    if biggest <= 0 or not math.isfinite(biggest):
        return 0
    exp = math.floor(math.log10(biggest))
    if exp >= 4:
        return exp
    if exp < -2:
        return exp
    return 0


def _plain(v: float) -> str:
    """A number as mermaid reads it: a plain decimal with about four significant digits."""
    if v == 0 or not math.isfinite(v):
        return "0"
    digits = min(10, max(0, 3 - math.floor(math.log10(abs(v)))))
    text = f"{v:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


def _word(v: float) -> str:
    return "NaN" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _fence(text: str) -> str:
    # evidence sits verbatim inside the template's ``` fence: no backtick run in it may reach
    # three (so no line of it can close the fence), and mentions stay inert
    return unping(defuse_backticks(text))


def markdown(report: Diagnosis) -> str:
    """The PR-comment body, from `templates/triage_comment.md.j2`."""
    charts = []
    for name in ("loss", "grad_norm"):
        s = report.series.get(name)
        if s is not None:
            c = chart(s, report.failure_step)
            if c:
                charts.append(c)
    # Every string a user can choose (a cause table's ids, titles and fixes; the log's file
    # name; evidence from the log or diff) goes through trainwreck.markdown's escaping: no
    # mention, HTML, link or fence from any of them reaches the comment live.
    causes = []
    for n, cause in enumerate(report.causes):
        shown = _shown_before(report, n)
        causes.append(
            {
                "id": code_span(cause.id),
                "confidence": f"{100 * cause.confidence:.0f}%",
                "title": inline(cause.title),
                "explanation": inline(cause.explanation),
                "fix": inline(cause.fix),
                "because": ", ".join(f"{code_span(r.symptom)} ({r.weight:+.2g})" for r in cause.reasons),
                "evidence": []
                if shown
                else [_fence(f"{_loc(e.line, e.source)}: {e.text[:240]}") for e in cause.evidence[:MAX_EVIDENCE]],
                "same_as": shown,
            }
        )
    symptoms = [{"name": code_span(s.name), "summary": plain(s.summary)} for s in report.symptoms]
    from triage.ties import TIE_MARGIN, sentence

    tie = sentence(report.tied, [code_span(c.id) for c in report.tied]) if report.tied else None
    from trainwreck_templates import render as render_template

    body = render_template(
        "triage_comment.md.j2",
        marker=MARKER,
        where=plain(_where(report)),
        status=report.status,
        causes=causes,
        tie=tie,
        tie_margin=f"{TIE_MARGIN:g}",
        symptoms=symptoms,
        charts=charts,
        failure_step=report.failure_step,
        metrics=_series_line(report),
    )
    return fit(body, GITHUB_LIMIT, hint="`triage explain` on the log shows all of it.")
