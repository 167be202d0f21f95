"""Errors a user of `triage` can cause; the CLI turns each into one line on stderr and an exit code."""

from __future__ import annotations

from injector.errors import TrainwreckError


class BadInputError(TrainwreckError):
    """The log, diff, telemetry or cause-table file cannot be read as what it claims to be."""

    exit_code = 2


class TableError(BadInputError):
    """A cause table (ours or the user's override) is malformed."""
