"""Render a triage report for people and machines: terminal text, PR-comment markdown, JSON."""

from __future__ import annotations

import io
import json
import math
import os

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from trainwreck_templates import render as render_template

from triage.explain import Report
from triage.reader import BLOCK, MAX_LINE
from injector.markdown import defuse_backticks, fit, plain, unping
from triage.series import Series

MARKER = "<!-- trainwreck:triage -->"
MAX_EVIDENCE = 6
MAX_CHART_POINTS = 48
COMMENT_LIMIT = 60_000  # GitHub rejects comment bodies over 65,536 characters


def _clean_floats(obj: object) -> object:
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean_floats(v) for v in obj]
    return obj


def json_text(report: Report) -> str:
    """The report as JSON: `causes` ranked best first, `symptoms`, `series` summaries."""
    return json.dumps(_clean_floats(report.to_json()), indent=2) + "\n"


def _where(report: Report) -> str:
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
        extra.append(f"{report.crowded_blocks:,} blocks of {BLOCK // 1024} KiB so crowded with event lines "
                     "that only the first line per keyword was read")
    if len(report.ranks) > 1:
        extra.append(f"ranks {', '.join(map(str, report.ranks))}")
    return f"{name} ({report.lines:,} lines" + (", " + "; ".join(extra) if extra else "") + ")"


def text(report: Report, *, color: bool | None = None, width: int = 100) -> str:
    """The report for a terminal, rendered with rich."""
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=bool(color), no_color=not color, width=width,
                      highlight=False, soft_wrap=False)
    console.print(f"[bold]triage[/bold] {escape(_where(report))}")
    if report.status == "healthy":
        console.print("[green]No failure found.[/green] " + escape(_series_line(report)))
        return buf.getvalue()
    if report.status == "unexplained":
        console.print("[yellow]The run failed, but no catalogued cause fits the symptoms.[/yellow]")
        for s in report.symptoms:
            console.print(f"  - {escape(s.name)}: {escape(s.summary)}")
            for e in s.evidence[:2]:
                console.print(Text(f"      {_loc(e.line)}  {e.text}"))
        return buf.getvalue()
    for n, cause in enumerate(report.causes, 1):
        console.print()
        console.print(f"[bold]{n}. {cause.id}[/bold]  [cyan]{100 * cause.confidence:.0f}%[/cyan]  "
                      f"{escape(cause.title)}")
        why = ", ".join(f"{c.symptom} {c.weight:+.2g}" for c in cause.reasons)
        console.print(f"   [dim]because:[/dim] {escape(why)}")
        for e in cause.evidence[:MAX_EVIDENCE]:
            first, *rest = e.text.splitlines() or [""]
            console.print(Text(f"   {_loc(e.line, e.source)}  {first[:160]}", style="dim"))
            for more in rest[:12]:
                console.print(Text(f"                {more[:160]}", style="dim"))
        console.print(f"   [dim]what it looks like:[/dim] {escape(cause.explanation)}")
        console.print(f"   [green]fix:[/green] {escape(cause.fix)}")
    if report.failure_step is not None:
        console.print(f"\nfailure at step {report.failure_step}")
    return buf.getvalue()


def _loc(line: int | None, source: str = "log") -> str:
    prefix = {"log": "line", "diff": "diff", "telemetry": "telemetry"}.get(source, source)
    return f"{prefix} {line if line is not None else '?':>6}"


def _series_line(report: Report) -> str:
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
    """A mermaid xychart of one series, the failure step marked by a bar."""
    pts = series.points
    if len(pts) < 2:
        return None
    stride = max(1, math.ceil(len(pts) / MAX_CHART_POINTS))
    chosen = pts[::stride]
    if failure_step is not None and not any(p.step == failure_step for p in chosen):
        near = min(pts, key=lambda p: abs(p.step - failure_step))
        chosen = sorted(set(chosen) | {near}, key=lambda p: (p.line or 0, p.step))
    finite = [p.value for p in chosen if math.isfinite(p.value)]
    if not finite:
        return None
    # a diverging loss would flatten everything else: clip at 10x the early level
    early = sorted(finite[: max(3, len(finite) // 4)])
    cap = max(10 * abs(early[len(early) // 2]), 1e-12)
    clipped = any(v > cap for v in finite)
    ys = [min(p.value, cap) if math.isfinite(p.value) else cap for p in chosen]
    labels = [str(p.step) for p in chosen]
    lines = ["```mermaid", "xychart-beta"]
    title = f"{series.name} by step"
    if failure_step is not None:
        title += f" (failure at step {failure_step})"
    if clipped:
        title += f", clipped at {cap:.3g}"
    lines.append(f'    title "{title}"')
    lines.append("    x-axis [" + ", ".join(f'"{label}"' for label in labels) + "]")
    lines.append(f'    y-axis "{series.name}"')
    if failure_step is not None:
        at = next((i for i, p in enumerate(chosen) if p.step >= failure_step), len(chosen) - 1)
        top = max(ys)
        marker = [top if i == at else 0 for i in range(len(chosen))]
        lines.append("    bar [" + ", ".join(_num(v) for v in marker) + "]")
    lines.append("    line [" + ", ".join(_num(v) for v in ys) + "]")
    lines.append("```")
    return "\n".join(lines)


def _num(v: float) -> str:
    return f"{v:.4g}" if v else "0"


def _fence(text: str) -> str:
    # evidence sits verbatim inside the template's ``` fence: no backtick run in it may reach
    # three (so no line of it can close the fence), and mentions stay inert
    return unping(defuse_backticks(text))


def markdown(report: Report) -> str:
    """The PR-comment body, from `templates/triage_comment.md.j2`."""
    charts = []
    for name in ("loss", "grad_norm"):
        s = report.series.get(name)
        if s is not None:
            c = chart(s, report.failure_step)
            if c:
                charts.append(c)
    causes = []
    for c in report.causes:
        causes.append({
            "id": c.id, "confidence": f"{100 * c.confidence:.0f}%", "title": c.title,
            "explanation": c.explanation, "fix": c.fix,
            "because": ", ".join(f"`{r.symptom}` ({r.weight:+.2g})" for r in c.reasons),
            "evidence": [f"{_loc(e.line, e.source)}: {_fence(e.text[:240])}" for e in c.evidence[:MAX_EVIDENCE]],
        })
    symptoms = [{"name": s.name, "summary": plain(s.summary)} for s in report.symptoms]
    body = render_template("triage_comment.md.j2", marker=MARKER, where=_where(report),
                           status=report.status, causes=causes, symptoms=symptoms, charts=charts,
                           failure_step=report.failure_step, metrics=_series_line(report))
    return fit(body, COMMENT_LIMIT, hint="`triage explain` on the log shows all of it.")
