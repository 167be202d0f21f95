"""The operators, one module per catalogued fault; discovered, so adding one is one file."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from injector import catalog
from injector.operators.base import Change, Example, Operator
from trainwreck.errors import UsageError

__all__ = ["Change", "Example", "Operator", "all_operators", "select"]


@cache
def all_operators() -> tuple[Operator, ...]:
    """Every operator, in catalog order."""
    found: dict[str, Operator] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Operator)
                and value is not Operator
                and value.__module__ == module.__name__
            ):
                _check(value, module.__name__)
                found[value.id] = value()
    order = {fault_id: index for index, fault_id in enumerate(catalog.INJECTABLE)}
    return tuple(sorted(found.values(), key=lambda op: order.get(op.id, len(order))))


def _check(operator: type[Operator], module: str) -> None:
    """An operator is declared against the catalog: its id is an injectable fault there, and it
    documents itself with examples (see the module docstring of `base`)."""
    fault = catalog.FAULTS.get(operator.id)
    if fault is None or fault.kind != "injectable":
        raise TypeError(
            f"{module}: operator id {operator.id!r} is not an injectable fault in "
            "injector/catalog.py; add its catalog entry first"
        )
    if not operator.examples:
        raise TypeError(f"{module}: operator {operator.id!r} has no examples")


def select(include: list[str] | None = None, exclude: list[str] | None = None) -> tuple[Operator, ...]:
    """The operators named by `include` (all if empty) minus `exclude`; unknown ids are an error."""
    known = {op.id: op for op in all_operators()}
    wanted = [catalog.ALIASES.get(i, i) for i in include or []]
    unwanted = [catalog.ALIASES.get(i, i) for i in exclude or []]
    unknown = [i for i in wanted + unwanted if i not in known]
    if unknown:
        raise UsageError(f"unknown operator id {unknown[0]!r} (see `injector list`)")
    chosen = [known[i] for i in wanted] if wanted else list(known.values())
    return tuple(op for op in all_operators() if op in chosen and op.id not in unwanted)
