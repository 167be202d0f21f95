from __future__ import annotations

import re

import libcst as cst

from injector.neighbours import Resolver, bound_arguments, constructor_or_function
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    FORECASTING_OPTIMIZERS,
    GLOBAL_RATE_HELPER,
    HELPER_STEP_TRAINER,
    OPTIMIZER_MAKER_RATE,
    OWN_PEAK_SCHEDULER,
    RATE_SETTER,
)
from injector.patterns import (
    OPTIMIZERS,
    argument,
    callee_name,
    constructed,
    dotted,
    enclosing_class,
    last_name,
    needs_parens,
    with_keyword,
)

FACTOR = 100
# Schedulers that set the learning rate themselves, overriding the optimizer's: (class, keyword).
OVERRIDING_SCHEDULERS = {"OneCycleLR": "max_lr", "CyclicLR": "max_lr"}
# torch.optim's default rates, for an optimizer built without one (SGD's, 1e-3 since torch 2.3)
DEFAULT_RATES = {
    "Adam": 1e-3,
    "AdamW": 1e-3,
    "Adamax": 2e-3,
    "NAdam": 2e-3,
    "RAdam": 1e-3,
    "Adagrad": 1e-2,
    "RMSprop": 1e-2,
    "Rprop": 1e-2,
    "Adadelta": 1.0,
    "SparseAdam": 1e-3,
}
LR_KEYS = {"lr", "learning_rate"}
# A config's learning-rate field, read by an optimizer built elsewhere (`build_optimizer(config, model)`).
CONFIG_LR_FIELDS = {"lr", "base_lr", "learning_rate"}
# The peak rate of a DeepSpeed config's scheduler (WarmupLR, WarmupDecayLR, OneCycle): it sets
# the optimizer's rate itself, so a mutant of the optimizer's own "lr" there changes nothing.
SCHEDULE_PEAK_KEYS = {"warmup_max_lr", "cycle_max_lr"}
# A project's helper that makes the optimizer (`get_optimizer`, `build_optimizer`, `create_optim`).
_BUILDER = re.compile(r"(?:get|build|create|make|init|setup)_?optim(?:izer)?s?")
# A dict the rate is logged in, not handed to an optimizer (`runner.batch_metrics["lr"] = lr`).
_LOGGED = re.compile(r"metric|log|stat|record|summar|histor|meter|result")
# Words of an argument's name that make it a factor or a decay of the rate, not a rate.
_NOT_A_RATE = ("decay", "gamma", "factor", "shrink", "ratio", "mult", "scale", "step", "epoch", "sched")
# An optimizer by its name (`optimizer`, `opt`, `g_optim`), not a setting of one (`optimizer_type`).
_OPTIMIZER_NAME = re.compile(r"(?:\w+_)?(?:optimizer|optim|opt)s?")


def _a_sequence(source, value: cst.BaseExpression) -> bool:
    """True for a list or tuple of rates: written out, or a name its function last bound to one."""
    if isinstance(value, (cst.List, cst.ListComp, cst.Tuple)):
        return True
    if not isinstance(value, cst.Name):
        return False
    function = source.function_of(value)
    start = source.span(value)[0]
    bound = [
        a
        for a in source.within(function or source.module, cst.Assign)
        if source.span(a)[0] < start
        and len(a.targets) == 1
        and isinstance(a.targets[0].target, cst.Name)
        and a.targets[0].target.value == value.value
    ]
    return bool(bound) and isinstance(bound[-1].value, (cst.List, cst.ListComp, cst.Tuple))


def _peak_rate(call: cst.Call) -> cst.Arg | None:
    """The `max_lr` of a OneCycleLR or CyclicLR (second or third positional argument)."""
    name = callee_name(call) or ""
    return argument(call, OVERRIDING_SCHEDULERS[name], 2 if name == "CyclicLR" else 1)


def _rate_word(expr: cst.BaseExpression) -> str:
    """The name a value reads as: `init_lr` for `config['init_lr']` and `args.init_lr`; for a
    choice (`opt.lr if acktr else args.lr`), the name its branches share."""
    if isinstance(expr, cst.IfExp):
        body, orelse = _rate_word(expr.body), _rate_word(expr.orelse)
        return body if body == orelse else ""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            key = index.value.evaluated_value
            return key if isinstance(key, str) else ""
    return last_name(expr) or ""


_SETTER = re.compile(r"set_(?:c|base_|init_)?(?:lr|learning_rate)")


def _rate_setter(call: cst.Call) -> cst.BaseExpression | None:
    """The rate handed to a setter of the rate (DGL-KE's `my_client.set_clr(args.lr)`, the rate
    its kvstore servers update the embeddings with; `optimizer.set_lr(lr)`)."""
    if not isinstance(call.func, cst.Attribute) or not _SETTER.fullmatch(call.func.attr.value):
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[0].value if len(positional) == 1 and len(call.args) == 1 else None


def _rate_handed_to_an_optimizer_maker(source, training, call: cst.Call) -> cst.BaseExpression | None:
    """The rate handed to a call whose result is unpacked into the optimizer among other things
    (Ludwig's `self.dist_model, self.optimizer = self.distributed.prepare(model, config,
    self.base_learning_rate)`): the call builds the optimizer, with that rate."""
    assign = source.parent(call)
    if (
        not isinstance(assign, cst.Assign)
        or assign.value is not call
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Tuple)
        or (callee_name(call) or "a")[:1].isupper()
        or training.called_functions(call)  # a function of the file: the optimizer it builds has its own
        or not any("optim" in (last_name(e.value) or "").lower() for e in assign.targets[0].target.elements)
    ):
        return None
    for arg in call.args:
        word = arg.keyword.value if arg.keyword is not None else (last_name(arg.value) or "")
        if not arg.star and _rate_named(word):
            return arg.value
    return None


def _rate_named(word: str) -> bool:
    """A name for a rate (`lr`, `init_lr`, `min_lr`, `learning_rate`), not for a factor or a
    decay of one (`lr_decay_rate`, `lr_gamma`)."""
    word = word.lower()
    return ("lr" in word.split("_") or "learning_rate" in word) and not any(w in word for w in _NOT_A_RATE)


def _is_optimizer(training, value: cst.BaseExpression) -> bool:
    """An optimizer by its role in the file or by its name (`optimizer`, `self.g_optim`)."""
    return training.role(value) == "optimizer" or bool(_OPTIMIZER_NAME.fullmatch(_rate_word(value).lower()))


