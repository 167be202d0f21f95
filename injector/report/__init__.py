"""The mutation-coverage report, rendered for people and for tools.

One module per rendering: `markdown` (a PR comment or `$GITHUB_STEP_SUMMARY`), `html` (one
self-contained page), `json` (the report's own versioned JSON, read back by `injector merge`),
`mte` (the mutation-testing-elements schema). `score` and `facts` hold what they all say the
same way; `diffs` re-reads a mutant's diff as a location in its file. Every explanation of a
fault comes from the catalog.
"""

from __future__ import annotations

from pathlib import Path

from injector.outcomes import Report
from injector.report.facts import LABELS, second_looks
from injector.report.html import html_inline, render_html
from injector.report.json import from_file, to_json
from injector.report.links import SourceLinks
from injector.report.markdown import MARKER, render_markdown
from injector.report.mte import mte_text, to_mutation_testing_elements
from injector.report.score import Row, cached_text, headline, rows
from trainwreck.errors import UsageError

__all__ = [
    "LABELS",
    "MARKER",
    "Row",
    "SourceLinks",
    "cached_text",
    "from_file",
    "headline",
    "html_inline",
    "render_html",
    "mte_text",
    "render_markdown",
    "rows",
    "second_looks",
    "to_json",
    "to_mutation_testing_elements",
    "write",
]


def write(
    report: Report,
    json_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
    html_path: str | Path | None = None,
    mte_path: str | Path | None = None,
    *,
    base: Report | None = None,
    links: SourceLinks | None = None,
) -> list[Path]:
    """Write the requested renderings (parent folders created); return the paths written.
    `base` and `links` are for the markdown (see `render_markdown`)."""
    jobs = [
        (json_path, lambda: to_json(report)),
        (markdown_path, lambda: render_markdown(report, base=base, links=links)),
        (html_path, lambda: render_html(report)),
        (mte_path, lambda: mte_text(report)),
    ]
    written: list[Path] = []
    for path, make in jobs:
        if path is None:
            continue
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(make(), encoding="utf-8")
        except OSError as error:
            raise UsageError(f"{path}: cannot write the report ({error.strerror or error})") from None
        written.append(path)
    return written
