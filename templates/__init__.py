"""Jinja2 templates for everything trainwreck renders for people: PR comments and reports.

Installed as the package `trainwreck_templates`; `environment()` loads the templates from it.
"""

from __future__ import annotations

from functools import cache

import jinja2


@cache
def environment() -> jinja2.Environment:
    """The shared template environment (templates end in `.j2`; autoescape only for HTML)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("trainwreck_templates", ""),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def render(name: str, **context: object) -> str:
    """Render the template `name` (e.g. `"triage_comment.md.j2"`) with `context`."""
    return environment().get_template(name).render(**context)
