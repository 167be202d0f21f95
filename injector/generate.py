"""From source text to mutants: run the operators over one parsed file."""

from __future__ import annotations

from collections.abc import Iterable

from injector.mutants import Edit, Mutant, apply_edits, mutant_id, unified_diff
from injector.operators import Operator, all_operators
from injector.patterns import Training
from injector.source import Source


def mutants_for_source(text: str, path: str = "<string>",
                       operators: Iterable[Operator] | None = None) -> list[Mutant]:
    """Every mutant the operators make of one file's text, in operator then source order.

    Raises `injector.source.ParseError` if the text is not valid Python.
    """
    source = Source(text, path)
    training = Training(source)
    mutants: list[Mutant] = []
    seen: set[tuple[Edit, ...]] = set()
    for operator in operators if operators is not None else all_operators():
        ordinals: dict[tuple, int] = {}
        for change in operator.changes(source, training):
            edits = tuple(sorted(change.edits))
            if edits in seen or apply_edits(text, edits) == text:
                continue  # the same edit from another operator, or no change at all
            seen.add(edits)
            scope = source.scope_name(change.node)
            key = (scope, edits and tuple((text[e.start:e.end], e.text) for e in edits))
            ordinals[key] = ordinals.get(key, -1) + 1
            mutants.append(Mutant(
                id=mutant_id(path, operator.id, scope, edits, text, ordinals[key]),
                operator=operator.id,
                file=path,
                line=source.line(change.node),
                description=change.description,
                diff=unified_diff(text, edits, path, source.lines),
                edits=edits,
            ))
    return mutants
