"""The report as GitHub markdown: a PR comment or a job summary, fitted to GitHub's size limit.

User text (paths, test names, messages, diffs) is fenced or escaped so it can neither break the
markdown nor ping anyone (`trainwreck.markdown`, shared with the triage comment).
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

from markupsafe import Markup
from trainwreck_templates import render

from injector.outcomes import ERROR, IGNORED, KILLED, NO_COVERAGE, STATUSES, SURVIVED, TIMEOUT, Outcome, Report
from injector.report import calibration
from injector.report.facts import LABELS, catalog_entry, duration_text, second_looks, where
from injector.report.html import html_inline
from injector.report.links import SourceLinks
from injector.report.score import Row, cached_text, headline, percent_text, rows
from trainwreck.markdown import GITHUB_LIMIT
from trainwreck.markdown import code_span as md_code
from trainwreck.markdown import fence as md_fence
from trainwreck.markdown import inline as md_inline
from trainwreck.markdown import unping as _unping

MARKER = "<!-- trainwreck:mutation-report -->"  # finds the sticky PR comment again
COLLAPSE_FROM = 6  # from this many survivors on, each fault's survivors fold into <details>
MAX_UNCOVERED = 50  # mutants no guard reaches, listed one line each in the markdown
MAX_MESSAGE_LINES = 20  # of an error's message, in the markdown (the HTML has it all)
MAX_MESSAGE_CHARS = 2_000


def _bar(percent: int | None, width: int = 10) -> str:
    if percent is None:
        return ""
    filled = (percent * width + 50) // 100
    return "█" * filled + "░" * (width - filled)


def _mermaid_pie(counts: Counter[str]) -> str | None:
    slices = [(LABELS[s], counts[s]) for s in STATUSES if counts[s]]
    if not slices:
        return None
    total = sum(n for _, n in slices)
    lines = ["```mermaid", "pie showData", f"    title Outcomes of {total} mutants"]
    lines += [f'    "{label}" : {n}' for label, n in slices]
    lines.append("```")
    return "\n".join(lines)


def _clip(message: str) -> str:
    lines = message.splitlines()
    clipped = "\n".join(lines[:MAX_MESSAGE_LINES])[:MAX_MESSAGE_CHARS]
    return clipped if clipped == "\n".join(lines) else clipped + "\n... (clipped; the HTML report has it all)"


def _markdown_context(
    report: Report, diffs: int, listed: int, base: Report | None = None, links: SourceLinks | None = None
) -> dict[str, object]:
    """What `report.md.j2` shows; only the first `diffs` survivors keep their diff and
    only the first `listed` survivors are listed, so the comment can be fitted to a size."""
    counts = report.counts()
    table = rows(report)
    total = Row("total", counts)
    outcomes = sorted(report.outcomes, key=lambda o: (o.file, o.line, o.mutant_id))
    survivors = [o for o in outcomes if o.status == SURVIVED]
    order = {row.id: index for index, row in enumerate(table)}
    survivors.sort(key=lambda o: order[o.operator])  # stable: grouped by fault, in table order
    errors = [o for o in outcomes if o.status == ERROR]
    uncovered = [o for o in outcomes if o.status == NO_COVERAGE]

    shown = 0

    def entry(outcome: Outcome, with_diff: bool) -> dict[str, object]:
        nonlocal shown
        shown += with_diff
        return {
            "id": md_code(outcome.mutant_id),
            "fault": md_code(outcome.operator),
            "where": _linked(outcome, links),
            "description": md_inline(outcome.description),
            "diff": md_fence(outcome.diff, "diff") if with_diff and shown <= diffs else None,
            "message": md_fence(_unping(_clip(outcome.message))) if outcome.message else None,
            "suggestion": _suggestion(outcome) if with_diff and shown <= diffs else None,
        }

    groups: list[dict[str, Any]] = []
    for outcome in survivors[:listed]:
        if not groups or groups[-1]["id"] != outcome.operator:
            fault = catalog_entry(outcome.operator)
            summary = Markup(f"<code>{html.escape(outcome.operator)}</code>")
            groups.append(
                {
                    "id": outcome.operator,
                    "code": md_code(outcome.operator),
                    "title": md_inline(fault.title) if fault else "(not in the fault catalog)",
                    "guard": md_inline(fault.guard) if fault else None,
                    "fix": md_inline(fault.fix) if fault else None,
                    "summary": summary + ": " + html_inline(f"would be caught by {fault.guard}") if fault else summary,
                    "survivors": [],
                }
            )
        groups[-1]["survivors"].append(entry(outcome, with_diff=bool(outcome.diff)))
    for group in groups:
        group["count"] = len(group["survivors"])

    facts = [f"guard {md_code(report.guard)}", f"device {md_code(report.device)}"]
    if report.project:
        facts.insert(0, f"project {md_code(report.project)}")
    if report.shards and tuple(report.shards) != ("1/1",):
        facts.append(f"shards {', '.join(report.shards)}")
    facts.append(
        f"ran {duration_text(report.duration)} (baseline: {report.baseline.tests} tests "
        f"in {duration_text(report.baseline.duration)})"
    )
    if report.cached:
        facts.append(cached_text(report))
    if report.baseline.cold:
        facts.append(md_inline(report.baseline.cold))

    return {
        "marker": MARKER,
        "title": headline(report),
        "delta": _delta(report, base) if base is not None else None,
        "facts": " · ".join(facts),
        "counts": " · ".join(f"**{counts[s]}** {LABELS[s]}" for s in STATUSES),
        "caught": (
            f"The score counts killed ({counts[KILLED]}) and timed-out ({counts[TIMEOUT]}) "
            f"mutants over the {total.covered} that a guard ran against; mutants no guard "
            f"reaches and mutants that errored are kept apart."
        )
        if total.covered
        else None,
        "pie": _mermaid_pie(counts),
        "rows": [
            {
                "id": md_code(r.id),
                "counts": [r.counts[s] for s in STATUSES],
                "score": f"{_bar(r.percent)} {percent_text(r.percent)}".strip(),
            }
            for r in table
        ],
        "total": {
            "counts": [counts[s] for s in STATUSES],
            "score": f"{_bar(total.percent)} {percent_text(total.percent)}".strip(),
        },
        "labels": [LABELS[s] for s in STATUSES],
        "flaky": [md_code(name) for name in report.baseline.flaky],
        "second_looks": second_looks(report),
        "survived": len(survivors),
        "groups": groups,
        "collapse": len(survivors) >= COLLAPSE_FROM,
        "left_out": len(survivors) - min(listed, len(survivors)),
        "errors": [entry(o, with_diff=False) for o in errors],
        "collapse_errors": len(errors) >= COLLAPSE_FROM,
        "uncovered": [
            {"fault": md_code(o.operator), "where": md_code(where(o)), "description": md_inline(o.description)}
            for o in uncovered[:MAX_UNCOVERED]
        ],
        "uncovered_count": len(uncovered),
        "ignored": [
            {
                "fault": md_code(o.operator),
                "where": md_code(where(o)),
                "description": md_inline(o.description),
                "why": md_inline(o.message or ""),
            }
            for o in outcomes
            if o.status == IGNORED
        ],
        "diffs_left_out": shown > diffs,
        "calibration": calibration.markdown_context(report.calibration),
    }


def _suggestion(outcome: Outcome) -> dict[str, str] | None:
    """A survivor's suggested guard test (`injector suggest`): where, whether verified, the code."""
    s = outcome.suggestion
    if s is None:
        return None
    return {
        "path": md_code(s.path),
        "status": "verified: it passes on the unmutated code and kills this mutant" if s.verified else "not verified",
        "note": md_inline(s.note),
        "test": md_fence(s.test, "python"),
    }


