"""Models whose training and evaluation modes compute the same thing.

`model.train()` and `model.eval()` only change what a module does where it holds a layer that
reads the mode: dropout, batch norm, an RNN's inter-layer dropout, or code of its own that reads
`self.training`. A small policy network of `nn.Linear` layers (soft actor-critic's `QNetwork`) or
a convolutional generator without normalisation computes the same in both modes, so deleting a
switch of its mode is an equivalent mutant.

`built_mode_free` answers for the module a switch is called on, from the values the file assigns
to it: each must build a class of the file or of the project (read through `Neighbours`) or a
torch layer, and every class on the way is read whole. Anything this cannot see (a module handed
in, a class from an installed package, a layer built by a helper it cannot follow, a submodule
attached afterwards) makes the answer False, so the mutant stays.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import libcst as cst

from injector.neighbours import Import, Resolver, bound_arguments, is_torch, top_level
from injector.patterns import dotted as dotted_name
from injector.patterns import last_name
from injector.source import Source
from injector.source import walk_children as walk  # for nodes of another module's tree

# torch.nn layers with no behaviour that depends on the mode.
MODE_FREE_LAYERS = frozenset(
    {
        "Module", "Identity", "Linear", "Bilinear", "LazyLinear",
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
        "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
        "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softplus", "Softsign", "Hardtanh",
        "Hardswish", "Hardsigmoid", "Tanhshrink", "GLU", "Threshold",
        "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
        "Embedding", "EmbeddingBag", "Flatten", "Unflatten", "RNNCell", "LSTMCell", "GRUCell",
        "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
        "Upsample", "PixelShuffle", "PixelUnshuffle",
        "ZeroPad1d", "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
        "ReplicationPad2d", "ConstantPad1d", "ConstantPad2d",
        "Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict",
    }
)  # fmt: skip
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
# Layers whose `dropout` argument (zero by default) only acts in training mode.
DROPOUT_ARGUMENT = frozenset({"RNN", "LSTM", "GRU", "MultiheadAttention"})
# Words in a name that mean the mode matters (dropout, batch or instance norm, their functional
# forms, randomized ReLU, spectral norm's power iteration, stochastic depth).
MODE_WORDS = (
    "dropout", "batchnorm", "batch_norm", "instancenorm", "instance_norm", "rrelu",
    "spectral_norm", "drop_path", "droppath", "stochastic_depth", "syncbn",
)  # fmt: skip
# Calls of plain names that build nothing.
BUILTINS = frozenset(
    {
        "super", "isinstance", "issubclass", "len", "range", "int", "float", "bool", "str",
        "list", "tuple", "dict", "set", "zip", "enumerate", "min", "max", "abs", "sum", "any",
        "all", "sorted", "reversed", "map", "filter", "getattr", "setattr", "hasattr", "print",
        "type", "round", "pow", "divmod", "iter", "next", "repr", "format", "ValueError",
        "TypeError", "RuntimeError", "NotImplementedError", "AssertionError", "KeyError",
    }
)  # fmt: skip
# Moves and casts that return the same module.
SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval", "requires_grad_"})
ADDS = frozenset({"append", "extend", "insert", "add_module", "register_module"})  # a container gains a module
# Calls by which a method may switch a module's mode (its own or through a helper).
SWITCHING = frozenset({"train", "eval", "requires_grad_", "apply", "modules", "children", "set_mode", "set_training"})
# nn.Module's own methods a class calls on itself.
MODULE_METHODS = frozenset(
    {
        "apply", "to", "cuda", "cpu", "float", "double", "half", "parameters", "named_parameters",
        "modules", "named_modules", "children", "named_children", "buffers", "register_buffer",
        "register_parameter", "state_dict", "load_state_dict", "zero_grad", "requires_grad_",
        "eval", "train", "forward", "__init__", "type",
    }
)  # fmt: skip
WRAPPERS = frozenset(
    {"DistributedDataParallel", "DataParallel", "DDP", "compile"}
)  # the mode reaches the wrapped model
# torch packages whose classes are no modules.
NOT_MODULES = ("torch.optim.", "torch.distributed.optim.", "torch.utils.", "torch.amp.", "torch.cuda.amp.")
# Libraries that build no torch module: the standard library, and numpy.
NO_MODULES = frozenset(sys.stdlib_module_names) | {"numpy"}
DEPTH = 24  # calls followed into one another: enough for nested containers of project classes


def built_mode_free(source: Source, receiver: cst.BaseExpression) -> bool:
    """True where every value the file gives `receiver` (the module a mode switch is called on)
    builds a module whose modes compute the same."""
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        # a module's own switch (mbrl-lib's PlaNetModel.update: `self.train()`): the class around it
        owner = next((a for a in source.ancestors(receiver) if isinstance(a, cst.ClassDef)), None)
        return owner is not None and _Reader().class_mode_free(source, owner, 0)
    values = _assigned_values(source, receiver)
    if not values:
        return False
    reader = _Reader()
    return all(reader.builds_mode_free(source, value, 0) for value in values)


def switches_no_module(source: Source, receiver: cst.BaseExpression, method: str) -> bool:
    """True where every value the file gives `receiver` is an object of a project class that is
    no module and whose own `method` (`train`/`eval`) switches nothing (an environment's
    `train()` that sets a flag of its own): deleting the call is no model-mode fault."""
    reader = _Reader()
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        # the object's own method, in a class of the file that is no module (EGG's Trainer runs
        # its validation by `validation_loss, interaction = self.eval()`): one that switches
        # nothing, or a routine returning what it computed (its own switches get their mutants)
        owner = next((a for a in source.ancestors(receiver) if isinstance(a, cst.ClassDef)), None)
        return (
            owner is not None
            and reader.plain_class(source, owner)
            and (_own_method_switches_nothing(owner, method) or _own_method_returns_results(owner, method))
        )
    values = _assigned_values(source, receiver)
    if not values:
        return False
    for value in values:
        value = _without_moves(value)
        found = reader.definition(source, value.func) if isinstance(value, cst.Call) else None
        if found is None:
            return False
        module, cls = found
        if not isinstance(cls, cst.ClassDef) or not reader.plain_class(module, cls):
            return False
        if not _own_method_switches_nothing(cls, method):
            return False
    return True


def _nested_definition(source: Source, call: cst.Call, name: str) -> cst.FunctionDef | None:
    """The function `name` defined in a function around `call` (a local helper), if any."""
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef) and isinstance(ancestor.body, cst.IndentedBlock):
            for statement in ancestor.body.body:
                if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                    return statement
    return None


def _own_method(cls: cst.ClassDef, method: str) -> cst.FunctionDef | None:
    return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == method), None)


def _own_method_returns_results(cls: cst.ClassDef, method: str) -> bool:
    """True where `cls`'s own `method` returns a value other than `self` (a routine, not a switch)."""
    own = _own_method(cls, method)
    return own is not None and any(
        isinstance(node, cst.Return)
        and node.value is not None
        and not (isinstance(node.value, cst.Name) and node.value.value == "self")
        for node in walk(own.body)
    )


