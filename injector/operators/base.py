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
from injector.patterns import (
    Training,
    bound_parameter,
    dotted,
    enclosing_class,
    fixed_mode_calls,
    inherited_method,
    mode_calls,
    mode_flag_assignments,
    names_data,
)
from injector.source import Source, walk_children


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
                or names_data(call.func.value)
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
    for line in source.nodes(cst.Expr):
        # a switch chosen by a flag in a statement of its own (PyTorch Connectomics' test():
        # `self.model.eval() if self.cfg.INFERENCE.DO_EVAL else self.model.train()`): its arm emptied
        # (the `.train()` arm there picks batch statistics for inference, not a training switch)
        choice = line.value
        if to_train or not isinstance(choice, cst.IfExp) or not source.is_reachable(line):
            continue
        for arm in (choice.body, choice.orelse):
            if isinstance(arm, cst.Call) and isinstance(arm.func, cst.Attribute) and switches(arm):
                code = source.code(arm)
                yield Change(line, (source.replace(arm, "None"),), f"removed `{code}`: {effect}")
    if not to_train:
        for assign in source.nodes(cst.Assign):
            # a switch inside a chain (stylegan2-ada's snapshot copies: `module = copy.deepcopy(
            # module).eval().requires_grad_(False).cpu()`): dropped from the chain
            for call in chained(assign.value):
                receiver = source.module.code_for_node(call.func.value).strip()  # type: ignore[attr-defined]
                yield Change(assign, (source.replace(call, receiver),), f"removed `.eval()` on `{receiver}`: {effect}")
    yield from _deleted_switches(source, training, switches, "removed `{code}`: " + effect)
    for statement in fixed_mode_calls(source, training, to_train):
        yield Change(
            statement, (source.delete_statement(statement),), f"removed `{source.code(statement.value)}`: {effect}"
        )
    for flag in mode_flag_assignments(source, to_train):
        yield Change(flag, (source.delete_statement(flag.body[0]),), f"removed `{source.code(flag.body[0])}`: {effect}")
    for statement in mode_calls(source, training, to_train):
        yield Change(
            statement, (source.delete_statement(statement),), f"removed `{source.code(statement.value)}`: {effect}"
        )


def _deleted_switches(source: Source, training: Training, wanted, description: str) -> Iterator[Change]:
    """`deleted_calls` for mode switches, where a switch written twice in a row (CPC's
    `cpcCriterion.eval()` and `cpcModel.eval()`, each repeated two lines below) is deleted with its
    repeat: either one alone changes nothing, so the repeat gets no mutant of its own. So is a
    switch followed by a call of a function of this file that makes the same switch first thing
    (CogDL's `validate()`: `model_w.eval()`, then `self.val_step(model_w, ...)`, whose first line
    is `model_w.eval()`): the pair is deleted together, and the callee's switch gets no mutant of
    its own where every use of the callee in the file is such a call."""
    repeats: dict[cst.Expr, cst.Expr] = {}
    partners: dict[cst.Expr, list[cst.Expr]] = {}
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if isinstance(call, cst.Call) and wanted(call) and statement not in repeats:
            for repeat in _repeats(source, statement):
                repeats[repeat] = statement
    callers: dict[cst.Expr, list[cst.Expr]] = {}
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if isinstance(call, cst.Call) and wanted(call) and statement not in repeats:
            for callee_switch in _switched_again_in_callees(source, training, statement, wanted):
                partners.setdefault(statement, []).append(callee_switch)
                callers.setdefault(callee_switch, []).append(statement)
    covered = {switch for switch in callers if _every_use_is_paired(source, training, switch, callers[switch])}
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if not isinstance(call, cst.Call) or not wanted(call) or statement in repeats or statement in covered:
            continue
        if source.is_reachable(statement):
            edits = [source.delete_statement(statement)]
            edits += [source.delete_statement(r) for r, first in repeats.items() if first is statement]
            edits += [source.delete_statement(p) for p in partners.get(statement, ())]
            yield Change(statement, tuple(edits), description.format(code=source.code(call)))


# What a statement may do to a model between its switch and the call that switches it again: a
# move keeps its mode.
_MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16"})


def _switched_again_in_callees(source: Source, training: Training, statement: cst.Expr, wanted) -> list[cst.Expr]:
    """The switch statements of the functions of this file that `statement`'s function calls next
    with the switched model, where each function's first use of the model is the same switch: the
    function called by name, or every function handed in for a callable parameter (CogDL's
    `distributed_test(model_w, loader, rank, fn)`, called with `self.val_step` and `self.test_step`)."""
    call = statement.value
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) or call.args:
        return []
    receiver = source.code(call.func.value)
    function = source.function_of(statement)
    if function is None:
        return []
    end = source.span(statement)[1]
    later = sorted(
        (c for c in source.within(function.body, cst.Call) if source.span(c)[0] >= end),
        key=lambda c: source.span(c)[0],
    )
    for later_call in later:
        handed = next((a for a in later_call.args if not a.star and source.code(a.value) == receiver), None)
        if handed is None:
            func = later_call.func
            if source.code(func) == receiver:
                return []  # the model runs here, in the mode just set
            if (
                isinstance(func, cst.Attribute)
                and source.code(func.value) == receiver
                and func.attr.value not in _MOVES
            ):
                return []  # another method of the model (a mode switch, a forward)
            continue
        callees = training.called_functions(later_call) or _handed_in(source, training, function, later_call)
        switches = [_first_switch(source, later_call, handed, callee, receiver, call, wanted) for callee in callees]
        return [s for s in switches if s is not None] if switches and all(switches) else []
    return []