def _linked(outcome: Outcome, links: SourceLinks | None) -> str:
    """`file:line` as code, linked to that line of the pull request where the repository is known."""
    text = md_code(where(outcome))
    return f"[{text}]({links.url(outcome.file, outcome.line)})" if links is not None else text


def _delta(report: Report, base: Report) -> str:
    """The score against the base branch's last report: `71% → 64% (−7 points)`, and the survivors."""
    now, before = report.percent, base.percent
    if now is None or before is None:
        change = "no score to compare"
    elif now == before:
        change = "unchanged"
    else:
        points = abs(now - before)
        change = f"{'+' if now > before else '−'}{points} point{'s' if points != 1 else ''}"
    survivors = f"survivors {base.counts()[SURVIVED]} → {report.counts()[SURVIVED]}"
    return f"**Against the base branch:** score {percent_text(before)} → {percent_text(now)} ({change}) · {survivors}"


def render_markdown(
    report: Report, *, limit: int | None = GITHUB_LIMIT, base: Report | None = None, links: SourceLinks | None = None
) -> str:
    """The report as GitHub markdown (a PR comment or a job summary), at most `limit` characters.

    With `base` (the base branch's last report) it says how the score changed; with `links`
    (the pull request's repository and commit) each survivor's `file:line` links to that line.

    When the whole report is too long, diffs are dropped from the last survivors first, then
    survivors from the end of the list, so the markdown stays well formed (never cut mid-fence).
    Only a report whose summary alone is over the limit comes back longer.
    """
    survivors = report.counts()[SURVIVED]

    def body(diffs: int, listed: int) -> str:
        return render("report.md.j2", **_markdown_context(report, diffs, listed, base, links))

    text = body(survivors, survivors)
    if limit is None or len(text) <= limit:
        return text
    fits = _largest(lambda k: len(body(k, survivors)) <= limit, survivors)
    if fits is not None:
        return body(fits, survivors)
    fits = _largest(lambda k: len(body(0, k)) <= limit, survivors)
    return body(0, fits or 0)


def _largest(ok, high: int) -> int | None:
    """The largest k in [0, high] with ok(k), for ok monotone (true up to some k); None if none."""
    if not ok(0):
        return None
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if ok(middle):
            low = middle
        else:
            high = middle - 1
    return low