def _own_method_switches_nothing(cls: cst.ClassDef, method: str) -> bool:
    """True where `cls` defines `method` itself and it calls no mode switch."""
    own = _own_method(cls, method)
    return own is not None and not any(
        isinstance(node, cst.Call) and last_name(node.func) in SWITCHING for node in walk(own.body)
    )


def _assigned_values(
    source: Source, receiver: cst.BaseExpression, handed: bool = True
) -> list[cst.BaseExpression] | None:
    """What the file assigns to `receiver` (`self.x` anywhere in its class; a name in the
    function that binds it, or at module level), without the model itself moved or wrapped;
    for a parameter of a function of the file (with `handed`), what every caller hands it (SimCLR's
    `test(args, loader, simclr_model, model, ...)`, `model` built as a `LogisticRegression`); None
    where anything else reaches it (a parameter no caller of the file hands a known value, a loop
    target, a submodule attached later)."""
    name = source.code(receiver)
    scope: cst.CSTNode | None
    if _is_self_attribute(receiver):
        scope = next((a for a in source.ancestors(receiver) if isinstance(a, cst.ClassDef)), None)
        in_scope = _everywhere
    elif isinstance(receiver, cst.Name):
        function = source.function_of(receiver)
        if function is not None and name in _bound_names(source, function):
            if any(p.name.value == name for p in _params(function)):
                return _handed_values(source, function, name) if handed else None
            scope, in_scope = function, _everywhere
        else:  # a module-level name (assigned there, or in a function that declares it global)
            scope = source.module

            def in_scope(node: cst.CSTNode) -> bool:
                owner = source.function_of(node)
                return owner is None or name in _globals(source, owner)

    else:
        return None
    if scope is None:
        return None
    values: list[cst.BaseExpression] = []
    # every node that can attach, bind or unpack the name, in document order (an early None is
    # the answer whatever else follows, so reading the few kinds that matter reads the same)
    for node in source.within(scope, _BINDING_KINDS):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in {"add_module", "register_module"}
            and source.code(node.func.value) == name
        ):
            return None
        targets = _targets(node)
        if any(source.code(t).startswith((name + ".", name + "[")) for t in targets) and not _no_module_value(
            getattr(node, "value", None)
        ):
            return None  # a submodule attached afterwards (a flag, `require_backward_grad_sync`, is none)
        if not isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.WithItem)):
            continue
        if not in_scope(node):
            continue
        if isinstance(node, (cst.For, cst.CompFor)) and name in _target_names(node.target):
            return None
        if isinstance(node, cst.WithItem) and node.asname is not None and name in _target_names(node.asname.name):
            return None
        for target in targets:
            if source.code(target) == name and isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                value = _unwrapped(node.value, source, name) if node.value is not None else None
                if value is not None:
                    values.append(value)
            elif name in _target_names(target):
                return None  # unpacked from a tuple: unknown
    return values


