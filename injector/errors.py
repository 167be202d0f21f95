"""Errors a user can cause, each with a one-line message; the CLI layer turns them into exit codes."""

from __future__ import annotations


class TrainwreckError(Exception):
    """A problem with the user's input or environment, reported as one line and a non-zero exit."""

    exit_code = 2


class UsageError(TrainwreckError):
    """The command line names something that does not exist (a path, an operator id, a shard)."""


class ConfigError(TrainwreckError):
    """The `[tool.trainwreck]` section of a project's pyproject.toml is malformed."""