def _handed_in(source: Source, training: Training, function: cst.FunctionDef, call: cst.Call) -> list[cst.FunctionDef]:
    """The functions of this file that every call of `function` hands in for the parameter that
    `call` calls (`fn(model_w, ...)`, where `fn` is `function`'s parameter); [] where any is not
    one (a lambda, a function of another module) or `function` is also used otherwise."""
    if not isinstance(call.func, cst.Name):
        return []
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if call.func.value not in params:
        return []
    method = bool(params) and params[0] == "self"
    position = params.index(call.func.value) - (1 if method else 0)
    found: list[cst.FunctionDef] = []
    for node in source.within(source.module, cst.Name):
        if node.value != function.name.value or node is function.name:
            continue
        holder = source.parent(node)
        use = holder if isinstance(holder, cst.Attribute) and holder.attr is node else node
        caller = source.parent(use)
        if not (isinstance(caller, cst.Call) and caller.func is use and function in training.called_functions(caller)):
            return []
        arg = next((a for a in caller.args if a.keyword is not None and a.keyword.value == call.func.value), None)
        if arg is None and position < len(caller.args) and caller.args[position].keyword is None:
            arg = caller.args[position]
        reference = arg.value if arg is not None else None
        targets = _referenced_functions(source, training, reference) if reference is not None else []
        if not targets:
            return []
        found += [t for t in targets if t not in found]
    return found


def _referenced_functions(source: Source, training: Training, reference: cst.BaseExpression) -> list[cst.FunctionDef]:
    """The functions of this file a reference names (`val_step`; `self.val_step`, a method of the
    class the reference is written in), as a call of it would run."""
    if isinstance(reference, cst.Name):
        return [
            f
            for f in training.functions.get(reference.value, ())
            if not any(isinstance(a, cst.ClassDef) for a in source.ancestors(f))
        ]
    if not (isinstance(reference, cst.Attribute) and dotted(reference.value) == "self"):
        return []
    owner = enclosing_class(source, reference)
    return [
        f
        for f in training.functions.get(reference.attr.value, ())
        if owner is not None and enclosing_class(source, f) is owner
    ]


def _first_switch(
    source: Source,
    call: cst.Call,
    handed: cst.Arg,
    callee: cst.FunctionDef,
    receiver: str,
    switch_call: cst.Call,
    wanted,
) -> cst.Expr | None:
    """The switch statement `callee` starts with on the parameter `handed` binds, where it is the
    same switch as `switch_call` on `receiver`; None otherwise."""
    param = bound_parameter(callee, call, handed, bound=True)  # a method, called or handed in bound
    if param is None:
        return None
    first = next((n for n in source.within(callee.body, cst.Name) if n.value == param), None)
    attribute = source.parent(first) if first is not None else None
    switch = source.parent(attribute) if isinstance(attribute, cst.Attribute) else None
    holder = source.parent(switch) if isinstance(switch, cst.Call) else None
    if (
        isinstance(holder, cst.Expr)
        and isinstance(switch, cst.Call)
        and switch is holder.value
        and switch.func is attribute
        and source.code(switch).replace(param, receiver, 1) == source.code(switch_call)
        and wanted(switch)
    ):
        return holder
    return None


def _every_use_is_paired(source: Source, training: Training, switch: cst.Expr, paired: list[cst.Expr]) -> bool:
    """True where every use of the function holding `switch` is a call made right after one of the
    `paired` switches (so the callee's switch alone never decides the mode)."""
    callee = source.function_of(switch)
    if callee is None:
        return False
    paired_functions = {source.function_of(p) for p in paired}
    name = callee.name.value
    for node in source.within(source.module, cst.Name):
        if node.value != name or node is callee.name:
            continue
        holder = source.parent(node)
        use = holder if isinstance(holder, cst.Attribute) and holder.attr is node else node
        parent = source.parent(use)
        handed_to = source.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(handed_to, cst.Call):
            # handed in for a callable (`self.distributed_test(..., self.val_step)`): paired where
            # the function it is handed to is
            if not set(training.called_functions(handed_to)) & paired_functions:
                return False
            continue
        if not (isinstance(parent, cst.Call) and parent.func is use and callee in training.called_functions(parent)):
            return False  # taken otherwise (stored, returned), or another function's namesake
        if source.function_of(parent) not in paired_functions:
            return False
    return True


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


def inherited_mode_helper_calls(source: Source, training: Training, switch: str) -> list[cst.Expr]:
    """Statements `self.m()` that call, with no argument, a method of a base class in another
    module of the project whose body switches a model's mode with `switch` (`eval`/`train`):
    GeoTransformer's `self.set_eval_mode()`, defined in its BaseTrainer as `self.model.eval()`
    and `torch.set_grad_enabled(False)`."""
    found = []
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if not (
            isinstance(call, cst.Call)
            and not call.args
            and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value == "self"
            and source.is_reachable(statement)
            and not training.called_functions(call)  # a method of this file: its own switches get mutants
        ):
            continue
        owner = enclosing_class(source, call)
        method = inherited_method(training, source, owner, call.func.attr.value, 0) if owner is not None else None
        if method is not None and _switches(method, switch):
            found.append(statement)
    return found


def _switches(method: cst.FunctionDef, switch: str) -> bool:
    """True where the method's own statements call `.<switch>()` with no argument on something."""
    return any(
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == switch
        and not node.args
        for node in walk_children(method.body)
    )