def _handed_values(source: Source, function: cst.FunctionDef, param: str) -> list[cst.BaseExpression] | None:
    """What every call of a top-level `function` of the file hands its parameter `param` (each a
    name its caller assigns), where the function never binds the name again; None otherwise."""
    if top_level(source, function.name.value) is not function or any(
        isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and param in _target_names_of(node)
        for node in source.within(function.body, (cst.Assign, cst.AugAssign, cst.AnnAssign))
    ):
        return None
    calls = [c for c in source.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == function.name.value]
    values: list[cst.BaseExpression] = []
    for call in calls:
        value = (bound_arguments(function, call) or {}).get(param)
        found = _assigned_values(source, value, handed=False) if isinstance(value, cst.Name) else None
        if not found:
            return None
        values += found
    return values or None


def _target_names_of(node: cst.CSTNode) -> set[str]:
    return {n for target in _targets(node) for n in _target_names(target)}


_BINDING_KINDS = (cst.Call, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.WithItem)


def _no_module_value(value: cst.BaseExpression | None) -> bool:
    """True for a value that cannot be a module: a comparison, a boolean, a number or a string."""
    return isinstance(
        value,
        (cst.Comparison, cst.BooleanOperation, cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString),
    ) or (isinstance(value, cst.Name) and value.value in ("True", "False", "None"))


def _everywhere(node: cst.CSTNode) -> bool:
    return True


def _bound_names(source: Source, function: cst.FunctionDef) -> frozenset[str]:
    """The names a function binds: its parameters and what it assigns, loops over or opens."""
    return source.remember(("bound", function), lambda: frozenset(_bound_in(source, function)))


def _bound_in(source: Source, function: cst.FunctionDef) -> set[str]:
    bound = {p.name.value for p in _params(function)}
    for node in source.walk(function.body):
        for target in _targets(node):
            bound |= _target_names(target)
        if isinstance(node, (cst.For, cst.CompFor)):
            bound |= _target_names(node.target)
        if isinstance(node, cst.WithItem) and node.asname is not None:
            bound |= _target_names(node.asname.name)
    return bound - _globals(source, function)