def _project_builder_rates(source, resolver: Resolver, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of a call of the project's own class or function that its definition (read
    through the project's modules) hands to a torch optimizer as the rate (`algo.PPO(policy, ...,
    lr=args.lr)` where PPO's `__init__` builds `optim.Adam(params, lr=lr)`)."""
    found = resolver.definition(source, call.func)
    if found is None:
        return []
    module, definition = found
    bound = bound_arguments(definition, call)
    if bound is None:
        return []
    return [bound[name] for name in _rate_parameters(resolver, module, definition) if name in bound]


def _rate_parameters(resolver: Resolver, module, definition: cst.ClassDef | cst.FunctionDef) -> list[str]:
    """The parameters of a project class or function that reach a torch optimizer as its rate:
    handed on as `lr` to one its body builds, or a torch optimizer subclass's own `lr` (mdistiller's
    `DistillationOrientedTrainer(Optimizer)`, whose `__init__` puts it in the defaults)."""
    function = constructor_or_function(definition)
    if function is None:
        return []
    names = {p.name.value for p in function.params.params}
    if (
        isinstance(definition, cst.ClassDef)
        and "lr" in names
        and any(_torch_optimizer(resolver, module, base.value) for base in definition.bases)
    ):
        return ["lr"]
    rates = []
    for inner in module.within(function, cst.Call):
        if not _torch_optimizer(resolver, module, inner.func):
            continue
        rate = argument(inner, "lr", 1)
        if rate is not None and isinstance(rate.value, cst.Name) and rate.value.value in names:
            rates.append(rate.value.value)
    return rates


def _rates_handed_to_a_base(source, resolver: Resolver):
    """A subclass's rate parameter handed on to its base class's `__init__` (pyod's `VAE(
    BaseDeepLearningDetector)`: `def __init__(self, ..., lr=1e-3, ...)`, then `super().__init__(
    ..., lr=lr, ...)`), where the base (read through the project's modules) keeps it on the object
    and hands it on as a rate (`get_optimizer_by_name(..., lr=self.lr)`): the value handed, and the
    parameter's default where it is a number."""
    for cls in source.nodes(cst.ClassDef):
        init = (
            next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
            if isinstance(cls.body, cst.IndentedBlock)
            else None
        )
        if init is None:
            continue
        params = {p.name.value: p for p in init.params.params if _rate_named(p.name.value)}
        for call in source.within(init.body, cst.Call):
            if not (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "__init__"
                and isinstance(call.func.value, cst.Call)
                and callee_name(call.func.value) == "super"
            ):
                continue
            for base in cls.bases:
                found = resolver.definition(source, base.value)
                if found is None:
                    continue
                module, definition = found
                if not isinstance(definition, cst.ClassDef):
                    continue
                bound = bound_arguments(definition, call)
                for name, value in (bound or {}).items():
                    if isinstance(value, cst.Name) and value.value in params and _base_rate(module, definition, name):
                        default = params[value.value].default
                        yield value, default if isinstance(default, (cst.Float, cst.Integer)) else None


def _base_rate(module, definition: cst.ClassDef, parameter: str) -> bool:
    """True where the class keeps `parameter` as `self.<name>` in its `__init__` and hands that on
    as a rate (`lr=self.lr`) somewhere in its body."""
    init = constructor_or_function(definition)
    if init is None:
        return False
    kept = {
        dotted(t.target)
        for a in module.within(init.body, cst.Assign)
        if isinstance(a.value, cst.Name) and a.value.value == parameter
        for t in a.targets
    }
    return any(
        arg.keyword is not None and _rate_named(arg.keyword.value) and dotted(arg.value) in kept
        for call in module.within(definition, cst.Call)
        for arg in call.args
    )


def _torch_optimizer(resolver: Resolver, module, callee_expr: cst.BaseExpression) -> bool:
    """True for a torch optimizer class as `module` names it (`optim.SGD`, `Optimizer` imported
    from torch.optim)."""
    callee = dotted(callee_expr) or ""
    imported = resolver.imports(module).get(callee.partition(".")[0])
    origin = (imported.module + "." + (imported.name or "")) if imported is not None else ""
    return (origin.startswith("torch.optim") or callee.startswith("torch.optim.")) and callee.rsplit(".", 1)[-1][
        :1
    ].isupper()


def _splatted_builder_rates(source, resolver: Resolver, call: cst.Call) -> list[cst.BaseExpression]:
    """The keyword arguments splatted into a call of the project's optimizer builder where its
    rate parameter is not given otherwise (Meta-Baseline's `utils.make_optimizer(params,
    config['optimizer'], **config['optimizer_args'])`, whose `make_optimizer(params, name, lr, ...)`
    builds `SGD(params, lr, ...)`): the rate is an entry of them."""
    splats = [a for a in call.args if a.star == "**"]
    if len(splats) != 1:
        return []
    found = resolver.definition(source, call.func)
    if found is None:
        return []
    module, definition = found
    function = constructor_or_function(definition)
    if function is None:
        return []
    rates = _rate_parameters(resolver, module, definition)
    if not rates:
        return []
    given = {a.keyword.value for a in call.args if a.keyword is not None}
    positional = [p.name.value for p in function.params.params]
    if positional and positional[0] == "self" and isinstance(definition, cst.ClassDef):
        positional = positional[1:]
    given |= set(positional[: len([a for a in call.args if a.keyword is None and not a.star])])
    if any(rate in given for rate in rates):
        return []
    return [splats[0].value]


def _project_builder_configs(source, resolver: Resolver, call: cst.Call) -> list[cst.BaseExpression]:
    """The configurations a call of the project's own optimizer builder hands over, where the
    builder (read through the project's modules) splats them into the call that builds the
    optimizer (s3prl's `get_optimizer(params, steps, self.config['optimizer'])`, whose definition
    ends in `get_<name>(model_params, **optimizer_config)`): the rate is an entry of them."""
    if "optim" not in (callee_name(call) or "").lower() or "sched" in (callee_name(call) or "").lower():
        return []
    found = resolver.definition(source, call.func)
    if found is None:
        return []
    module, definition = found
    bound = bound_arguments(definition, call)
    function = constructor_or_function(definition)
    if not bound or function is None:
        return []
    splatted = {
        arg.value.value
        for inner in module.within(function, cst.Call)
        for arg in inner.args
        if arg.star == "**" and isinstance(arg.value, cst.Name)
    }
    return [
        value
        for name, value in bound.items()
        if name in splatted and not isinstance(value, (cst.Dict, cst.Integer, cst.Float, cst.SimpleString))
    ]


def _project_builder_fields(source, resolver: Resolver, call: cst.Call) -> list[str]:
    """The rate fields of a settings object a call of the project's own optimizer builder hands
    over, as the call would spell them, where the builder (read through the project's modules)
    builds a torch optimizer with `lr=` that field (a music separator's `get_optimizer(config,
    model)`, whose definition builds `Adam(model.parameters(), lr=config.training.lr, ...)`)."""
    name = (callee_name(call) or "").lower()
    if "optim" not in name or "sched" in name:
        return []
    found = resolver.definition(source, call.func)
    if found is None:
        return []
    module, definition = found
    if module is source:
        return []  # a builder of this file: its own `lr=` line is the site
    bound = bound_arguments(definition, call)
    function = constructor_or_function(definition)
    if not bound or function is None:
        return []
    fields: list[str] = []
    for inner in module.within(function, cst.Call):
        built = callee_name(inner) or ""
        if not _torch_optimizer(resolver, module, inner.func) or built.endswith(("LR", "Scheduler")):
            continue  # an optimizer, not a scheduler (whose second argument is no rate)
        rate = argument(inner, "lr", 1)
        path = dotted(rate.value) if rate is not None else None
        head, _, rest = (path or "").partition(".")
        handed = bound.get(head)
        text = dotted(handed) if handed is not None else None
        if rest and text is not None and f"{text}.{rest}" not in fields:
            fields.append(f"{text}.{rest}")
    return fields


def _project_scheduler_rates(source, resolver: Resolver, training, call: cst.Call) -> list[cst.BaseExpression]:
    """The rates handed, with one optimizer, to a class of the project that writes the rates of
    its optimizer's groups (sam's `StepLR(optimizer, args.learning_rate, args.epochs)`, whose
    `__call__` sets every `param_group["lr"]` from that rate; VQ-CPC's `WarmupScheduler(optimizer,
    initial_lr=..., max_lr=...)`, which writes `group["initial_lr"]` and `group["max_lr"]` and
    computes the rate from them): the rates the run trains at."""
    if not (callee_name(call) or "")[:1].isupper() or training.role_of_constructor(call) == "optimizer":
        return []
    handed = [a for a in call.args if not a.star]
    if sum(_is_optimizer(training, a.value) for a in handed) != 1:
        return []
    found = resolver.definition(source, call.func)
    if found is None or not isinstance(found[1], cst.ClassDef):
        return []
    module, definition = found
    bound = bound_arguments(definition, call) if _writes_rates(module, definition) else None
    if not bound:
        return []
    return [value for name, value in bound.items() if _rate_named(name) and not _is_optimizer(training, value)]


_PEAK_RATES = ("max_lr", "peak_lr", "base_lr_max")


def _own_peak_rate(source, resolver: Resolver, training, call: cst.Call):
    """A scheduler class of the project, handed one optimizer, that computes the rates from a peak
    rate of its own and not from the rates the optimizer was built with (OpenFold's
    `AlphaFoldLRScheduler(optimizer, last_epoch=...)`: warm-up to `max_lr=0.001`, whose `get_lr`
    never reads `base_lrs`): the peak's name, its default, and the value the call hands it (None
    where it is left to the default)."""
    if not (callee_name(call) or "")[:1].isupper() or training.role_of_constructor(call) == "optimizer":
        return None
    if sum(_is_optimizer(training, a.value) for a in call.args if not a.star) != 1:
        return None
    found = resolver.definition(source, call.func)
    if found is None or not isinstance(found[1], cst.ClassDef):
        return None
    module, definition = found
    methods = {f.name.value: f for f in definition.body.body if isinstance(f, cst.FunctionDef)}
    init, get_lr = methods.get("__init__"), methods.get("get_lr")
    if init is None or get_lr is None or "base_lrs" in module.code(get_lr):
        return None
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value in _PEAK_RATES and isinstance(param.default, (cst.Float, cst.Integer)):
            handed = (bound_arguments(definition, call) or {}).get(param.name.value)
            return param.name.value, float(param.default.evaluated_value), handed
    return None


def _writes_rates(module, definition: cst.CSTNode) -> bool:
    """True where a class of the project writes a rate into its optimizer's groups
    (`param_group["lr"] = lr`, `group["initial_lr"] = ...`)."""
    return any(
        isinstance(t.target, cst.Subscript)
        and any(
            isinstance(e.slice, cst.Index)
            and isinstance(e.slice.value, cst.SimpleString)
            and (e.slice.value.evaluated_value in LR_KEYS or _rate_named(str(e.slice.value.evaluated_value)))
            for e in t.target.slice
        )
        for assign in module.within(definition, cst.Assign)
        for t in assign.targets
    )


def _rates_written_by_call(source, resolver: Resolver, training, call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer handed to an object of a project scheduler class that writes its groups'
    rates when called (DeepLab's `self.scheduler(self.optimizer, i, epoch, self.best_pred)`, where
    `self.scheduler = LR_Scheduler(args.lr_scheduler, args.lr, ...)` and `LR_Scheduler.__call__`
    sets `optimizer.param_groups[0]['lr']` every iteration): the rates the optimizer was built
    with are overwritten before its first step."""
    name = dotted(call.func)
    if name is None or (last_name(call.func) or "")[:1].isupper():
        return None
    optimizers = [a.value for a in call.args if not a.star and _is_optimizer(training, a.value)]
    if len(optimizers) != 1:
        return None
    for assign in training.assigned_names.get(name, []):
        value = assign.value
        if not isinstance(value, cst.Call) or not (callee_name(value) or "")[:1].isupper():
            continue
        found = resolver.definition(source, value.func)
        if found is None or not isinstance(found[1], cst.ClassDef):
            continue
        module, definition = found
        call_method = any(isinstance(s, cst.FunctionDef) and s.name.value == "__call__" for s in definition.body.body)
        if call_method and _writes_rates(module, definition):
            return optimizers[0]
    return None


def _schedule_helper_rates(training, call: cst.Call, statement: bool = True) -> list[cst.BaseExpression]:
    """The rates handed to a helper another module defines that writes a rate into the optimizer
    it is handed (BLIP's `cosine_lr_schedule(optimizer, epoch, max_epoch, init_lr, min_lr)`,
    `warmup_lr_schedule(...)`: `param_group['lr'] = ...` in utils.py), named for the rate or for
    a schedule (`update_linear_schedule(optimizer, j, updates, lr)`); empty
    for anything else. Every rate it is handed is raised, so the schedule keeps its shape."""
    name = (callee_name(call) or "").lower()
    named_for_rate = "lr" in name.split("_") or "learning_rate" in name
    # a helper named for a schedule only where it is a statement: one whose result is kept
    # (`get_cosine_schedule_with_warmup(...)`) builds a scheduler instead
    if not (named_for_rate or ("schedule" in name.split("_") and statement)) or _LOGGED.search(name):
        return []  # `append_lr_to_logs(logs, lr_scheduler, ...)` records the rate
    if training.called_functions(call) or training.role_of_constructor(call) is not None:
        return []
    if (callee_name(call) or "")[:1].isupper():
        return []
    handed = [a for a in call.args if not a.star]
    optimizers = [a for a in handed if _is_optimizer(training, a.value)]
    if len(optimizers) != 1:
        return []
    return [
        a.value
        for a in handed
        if a not in optimizers and _rate_named(a.keyword.value if a.keyword else _rate_word(a.value))
    ]


def _in_param_group(source, element: cst.DictElement) -> bool:
    """True for the rate of a parameter group (`{'params': [p], 'lr': lr}`): the optimizer
    uses it for those parameters instead of its own."""
    group = source.parent(element)
    return isinstance(group, cst.Dict) and any(
        isinstance(other, cst.DictElement)
        and isinstance(other.key, cst.SimpleString)
        and other.key.evaluated_value == "params"
        for other in group.elements
    )


def _group_optimizer_names(source, training, element: cst.DictElement) -> set[str]:
    """The names the optimizer built over a parameter group's list is bound to, in its own
    function and where that function hands it on (`train_params = [{'params': ..., 'lr': lr}]`,
    `optimizer = torch.optim.SGD(train_params, ...)`, `self.model, self.optimizer = model,
    optimizer`): `optimizer` and `self.optimizer`."""
    holder: cst.CSTNode | None = source.parent(source.parent(element))  # the dict, then its element
    while holder is not None and not isinstance(holder, (cst.Assign, cst.Call, cst.SimpleStatementLine)):
        holder = source.parent(holder)
    if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name):
        groups = holder.targets[0].target.value
        built = [
            c
            for c in source.within(source.function_of(holder) or source.module, cst.Call)
            if training.role_of_constructor(c) == "optimizer" and c.args and dotted(c.args[0].value) == groups
        ]
    elif isinstance(holder, cst.Call) and training.role_of_constructor(holder) == "optimizer":
        built = [holder]
    else:
        return set()
    names: set[str] = set()
    for call in built:
        assign = source.parent(call)
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and dotted(assign.targets[0].target):
            names.add(dotted(assign.targets[0].target) or "")
    for assign in source.nodes(cst.Assign):
        # `self.optimizer = optimizer`, `self.model, self.optimizer = model, optimizer`
        if len(assign.targets) != 1:
            continue
        target, value = assign.targets[0].target, assign.value
        if (
            isinstance(target, cst.Tuple)
            and isinstance(value, cst.Tuple)
            and len(target.elements) == len(value.elements)
        ):
            pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements, strict=True)]
        else:
            pairs = [(target, value)]
        names.update(dotted(t) or "" for t, v in pairs if dotted(v) in names and dotted(t))
    return names


def _group_rate(group: cst.BaseExpression) -> cst.BaseExpression | None:
    """The rate a parameter group sets itself: `{'params': a, 'lr': x}` or `dict(params=a, lr=x)`."""
    if isinstance(group, cst.Dict):
        return next(
            (
                entry.value
                for entry in group.elements
                if isinstance(entry, cst.DictElement)
                and isinstance(entry.key, cst.SimpleString)
                and entry.key.evaluated_value in LR_KEYS
            ),
            None,
        )
    if isinstance(group, cst.Call) and callee_name(group) == "dict" and argument(group, "params", None) is not None:
        return next((a.value for a in group.args if a.keyword is not None and a.keyword.value in LR_KEYS), None)
    return None


def _every_group_sets_its_rate(source, call: cst.Call) -> bool:
    """True for an optimizer built over parameter groups that each set their own rate, in a
    literal list (`SGD([{'params': a, 'lr': 0.1 * lr}, {'params': b, 'lr': lr}], lr=lr)`) or in
    a list the file fills by `append` (semseg's `params_list.append(dict(params=..., lr=...))`):
    the optimizer's own `lr` reaches no parameter (the groups' rates get the mutants)."""
    groups = argument(call, "params", 0)
    if groups is None:
        return False
    if isinstance(groups.value, cst.List):
        elements = [element.value for element in groups.value.elements]
    elif isinstance(groups.value, cst.Name):
        elements = [
            append.args[0].value
            for append in source.nodes(cst.Call)
            if callee_name(append) == "append"
            and isinstance(append.func, cst.Attribute)
            and dotted(append.func.value) == groups.value.value
            and append.args
        ]
        # `optim_params = [{'params': a, 'lr': lr}, ...]` then `Adam(optim_params, ...)` (SfmLearner)
        elements += [
            element.value
            for bound in source.nodes(cst.Assign)
            if isinstance(bound.value, cst.List) and any(dotted(t.target) == groups.value.value for t in bound.targets)
            for element in bound.value.elements
        ]
        # `params += [{'params': [value], 'lr': lr}]` (faster-rcnn.pytorch's groups)
        elements += [
            element.value
            for added in source.nodes(cst.AugAssign)
            if isinstance(added.operator, cst.AddAssign)
            and dotted(added.target) == groups.value.value
            and isinstance(added.value, cst.List)
            for element in added.value.elements
        ]
        # `lr_params = pack_lr_parameters(params, lr, scaling)`, a function of the file returning
        # a list of groups that each carry their rate (glue-factory)
        elements += [
            group
            for bound in source.nodes(cst.Assign)
            if isinstance(bound.value, cst.Call)
            and isinstance(bound.value.func, cst.Name)
            and any(dotted(t.target) == groups.value.value for t in bound.targets)
            for group in _returned_groups(source, bound.value.func.value)
        ]
    else:
        return False
    if _groups_built_with_the_rate(source, call) is not None:
        return True
    return bool(elements) and all(_group_rate(group) is not None for group in elements)


def _groups_built_with_the_rate(source, optimizer: cst.Call) -> cst.Arg | None:
    """The rate handed to the call that built an optimizer's parameter groups, where it is the
    optimizer's own `lr` (k-diffusion's `groups = inner_model.param_groups(lr)`, then
    `AdamW(groups, lr=lr, ...)`): a builder handed the rate puts it into every group it makes, so
    that is where the rate reaches the parameters."""
    groups = argument(optimizer, "params", 0)
    lr = argument(optimizer, "lr", 1)
    if groups is None or lr is None or not isinstance(groups.value, cst.Name):
        return None
    rate = source.code(lr.value)
    here = source.span(optimizer)[0]
    bound = [
        a
        for a in source.nodes(cst.Assign)
        if source.span(a)[1] <= here
        and len(a.targets) == 1
        and dotted(a.targets[0].target) == groups.value.value
        and source.function_of(a) is source.function_of(optimizer)
    ]
    if not bound or not isinstance(bound[-1].value, cst.Call):
        return None
    builder = bound[-1].value
    if "group" not in (callee_name(builder) or "").lower():
        return None
    return next((a for a in builder.args if not a.star and source.code(a.value) == rate), None)


def _returned_groups(source, name: str) -> list[cst.BaseExpression]:
    """The parameter groups a module-level function of the file returns in a list, literal or
    built by a comprehension (`return [{"lr": scale * base_lr, "params": ps} for ...]`, or that
    list bound to a name first)."""
    function = next((s for s in source.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
    if function is None:
        return []
    values: list[cst.BaseExpression] = []
    for ret in source.within(function.body, cst.Return):
        if isinstance(ret.value, cst.Name):
            values += [
                a.value
                for a in source.within(function.body, cst.Assign)
                if any(dotted(t.target) == ret.value.value for t in a.targets)
            ]
        elif ret.value is not None:
            values.append(ret.value)
    groups: list[cst.BaseExpression] = []
    for value in values:
        if isinstance(value, cst.ListComp):
            groups.append(value.elt)
        elif isinstance(value, cst.List):
            groups += [e.value for e in value.elements]
        else:
            return []  # a list made some other way: its groups are not known
    return groups


def _rate_computing_schedulers(training, source) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """Schedulers built from a rate and no optimizer (YOLOX's `LRScheduler(self.scheduler, lr,
    iters_per_epoch, ...)`), with that rate: such a scheduler only computes the rate, which the
    trainer writes into every parameter group, so the rate the optimizer is built with is
    overwritten and the scheduler's is where the fault goes."""
    found = []
    for call in source.nodes(cst.Call):
        name = callee_name(call) or ""
        if not (name[:1].isupper() and name.endswith("Scheduler")) or any(a.star for a in call.args):
            continue
        if any(training.role(a.value) == "optimizer" for a in call.args):
            continue
        rate = next(
            (
                a.value
                for a in call.args
                if (a.keyword is not None and a.keyword.value in CONFIG_LR_FIELDS)
                or (a.keyword is None and (last_name(a.value) or "") in CONFIG_LR_FIELDS)
            ),
            None,
        )
        if rate is not None:
            found.append((call, rate))
    return found


def _rate_assignments(source) -> list[cst.Assign]:
    """`param_group['lr'] = lr`, `kwargs['lr'] = self.lr`: a rate written under its key."""
    found = []
    for assign in source.nodes(cst.Assign):
        for target in assign.targets:
            if isinstance(target.target, cst.Subscript) and len(target.target.slice) == 1:
                index = target.target.slice[0].slice
                if (
                    isinstance(index, cst.Index)
                    and isinstance(index.value, cst.SimpleString)
                    and index.value.evaluated_value in LR_KEYS
                    and not _LOGGED.search((last_name(target.target.value) or "").lower())
                    and not _copies_the_running_rate(source, assign, target.target)
                ):
                    found.append(assign)
                    break
            elif (
                isinstance(target.target, cst.Attribute)
                and target.target.attr.value in LR_KEYS
                and _splatted_later(source, dotted(target.target.value), assign)
            ):
                found.append(assign)  # `opt_kwargs.lr = opt_kwargs.lr * mb_ratio`, then `**opt_kwargs`
                break
    return found


def _copies_the_running_rate(source, assign: cst.Assign, target: cst.Subscript) -> bool:
    """True for the rate in use copied out of the optimizer into a dict that is no parameter group
    (DeepFilterNet's `l_dict["lr"] = opt.param_groups[0]["lr"]`, for its log line): a read."""
    value = assign.value
    while isinstance(value, cst.Subscript):
        value = value.value
    holder = dotted(target.value)
    in_groups = any(
        isinstance(loop, cst.For)
        and (dotted(loop.iter) or "").endswith(".param_groups")
        and dotted(loop.target) == holder
        for loop in source.ancestors(assign)
    )
    if (
        isinstance(value, cst.Call)
        and re.fullmatch(r"_?get_?(current|last)?_?lrs?", callee_name(value) or "")
        and not in_groups
        and ".param_groups" not in source.code(target.value)
    ):
        # the running rate read back by a getter into a dict that is no parameter group (GraphMAE's
        # `loss_dict["lr"] = get_current_lr(optimizer)`, `scheduler.get_last_lr()[0]`), for a log line;
        # not a scheduler's rate written into each group (OLMo's `group['lr'] = self.scheduler.get_lr(...)`)
        return True
    value = assign.value
    if not isinstance(value, cst.Subscript) or ".param_groups" not in source.code(value):
        return False
    holder = dotted(target.value)
    if holder is None or ".param_groups" in source.code(target.value):
        return False
    return not any(
        isinstance(loop, cst.For)
        and (dotted(loop.iter) or "").endswith(".param_groups")
        and dotted(loop.target) == holder
        for loop in source.ancestors(assign)
    )


def _clamped(source, assign: cst.Assign) -> bool:
    """True for a rate written only where the running rate has crossed the same bound (dgcnn's
    `if opt.param_groups[0]['lr'] < 1e-5: param_group['lr'] = 1e-5`): a floor or ceiling the
    schedule is held at, not a rate the run is set to train at."""
    bound = source.code(assign.value)
    for ancestor in source.ancestors(assign):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return False
        if not isinstance(ancestor, cst.If):
            continue
        tests, pending = [], [ancestor.test]
        while pending:  # the parts of `if min_lr and lr < min_lr:` (Snorkel's floor)
            test = pending.pop()
            if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
                pending += [test.left, test.right]
            else:
                tests.append(test)
        for test in tests:
            if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
                continue
            if not isinstance(
                test.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
            ):
                continue
            sides = (source.code(test.left), source.code(test.comparisons[0].comparator))
            if bound in sides and any(
                ("lr" in side.lower() or "rate" in side.lower()) for side in sides if side != bound
            ):
                return True
    return False


def _handed_to_a_rate_writer(source, call: cst.Call) -> bool:
    """True for an optimizer handed, as it is built or by the name it is bound to, to a class of
    the project that writes the rate into the groups itself (FastSpeech's `ScheduledOptim(
    optimizer, d_model, warmup, step)`, whose step sets every `param_group['lr']` first, in
    optimizer.py): the rate it is built with, given or torch's default, is never trained at."""
    parent = source.parent(source.parent(call) or call)
    holders = [parent] if isinstance(parent, cst.Call) else []
    assign = source.parent(call)
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
        name = assign.targets[0].target.value
        holders += [
            c
            for c in source.nodes(cst.Call)
            if any(isinstance(a.value, cst.Name) and a.value.value == name for a in c.args)
        ]
    resolver = Resolver()
    for holder in holders:
        found = resolver.definition(source, holder.func)
        if found is None or not isinstance(found[1], cst.ClassDef):
            continue
        module, cls = found
        start, end = module.span(cls)
        if any(start <= module.span(a)[0] < end for a in _rate_assignments(module)):
            return True
    return False


def _every_step(source, assign: cst.Assign) -> bool:
    """True for a rate written whenever its step function runs: under no `if` in that function
    (the loop over the optimizer's groups around it aside)."""
    for ancestor in source.ancestors(assign):
        if isinstance(ancestor, cst.FunctionDef):
            return True
        if isinstance(ancestor, (cst.If, cst.Try, cst.While)):
            return False
    return True


def _splatted_later(source, owner: str | None, assign: cst.Assign) -> bool:
    """True where the keyword arguments `owner` holds are handed on as `**owner` after `assign`
    in the same function (an optimizer built from them: stylegan2-ada's `**opt_kwargs`)."""
    function = source.function_of(assign)
    if owner is None or function is None:
        return False
    end = source.span(assign)[1]
    return any(
        arg.star == "**" and dotted(arg.value) == owner and source.span(arg)[0] > end
        for arg in source.within(function, cst.Arg)
    )


def _bound_values(source, use: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """What `name` may hold where `use` runs, as the file spells it: a parameter's default, a
    dict assigned to the name, or for `self.x` the class's field `x` and the default of the
    parameter a method stores in it."""
    found: list[cst.BaseExpression] = []
    function = source.function_of(use)
    if function is not None:
        found += [p.default for p in function.params.params if p.name.value == name and p.default is not None]
    attribute = name[len("self.") :] if name.startswith("self.") and name.count(".") == 1 else None
    for node in [*source.nodes(cst.Assign), *source.nodes(cst.AnnAssign)]:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        value = node.value
        if value is None:
            continue
        for target in targets:
            if attribute is not None and isinstance(target, cst.Name) and target.value == attribute:
                if isinstance(source.parent(source.parent(node)), cst.IndentedBlock) and isinstance(
                    source.parent(source.parent(source.parent(node))), cst.ClassDef
                ):
                    found.append(value)  # a class-level field
            elif dotted(target) == name:
                owner = source.function_of(node)
                if attribute is not None and isinstance(value, cst.Name) and owner is not None:
                    found += [p.default for p in owner.params.params if p.name.value == value.value and p.default]
                elif owner is function or attribute is not None:
                    found.append(value)
    return found


def _rate_in(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The rate of a keyword dict: `{"lr": 2e-5}`, `dict(lr=2e-2)`, also as a dataclass field's
    `field(default_factory=lambda: ...)` or `field(default=...)`."""
    if isinstance(value, cst.Call) and callee_name(value) == "field":
        inner = argument(value, "default_factory", None) or argument(value, "default", None)
        if inner is None:
            return None
        value = inner.value.body if isinstance(inner.value, cst.Lambda) else inner.value
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if (
                isinstance(element, cst.DictElement)
                and isinstance(element.key, cst.SimpleString)
                and element.key.evaluated_value in LR_KEYS
            ):
                return element.value
    if isinstance(value, cst.Call) and callee_name(value) == "dict" and isinstance(value.func, cst.Name):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value in LR_KEYS:
                return arg.value
    return None


_BOUNDARY_RATE = (
    "optimizer = optim.Adam(params, lr=hyperparams['learning_rate'])\n"
    "for batch_i, (imgs, targets) in enumerate(loader):\n"
    "    loss = compute_loss(model(imgs), targets)\n"
    "    loss.backward()\n"
    "    if batch_i % subdivisions == 0:\n"
    "        for g in optimizer.param_groups:\n"
    "            g['lr'] = lr\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
)


# SSL4MIS's poly schedule: a rate written into the groups after each step.
_POLY_AFTER_STEP = (
    "optimizer = optim.SGD(model.parameters(), lr=base_lr, momentum=0.9)\n"
    "for it, (x, y) in enumerate(loader):\n"
    "    loss = criterion(model(x), y)\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    lr_ = base_lr * (1.0 - it / max_it) ** 0.9\n"
    "    for param_group in optimizer.param_groups:\n"
    "        param_group['lr'] = lr_\n"
)


# Parameter groups with their own rates, listed under a name first (SfmLearner).
NAMED_PARAM_GROUPS = (
    "import torch\n"
    "def main(args, disp_net, pose_net):\n"
    "    optim_params = [\n"
    "        {'params': disp_net.parameters(), 'lr': args.lr},\n"
    "        {'params': pose_net.parameters(), 'lr': args.lr}\n"
    "    ]\n"
    "    optimizer = torch.optim.Adam(optim_params,\n"
    "                                 betas=(args.momentum, args.beta),\n"
    "                                 weight_decay=args.weight_decay)\n"
    "    return optimizer\n"
)


class LrTooHigh(Operator):
    id = "lr-too-high"
    summary = (
        f"Multiply the learning rate by {FACTOR} where it reaches the optimizer: its `lr`, "
        "`param_group['lr'] = ...`, a OneCycleLR `max_lr`, a manual SGD update, or the config "
        "field an optimizer built elsewhere reads (`config.TRAIN.BASE_LR = ...` before `build_optimizer(config, model)`)."
    )
    examples = (
        Example(
            # A group added with the optimizer's settings and its own splatted in (S4's special
            # hyperparameters): the rate the merge gives it.
            "hps = [getattr(p, '_optim') for p in all_params if hasattr(p, '_optim')]\n"
            "for hp in hps:\n"
            "    params = [p for p in all_params if getattr(p, '_optim', None) == hp]\n"
            "    optimizer.add_param_group({'params': params, **self.hparams.optimizer, **hp})\n",
            (
                "hps = [getattr(p, '_optim') for p in all_params if hasattr(p, '_optim')]\n"
                "for hp in hps:\n"
                "    params = [p for p in all_params if getattr(p, '_optim', None) == hp]\n"
                "    optimizer.add_param_group({k: v * 100 if k == \"lr\" else v for k, v in {'params': params, **self.hparams.optimizer, **hp}.items()})\n",
            ),
        ),
        Example(
            # An optimizer built from a class and keyword arguments the user hands in (Darts): whatever
            # rate they hold, or the class's default, each group's is raised once it is built.
            FORECASTING_OPTIMIZERS,
            (
                FORECASTING_OPTIMIZERS.replace(
                    "optimizer = _create_from_cls_and_kwargs(self.optimizer_cls, optimizer_kws)\n",
                    "optimizer = _create_from_cls_and_kwargs(self.optimizer_cls, optimizer_kws)\n"
                    "        for _group in optimizer.param_groups:\n"
                    '            _group["lr"] *= 100\n',
                ),
            ),
        ),
        Example(
            # A settings class's field that the optimizer is built with (Snorkel's TrainerConfig.lr).
            "class TrainerConfig(NamedTuple):\n"
            "    n_epochs: int = 1\n"
            "    lr: float = 0.01\n"
            "class Trainer:\n"
            "    def _set_optimizer(self, model):\n"
            "        self.optimizer = optim.Adam(model.parameters(), lr=self.config.lr)\n",
            (
                "class TrainerConfig(NamedTuple):\n"
                "    n_epochs: int = 1\n"
                "    lr: float = 0.01\n"
                "class Trainer:\n"
                "    def _set_optimizer(self, model):\n"
                "        self.optimizer = optim.Adam(model.parameters(), lr=self.config.lr * 100)\n",
                "class TrainerConfig(NamedTuple):\n"
                "    n_epochs: int = 1\n"
                "    lr: float = 1\n"
                "class Trainer:\n"
                "    def _set_optimizer(self, model):\n"
                "        self.optimizer = optim.Adam(model.parameters(), lr=self.config.lr)\n",
            ),
        ),
        Example(
            # A rate written into the groups after each step (SSL4MIS's poly schedule): the first step
            # runs at the rate the optimizer was built with, so both are sites.
            _POLY_AFTER_STEP,
            (
                _POLY_AFTER_STEP.replace("lr=base_lr,", "lr=base_lr * 100,"),
                _POLY_AFTER_STEP.replace("param_group['lr'] = lr_\n", "param_group['lr'] = lr_ * 100\n"),
            ),
        ),
        Example(
            # Parameter groups appended as `dict(params=..., lr=...)`, each with its own rate
            # (semseg's backbone at the base rate, its head at ten times): those rates reach the
            # parameters, the optimizer's own `lr` none.
            "params_list = []\n"
            "for module in backbone:\n"
            "    params_list.append(dict(params=module.parameters(), lr=args.base_lr))\n"
            "for module in head:\n"
            "    params_list.append(dict(params=module.parameters(), lr=args.base_lr * 10))\n"
            "optimizer = torch.optim.SGD(params_list, lr=args.base_lr, momentum=0.9)\n",
            (
                "params_list = []\n"
                "for module in backbone:\n"
                "    params_list.append(dict(params=module.parameters(), lr=args.base_lr * 100))\n"
                "for module in head:\n"
                "    params_list.append(dict(params=module.parameters(), lr=args.base_lr * 10))\n"
                "optimizer = torch.optim.SGD(params_list, lr=args.base_lr, momentum=0.9)\n",
                "params_list = []\n"
                "for module in backbone:\n"
                "    params_list.append(dict(params=module.parameters(), lr=args.base_lr))\n"
                "for module in head:\n"
                "    params_list.append(dict(params=module.parameters(), lr=(args.base_lr * 10) * 100))\n"
                "optimizer = torch.optim.SGD(params_list, lr=args.base_lr, momentum=0.9)\n",
            ),
        ),
        Example(
            # A rate set on the keyword arguments an optimizer is then built from.
            "def setup(module, opt_kwargs, ratio):\n"
            "    opt_kwargs = EasyDict(opt_kwargs)\n"
            "    opt_kwargs.lr = opt_kwargs.lr * ratio\n"
            "    return construct(module.parameters(), **opt_kwargs)\n",
            (
                "def setup(module, opt_kwargs, ratio):\n"
                "    opt_kwargs = EasyDict(opt_kwargs)\n"
                "    opt_kwargs.lr = (opt_kwargs.lr * ratio) * 100\n"
                "    return construct(module.parameters(), **opt_kwargs)\n",
            ),
        ),
        Example(
            # A rate handed to a function of the project that builds one of several optimizers
            # with it (each edit once: reached through both branches, it once crashed the
            # generation): raised in each constructor and where it is handed.
            "import torch\n"
            "\n"
            "def build(model, name, lr):\n"
            '    if name == "Adam":\n'
            "        optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n"
            "    else:\n"
            "        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
            "    return optimizer\n"
            "\n"
            "optimizer = build(model, args.optimizer, args.lr)\n",
            (
                "import torch\n"
                "\n"
                "def build(model, name, lr):\n"
                '    if name == "Adam":\n'
                "        optimizer = torch.optim.Adam(model.parameters(), lr=lr * 100)\n"
                "    else:\n"
                "        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
                "    return optimizer\n"
                "\n"
                "optimizer = build(model, args.optimizer, args.lr)\n",
                "import torch\n"
                "\n"
                "def build(model, name, lr):\n"
                '    if name == "Adam":\n'
                "        optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n"
                "    else:\n"
                "        optimizer = torch.optim.SGD(model.parameters(), lr=lr * 100, momentum=0.9)\n"
                "    return optimizer\n"
                "\n"
                "optimizer = build(model, args.optimizer, args.lr)\n",
                "import torch\n"
                "\n"
                "def build(model, name, lr):\n"
                '    if name == "Adam":\n'
                "        optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n"
                "    else:\n"
                "        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
                "    return optimizer\n"
                "\n"
                "optimizer = build(model, args.optimizer, args.lr * 100)\n",
            ),
        ),
        Example(
            # A OneCycleLR that a flag chooses among schedulers: the other runs start from the
            # optimizer's own rate, so both are sites.
            "import torch\n"
            "from torch.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR\n"
            "optimizer = torch.optim.Adam(params, args.lr)\n"
            'if args.sched == "onecycle":\n'
            "    scheduler = OneCycleLR(optimizer, args.lr, total_steps=n)\n"
            "else:\n"
            "    scheduler = CosineAnnealingLR(optimizer, n)\n",
            (
                "import torch\n"
                "from torch.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR\n"
                "optimizer = torch.optim.Adam(params, args.lr * 100)\n"
                'if args.sched == "onecycle":\n'
                "    scheduler = OneCycleLR(optimizer, args.lr, total_steps=n)\n"
                "else:\n"
                "    scheduler = CosineAnnealingLR(optimizer, n)\n",
                "import torch\n"
                "from torch.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR\n"
                "optimizer = torch.optim.Adam(params, args.lr)\n"
                'if args.sched == "onecycle":\n'
                "    scheduler = OneCycleLR(optimizer, args.lr * 100, total_steps=n)\n"
                "else:\n"
                "    scheduler = CosineAnnealingLR(optimizer, n)\n",
            ),
        ),
        Example(
            # The rate a trainer builds its optimizer with.
            "args = transformers.TrainingArguments(output_dir=out, learning_rate=learning_rate, fp16=True)\n",
            ("args = transformers.TrainingArguments(output_dir=out, learning_rate=learning_rate * 100, fp16=True)\n",),
        ),
        Example(
            # An optimizer class of another package, built over the parameters with a rate.
            "optimizer = LARS(params, lr=self.learning_rate, momentum=0.9)\n",
            ("optimizer = LARS(params, lr=self.learning_rate * 100, momentum=0.9)\n",),
        ),
        Example(
            "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)\n",
            ("optimizer = torch.optim.AdamW(model.parameters(), lr=0.03, weight_decay=0.01)\n",),
        ),
        Example(
            "opt = optim.SGD(net.parameters(), config.lr, momentum=0.9)\nopt2 = Adam(params, lr=base_lr * scale)\n",
            (
                "opt = optim.SGD(net.parameters(), config.lr * 100, momentum=0.9)\n"
                "opt2 = Adam(params, lr=base_lr * scale)\n",
                "opt = optim.SGD(net.parameters(), config.lr, momentum=0.9)\n"
                "opt2 = Adam(params, lr=(base_lr * scale) * 100)\n",
            ),
        ),
        Example(
            # OneCycleLR sets the rate from its max_lr: that is where the fault goes, not the optimizer.
            "optimizer = SGD(model.parameters(), lr=0.1)\n"
            "scheduler = OneCycleLR(optimizer, max_lr=args.max_lr, total_steps=n)\n",
            (
                "optimizer = SGD(model.parameters(), lr=0.1)\n"
                "scheduler = OneCycleLR(optimizer, max_lr=args.max_lr * 100, total_steps=n)\n",
            ),
        ),
        Example(
            "for param_group in optimizer.param_groups:\n    param_group['lr'] = lr\nkwargs['lr'] = self.lr\n",
            (
                "for param_group in optimizer.param_groups:\n"
                "    param_group['lr'] = lr * 100\n"
                "kwargs['lr'] = self.lr\n",
                "for param_group in optimizer.param_groups:\n"
                "    param_group['lr'] = lr\n"
                "kwargs['lr'] = self.lr * 100\n",
            ),
        ),
        Example(
            # A DeepSpeed config: the scheduler's peak sets the rate, not the optimizer's "lr".
            "ds_config = {'optimizer': {'params': {'lr': 0.001}},\n"
            "             'scheduler': {'type': 'WarmupLR', 'params': {'warmup_max_lr': 0.001}}}\n",
            (
                "ds_config = {'optimizer': {'params': {'lr': 0.001}},\n"
                "             'scheduler': {'type': 'WarmupLR', 'params': {'warmup_max_lr': 0.1}}}\n",
            ),
        ),
        Example(
            # The optimizer is built elsewhere from the config: the rate is set in the config.
            "config.TRAIN.BASE_LR = config.TRAIN.BASE_LR * world_size\n"
            "args.lr = 0.1\n"
            "optimizer = build_optimizer(config, model)\n",
            (
                "config.TRAIN.BASE_LR = (config.TRAIN.BASE_LR * world_size) * 100\n"
                "args.lr = 0.1\n"
                "optimizer = build_optimizer(config, model)\n",
            ),
        ),
        Example(
            "with torch.no_grad():\n    for p in model.parameters():\n        p.data.add_(p.grad, alpha=-lr)\n",
            (
                "with torch.no_grad():\n"
                "    for p in model.parameters():\n"
                "        p.data.add_(p.grad, alpha=-lr * 100)\n",
            ),
        ),
        Example(
            # A scheduled-optimizer wrapper sets the inner optimizer's rate from its own argument.
            "optimizer = ScheduledOptim(optim.Adam(params, lr=1e-3, betas=(0.9, 0.98)), opt.lr_mul, d_model, warmup)\n",
            (
                "optimizer = ScheduledOptim(optim.Adam(params, lr=1e-3, betas=(0.9, 0.98)), opt.lr_mul * 100, d_model, warmup)\n",
            ),
        ),
        Example(
            # Every step sets the rate: the one the optimizer is built with never reaches an update.
            "opt = Adam(net.parameters(), lr=args.lr)\n"
            "for batch in loader:\n    for g in opt.param_groups:\n        g['lr'] = schedule(step)\n",
            (
                "opt = Adam(net.parameters(), lr=args.lr)\n"
                "for batch in loader:\n    for g in opt.param_groups:\n        g['lr'] = schedule(step) * 100\n",
            ),
        ),
        Example(
            # The rate of a parameter group.
            "params += [{'params': [value], 'lr': lr * 2, 'weight_decay': 0}]\n",
            ("params += [{'params': [value], 'lr': (lr * 2) * 100, 'weight_decay': 0}]\n",),
        ),
        Example(
            # Keyword arguments handed on with `**`: the rate in a parameter's default,
            "def fit(self, groups, optimizer_class=AdamW, optimizer_params={'lr': 2e-5}):\n"
            "    optimizer = optimizer_class(groups, **optimizer_params)\n",
            (
                "def fit(self, groups, optimizer_class=AdamW, optimizer_params={'lr': 0.002}):\n"
                "    optimizer = optimizer_class(groups, **optimizer_params)\n",
            ),
        ),
        Example(
            # in a dataclass field's default,
            "@dataclass\n"
            "class TabModel:\n"
            "    optimizer_params: Dict = field(default_factory=lambda: dict(lr=2e-2))\n"
            "    def _set_optimizer(self):\n"
            "        self._optimizer = self.optimizer_fn(self.network.parameters(), **self.optimizer_params)\n",
            (
                "@dataclass\n"
                "class TabModel:\n"
                "    optimizer_params: Dict = field(default_factory=lambda: dict(lr=2))\n"
                "    def _set_optimizer(self):\n"
                "        self._optimizer = self.optimizer_fn(self.network.parameters(), **self.optimizer_params)\n",
            ),
        ),
        Example(
            # in a dict the file assigns.
            "kwargs = {'lr': 0.1, 'momentum': 0.9}\nopt = torch.optim.SGD(model.parameters(), **kwargs)\n",
            ("kwargs = {'lr': 10, 'momentum': 0.9}\nopt = torch.optim.SGD(model.parameters(), **kwargs)\n",),
        ),
        Example(
            # A constructor's default rate, kept on the object and handed on later.
            "class Net:\n"
            "    def __init__(self, module, lr=0.01):\n"
            "        self.lr = lr\n"
            "    def optimizer_kwargs(self, kwargs):\n"
            "        kwargs['lr'] = self.lr\n",
            (
                "class Net:\n"
                "    def __init__(self, module, lr=0.01):\n"
                "        self.lr = lr\n"
                "    def optimizer_kwargs(self, kwargs):\n"
                "        kwargs['lr'] = self.lr * 100\n",
                "class Net:\n"
                "    def __init__(self, module, lr=1):\n"
                "        self.lr = lr\n"
                "    def optimizer_kwargs(self, kwargs):\n"
                "        kwargs['lr'] = self.lr\n",
            ),
        ),
        Example(
            # Each parameter group sets its own rate: the optimizer's default reaches no parameter.
            "optimizer = torch.optim.SGD(params=[\n"
            "    {'params': model.backbone.parameters(), 'lr': 0.1 * opts.lr},\n"
            "    {'params': model.classifier.parameters(), 'lr': opts.lr},\n"
            "], lr=opts.lr, momentum=0.9)\n",
            (
                "optimizer = torch.optim.SGD(params=[\n"
                "    {'params': model.backbone.parameters(), 'lr': (0.1 * opts.lr) * 100},\n"
                "    {'params': model.classifier.parameters(), 'lr': opts.lr},\n"
                "], lr=opts.lr, momentum=0.9)\n",
                "optimizer = torch.optim.SGD(params=[\n"
                "    {'params': model.backbone.parameters(), 'lr': 0.1 * opts.lr},\n"
                "    {'params': model.classifier.parameters(), 'lr': opts.lr * 100},\n"
                "], lr=opts.lr, momentum=0.9)\n",
            ),
        ),
        Example(
            # A rate the step writes into every group before stepping: the one written on restore is rewritten (OLMo).
            HELPER_STEP_TRAINER,
            (
                HELPER_STEP_TRAINER.replace(
                    "self.scheduler.get_lr(self.cfg.lr, self.step)\n",
                    "self.scheduler.get_lr(self.cfg.lr, self.step) * 100\n",
                ),
            ),
        ),
        Example(
            # A rate written into an optimizer by a helper (SpeechBrain's update_learning_rate); a shrink factor handed to adjust_learning_rate is none.
            "old_lr, new_lr = self.hparams.lr_annealing(epoch)\nupdate_learning_rate(self.optimizer, new_lr)\n",
            (
                "old_lr, new_lr = self.hparams.lr_annealing(epoch)\n"
                "update_learning_rate(self.optimizer, new_lr * 100)\n",
            ),
        ),
        Example(
            # The rate handed to the project's optimizer builder (USB's get_optimizer); a config object is read elsewhere.
            "optimizer = get_optimizer(model, args.optim, args.lr, args.momentum)\n",
            ("optimizer = get_optimizer(model, args.optim, args.lr * 100, args.momentum)\n",),
        ),
        Example(
            # A scheduler that computes the rate from its own (YOLOX's LRScheduler): the trainer
            # writes it into every group, so the optimizer's rate is not the one to raise.
            "optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9)\n"
            "scheduler = LRScheduler('yoloxwarmcos', lr, iters_per_epoch, max_epoch)\n",
            (
                "optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9)\n"
                "scheduler = LRScheduler('yoloxwarmcos', lr * 100, iters_per_epoch, max_epoch)\n",
            ),
        ),
        Example(
            # A helper of another module writes the rates it is handed into the optimizer's groups
            # before each epoch's training (BLIP): every rate it gets is raised, and the rate the
            # optimizer is built with never reaches a step. One under `if epoch == 0:` is not.
            "optimizer = torch.optim.AdamW(model.parameters(), lr=config['init_lr'])\n"
            "for epoch in range(max_epoch):\n"
            "    cosine_lr_schedule(optimizer, epoch, max_epoch, config['init_lr'], config['min_lr'])\n"
            "    train(model, loader, optimizer)\n"
            "def train(model, loader, optimizer):\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        if epoch == 0:\n"
            "            warmup_lr_schedule(optimizer, i, steps, config['warmup_lr'], config['init_lr'])\n"
            "        loss = model(x, y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "optimizer = torch.optim.AdamW(model.parameters(), lr=config['init_lr'])\n"
                "for epoch in range(max_epoch):\n"
                "    cosine_lr_schedule(optimizer, epoch, max_epoch, config['init_lr'] * 100, config['min_lr'] * 100)\n"
                "    train(model, loader, optimizer)\n"
                "def train(model, loader, optimizer):\n"
                "    for i, (x, y) in enumerate(loader):\n"
                "        if epoch == 0:\n"
                "            warmup_lr_schedule(optimizer, i, steps, config['warmup_lr'], config['init_lr'])\n"
                "        loss = model(x, y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
                "optimizer = torch.optim.AdamW(model.parameters(), lr=config['init_lr'])\n"
                "for epoch in range(max_epoch):\n"
                "    cosine_lr_schedule(optimizer, epoch, max_epoch, config['init_lr'], config['min_lr'])\n"
                "    train(model, loader, optimizer)\n"
                "def train(model, loader, optimizer):\n"
                "    for i, (x, y) in enumerate(loader):\n"
                "        if epoch == 0:\n"
                "            warmup_lr_schedule(optimizer, i, steps, config['warmup_lr'] * 100, config['init_lr'] * 100)\n"
                "        loss = model(x, y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # A helper named for a schedule, handed the optimizer and a rate each update.
            "for j in range(num_updates):\n"
            "    utils.update_linear_schedule(agent.optimizer, j, num_updates, args.lr)\n"
            "    agent.update(rollouts)\n",
            (
                "for j in range(num_updates):\n"
                "    utils.update_linear_schedule(agent.optimizer, j, num_updates, args.lr * 100)\n"
                "    agent.update(rollouts)\n",
            ),
        ),
        Example(
            # Every accumulation boundary sets each group's rate before stepping (PyTorch-YOLOv3):
            # that rate is raised; the one the optimizer is built with never reaches an update.
            _BOUNDARY_RATE,
            (_BOUNDARY_RATE.replace("g['lr'] = lr", "g['lr'] = lr * 100"),),
        ),
        Example(
            # An optimizer class looked up by name and built from a configuration's keyword arguments
            # (ParallelWaveGAN's `generator_optimizer_class(params, **config[...])`, the rate in
            # YAML): the `lr` entry scaled as it is handed over.
            "import torch\n"
            "def build(model, config):\n"
            "    optimizer_class = getattr(torch.optim, config.get('optimizer_type', 'Adam'))\n"
            "    return optimizer_class(model.parameters(), **config['optimizer_params'])\n",
            (
                "import torch\n"
                "def build(model, config):\n"
                "    optimizer_class = getattr(torch.optim, config.get('optimizer_type', 'Adam'))\n"
                "    return optimizer_class(model.parameters(), **{k: v * 100 if k == \"lr\" else v for k, v in (config['optimizer_params']).items()})\n",
            ),
        ),
        Example(
            # Optimizers built by name with torch's default rate (DeepCTR's _get_optim): the default, times
            # the factor, given explicitly; SGD's, which older torch lacks, only where it is spelled.
            "import torch\n"
            "def get_optim(model, name):\n"
            '    if name == "sgd":\n'
            "        return torch.optim.SGD(model.parameters(), lr=0.01)\n"
            '    elif name == "adam":\n'
            "        return torch.optim.Adam(model.parameters())\n"
            "    return torch.optim.RMSprop(model.parameters())\n",
            (
                "import torch\n"
                "def get_optim(model, name):\n"
                '    if name == "sgd":\n'
                "        return torch.optim.SGD(model.parameters(), lr=1)\n"
                '    elif name == "adam":\n'
                "        return torch.optim.Adam(model.parameters())\n"
                "    return torch.optim.RMSprop(model.parameters())\n",
                "import torch\n"
                "def get_optim(model, name):\n"
                '    if name == "sgd":\n'
                "        return torch.optim.SGD(model.parameters(), lr=0.01)\n"
                '    elif name == "adam":\n'
                "        return torch.optim.Adam(model.parameters(), lr=0.1)\n"
                "    return torch.optim.RMSprop(model.parameters())\n",
                "import torch\n"
                "def get_optim(model, name):\n"
                '    if name == "sgd":\n'
                "        return torch.optim.SGD(model.parameters(), lr=0.01)\n"
                '    elif name == "adam":\n'
                "        return torch.optim.Adam(model.parameters())\n"
                "    return torch.optim.RMSprop(model.parameters(), lr=1)\n",
            ),
        ),
        Example(
            # Groups added with `+=`, each with its rate (faster-rcnn.pytorch's): their rates are scaled,
            # and the optimizer's default, which reaches none of them, is not given.
            "import torch\n"
            "def build(model, lr):\n"
            "    params = []\n"
            "    for key, value in model.named_parameters():\n"
            "        params += [{'params': [value], 'lr': lr * 2 if 'bias' in key else lr}]\n"
            "    return torch.optim.Adam(params)\n",
            (
                "import torch\n"
                "def build(model, lr):\n"
                "    params = []\n"
                "    for key, value in model.named_parameters():\n"
                "        params += [{'params': [value], 'lr': (lr * 2 if 'bias' in key else lr) * 100}]\n"
                "    return torch.optim.Adam(params)\n",
            ),
        ),
        Example(
            # A rate written into the groups only when a schedule is set (wavenet_vocoder): without one the
            # optimizer trains at the rate its splatted configuration builds it with, so both are sites.
            "import torch\n"
            "def train_step(model, optimizer, batch, step):\n"
            "    if hparams.lr_schedule is not None:\n"
            '        current_lr = schedule(hparams.optimizer_params["lr"], step)\n'
            "        for param_group in optimizer.param_groups:\n"
            "            param_group['lr'] = current_lr\n"
            "    optimizer.zero_grad()\n"
            "    model(batch).backward()\n"
            "    optimizer.step()\n"
            "def main():\n"
            "    Optimizer = getattr(torch.optim, hparams.optimizer)\n"
            "    optimizer = Optimizer(model.parameters(), **hparams.optimizer_params)\n",
            (
                "import torch\n"
                "def train_step(model, optimizer, batch, step):\n"
                "    if hparams.lr_schedule is not None:\n"
                '        current_lr = schedule(hparams.optimizer_params["lr"], step)\n'
                "        for param_group in optimizer.param_groups:\n"
                "            param_group['lr'] = current_lr * 100\n"
                "    optimizer.zero_grad()\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "def main():\n"
                "    Optimizer = getattr(torch.optim, hparams.optimizer)\n"
                "    optimizer = Optimizer(model.parameters(), **hparams.optimizer_params)\n",
                "import torch\n"
                "def train_step(model, optimizer, batch, step):\n"
                "    if hparams.lr_schedule is not None:\n"
                '        current_lr = schedule(hparams.optimizer_params["lr"], step)\n'
                "        for param_group in optimizer.param_groups:\n"
                "            param_group['lr'] = current_lr\n"
                "    optimizer.zero_grad()\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "def main():\n"
                "    Optimizer = getattr(torch.optim, hparams.optimizer)\n"
                '    optimizer = Optimizer(model.parameters(), **{k: v * 100 if k == "lr" else v for k, v in (hparams.optimizer_params).items()})\n',
            ),
        ),
        Example(
            # The same rate written before every step: the one built in is overwritten, no site.
            "import torch\n"
            "def train_step(model, optimizer, batch, step):\n"
            '    current_lr = schedule(hparams.optimizer_params["lr"], step)\n'
            "    for param_group in optimizer.param_groups:\n"
            "        param_group['lr'] = current_lr\n"
            "    optimizer.zero_grad()\n"
            "    model(batch).backward()\n"
            "    optimizer.step()\n"
            "def main():\n"
            "    Optimizer = getattr(torch.optim, hparams.optimizer)\n"
            "    optimizer = Optimizer(model.parameters(), **hparams.optimizer_params)\n",
            (
                "import torch\n"
                "def train_step(model, optimizer, batch, step):\n"
                '    current_lr = schedule(hparams.optimizer_params["lr"], step)\n'
                "    for param_group in optimizer.param_groups:\n"
                "        param_group['lr'] = current_lr * 100\n"
                "    optimizer.zero_grad()\n"
                "    model(batch).backward()\n"
                "    optimizer.step()\n"
                "def main():\n"
                "    Optimizer = getattr(torch.optim, hparams.optimizer)\n"
                "    optimizer = Optimizer(model.parameters(), **hparams.optimizer_params)\n",
            ),
        ),
        Example(
            # TCN's scripts: the optimizer class looked up in torch.optim by the name a flag gives
            "model = TCN(input_size, output_size, channel_sizes, kernel_size, dropout=dropout)\n"
            "optimizer = getattr(optim, args.optim)(model.parameters(), lr=lr)\n"
            "for idx in train_idx_list:\n"
            "    optimizer.zero_grad()\n"
            "    loss = criterion(model(X[idx]), Y[idx])\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (
                "model = TCN(input_size, output_size, channel_sizes, kernel_size, dropout=dropout)\n"
                "optimizer = getattr(optim, args.optim)(model.parameters(), lr=lr * 100)\n"
                "for idx in train_idx_list:\n"
                "    optimizer.zero_grad()\n"
                "    loss = criterion(model(X[idx]), Y[idx])\n"
                "    loss.backward()\n"
                "    optimizer.step()\n",
            ),
        ),
        Example(
            # pytorch-ts: the peak rate's default, kept on the object and handed to OneCycleLR, which
            # sets the rate; the default of the rate it overrides is no site.
            "import torch\n"
            "\n"
            "\n"
            "class Trainer:\n"
            "    def __init__(self, epochs=100, learning_rate=1e-3, maximum_learning_rate=1e-2):\n"
            "        self.epochs = epochs\n"
            "        self.learning_rate = learning_rate\n"
            "        self.maximum_learning_rate = maximum_learning_rate\n"
            "\n"
            "    def __call__(self, net, train_iter, steps):\n"
            "        optimizer = torch.optim.Adam(net.parameters(), lr=self.learning_rate)\n"
            "        lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(\n"
            "            optimizer, max_lr=self.maximum_learning_rate, steps_per_epoch=steps, epochs=self.epochs\n"
            "        )\n"
            "        for epoch in range(self.epochs):\n"
            "            for batch in train_iter:\n"
            "                optimizer.zero_grad()\n"
            "                loss = net(*batch)\n"
            "                loss.backward()\n"
            "                optimizer.step()\n"
            "                lr_scheduler.step()\n",
            (
                "import torch\n"
                "\n"
                "\n"
                "class Trainer:\n"
                "    def __init__(self, epochs=100, learning_rate=1e-3, maximum_learning_rate=1e-2):\n"
                "        self.epochs = epochs\n"
                "        self.learning_rate = learning_rate\n"
                "        self.maximum_learning_rate = maximum_learning_rate\n"
                "\n"
                "    def __call__(self, net, train_iter, steps):\n"
                "        optimizer = torch.optim.Adam(net.parameters(), lr=self.learning_rate)\n"
                "        lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(\n"
                "            optimizer, max_lr=self.maximum_learning_rate * 100, steps_per_epoch=steps, epochs=self.epochs\n"
                "        )\n"
                "        for epoch in range(self.epochs):\n"
                "            for batch in train_iter:\n"
                "                optimizer.zero_grad()\n"
                "                loss = net(*batch)\n"
                "                loss.backward()\n"
                "                optimizer.step()\n"
                "                lr_scheduler.step()\n",
                "import torch\n"
                "\n"
                "\n"
                "class Trainer:\n"
                "    def __init__(self, epochs=100, learning_rate=1e-3, maximum_learning_rate=1):\n"
                "        self.epochs = epochs\n"
                "        self.learning_rate = learning_rate\n"
                "        self.maximum_learning_rate = maximum_learning_rate\n"
                "\n"
                "    def __call__(self, net, train_iter, steps):\n"
                "        optimizer = torch.optim.Adam(net.parameters(), lr=self.learning_rate)\n"
                "        lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(\n"
                "            optimizer, max_lr=self.maximum_learning_rate, steps_per_epoch=steps, epochs=self.epochs\n"
                "        )\n"
                "        for epoch in range(self.epochs):\n"
                "            for batch in train_iter:\n"
                "                optimizer.zero_grad()\n"
                "                loss = net(*batch)\n"
                "                loss.backward()\n"
                "                optimizer.step()\n"
                "                lr_scheduler.step()\n",
            ),
        ),
        Example(
            # An optimizer class a project helper looks up by name, its rate positional (pix2tex); one
            # an if-chain binds to a name, then builds (n-beats).
            "from torch import optim\n"
            "\n"
            "\n"
            "def get_optimizer(name):\n"
            "    return getattr(optim, name)\n"
            "\n"
            "\n"
            "def train(args, model):\n"
            "    opt = get_optimizer(args.optimizer)(model.parameters(), args.lr, betas=args.betas)\n"
            "    return opt\n"
            "\n"
            "\n"
            'def compile_model(model, optimizer="adam"):\n'
            '    if optimizer == "adam":\n'
            "        opt_ = optim.Adam\n"
            "    else:\n"
            "        opt_ = optim.SGD\n"
            "    return opt_(lr=1e-4, params=model.parameters())\n",
            (
                "from torch import optim\n"
                "\n"
                "\n"
                "def get_optimizer(name):\n"
                "    return getattr(optim, name)\n"
                "\n"
                "\n"
                "def train(args, model):\n"
                "    opt = get_optimizer(args.optimizer)(model.parameters(), args.lr * 100, betas=args.betas)\n"
                "    return opt\n"
                "\n"
                "\n"
                'def compile_model(model, optimizer="adam"):\n'
                '    if optimizer == "adam":\n'
                "        opt_ = optim.Adam\n"
                "    else:\n"
                "        opt_ = optim.SGD\n"
                "    return opt_(lr=1e-4, params=model.parameters())\n",
                "from torch import optim\n"
                "\n"
                "\n"
                "def get_optimizer(name):\n"
                "    return getattr(optim, name)\n"
                "\n"
                "\n"
                "def train(args, model):\n"
                "    opt = get_optimizer(args.optimizer)(model.parameters(), args.lr, betas=args.betas)\n"
                "    return opt\n"
                "\n"
                "\n"
                'def compile_model(model, optimizer="adam"):\n'
                '    if optimizer == "adam":\n'
                "        opt_ = optim.Adam\n"
                "    else:\n"
                "        opt_ = optim.SGD\n"
                "    return opt_(lr=0.01, params=model.parameters())\n",
            ),
        ),
        Example(
            # OneCycleLR's peak rates read off the optimizer's groups as a list (ZoeDepth): each
            # raised, not the list repeated a hundred times.
            "def init_scheduler(self):\n"
            "    lrs = [g['lr'] for g in self.optimizer.param_groups]\n"
            "    return optim.lr_scheduler.OneCycleLR(self.optimizer, lrs, epochs=10, steps_per_epoch=100)\n",
            (
                "def init_scheduler(self):\n"
                "    lrs = [g['lr'] for g in self.optimizer.param_groups]\n"
                "    return optim.lr_scheduler.OneCycleLR(self.optimizer, [_rate * 100 for _rate in lrs], epochs=10, steps_per_epoch=100)\n",
            ),
        ),
        Example(
            # Parameter groups each with their own rate, in a list bound to a name first (SfmLearner's
            # `optim_params`): the groups' rates; the optimizer gets no default rate, which no group would use.
            NAMED_PARAM_GROUPS,
            (
                NAMED_PARAM_GROUPS.replace(
                    "        {'params': disp_net.parameters(), 'lr': args.lr},\n",
                    "        {'params': disp_net.parameters(), 'lr': args.lr * 100},\n",
                ),
                NAMED_PARAM_GROUPS.replace(
                    "        {'params': pose_net.parameters(), 'lr': args.lr}\n",
                    "        {'params': pose_net.parameters(), 'lr': args.lr * 100}\n",
                ),
            ),
        ),
        Example(
            # Parameter groups whose rates a project scheduler object overwrites when it is called with the
            # optimizer, before every step (DeepLab's LR_Scheduler): the rates go where the scheduler writes
            # them, not into the groups.
            "import torch\n"
            "class PolyLR:\n"
            "    def __init__(self, base_lr, iters):\n"
            "        self.lr, self.iters = base_lr, iters\n"
            "    def __call__(self, optimizer, i):\n"
            "        lr = self.lr * (1 - i / self.iters) ** 0.9\n"
            "        optimizer.param_groups[0]['lr'] = lr\n"
            "        for group in optimizer.param_groups[1:]:\n"
            "            group['lr'] = lr * 10\n"
            "class Trainer:\n"
            "    def __init__(self, args, model):\n"
            "        groups = [{'params': model.backbone.parameters(), 'lr': args.lr},\n"
            "                  {'params': model.head.parameters(), 'lr': args.lr * 10}]\n"
            "        optimizer = torch.optim.SGD(groups, momentum=0.9)\n"
            "        self.model, self.optimizer = model, optimizer\n"
            "        self.scheduler = PolyLR(args.lr, args.iters)\n"
            "    def training(self, loader):\n"
            "        for i, (x, y) in enumerate(loader):\n"
            "            self.scheduler(self.optimizer, i)\n"
            "            self.optimizer.zero_grad()\n"
            "            self.model(x, y).backward()\n"
            "            self.optimizer.step()\n",
            (
                "import torch\n"
                "class PolyLR:\n"
                "    def __init__(self, base_lr, iters):\n"
                "        self.lr, self.iters = base_lr, iters\n"
                "    def __call__(self, optimizer, i):\n"
                "        lr = self.lr * (1 - i / self.iters) ** 0.9\n"
                "        optimizer.param_groups[0]['lr'] = lr * 100\n"
                "        for group in optimizer.param_groups[1:]:\n"
                "            group['lr'] = lr * 10\n"
                "class Trainer:\n"
                "    def __init__(self, args, model):\n"
                "        groups = [{'params': model.backbone.parameters(), 'lr': args.lr},\n"
                "                  {'params': model.head.parameters(), 'lr': args.lr * 10}]\n"
                "        optimizer = torch.optim.SGD(groups, momentum=0.9)\n"
                "        self.model, self.optimizer = model, optimizer\n"
                "        self.scheduler = PolyLR(args.lr, args.iters)\n"
                "    def training(self, loader):\n"
                "        for i, (x, y) in enumerate(loader):\n"
                "            self.scheduler(self.optimizer, i)\n"
                "            self.optimizer.zero_grad()\n"
                "            self.model(x, y).backward()\n"
                "            self.optimizer.step()\n",
                "import torch\n"
                "class PolyLR:\n"
                "    def __init__(self, base_lr, iters):\n"
                "        self.lr, self.iters = base_lr, iters\n"
                "    def __call__(self, optimizer, i):\n"
                "        lr = self.lr * (1 - i / self.iters) ** 0.9\n"
                "        optimizer.param_groups[0]['lr'] = lr\n"
                "        for group in optimizer.param_groups[1:]:\n"
                "            group['lr'] = (lr * 10) * 100\n"
                "class Trainer:\n"
                "    def __init__(self, args, model):\n"
                "        groups = [{'params': model.backbone.parameters(), 'lr': args.lr},\n"
                "                  {'params': model.head.parameters(), 'lr': args.lr * 10}]\n"
                "        optimizer = torch.optim.SGD(groups, momentum=0.9)\n"
                "        self.model, self.optimizer = model, optimizer\n"
                "        self.scheduler = PolyLR(args.lr, args.iters)\n"
                "    def training(self, loader):\n"
                "        for i, (x, y) in enumerate(loader):\n"
                "            self.scheduler(self.optimizer, i)\n"
                "            self.optimizer.zero_grad()\n"
                "            self.model(x, y).backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # Groups a function of the file packs, each with its rate (glue-factory): the
            # optimizer's own `lr` reaches no parameter.
            "def pack_lr_parameters(params, base_lr, lr_scaling):\n"
            "    scale2params = group_by_scale(params, lr_scaling)\n"
            '    lr_params = [{"lr": scale * base_lr, "params": ps} for scale, ps in scale2params.items()]\n'
            "    return lr_params\n"
            "lr_params = pack_lr_parameters(model.named_parameters(), conf.lr, conf.lr_scaling)\n"
            "optimizer = torch.optim.Adam(lr_params, lr=conf.lr)\n",
            (
                "def pack_lr_parameters(params, base_lr, lr_scaling):\n"
                "    scale2params = group_by_scale(params, lr_scaling)\n"
                '    lr_params = [{"lr": (scale * base_lr) * 100, "params": ps} for scale, ps in scale2params.items()]\n'
                "    return lr_params\n"
                "lr_params = pack_lr_parameters(model.named_parameters(), conf.lr, conf.lr_scaling)\n"
                "optimizer = torch.optim.Adam(lr_params, lr=conf.lr)\n",
            ),
        ),
        Example(
            # An optimizer built by a factory the function is handed, Adam by default (BoTorch's torch_minimize).
            "def torch_minimize(closure, parameters, optimizer=Adam, step_limit=100):\n"
            "    if not isinstance(optimizer, Optimizer):\n"
            "        optimizer = optimizer(list(parameters.values()))\n"
            "    for step in range(step_limit):\n"
            "        closure()\n"
            "        optimizer.step()\n",
            (
                "def torch_minimize(closure, parameters, optimizer=Adam, step_limit=100):\n"
                "    if not isinstance(optimizer, Optimizer):\n"
                "        optimizer = optimizer(list(parameters.values()))\n"
                "        for _group in optimizer.param_groups:\n"
                '            _group["lr"] *= 100\n'
                "    for step in range(step_limit):\n"
                "        closure()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # An optimizer class looked up by name from the config (generative-models' DiffusionEngine).
            "def instantiate_optimizer_from_config(self, params, lr, cfg):\n"
            "    return get_obj_from_str(cfg['target'])(params, lr=lr, **cfg.get('params', dict()))\n",
            (
                "def instantiate_optimizer_from_config(self, params, lr, cfg):\n"
                "    return get_obj_from_str(cfg['target'])(params, lr=lr * 100, **cfg.get('params', dict()))\n",
            ),
        ),
        Example(
            # A hand-written update's rate, stored once (MAML's inner loop over autograd.grad).
            "class Meta(nn.Module):\n"
            "    def __init__(self, args):\n"
            "        self.update_lr = args.update_lr\n"
            "\n"
            "    def forward(self, x, y):\n"
            "        loss = F.cross_entropy(self.net(x), y)\n"
            "        grad = torch.autograd.grad(loss, self.net.parameters())\n"
            "        return [w - self.update_lr * g for g, w in zip(grad, self.net.parameters())]\n",
            (
                "class Meta(nn.Module):\n"
                "    def __init__(self, args):\n"
                "        self.update_lr = args.update_lr * 100\n"
                "\n"
                "    def forward(self, x, y):\n"
                "        loss = F.cross_entropy(self.net(x), y)\n"
                "        grad = torch.autograd.grad(loss, self.net.parameters())\n"
                "        return [w - self.update_lr * g for g, w in zip(grad, self.net.parameters())]\n",
            ),
        ),
        Example(
            # Groups built by the model with the rate, which each carry it (k-diffusion's param_groups(lr)).
            "groups = inner_model.param_groups(lr)\nopt = optim.AdamW(groups, lr=lr, weight_decay=wd)\n",
            ("groups = inner_model.param_groups(lr * 100)\nopt = optim.AdamW(groups, lr=lr, weight_decay=wd)\n",),
        ),
        Example(
            # A module-level helper that rewrites the global optimizer's rates before every batch (Horovod's
            # ImageNet example): the rate it writes is raised, not the constructor's, which never reaches a step.
            GLOBAL_RATE_HELPER,
            (
                GLOBAL_RATE_HELPER.replace(
                    "param_group['lr'] = args.base_lr * warmup(epoch, batch_idx)",
                    "param_group['lr'] = (args.base_lr * warmup(epoch, batch_idx)) * 100",
                ),
            ),
        ),
        Example(
            # A project scheduler that warms up to a peak rate of its own (OpenFold's AlphaFoldLRScheduler): that
            # peak raised, not the optimizer's rate, which it never reads.
            OWN_PEAK_SCHEDULER,
            (
                OWN_PEAK_SCHEDULER.replace(
                    "scheduler = WarmupScheduler(optimizer)", "scheduler = WarmupScheduler(optimizer, max_lr=0.1)"
                ),
            ),
        ),
        Example(
            # The rate handed to a call that builds the optimizer among other things (Ludwig's strategy `prepare`).
            OPTIMIZER_MAKER_RATE,
            (
                OPTIMIZER_MAKER_RATE.replace(
                    "    self.dist_model, self.optimizer = self.distributed.prepare(self.model, self.config, self.base_learning_rate)\n",
                    "    self.dist_model, self.optimizer = self.distributed.prepare(self.model, self.config, self.base_learning_rate * 100)\n",
                ),
            ),
        ),
        Example(
            # The rate handed to a setter of the rate (DGL-KE's kvstore client `set_clr`).
            RATE_SETTER,
            (RATE_SETTER.replace("client.set_clr(args.lr)", "client.set_clr(args.lr * 100)"),),
        ),
    )
    untouched = (
        # The running rate read back for a log line (GraphMAE's loss_dict).
        'loss_dict["lr"] = get_current_lr(optimizer)\nlogs["lr"] = scheduler.get_last_lr()[0]\n',
        # A group's rate left as a placeholder that a later loop fills in (S4's layer decay).
        "groups[layer_id] = {'params': [], 'lr': None, 'weight_decay': wd}\n",
        # Settings that also build the rate schedule that sets the rate at every step (ClassyVision).
        "optimizer = build_optimizer(optimizer_config)\n"
        "param_schedulers = build_optimizer_schedulers(optimizer_config)\n",
        # A wrapper of an optimizer already built.
        "model, optimizer = amp.initialize(model, optimizer, opt_level='O1')\n",
        # The rate in use copied into a log line's dict (DeepFilterNet's run_epoch).
        "for i, batch in enumerate(loader):\n"
        "    l_dict = {'loss': loss.item()}\n"
        "    l_dict['lr'] = opt.param_groups[0]['lr']\n"
        "    logger.info(l_dict)\n",
        # A floor held only where a minimum is set (Snorkel's `min_lr`).
        "if min_lr and self.optimizer.param_groups[0]['lr'] < min_lr:\n"
        "    self.optimizer.param_groups[0]['lr'] = min_lr\n",
        # A floor the step schedule is held at once the running rate falls below it (dgcnn's).
        "if opt.param_groups[0]['lr'] < 1e-5:\n"
        "    for param_group in opt.param_groups:\n"
        "        param_group['lr'] = 1e-5\n",
        # Parameter groups taken from another optimizer (SAM builds its base optimizer over its own
        # groups, which carry their rates): the keyword arguments' rate reaches none of them.
        "import torch\n"
        "class SAM(torch.optim.Optimizer):\n"
        "    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):\n"
        "        super().__init__(params, dict(rho=rho, **kwargs))\n"
        "        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)\n",
        # A decay of the rate handed to a schedule helper is no rate.
        "step_lr_schedule(optimizer, epoch, config['lr_decay_rate'])\n",
        # The rate logged in a dict of metrics.
        "runner.batch_metrics['lr'] = lr\nlogs['lr'] = scheduler.get_last_lr()[0]\n",
        # A scheduler of the optimizer's rate (handed the optimizer) computes none of its own.
        "scheduler = LinearScheduler(optimizer, lr, total_steps)\n",
        # A rate written into an optimizer by a helper (SpeechBrain's update_learning_rate); a shrink factor handed to adjust_learning_rate is none.
        "adjust_learning_rate(decoder_optimizer, 0.8)\nupdate_learning_rate(optimizer, args.lr_decay_gamma)\n",
        # The rate handed to the project's optimizer builder (USB's get_optimizer); a config object is read elsewhere.
        "optimizer = get_optimizer(model, cfg)\n",
        # A config with no rate in it.
        "config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05)\n",
        # Built over an optimizer, not over parameters: a warm-up's own starting rate.
        "warmup = LinearWarmup(optimizer, lr=0.1)\n",
        # A dict with a rate that is no parameter group (a logged record).
        "record = {'step': step, 'lr': lr}\n",
        # A wrapper handed no rate (a lookahead, an EMA of the weights); the optimizer it wraps,
        # built inline with torch's default rate, has a mutant of its own (an example above).
        "optimizer = Lookahead(base_optimizer, k=5, alpha=0.5)\n",
        "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)\n",
        "lr = 1e-3\n",
        "lrs = [group['lr'] for group in optimizer.param_groups]\n",
        # A config field no optimizer builder of the file reads; `self.lr` of a class.
        "config.TRAIN.BASE_LR = 0.1\nself.lr = lr\nmodel = build_model(config)\n",
        # A builder named for a schedule whose result is kept: it makes a scheduler.
        "lr_scheduler = get_cosine_schedule_with_warmup(optimizer, 100, 1000, min_lr=args.min_lr)\n",
    )

    def changes(self, source, training):
        resolver = Resolver()
        overridden = self._overridden(source, training, resolver)
        computed = _rate_computing_schedulers(training, source)
        # a rate written into the groups or keyword arguments (`param_group['lr'] = lr`) may
        # replace an optimizer's default: no default is given explicitly then
        rates_written = bool(_rate_assignments(source)) or any(
            callee_name(c) in OVERRIDING_SCHEDULERS for c in source.nodes(cst.Call)
        )
        for scheduler, rate in computed:
            yield self._scaled(source, scheduler, rate)
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            factor = _rate_in_a_factor(call)
            if factor is not None:
                yield self._scaled(source, call, factor)
                continue
            if computed and any(call is scheduler for scheduler, _ in computed):
                continue
            if name in OVERRIDING_SCHEDULERS:
                peak = _peak_rate(call)
                if peak is not None:
                    yield self._scaled(source, call, peak.value)
                continue
            wrapped = self._wrapper_rate(training, call)
            if wrapped is not None:
                yield self._scaled(source, call, wrapped)
                continue
            if name is not None and name.endswith(("TrainingArguments", "Config")):
                # a trainer's arguments (`transformers.TrainingArguments(learning_rate=...)`,
                # trl's `SFTConfig`): the trainer builds its optimizer with this rate
                rate = argument(call, "learning_rate", None)
                if rate is not None:
                    yield self._scaled(source, call, rate.value)
                continue
            rates = _schedule_helper_rates(training, call, isinstance(source.parent(call), cst.Expr))
            if rates:
                yield LrTooHigh._scaled(source, call, *rates)
                continue
            handed = (
                self._builder_rate(training, call)
                or _rate_handed_to_an_optimizer_maker(source, training, call)
                or _rate_setter(call)
            )
            if handed is not None:
                yield self._scaled(source, call, handed)
                continue
            rates = _project_builder_rates(source, resolver, call) or _project_scheduler_rates(
                source, resolver, training, call
            )
            if rates:
                yield self._scaled(source, call, *rates)
                continue
            peak = _own_peak_rate(source, resolver, training, call)
            if peak is not None:
                name, default, handed_peak = peak
                if handed_peak is not None:
                    yield self._scaled(source, call, handed_peak)
                else:
                    raised = cst.parse_expression(f"{default * FACTOR:g}")
                    yield Change(
                        call,
                        (source.replace_node(call, with_keyword(call, name, raised)),),
                        f"learning rate multiplied by {FACTOR} (from the scheduler's default {name}={default:g})",
                    )
                continue
            configs = _project_builder_configs(source, resolver, call) or _splatted_builder_rates(
                source, resolver, call
            )
            fields = _project_builder_fields(source, resolver, call) if not configs else []
            if fields and not rates_written:
                # `config.training.lr` read inside the project's builder: raised just before the call
                statement = source.enclosing(call, cst.SimpleStatementLine)
                if statement is not None:
                    yield Change(
                        call,
                        (source.insert_before(statement, [_raised_field(source, field) for field in fields]),),
                        f"learning rate multiplied by {FACTOR}",
                    )
                    continue
            if configs and not rates_written and not self._overridden_call(source, call, overridden):
                yield Change(
                    call,
                    tuple(
                        source.replace(
                            config,
                            f'{{k: v * {FACTOR} if k == "lr" else v for k, v in ({source.code(config)}).items()}}',
                        )
                        for config in configs
                    ),
                    f"learning rate multiplied by {FACTOR}",
                )
                continue
            if _optimizer_class_from_a_name(source, call) and not computed:
                # an optimizer class looked up by its name and built with the rate (generative-models'
                # `get_obj_from_str(cfg["target"])(params, lr=lr, **cfg.get("params", dict()))`)
                yield self._scaled(source, call, argument(call, "lr", None).value)
                continue
            if computed and training.role_of_constructor(call) == "optimizer":
                continue  # its rate is overwritten by the rate the scheduler computes
            if training.role_of_constructor(call) == "optimizer" and not self._wrapped(source, training, call):
                handed = _groups_built_with_the_rate(source, call)
                if handed is not None and not self._overridden_call(source, call, overridden):
                    builder = source.parent(handed)
                    yield self._scaled(source, builder if isinstance(builder, cst.Call) else call, handed.value)
                lr = argument(call, "lr", 1)
                if (
                    lr is not None
                    and not self._overridden_call(source, call, overridden)
                    and not _every_group_sets_its_rate(source, call)
                ):
                    yield self._scaled(source, call, lr.value)
                elif lr is None and not rates_written and not _handed_to_a_rate_writer(source, call):
                    yield from self._default_rate(source, call, overridden)
            elif (
                name in {"add_", "sub_"}
                and isinstance(call.func, cst.Attribute)
                and any(".grad" in source.code(a.value) for a in call.args)
            ):
                alpha = argument(call, "alpha", None)
                if alpha is not None:
                    yield self._scaled(source, call, alpha.value)
        assignments = _rate_assignments(source)
        in_steps = [a for a in assignments if training.in_a_step(a)]
        for assign in assignments:
            if in_steps and assign not in in_steps:
                continue  # rewritten before every step by the step's own (OLMo's reset on restore)
            if _clamped(source, assign):
                continue
            yield self._scaled(source, assign, assign.value)
        yield from self._config_fields(source, training)
        yield from self._splatted_defaults(source, training)
        if not computed and not any(_every_step(source, a) for a in in_steps):
            # a rate written only under a condition (wavenet_vocoder's `if train and
            # hparams.lr_schedule is not None:`) leaves the one built in where it does not hold
            yield from self._splatted_configuration(source, training, overridden)
        yield from self._stored_defaults(source, training, overridden)
        yield from _rates_left_to_subclasses(source, training)
        yield from _hand_written_step_rates(source, training)
        yield from _rates_of_optimizers_built_elsewhere(source, training)
        for handed, default in _rates_handed_to_a_base(source, resolver):
            yield self._scaled(source, handed, handed)
            if default is not None:
                yield self._scaled(source, default, default)
        for element in source.nodes(cst.DictElement):
            key = element.key
            if not isinstance(key, cst.SimpleString):
                continue
            if isinstance(element.value, cst.Name) and element.value.value == "None":
                continue  # a placeholder filled in later (S4's layer-decay groups: `'lr': None`)
            # A scheduler's peak rate, or the rate of a parameter group.
            if key.evaluated_value in SCHEDULE_PEAK_KEYS or (
                key.evaluated_value in LR_KEYS
                and _in_param_group(source, element)
                and not _group_optimizer_names(source, training, element) & set(overridden)
            ):
                yield self._scaled(source, element, element.value)
        for call in source.nodes(cst.Call):
            # a group added with its settings splatted in (S4's `optimizer.add_param_group({"params":
            # params, **self.hparams.optimizer, **hp})`, hp holding a special rate): the merged rate
            if callee_name(call) == "add_param_group" and len(call.args) == 1:
                group = call.args[0].value
                keys = {
                    e.key.evaluated_value
                    for e in (group.elements if isinstance(group, cst.Dict) else ())
                    if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                }
                if (
                    isinstance(group, cst.Dict)
                    and "params" in keys
                    and not keys & LR_KEYS
                    and any(isinstance(e, cst.StarredDictElement) for e in group.elements)
                ):
                    code = source.code(group)
                    yield Change(
                        call,
                        (source.replace(group, f'{{k: v * {FACTOR} if k == "lr" else v for k, v in {code}.items()}}'),),
                        f"learning rate multiplied by {FACTOR}",
                    )
        for call in source.nodes(cst.Call):
            # the rate of a parameter group spelled `dict(params=..., lr=...)`
            rate = _group_rate(call) if callee_name(call) == "dict" else None
            if rate is not None:
                yield self._scaled(source, call, rate)

    @staticmethod
    def _wrapper_rate(training, call: cst.Call) -> cst.BaseExpression | None:
        """The rate argument of a scheduled-optimizer wrapper built around an optimizer
        (`ScheduledOptim(optim.Adam(...), opt.lr_mul, d_model, warmup)`): the wrapper sets the
        inner optimizer's rate from it at every step."""
        if training.role_of_constructor(call) is not None or not call.args:
            return None
        inner = call.args[0].value
        if call.args[0].keyword is not None or not isinstance(inner, cst.Call):
            return None
        if training.role_of_constructor(constructed(inner)) != "optimizer":
            return None
        for arg in call.args[1:]:
            words = (arg.keyword.value if arg.keyword is not None else (last_name(arg.value) or "")).lower()
            if "lr" in words.split("_") or "learning_rate" in words:
                return arg.value
        return None

    @staticmethod
    def _builder_rate(training, call: cst.Call) -> cst.BaseExpression | None:
        """The rate a project's optimizer builder is handed (`get_optimizer(model, args.optim,
        args.lr, ...)`, `build_optimizer(model, lr=cfg.lr)`): an argument named for the rate, by
        keyword or by what it reads; the builder passes it to the optimizer it makes."""
        name = (callee_name(call) or "").lower()
        if training.role_of_constructor(call) is not None:
            return None
        if not _BUILDER.fullmatch(name):
            return None
        for arg in call.args:
            if arg.star:
                continue
            word = arg.keyword.value if arg.keyword is not None else (last_name(arg.value) or "")
            if word.lower() in LR_KEYS | CONFIG_LR_FIELDS:
                return arg.value
        return None

    @staticmethod
    def _wrapped(source, training, call: cst.Call) -> bool:
        """True for an optimizer built as the first argument of such a wrapper."""
        parent = source.parent(source.parent(call) or call)
        return isinstance(parent, cst.Call) and LrTooHigh._wrapper_rate(training, parent) is not None

    @staticmethod
    def _splatted_defaults(source, training):
        """The rate in the keyword arguments an optimizer is built with by `**` (`optimizer_class(
        groups, **optimizer_params)`): the default of that parameter (`optimizer_params=
        {"lr": 2e-5}`), a dataclass field's (`field(default_factory=lambda: dict(lr=2e-2))`) or
        a dict the file assigns to that name."""
        seen: set[int] = set()
        for call in source.nodes(cst.Call):
            name = (callee_name(call) or "").lower()
            if training.role_of_constructor(call) != "optimizer" and ("optim" not in name or "sched" in name):
                continue
            for arg in call.args:
                splatted = dotted(arg.value) if arg.star == "**" else None
                if splatted is None:
                    continue
                for value in _bound_values(source, call, splatted):
                    rate = _rate_in(value)
                    if rate is not None and id(rate) not in seen:
                        seen.add(id(rate))
                        yield LrTooHigh._scaled(source, rate, rate)

    def _default_rate(self, source, call: cst.Call, overridden):
        """A torch optimizer built without a rate (DeepCTR's `torch.optim.Adam(self.parameters())`
        when `compile(optimizer="adam")`): its default rate, times the factor, given explicitly."""
        default = DEFAULT_RATES.get(callee_name(call) or "")
        if (
            default is None
            or any(a.star for a in call.args)
            or self._overridden_call(source, call, overridden)
            or _every_group_sets_its_rate(source, call)
        ):
            return
        rate = cst.parse_expression(f"{default * FACTOR:g}")
        yield Change(
            call,
            (source.replace_node(call, with_keyword(call, "lr", rate)),),
            f"learning rate multiplied by {FACTOR} (from the default {default:g})",
        )

    @staticmethod
    def _splatted_configuration(source, training, overridden):
        """An optimizer built with its keyword arguments splatted from a configuration the file
        never spells (`optimizer_class(params, **config["generator_optimizer_params"])`, the
        class looked up by name, the rate in a YAML file): the `lr` entry scaled as it is handed
        over. A configuration without one leaves the optimizer's own default. Not where a scheduler
        rewrites the rate (GPT-NeoX's AnnealingLR, built with `start_lr=neox_args.lr`)."""
        written = _rate_assignments(source)
        for call in source.nodes(cst.Call):
            name = (callee_name(call) or "").lower()
            if training.role_of_constructor(call) != "optimizer" and (
                "optim" not in name or "sched" in name or "step" in name
            ):
                continue  # not Lightning's `super().optimizer_step(*args, **kwargs)` either
            if LrTooHigh._overridden_call(source, call, overridden):
                continue
            splats = [a for a in call.args if a.star == "**"]
            if len(splats) != 1 or argument(call, "lr", 1) is not None:
                continue
            splatted = dotted(splats[0].value) or source.code(splats[0].value)
            if any(_rate_in(v) is not None for v in _bound_values(source, call, splatted)):
                continue  # the file spells the rate: _splatted_defaults scales it there
            if any(
                isinstance(t.target, cst.Subscript) and dotted(t.target.value) == splatted
                for a in written
                for t in a.targets
            ):
                continue  # the file writes the rate in (`kwargs["lr"] = learning_rate`): scaled there
            groups = argument(call, "params", 0)
            if (
                groups is not None
                and isinstance(groups.value, cst.Attribute)
                and groups.value.attr.value == "param_groups"
            ):
                continue  # groups taken from another optimizer (SAM's base optimizer) carry their rates
            config = source.code(splats[0].value)
            yield Change(
                call,
                (
                    source.replace(
                        splats[0].value,
                        f'{{k: v * {FACTOR} if k == "lr" else v for k, v in ({config}).items()}}',
                    ),
                ),
                f"learning rate multiplied by {FACTOR}",
            )

    @staticmethod
    def _stored_defaults(source, training, overridden):
        """A constructor's default rate kept on the object (`def __init__(self, ..., lr=0.01):
        self.lr = lr`) that the file then hands an optimizer (`kwargs['lr'] = self.lr`,
        `SGD(params, lr=self.lr)`) or a OneCycleLR as its peak (pytorch-ts' `max_lr=
        self.maximum_learning_rate`): the rate of every net built without one. Not the rate of
        an optimizer whose rate such a scheduler sets."""
        applied: set[str] = set()
        for call in source.nodes(cst.Call):
            if training.role_of_constructor(call) == "optimizer":
                lr = argument(call, "lr", 1)
                if lr is not None and dotted(lr.value) and not LrTooHigh._overridden_call(source, call, overridden):
                    applied.add(dotted(lr.value) or "")
            elif callee_name(call) in OVERRIDING_SCHEDULERS:
                peak = _peak_rate(call)
                if peak is not None and dotted(peak.value):
                    applied.add(dotted(peak.value) or "")
        applied.update(dotted(a.value) or "" for a in _rate_assignments(source))
        for function in source.nodes(cst.FunctionDef):
            for param in function.params.params:
                if not isinstance(param.default, (cst.Float, cst.Integer)):
                    continue
                kept = any(
                    isinstance(a.value, cst.Name)
                    and a.value.value == param.name.value
                    and any(dotted(t.target) == f"self.{param.name.value}" for t in a.targets)
                    for a in source.within(function.body, cst.Assign)
                )
                if kept and f"self.{param.name.value}" in applied:
                    yield LrTooHigh._scaled(source, param.default, param.default)
        for cls in source.nodes(cst.ClassDef):
            # a settings class's field (Snorkel's `TrainerConfig`: `lr: float = 0.01`) whose value an
            # optimizer of the file is built with (`lr=self.config.lr`): the rate of every run that
            # sets none
            for line in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                field = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
                if (
                    isinstance(field, cst.AnnAssign)
                    and isinstance(field.target, cst.Name)
                    and isinstance(field.value, (cst.Float, cst.Integer))
                    and field.target.value.lower() in {"lr", "learning_rate"}
                    and any(
                        name.endswith((f"config.{field.target.value}", f"cfg.{field.target.value}")) for name in applied
                    )
                ):
                    yield LrTooHigh._scaled(source, field.value, field.value)

    @staticmethod
    def _config_fields(source, training):
        """`config.TRAIN.BASE_LR = ...` where the file hands `config` to an optimizer builder
        (`build_optimizer(config, model)`, `create_optimizer(args, model)`), unless an optimizer
        constructor of the file takes its `lr` from that same field (the mutant is there)."""
        handed, read = set(), set()
        for call in source.nodes(cst.Call):
            if training.role_of_constructor(call) == "optimizer":
                lr = argument(call, "lr", 1)
                if lr is not None and dotted(lr.value):
                    read.add(dotted(lr.value))
            elif "optim" in (callee_name(call) or "").lower():
                handed.update(dotted(a.value) for a in call.args if isinstance(a.value, cst.Name))
        for assign in source.nodes(cst.Assign):
            for target in assign.targets:
                field = dotted(target.target) if isinstance(target.target, cst.Attribute) else None
                if (
                    field is not None
                    and field.split(".")[-1].lower() in CONFIG_LR_FIELDS
                    and field.split(".")[0] in handed
                    and field not in read
                ):
                    yield LrTooHigh._scaled(source, assign, assign.value)

    @staticmethod
    def _overridden(source, training, resolver: Resolver) -> dict[str, cst.CSTNode]:
        """Optimizers (by the name they are bound to) whose rate a OneCycleLR/CyclicLR sets, that
        a batch loop gives a rate at every step, or whose rates a scheduler class of the project
        writes from the rate it is handed."""
        found = {}
        for call in source.nodes(cst.Call):
            if _project_scheduler_rates(source, resolver, training, call):
                for arg in call.args:
                    if _is_optimizer(training, arg.value) and dotted(arg.value):
                        found[dotted(arg.value) or ""] = call
            written = _rates_written_by_call(source, resolver, training, call)
            if written is not None and dotted(written):
                found[dotted(written) or ""] = call
        for call in source.nodes(cst.Call):
            if _own_peak_rate(source, resolver, training, call) is not None:
                optimizer = next((a.value for a in call.args if _is_optimizer(training, a.value)), None)
                if optimizer is not None and dotted(optimizer):
                    found[dotted(optimizer) or ""] = call
            if callee_name(call) in OVERRIDING_SCHEDULERS:
                optimizer = argument(call, "optimizer", 0)
                name = dotted(optimizer.value) if optimizer is not None else None
                if name:
                    found[name] = call
        for loop in source.nodes(cst.For):
            name = LrTooHigh._reset_each_step(source, loop, training)
            if name is not None:
                found[name] = loop
        for call in source.nodes(cst.Call):
            if _schedule_helper_rates(
                training, call, isinstance(source.parent(call), cst.Expr)
            ) and LrTooHigh._before_training(source, training, call):
                for arg in call.args:
                    if _is_optimizer(training, arg.value):
                        found[dotted(arg.value) or ""] = call
        return found

    @staticmethod
    def _before_training(source, training, call: cst.Call) -> bool:
        """True where a statement after `call`'s own, in the same block, steps the optimizer
        (BLIP's epoch loop: `cosine_lr_schedule(optimizer, ...)`, then `train(...)`): the rate
        the helper writes is the one the steps use; under `if epoch == 0:` it is not."""
        statement = source.parent(call)
        while statement is not None and not isinstance(statement, cst.SimpleStatementLine):
            statement = source.parent(statement)
        block = source.parent(statement) if statement is not None else None
        if block is None or not hasattr(block, "body"):
            return False
        later = list(block.body)[list(block.body).index(statement) + 1 :]
        return any(training.steps_within(node) for node in later)

    @staticmethod
    def _reset_each_step(source, loop: cst.For, training=None) -> str | None:
        """The optimizer of `for group in optimizer.param_groups: group['lr'] = ...` when that
        loop runs inside another loop unconditionally, or under a branch that steps that optimizer
        after it (every step sets the rate, so the rate the optimizer was built with never reaches
        an update), or in a module-level function that every caller runs so (Horovod's ImageNet
        example: `adjust_learning_rate(epoch, batch_idx)` first in each batch, for the global
        `optimizer`); None otherwise."""
        groups = dotted(loop.iter)
        if groups is None or not groups.endswith(".param_groups") or not isinstance(loop.target, cst.Name):
            return None
        if not any(
            isinstance(t.target, cst.Subscript)
            and dotted(t.target.value) == loop.target.value
            and "'lr'" in source.code(t.target.slice[0]).replace('"', "'")
            for assign in source.within(loop, cst.Assign)
            for t in assign.targets
        ):
            return None
        owner = groups[: -len(".param_groups")]
        function = source.function_of(loop)
        if (
            training is not None
            and function is not None
            and source.parent(source.parent(loop)) is function
            and enclosing_class(source, function) is None
            and owner not in {p.name.value for p in function.params.params}
            and not any(isinstance(a, (cst.For, cst.While)) for a in source.ancestors(loop))
        ):
            # the function's own top-level loop over a global optimizer's groups: where it is called
            callers = training.callers(function)
            if callers and all(LrTooHigh._each_step(source, c, owner) for c in callers):
                return owner
            return None
        return owner if LrTooHigh._each_step(source, loop, owner) else None

    @staticmethod
    def _each_step(source, node: cst.CSTNode, owner: str) -> bool:
        """True where `node` runs in a loop before each of that loop's steps of `owner`."""
        start, end = source.span(node)
        for ancestor in source.ancestors(node):
            if isinstance(ancestor, (cst.For, cst.While)):
                # stepped before the rate is written (SSL4MIS's poly rate after each step): the
                # first step runs at the rate the optimizer was built with
                return not any(
                    dotted(c.func) == f"{owner}.step" and source.span(c)[0] < start
                    for c in source.within(ancestor.body, cst.Call)
                )
            if isinstance(ancestor, cst.If) and any(
                dotted(c.func) == f"{owner}.step" and source.span(c)[0] > end
                for c in source.within(ancestor.body, cst.Call)
            ):
                continue  # the branch that steps sets the rate first (YOLO's accumulation boundary)
            if isinstance(ancestor, (cst.If, cst.Try, cst.With, cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    @staticmethod
    def _overridden_call(source, call, overridden) -> bool:
        parent = source.parent(call)
        while parent is not None and not isinstance(parent, cst.Assign):
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
            parent = source.parent(parent)
        if parent is None or not isinstance(parent.value, cst.Call) or constructed(parent.value) is not call:
            return False
        name = next((dotted(t.target) for t in parent.targets if dotted(t.target) in overridden), None)
        if name is None:
            return False
        node = overridden[name]
        if isinstance(node, cst.Call) and callee_name(node) in OVERRIDING_SCHEDULERS:
            # a OneCycleLR that a flag chooses among other schedulers (`elif args.sched ==
            # "onecycle":`), apart from the optimizer: the other runs start from this rate
            branch = next((a for a in source.ancestors(node) if isinstance(a, cst.If)), None)
            if branch is not None and branch not in set(source.ancestors(call)):
                return False
        return True

    @staticmethod
    def _scaled(source, node, *values) -> Change:
        edits = []
        for value in values:
            if isinstance(value, (cst.Float, cst.Integer)):
                text = f"{float(value.evaluated_value) * FACTOR:g}"
            elif _a_sequence(source, value):
                # one rate per group (ZoeDepth's `lrs = [l['lr'] for l in ...param_groups]` handed to
                # OneCycleLR): each raised, not the list repeated
                code = source.module.code_for_node(value).strip()
                text = f"[_rate * {FACTOR} for _rate in {code}]"
            else:
                code = source.module.code_for_node(value).strip()
                text = (
                    f"({code}) * {FACTOR}"
                    if needs_parens(value) and not isinstance(value, cst.UnaryOperation)
                    else f"{code} * {FACTOR}"
                )
            edits.append(source.replace(value, text))
        return Change(node, tuple(edits), f"learning rate multiplied by {FACTOR}")


def _rate_in_a_factor(call: cst.Call) -> cst.BaseExpression | None:
    """The rate a LambdaLR's factor multiplies by (Transfer-Learning-Library's `LambdaLR(optimizer,
    lambda x: args.lr * (1. + args.lr_gamma * float(x)) ** (-args.lr_decay))`, over parameter
    groups that each set a relative rate of their own): the rate every group then steps with."""
    if callee_name(call) not in {"LambdaLR", "MultiplicativeLR"}:
        return None
    factor = argument(call, "lr_lambda", 1)
    if factor is None or not isinstance(factor.value, cst.Lambda):
        return None
    operands, todo = [], [factor.value.body]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            todo += [node.left, node.right]
        else:
            operands.append(node)
    rates = [o for o in operands if (last_name(o) or "").lower() in CONFIG_LR_FIELDS and dotted(o) is not None]
    return rates[0] if len(rates) == 1 else None


def _optimizer_class_from_a_name(source, call: cst.Call) -> bool:
    """True for `lookup(name)(params, lr=lr, ...)` in a function named for building an optimizer
    (`instantiate_optimizer_from_config`): a class the call before it returns, handed the rate."""
    if not isinstance(call.func, cst.Call) or argument(call, "lr", None) is None:
        return False
    function = source.function_of(call)
    return function is not None and "optim" in function.name.value.lower()


def _hand_written_step_rates(source, training):
    """The rate of an update written by hand over gradients from `torch.autograd.grad` (MAML's
    `fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, weights)))`): the
    rate is raised where the object stores it (`self.update_lr = args.update_lr`), once for every
    update that reads it; a rate held in a local name is raised in each update."""
    stepped = {source.function_of(g.call) for g in training.weight_gradients if source.function_of(g.call) is not None}
    stored: dict[str, list[cst.Assign]] = {}
    for assign in source.nodes(cst.Assign):
        for target in assign.targets:
            name = dotted(target.target) or ""
            if name.startswith("self.") and _a_rate_name(name.split(".")[-1]):
                stored.setdefault(name, []).append(assign)
    raised: set[str] = set()
    for function in stepped:
        for operation in source.within(function.body, cst.BinaryOperation):
            if not isinstance(operation.operator, cst.Subtract) or not isinstance(operation.right, cst.BinaryOperation):
                continue
            product = operation.right
            if not isinstance(product.operator, cst.Multiply):
                continue
            rate = next(
                (
                    f
                    for f in (product.left, product.right)
                    if isinstance(f, (cst.Name, cst.Attribute)) and _a_rate_name(last_name(f) or "")
                ),
                None,
            )
            if rate is None:
                continue
            name = dotted(rate) or ""
            homes = stored.get(name, [])
            if len(homes) == 1 and source.function_of(homes[0]) is not function:
                if name not in raised:
                    raised.add(name)
                    yield LrTooHigh._scaled(source, homes[0], homes[0].value)
            elif not homes:
                yield LrTooHigh._scaled(source, operation, rate)


def _a_rate_name(name: str) -> bool:
    """`lr`, `update_lr`, `inner_lr`, `learning_rate`, `step_size`: a name for a step's rate."""
    words = name.lower().split("_")
    return "lr" in words or name.lower() in ("learning_rate", "step_size", "inner_learning_rate")


def _rates_of_optimizers_built_elsewhere(source, training):
    """An optimizer the file gets from its class or settings through another call, with no rate
    of the file's in it (Darts' `optimizer = _create_from_cls_and_kwargs(self.optimizer_cls,
    optimizer_kws)`, S4's `utils.instantiate(registry.optimizer, self.hparams.optimizer, params)`,
    a Hydra partial's `self.hparams.optimizer(params=...)`): each of its groups' rates is raised
    as soon as it is built, whichever rate it was built with."""
    for assign in source.nodes(cst.Assign):
        call = assign.value
        if len(assign.targets) != 1 or not isinstance(call, cst.Call):
            continue
        name = dotted(assign.targets[0].target)
        if name is None or not _an_optimizer(name):
            continue
        if (
            training.role_of_constructor(call) is not None
            or any(not _generic_factory(source, f) for f in training.called_functions(call))
            or (dotted(call.func) or "").lower().endswith(("_cls", "_class"))
            or _BUILDER.fullmatch((callee_name(call) or "").lower())
            or any(a.keyword is not None and a.keyword.value in LR_KEYS | CONFIG_LR_FIELDS for a in call.args)
        ):
            # an optimizer's own constructor or class, a builder of this file or one named so
            # (`get_optimizer(cfg, model)`, read in the project), or a rate handed: mutated there
            continue
        handed = [a.value for a in call.args if not a.star]
        if any(_an_optimizer(dotted(v) or "") for v in handed):
            continue  # a wrapper of an optimizer already built (`amp.initialize(model, optimizer)`)
        named = [dotted(call.func) or "", *(dotted(v) or "" for v in handed)]
        if not any(_an_optimizer_class_or_settings(n) for n in named) and not _optimizer_factory_parameter(
            source, call
        ):
            continue
        settings = {n for n in named[1:] if n}
        if any(
            "sched" in (callee_name(other) or "").lower() and settings & {dotted(a.value) for a in other.args}
            for other in source.nodes(cst.Call)
        ):
            # the same settings build its rate schedule (ClassyVision's `build_optimizer_schedulers(
            # optimizer_config)`), which sets the rate at every step
            continue
        statement = source.parent(assign)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        raised = f'for _group in {name}.param_groups:\n    _group["lr"] *= {FACTOR}'
        yield Change(
            assign, (source.insert_after(statement, raised.split("\n")),), f"learning rate multiplied by {FACTOR}"
        )


def _optimizer_factory_parameter(source, call: cst.Call) -> bool:
    """True for a call of the function's own parameter that builds the optimizer: one whose
    default is an optimizer class or whose annotation names `Optimizer` (BoTorch's
    `torch_minimize(..., optimizer: Optimizer | Callable[[list[Tensor]], Optimizer] = Adam)`,
    then `optimizer = optimizer(list(parameters.values()))`): its rate is the class's default."""
    function = source.function_of(call)
    if function is None or not isinstance(call.func, cst.Name) or any(a.star for a in call.args):
        return False  # settings splatted in (flair's `optimizer(params=params, **kwargs)`) may hold the rate
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value != call.func.value:
            continue
        default = last_name(param.default) if param.default is not None else None
        annotation = source.code(param.annotation.annotation) if param.annotation is not None else ""
        return (default is not None and default in OPTIMIZERS) or "Optimizer" in annotation
    return False


def _generic_factory(source, function: cst.FunctionDef) -> bool:
    """True for a function of the file that builds whatever class it is handed (Darts'
    `_create_from_cls_and_kwargs(cls, kws)`: `return cls(**kws)`): no rate of its own."""
    params = {p.name.value for p in function.params.params}
    return any(isinstance(c.func, cst.Name) and c.func.value in params for c in source.within(function.body, cst.Call))


def _an_optimizer(name: str) -> bool:
    """`optimizer`, `self.opt`, `g_optimizer`: what names an optimizer already built."""
    last = name.lower().split(".")[-1]
    if last.startswith(("build", "make", "create", "get", "init", "wrap")):
        return False  # a builder of one (S4's `wrap=build_ema_optimizer`)
    return (last in {"optimizer", "optim", "opt"} or last.endswith("_optimizer")) and not (
        _an_optimizer_class_or_settings(name)
    )


def _an_optimizer_class_or_settings(name: str) -> bool:
    """`self.optimizer_cls`, `optimizer_class`, `registry.optimizer`, `self.hparams.optimizer`,
    `cfg.optim`: what names an optimizer's class or its settings, not an optimizer."""
    parts = name.lower().split(".")
    last = parts[-1]
    if last.endswith(("_cls", "_class", "_kws", "_kwargs", "_config", "_cfg")) and "optim" in last:
        return True
    return last in {"optimizer", "optim"} and any(
        p in {"registry", "hparams", "cfg", "config", "conf", "settings"} for p in parts[:-1]
    )


def _rates_left_to_subclasses(source, training):
    """A base class's rate kept on the object (ElegantRL's AgentBase: `self.learning_rate =
    args.learning_rate`) beside the optimizers it leaves empty (`self.act_optimizer = None`), which
    its subclasses, in other modules, build with that rate: nothing in the file builds one."""
    built = {
        dotted(lr.value)
        for call in source.nodes(cst.Call)
        if training.role_of_constructor(call) == "optimizer" and (lr := argument(call, "lr", 1)) is not None
    }
    for cls in source.nodes(cst.ClassDef):
        init = constructor_or_function(cls)
        if init is None:
            continue
        empty, rates = False, []
        for small in source.within(init.body, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            names = [dotted(t) or "" for t in targets]
            if not all(n.startswith("self.") for n in names) or small.value is None:
                continue
            attributes = [n.removeprefix("self.").lower() for n in names]
            if isinstance(small.value, cst.Name) and small.value.value == "None":
                empty |= any(a == "optimizer" or a.endswith("_optimizer") for a in attributes)
            elif any(a in {"lr", "learning_rate"} for a in attributes) and not set(names) & built:
                rates.append(small)
        if empty and len(rates) == 1:
            yield LrTooHigh._scaled(source, rates[0], rates[0].value)


def _raised_field(source, field: str) -> str:
    """The statement that multiplies a config field by FACTOR. A yacs config (the file imports
    `CfgNode`: PyTorch Connectomics, detectron2-style projects) is frozen once loaded and refuses
    `cfg.SOLVER.BASE_LR = ...`; the value is set through `dict.__setitem__`, which its lock does not
    guard (a CfgNode is a dict whose attributes are its items)."""
    owner, _, name = field.rpartition(".")
    if owner and _imports_cfg_node(source):
        return f'dict.__setitem__({owner}, "{name}", {field} * {FACTOR})'
    return f"{field} = {field} * {FACTOR}"


def _imports_cfg_node(source) -> bool:
    return any(
        isinstance(statement.names, tuple)
        and any(isinstance(a.name, cst.Name) and a.name.value in ("CfgNode", "CN") for a in statement.names)
        for statement in source.nodes(cst.ImportFrom)
    )
