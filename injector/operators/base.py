"""The operator protocol: one catalogued fault, where it applies, and how it is injected.

Every operator documents and tests itself: it carries its catalog id, a one-line summary,
before/after examples (every mutant it makes of `before`, in order) and snippets it must leave
alone. One parametrised test runs them all, and `injector list` prints them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from injector.mode_free import built_mode_free, switches_no_module
from injector.mutants import Edit
from injector.patterns import Training, fixed_mode_calls, mode_calls
from injector.source import Source


@dataclass(frozen=True)
class Change:
    """One way to inject the fault: the edits, where they are, and what they do."""

    node: cst.CSTNode
    edits: tuple[Edit, ...]
    description: str


@dataclass(frozen=True)
class Example:
    """`before` and every mutant the operator makes of it, in source order."""

    before: str
    after: tuple[str, ...]


class Operator:
    """Base class: subclasses set the class attributes and implement `changes`."""

    id: ClassVar[str]
    summary: ClassVar[str]
    examples: ClassVar[tuple[Example, ...]]
    untouched: ClassVar[tuple[str, ...]] = ()

    def changes(self, source: Source, training: Training) -> Iterator[Change]:
        raise NotImplementedError  # every concrete operator overrides this


def removed_mode_switches(
    source: Source, training: Training, is_switch, to_train: bool, effect: str
) -> Iterator[Change]:
    """Every way a `.train()`/`.eval()` switch (`is_switch(call)`) can go missing: the call
    dropped from `model = model.eval()`, the call statement deleted, and the project's own
    mode-setting statements (`patterns.mode_calls`) deleted. `effect` ends each description.
    A switch of a model whose modes compute the same, or of an object of the project that is no
    module and switches none (`injector.mode_free`), gets none."""

    def switches(call: cst.Call) -> bool:
        return is_switch(call) and not (
            isinstance(call.func, cst.Attribute)
            and (
                built_mode_free(source, call.func.value)
                or switches_no_module(source, call.func.value, call.func.attr.value)
            )
        )

    for assign in source.nodes(cst.Assign):
        call = assign.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and switches(call):
            receiver = source.module.code_for_node(call.func.value).strip()
            yield Change(
                assign,
                (source.replace(call, receiver),),
                f"removed `.{'train' if to_train else 'eval'}()` on `{receiver}`: {effect}",
            )

    def chained(value: cst.BaseExpression) -> Iterator[cst.Call]:
        """The switches inside a chain of calls in `value`, which go on to another call."""
        for call in source.within(value, cst.Call):
            holder = source.parent(call)
            if (
                call is not value
                and isinstance(call.func, cst.Attribute)
                and isinstance(holder, cst.Attribute)
                and holder.value is call
                and isinstance(source.parent(holder), cst.Call)
                and switches(call)
            ):
                yield call

    for line in source.nodes(cst.Expr):
        # a switch chained with a move in a statement of its own (s3prl's
        # `entry.model.train().to(self.args.device)`): dropped from the chain
        for call in chained(line.value) if source.is_reachable(line) else ():
            receiver = source.module.code_for_node(call.func.value).strip()  # type: ignore[attr-defined]
            yield Change(
                line,
                (source.replace(call, receiver),),
                f"removed `.{'train' if to_train else 'eval'}()` on `{receiver}`: {effect}",
            )
    if not to_train:
        for assign in source.nodes(cst.Assign):
            # a switch inside a chain (stylegan2-ada's snapshot copies: `module = copy.deepcopy(
            # module).eval().requires_grad_(False).cpu()`): dropped from the chain
            for call in chained(assign.value):
                receiver = source.module.code_for_node(call.func.value).strip()  # type: ignore[attr-defined]
                yield Change(assign, (source.replace(call, receiver),), f"removed `.eval()` on `{receiver}`: {effect}")
    yield from _deleted_switches(source, switches, "removed `{code}`: " + effect)
    for statement in fixed_mode_calls(source, training, to_train):
        yield Change(
            statement, (source.delete_statement(statement),), f"removed `{source.code(statement.value)}`: {effect}"
        )
    for statement in mode_calls(source, training, to_train):
        yield Change(
            statement, (source.delete_statement(statement),), f"removed `{source.code(statement.value)}`: {effect}"
        )


def _deleted_switches(source: Source, wanted, description: str) -> Iterator[Change]:
    """`deleted_calls` for mode switches, where a switch written twice in a row (CPC's
    `cpcCriterion.eval()` and `cpcModel.eval()`, each repeated two lines below) is deleted with its
    repeat: either one alone changes nothing, so the repeat gets no mutant of its own."""
    repeats = {}
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if isinstance(call, cst.Call) and wanted(call) and statement not in repeats:
            for repeat in _repeats(source, statement):
                repeats[repeat] = statement
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if not isinstance(call, cst.Call) or not wanted(call) or statement in repeats:
            continue
        if source.is_reachable(statement):
            edits = [source.delete_statement(statement)]
            edits += [source.delete_statement(r) for r, first in repeats.items() if first is statement]
            yield Change(statement, tuple(edits), description.format(code=source.code(call)))


def _repeats(source: Source, statement: cst.Expr) -> list[cst.Expr]:
    """The later statements of `statement`'s block that repeat its call word for word, with
    nothing between them that names its receiver or is more than a simple statement."""
    call = statement.value
    receiver = (
        source.code(call.func.value) if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) else None
    )
    line, siblings = source.block_of(statement)
    if receiver is None or line not in siblings:
        return []
    found = []
    for later in siblings[siblings.index(line) + 1 :]:
        if not isinstance(later, cst.SimpleStatementLine):
            break
        if (
            len(later.body) == 1
            and isinstance(later.body[0], cst.Expr)
            and source.code(later.body[0]) == source.code(statement)
        ):
            found.append(later.body[0])
            continue
        if any(source.code(n) == receiver for n in source.within(later, (cst.Name, cst.Attribute))):
            break
    return found


def deleted_calls(source: Source, wanted, description: str) -> Iterator[Change]:
    """Delete every reachable expression statement whose call satisfies `wanted(call)`."""
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if isinstance(call, cst.Call) and wanted(call) and source.is_reachable(statement):
            yield Change(statement, (source.delete_statement(statement),), description.format(code=source.code(call)))