def _globals(source: Source, function: cst.FunctionDef) -> frozenset[str]:
    """The names `function` declares global (kept for the file: each of its statements may ask)."""
    return source.remember(
        ("globals", function),
        lambda: frozenset(
            n.name.value for node in source.walk(function.body) if isinstance(node, cst.Global) for n in node.names
        ),
    )


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)) and getattr(node, "value", None) is not None:
        return [node.target]
    return []


def _target_names(target: cst.CSTNode) -> set[str]:
    if isinstance(target, (cst.Name, cst.Attribute)):
        return {cst.Module([]).code_for_node(target)}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_names(e.value) for e in target.elements)) if target.elements else set()
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _params(function: cst.FunctionDef) -> Iterator[cst.Param]:
    p = function.params
    yield from (*p.posonly_params, *p.params, *p.kwonly_params)
    if isinstance(p.star_arg, cst.Param):
        yield p.star_arg
    if p.star_kwarg is not None:
        yield p.star_kwarg


def _unwrapped(value: cst.BaseExpression, source: Source, name: str) -> cst.BaseExpression | None:
    """The value without moves and casts; None where it is the same model (moved or wrapped)."""
    value = _without_moves(value)
    if source.code(value) == name:
        return None
    if (
        isinstance(value, cst.Call)
        and value.args
        and last_name(value.func) in WRAPPERS
        and source.code(_without_moves(value.args[0].value)) == name
    ):
        return None
    return value


def _without_moves(value: cst.BaseExpression) -> cst.BaseExpression:
    while (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in SAME_MODULE
    ):
        value = value.func.value
    return value


