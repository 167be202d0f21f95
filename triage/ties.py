"""Ties: the causes the log's evidence cannot rank apart, so triage names none of them first.

A cause's score is the sum of its symptoms' weights (times their strengths) in the cause table,
and its confidence is `1 - exp(-score / 2)` (triage/table.py). The smallest weight the table
gives any symptom is 0.3 (a cancelled job for a collective timeout, an oscillating loss for a
high learning rate, a flat loss for a wrong loss scale); the same 0.3 is the prior that puts
no-grad-training (4.0) above detached-graph (3.7) on the very same error, which says only which
of the two the field shows more often. A difference of at most that much is not a symptom the
log showed: it is one hint or one prior, and presenting the higher cause as "the answer" would
claim more than the log holds. So two causes whose scores differ by no more than `TIE_MARGIN`
tie, and the report says the log cannot tell them apart.
"""

from __future__ import annotations

import math

from triage.records import Cause

TIE_MARGIN = 0.3  # in the table's weight units: the weakest symptom's weight, the largest prior
_ROUNDING = 1e-6  # scores read back from confidences differ from the sum by float rounding


def score_of(confidence: float) -> float:
    """A confidence's score in the table's weight units (the inverse of table.confidence)."""
    if confidence >= 1.0:
        return math.inf
    return -2.0 * math.log1p(-confidence)


def score(cause: Cause) -> float:
    """The cause's score in the table's weight units, read back from its confidence."""
    return score_of(cause.confidence)


def tied_first(causes: tuple[Cause, ...] | list[Cause]) -> tuple[Cause, ...]:
    """The causes tied at the top (best first): empty when the first stands alone (or none)."""
    if len(causes) < 2:
        return ()
    top = score(causes[0])
    tied = tuple(c for c in causes if top - score(c) <= TIE_MARGIN + _ROUNDING)
    return tied if len(tied) > 1 else ()


def sentence(tied: tuple[Cause, ...], ids: list[str] | None = None) -> str:
    """ "the log cannot tell A from B" (or "from B or C"), with the ids as given (escaped)."""
    names = ids if ids is not None else [c.id for c in tied]
    first, rest = names[0], names[1:]
    others = rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + " or " + rest[-1]
    return f"the log cannot tell {first} from {others}"
