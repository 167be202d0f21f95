"""The failure every guard check raises."""

from __future__ import annotations


class GuardFailure(AssertionError):
    """A guard check found its fault in the training code it watched (pytest shows it as a failed assert)."""