class _Reader(Resolver):
    """Reads classes and functions across the project's modules, each once."""

    def __init__(self) -> None:
        super().__init__()
        self._verdicts: dict[tuple[str, str], bool] = {}
        self._reading: list[tuple[str, str]] = []  # the classes being read, innermost last

    # ---- what a value builds ----

    def builds_mode_free(self, source: Source, value: cst.BaseExpression, depth: int) -> bool:
        value = _without_moves(value)
        if not isinstance(value, cst.Call) or depth > DEPTH:
            return False
        dotted = dotted_name(value.func)
        if dotted is not None and dotted.count(".") == 1 and dotted.partition(".")[0] not in self.imports(source):
            cls = top_level(source, dotted.partition(".")[0])
            if isinstance(cls, cst.ClassDef) and _alternate_constructor(cls, dotted.partition(".")[2]):
                # `GPT.from_pretrained(name)`, a classmethod that returns a new instance
                return self.class_mode_free(source, cls, depth + 1)
        if dotted is None or "." in dotted and dotted.partition(".")[0] not in self.imports(source):
            return False  # what a method of some value returns (`task.get_model()`): unknown
        if not self.call_mode_free(source, value, depth):
            return False
        imported = self.imports(source).get(dotted.partition(".")[0])
        if imported is not None and is_torch(imported.module) and not dotted.rsplit(".", 1)[-1][:1].isupper():
            # a torch function handed a module (`weight_norm(Conv1d(...))`): that module too
            return all(
                self.builds_mode_free(source, a.value, depth + 1)
                for a in value.args
                if a.keyword is None and isinstance(a.value, cst.Call)
            )
        return True

    def _added_mode_free(self, source: Source, call: cst.Call, depth: int) -> bool:
        """For `self.layers.append(m)` (extend, insert, add_module): the module added is built
        mode-free too; True for any other call through self."""
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if method not in ADDS or not call.args:
            return True
        added = _built_elements(call.args[-1].value) if method == "extend" else [call.args[-1].value]
        return all(self.builds_mode_free(source, module, depth + 1) for module in added)

    def call_mode_free(self, source: Source, call: cst.Call, depth: int) -> bool:
        """True where `call` builds or runs nothing whose behaviour depends on the mode."""
        dotted = dotted_name(call.func)
        if dotted is None:
            # a method of what another call returns (`super().__init__()`, `x.view(-1).sum()`):
            # that call is read on its own
            return isinstance(call.func, cst.Attribute)
        if any(word in dotted.lower() for word in MODE_WORDS):
            return False
        head, _, rest = dotted.partition(".")
        imported = self.imports(source).get(head)
        if imported is not None:
            module = imported.qualified
            if is_torch(module) and imported.level == 0:
                return self._torch_call(source, call, f"{module}.{rest}" if rest else module, depth)
            if imported.level == 0 and module.partition(".")[0] in NO_MODULES:
                return True  # `math.sqrt(...)`, `np.log(...)`: a library that builds no torch module
            return self._project_call(source, call, imported, rest, depth)
        if rest:
            return True  # a method of a value the code holds (a tensor, `self.linear1`, a layer)
        if head in BUILTINS or head == "self":  # `self(x)`: the class's own forward, read already
            return True
        definition = top_level(source, head)
        if isinstance(definition, cst.ClassDef):
            return self.class_mode_free(source, definition, depth + 1)
        if isinstance(definition, cst.FunctionDef):
            return self.body_mode_free(source, definition, None, depth + 1)
        choices = _chosen_classes(source, call, head)
        if choices:  # `block = ResBlock1 if h.resblock == "1" else ResBlock2; block(...)`
            return all(self.call_mode_free(source, call.with_changes(func=c), depth + 1) for c in choices)
        nested = _nested_definition(source, call, head)
        if nested is not None:  # mbrl-lib's `def _convert(x): ...` inside `_process_batch`
            return self.body_mode_free(source, nested, None, depth + 1)
        return False  # a name the code was handed or made: unknown

    def _torch_call(self, source: Source, call: cst.Call, dotted: str, depth: int) -> bool:
        name = dotted.rsplit(".", 1)[-1]
        if not name[:1].isupper():
            return True  # a function (torch.cat, F.relu, nn.init.xavier_uniform_, weight_norm)
        if dotted.startswith(NOT_MODULES):
            return True  # an optimizer, a data loader, a gradient scaler: no module
        if dotted.startswith("torch.distributions") or dotted.count(".") == 1 and not dotted.startswith("torch.nn"):
            return True  # a distribution, torch.Tensor, torch.Size, torch.Generator
        if name in DROPOUT_ARGUMENT:
            dropout = next((a for a in call.args if a.keyword is not None and a.keyword.value == "dropout"), None)
            return dropout is None or (
                isinstance(dropout.value, (cst.Integer, cst.Float)) and float(dropout.value.value) == 0
            )
        if name not in MODE_FREE_LAYERS:
            return False
        if name not in CONTAINERS:
            return True
        # a container: what it holds is built here too
        for arg in call.args:
            for element in _built_elements(arg.value):
                if not self.builds_mode_free(source, element, depth + 1):
                    return False
        return True

    def _project_call(self, source: Source, call: cst.Call, imported: Import, rest: str, depth: int) -> bool:
        """A class or function of another module of the project (False outside it)."""
        found = self.imported_definition(source, imported, rest, depth)
        if found is None:
            return False
        module, definition = found
        if isinstance(definition, cst.ClassDef):
            return self.class_mode_free(module, definition, depth + 1)
        return self.body_mode_free(module, definition, None, depth + 1)

    def plain_class(self, source: Source, cls: cst.ClassDef) -> bool:
        """True for a class with no base, or only bases of the project that are plain classes
        too: not an nn.Module (or anything else from a package)."""
        for base in cls.bases:
            found = self.definition(source, base.value)
            if dotted_name(base.value) == "object":
                continue
            if found is None or not isinstance(found[1], cst.ClassDef) or not self.plain_class(found[0], found[1]):
                return False
        return True

    # ---- what a class or function runs ----

    def class_mode_free(self, source: Source, cls: cst.ClassDef, depth: int) -> bool:
        key = (source.path, cls.name.value)
        if self._reading and self._reading[-1] == key:
            return True  # the class builds itself (an alternate constructor): that adds nothing
        if key not in self._verdicts:
            self._verdicts[key] = False  # reached again through another class: not known yet
            self._reading.append(key)
            try:
                self._verdicts[key] = all(
                    self._base_mode_free(source, base.value, depth) for base in cls.bases
                ) and self.body_mode_free(source, cls, cls, depth)
            finally:
                self._reading.pop()
        return self._verdicts[key]

    def _base_mode_free(self, source: Source, base: cst.BaseExpression, depth: int) -> bool:
        dotted = dotted_name(base)
        if dotted is None:
            return False
        head, _, rest = dotted.partition(".")
        imported = self.imports(source).get(head)
        if imported is not None:
            if is_torch(imported.qualified) and imported.level == 0:
                return dotted.rsplit(".", 1)[-1] == "Module"
            if imported.level == 0 and imported.qualified.partition(".")[0] in NO_MODULES:
                return True  # `abc.ABC`, `typing.Generic[T]`: a library that builds no torch module
            return self._project_call(source, cst.Call(base), imported, rest, depth)
        definition = top_level(source, head) if not rest else None
        return isinstance(definition, cst.ClassDef) and self.class_mode_free(source, definition, depth + 1)

    def body_mode_free(self, source: Source, node: cst.CSTNode, cls: cst.ClassDef | None, depth: int) -> bool:
        """True where nothing in a class or function reads the mode or builds what does."""
        methods = self._methods(source, cls, depth) if cls else set()
        assigned: dict[str, list[cst.BaseExpression]] = {}
        used: set[str] = set()  # attributes of self the code calls, calls a method of, or loops over
        # an alternate constructor (`from_pretrained`) builds instances of this class, read here
        # anyway; what else it builds (a checkpoint's model to copy weights from) is no submodule
        constructors = (
            frozenset(
                s for s in cls.body.body if isinstance(s, cst.FunctionDef) and _alternate_constructor(cls, s.name.value)
            )
            if cls
            else frozenset()
        )
        for inner in source.walk(node, constructors):
            if isinstance(inner, cst.Attribute) and inner.attr.value == "training":
                return False
            if isinstance(inner, cst.Name) and any(word in inner.value.lower() for word in MODE_WORDS):
                return False
            if isinstance(inner, cst.Call):
                attribute = _self_root(inner.func)
                looped = _looped_over(source, inner)
                if attribute is not None:
                    used.add(attribute)
                    if not self._added_mode_free(source, inner, depth):
                        return False
                elif looped is not None:
                    used |= looped  # `for block in self.blocks: x = block(x)`
                elif not self.call_mode_free(source, inner, depth):
                    return False
            if isinstance(inner, (cst.For, cst.CompFor)) and (attribute := _self_root(inner.iter)) is not None:
                used.add(attribute)
            for target in _targets(inner):
                if _is_self_attribute(target):
                    assigned.setdefault(target.attr.value, []).append(inner.value)  # type: ignore[attr-defined]
        for attribute in used - methods - MODULE_METHODS:
            # a submodule the class runs: it must be one the class builds itself, of mode-free parts
            values = [v for v in assigned.get(attribute, []) if not _no_module(v, attribute)]
            if not values or not all(self.builds_mode_free(source, v, depth + 1) for v in values):
                return False
        return True

    def _methods(self, source: Source, cls: cst.ClassDef, depth: int) -> set[str]:
        """The methods of `cls` and of the project's classes it derives from (mbrl-lib's Model base
        defines the `self._process_batch(batch)` PlaNetModel calls): none is a submodule."""
        found = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        if depth > DEPTH:
            return found
        for base in cls.bases:
            definition = self.definition(source, base.value)
            if definition is not None and isinstance(definition[1], cst.ClassDef):
                found |= self._methods(definition[0], definition[1], depth + 1)
        return found


