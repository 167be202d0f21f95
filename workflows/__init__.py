"""trainwreck's GitHub Actions workflows, as users adopt them (`injector init` installs them).

Installed as the package `trainwreck_workflows`; `templates()` reads them from it.

- `trainwreck-mutation.yml`: a sharded mutation campaign on each pull request, merged into one
  report (job summary, artifact, PR comment).
- `trainwreck-train.yml` + `trainwreck-triage.yml`: a smoke training under `triage watch` with a
  read-only token, and a separate `workflow_run` job that posts the triage comment without ever
  running the PR's code.
"""

from __future__ import annotations

from importlib import resources


def templates() -> dict[str, str]:
    """Every workflow by file name (e.g. `"trainwreck-train.yml"`), in name order."""
    files = resources.files(__name__)
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in sorted(files.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yml")
    }
