"""Fault sites in a piece of code: the operators' matchers, reused wherever a fault is named.

Triage asks which catalogued fault sites a diff removes or changes; it gets the answer from the
same operators that inject the faults, so each fault has one definition.
"""

from __future__ import annotations

import textwrap
from collections import Counter

from injector.generate import mutants_for_source
from injector.source import ParseError


def fault_sites(code: str) -> Counter[str]:
    """How many injection sites of each fault id `code` holds.

    `code` may be a fragment (an indented block, the lines of a diff hunk); it is dedented
    first, and a fragment that still does not parse gives an empty Counter rather than an error.
    """
    text = textwrap.dedent(code)
    for attempt in (text, _close_open_blocks(text)):
        counts = _count(attempt)
        if counts is not None:
            return counts
    # Lines cut from different depths of a block: read them one by one.
    total: Counter[str] = Counter()
    for line in text.splitlines():
        total += _count(_close_open_blocks(line.strip())) or Counter()
    return total


def _count(text: str) -> Counter[str] | None:
    try:
        mutants = mutants_for_source(text, "<fragment>")
    except (ParseError, ValueError):
        return None
    counts: Counter[str] = Counter()
    seen: set[tuple[str, int]] = set()
    for mutant in mutants:
        # Several variants at one place (softmax dim -> 0 and -> -2) are one site.
        if (mutant.operator, mutant.edits[0].start) not in seen:
            seen.add((mutant.operator, mutant.edits[0].start))
            counts[mutant.operator] += 1
    return counts


def _close_open_blocks(text: str) -> str:
    """Give a fragment that ends in a block header (`for x in y:`) a body, so it parses."""
    lines = text.rstrip("\n").split("\n")
    if lines and lines[-1].rstrip().endswith(":"):
        indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())]
        lines.append(indent + "    pass")
    return "\n".join(lines) + "\n"