def _alternate_constructor(cls: cst.ClassDef, name: str) -> bool:
    """True for a classmethod or staticmethod of `cls` named `name` whose every return is a new
    instance of the class: `cls(...)`, `Name(...)`, or a local name only ever assigned one."""
    method = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
    if method is None or not any(
        dotted_name(d.decorator) in ("classmethod", "staticmethod") for d in method.decorators
    ):
        return False
    own = {cls.name.value, "cls"}

    def builds(value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and dotted_name(value.func) in own

    assigned: dict[str, list[cst.BaseExpression]] = {}
    returns: list[cst.BaseExpression | None] = []
    attached: set[str] = set()  # names something is attached to (`model.head = nn.Dropout()`)
    for node in walk(method.body):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False  # a nested scope: not read
        if isinstance(node, cst.Return):
            returns.append(node.value)
        for target in _targets(node):
            if isinstance(target, cst.Name):
                assigned.setdefault(target.value, []).append(node.value)  # type: ignore[attr-defined]
            elif (root := _root(target)) is not None:
                attached.add(root)
        if isinstance(node, cst.Call) and last_name(node.func) in ("add_module", "register_module"):
            attached.add(_root(node.func) or "")
    if any(isinstance(value, cst.Name) and value.value in attached for value in returns):
        return False
    return bool(returns) and all(
        builds(value)
        or (isinstance(value, cst.Name) and bool(assigned.get(value.value)) and all(map(builds, assigned[value.value])))
        for value in returns
    )


def _root(node: cst.BaseExpression) -> str | None:
    """The name an attribute or item chain starts from (`model` for `model.head.weight`)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _looped_over(source: Source, call: cst.Call) -> set[str] | None:
    """The attributes of self a loop iterates where `call` calls its loop variable
    (`for c1, c2 in zip(self.convs1, self.convs2): c1(x)`); None for any other call."""
    if not isinstance(call.func, cst.Name):
        return None
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            return None
        if isinstance(ancestor, cst.For) and call.func.value in _target_names(ancestor.target):
            roots = {r for n in source.walk(ancestor.iter) if (r := _self_root(n)) is not None}  # type: ignore[arg-type]
            return roots or None
    return None


def _chosen_classes(source: Source, call: cst.Call, name: str) -> list[cst.BaseExpression]:
    """The names a local variable is chosen among (`block = A if flag else B`), where the
    function around `call` assigns it only that way; [] otherwise."""
    function = source.function_of(call)
    if function is None:
        return []
    choices: list[cst.BaseExpression] = []
    for node in source.walk(function.body):
        for target in _targets(node):
            if name not in _target_names(target):
                continue
            if not isinstance(target, cst.Name) or not isinstance(node, cst.Assign):
                return []
            pending: list[cst.BaseExpression] = [node.value]
            while pending:
                value = pending.pop()
                if isinstance(value, cst.IfExp):
                    pending += [value.body, value.orelse]
                elif isinstance(value, (cst.Name, cst.Attribute)):
                    choices.append(value)
                else:
                    return []
    return choices


def _no_module(value: cst.BaseExpression, attribute: str) -> bool:
    """A value that brings no module: a literal, or the attribute itself moved (`self.x.to(d)`)."""
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.Name) and value.value in {"None", "True", "False"}:
        return True
    moved = _without_moves(value)
    return _is_self_attribute(moved) and moved.attr.value == attribute  # type: ignore[attr-defined]


def _self_root(node: cst.BaseExpression) -> str | None:
    """`x` for `self.x`, `self.x.m`, `self.x[i]` (what a call or a loop reaches through self)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and _is_self_attribute(node):
            return node.attr.value
        node = node.value
    return None


def _is_self_attribute(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _built_elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The modules an argument of a container holds: itself, a list's elements, a comprehension's."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements]
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return [value.elt]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, cst.StarredElement):
        return _built_elements(value.value)
    return [value]
