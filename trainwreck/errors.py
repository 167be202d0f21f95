"""Errors a user can cause, each with a one-line message; each CLI turns them into exit codes.

One home for the error types both commands raise: `injector` and `triage` import them from
here, so neither has to import the other to catch what the shared plumbing raises.
"""

from __future__ import annotations


class TrainwreckError(Exception):
    """A problem with the user's input or environment, reported as one line and a non-zero exit."""

    exit_code = 2


class UsageError(TrainwreckError):
    """The command line names something that does not exist (a path, an operator id, a shard)."""


class ConfigError(TrainwreckError):
    """The `[tool.trainwreck]` section of a project's pyproject.toml is malformed."""


class BadInputError(TrainwreckError):
    """The log, diff, telemetry or cause-table file cannot be read as what it claims to be."""


class TableError(BadInputError):
    """A cause table (ours or the user's override) is malformed."""
