from __future__ import annotations

import re

import libcst as cst

from injector.neighbours import bound_arguments
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    AUDIOTOOLS_STEP,
    BATCH_TAKING_STEP,
    DATA_PARALLEL_UNLESS_WRAPPED,
    ENCODER_INPUTS,
    HANDED_LOSS_FUNCTION,
    LOSS_DICT_AGENT,
    LOSS_HELPER_TRAINER,
    MICROBATCH_TRAINER,
    MOVE_METHOD_STEP,
    RANK_DEVICE_STRINGS,
    SCRIPT_LEVEL_MODEL,
    SR_MODEL_STEP,
    TARGETS_ON_DEVICE,
)
from injector.patterns import (
    EVALUATION_WORDS,
    LOSS_FUNCTIONS,
    LOSS_MODULES,
    argument,
    assigned_alone,
    bound_here,
    bound_names,
    branch_sides,
    callee_name,
    constructed,
    dotted,
    enclosing_class,
    imported_name,
    in_optimizer_class,
    is_functional,
    last_name,
    read_from_settings,
    root_name,
    runs_model,
)

ACCELERATORS = ("cuda", "mps", "xpu", "npu", "hpu")


# what a name holding "loss" reads as the batch's part that the loss takes (SeisT's
# `loss_targets`, a `loss_mask`, per-sample `loss_weights`), not the loss itself
_LOSS_INPUT_WORDS = ("target", "targets", "label", "labels", "mask", "masks", "weight", "weights")


def _is_device(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.split(":")[0] in ACCELERATORS
    if isinstance(expr, cst.Call):
        if callee_name(expr) == "format" and isinstance(expr.func, cst.Attribute):
            return _is_device(expr.func.value)  # OpenPrompt's `"cuda:{}".format(config.environment.local_rank)`
        # `torch.device(...)`, `get_device()`, and helpers such as `dist_util.dev()`
        return (dotted(expr.func) or "").endswith("device") or callee_name(expr) == "dev"
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        return isinstance(head, cst.FormattedStringText) and head.value.split(":")[0] in ACCELERATORS
    name = (_string_key(expr) or last_name(expr) or "").lower()
    # (`dev`, CLIP4Clip's `devc = torch.device('cuda:{}'.format(dev_id))`, dl-for-har's `config['gpu']`)
    return any(word in name for word in ("device", "rank", "gpu", "cuda")) or name.startswith("dev")


def _string_key(expr: cst.BaseExpression) -> str | None:
    """The key of a settings entry read by a string (`config['gpu']`), else None."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            key = index.value.evaluated_value
            return key if isinstance(key, str) else None
    return None


MODEL_WORDS = ("model", "net", "module", "criterion", "loss_fn", "ema")


# Functions that hand back the model they are given (converted or wrapped).
MODEL_RETURNING = frozenset({"convert_sync_batchnorm", "compile", "script", "channels_last"})


def _is_model(training, expr: cst.BaseExpression) -> bool:
    """Models and other modules move once at set-up; the operator is about batches."""
    if isinstance(expr, cst.Call) and (callee_name(expr) or "a")[0].isupper() and not _tensor_class(expr):
        # `Net().to(device)`; not a batch's container built from what a loop binds each pass
        # (RecBole's `Interaction(current_interaction).to(self.device)`), unless it is bound to a
        # name a model goes by (diffpool builds each fold's `model = encoders.GcnEncoderGraph(
        # input_dim, ...).cuda()` from the fold's sizes)
        return not _built_each_pass(training.source, expr) or _bound_as_model(training.source, expr)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return not _tensor_attribute(training, expr)  # `self.backbone.cuda()`: a submodule
    if isinstance(expr, cst.Call) and callee_name(expr) in MODEL_RETURNING and expr.args:
        return _is_model(training, expr.args[0].value)  # `SyncBatchNorm.convert_sync_batchnorm(model)`
    chained = expr
    while isinstance(chained, cst.Call) and isinstance(chained.func, cst.Attribute):
        if chained.func.attr.value in ("train", "eval"):
            return True  # only a module switches modes: `build(**kwargs).train().requires_grad_(False)`
        chained = chained.func.value
    name = (last_name(expr) or "").lower()
    if isinstance(expr, cst.Name) and _handled_as_model(training.source, expr):
        return True
    return name == "self" or any(word in name for word in MODEL_WORDS) or training.role(expr) is not None


def _bound_as_model(source, call: cst.Call) -> bool:
    """True where what `call` builds (moved or not) is assigned to a name a model goes by."""
    node: cst.CSTNode = call
    parent = source.parent(node)
    while isinstance(parent, cst.Attribute) and parent.value is node:
        grand = source.parent(parent)
        if not (isinstance(grand, cst.Call) and grand.func is parent):
            return False
        node, parent = grand, source.parent(grand)
    return isinstance(parent, cst.Assign) and all(
        any(word in (last_name(t.target) or "").lower() for word in MODEL_WORDS) for t in parent.targets
    )


def _built_each_pass(source, call: cst.Call) -> bool:
    """True for a call inside a loop that is handed a name the loop binds (its target, or a name
    assigned in its body)."""
    loop = source.enclosing(call, (cst.For, cst.While))
    if loop is None:
        return False
    bound: set[str] = set(bound_names(loop.target)) if isinstance(loop, cst.For) else set()
    for node in source.within(loop.body, (cst.Assign, cst.For)):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            bound |= bound_names(target)
    handed = {n.value for arg in call.args for n in source.within(arg.value, cst.Name)}
    return bool(handed & bound)


def _tensor_attribute(training, expr: cst.Attribute) -> bool:
    """True for `self.x` that the file only ever binds to a tensor torch makes, or to itself
    moved (diffwave's `self.noise_level = torch.tensor(...)`, then `.to(device)` each step)."""
    name = dotted(expr)
    assigns = training.assigned_names.get(name or "", [])
    return bool(assigns) and all(
        isinstance(a.value, cst.Call)
        and isinstance(a.value.func, cst.Attribute)
        and (
            (dotted(a.value.func.value) == "torch" and a.value.func.attr.value[:1].islower())
            or (dotted(a.value.func.value) == name and a.value.func.attr.value in ("to", "cuda"))
        )
        for a in assigns
    )


_MODULE_METHODS = frozenset({"train", "eval", "parameters", "named_parameters", "state_dict", "load_state_dict"})


def _handled_as_model(source, name: cst.Name) -> bool:
    """True for a name its function treats as the model: switches its mode or reads its parameters
    (`vae.train()`), converts with `SyncBatchNorm.convert_sync_batchnorm(task)` or keeps as one
    (`self.model = task`, torchdrug's Engine, handed a task module that wraps the model)."""
    function = source.function_of(name)
    # (a script's module level too: TGN's `tgn.parameters()`, then `tgn = tgn.to(device)`)
    body = function.body if function is not None else source.module
    for call in source.within(body, cst.Call):
        # only a module switches modes or hands out its parameters (VAAL's `vae.train()`, then
        # `vae = vae.cuda()`)
        if (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _MODULE_METHODS
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value == name.value
        ):
            return True
    for assign in source.within(body, cst.Assign):
        value = assign.value
        if isinstance(value, cst.Name) and value.value == name.value:
            if any(any(w in (last_name(t.target) or "").lower() for w in MODEL_WORDS) for t in assign.targets):
                return True
        elif (
            isinstance(value, cst.Call)
            and callee_name(value) in MODEL_RETURNING
            and value.args
            and isinstance(value.args[0].value, cst.Name)
            and value.args[0].value.value == name.value
        ):
            return True
    return False


def _optimizer_state(source, call: cst.Call) -> bool:
    """True for a move inside a loop over an optimizer's state (`for state in
    self.optimizer.state.values(): for k, v in state.items(): state[k] = v.to(device)`, a resume
    that puts the moments where the parameters are): no batch."""
    return any(
        isinstance(loop, cst.For) and ".state" in f".{source.code(loop.iter)}" and "optim" in source.code(loop.iter)
        for loop in source.ancestors(call)
    )


def _fresh_tensor(expr: cst.BaseExpression) -> bool:
    """True for a tensor the code makes itself, through any methods: `torch.zeros(n, h)`,
    `torch.multinomial(p, 1).unsqueeze(1)`. Fed to the model, it must be on the model's device."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if dotted(expr.func.value) == "torch":
            if _tensor_class(expr) or expr.func.attr.value in ("tensor", "as_tensor"):
                return not (expr.args and _setting(expr.args[0].value))
            return expr.func.attr.value[:1].islower()
        expr = expr.func.value
    return False


def _moved_and_returned(source, call: cst.Call) -> bool:
    """True for `x = x.to(device)` in a function that returns `x` itself, alone or in a tuple
    (MDLM's `eval_retokenize`: the tokenized samples and their mask moved, then returned for the
    scoring model)."""
    assign = source.parent(call)
    function = source.function_of(call)
    if not isinstance(assign, cst.Assign) or assign.value is not call or function is None:
        return False
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name = assign.targets[0].target.value
    if not isinstance(call.func, cst.Attribute) or dotted(call.func.value) != name:
        return False
    for ret in source.within(function.body, cst.Return):
        value = ret.value
        parts = value.elements if isinstance(value, cst.Tuple) else [value] if value is not None else []
        if source.function_of(ret) is function and any(
            isinstance(getattr(p, "value", p), cst.Name) and getattr(p, "value", p).value == name for p in parts
        ):
            return True
    return False


def _made_by_a_method(source, expr: cst.BaseExpression) -> bool:
    """True for `self.method(...)` whose every return is a tensor it makes itself, or one such
    tensor scaled (MDLM's `_sample_prior`: `return self.mask_index * torch.ones(*dims)`): a
    sampling run's initial input, moved to the model's device by the caller."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and dotted(expr.func.value) == "self"):
        return False
    owner = enclosing_class(source, expr)
    methods = [
        d
        for d in (owner.body.body if owner is not None else ())
        if isinstance(d, cst.FunctionDef) and d.name.value == expr.func.attr.value
    ]
    returns = [r for m in methods for r in source.within(m.body, cst.Return) if source.function_of(r) is m]
    return bool(returns) and all(r.value is not None and _fresh_or_scaled(r.value) for r in returns)


def _fresh_or_scaled(expr: cst.BaseExpression) -> bool:
    """A tensor made here (`torch.ones(...)`), or one multiplied by a number or setting."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _fresh_tensor(expr.left) or _fresh_tensor(expr.right)
    return _fresh_tensor(expr)


def _setting(expr: cst.BaseExpression) -> bool:
    """True for a value read from the run's settings or written out (`config["LOSS"]["WEIGHT"]`,
    `args.weights`, `[1.0, 0.5]`): a tensor built from it is a constant, not an input."""
    if isinstance(expr, (cst.List, cst.Tuple, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, (cst.Attribute, cst.Name)) and "weight" in (last_name(expr) or "").lower():
        return True  # class weights counted from the data set (`train_set.labelweights`), a constant
    return read_from_settings(expr)


LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})


def _made_a_number(source, call: cst.Call) -> bool:
    """True where what the move makes is turned into a Python number within the same expression
    (`.item()`, `.tolist()`, `float(...)`, `int(...)`), meeting no other tensor on the way: the
    device it was on is gone with it. (`(predicted == labels.to(device)).sum().item()` compares
    it with a tensor on the device first: that move is a site.)"""
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        if isinstance(ancestor, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            return False
        if isinstance(ancestor, cst.Call) and ancestor is not call and len(ancestor.args) > 1:
            return False
        if isinstance(ancestor, cst.Call) and ancestor is not call:
            name = callee_name(ancestor)
            if (name in ("item", "tolist") and isinstance(ancestor.func, cst.Attribute) and not ancestor.args) or (
                name in ("float", "int") and isinstance(ancestor.func, cst.Name)
            ):
                return True
    return False


# Constructors that build on the default tensor type's device (not `from_numpy`, which shares the
# array's memory on the CPU).
_BUILT_BY_DEFAULT = frozenset({"Tensor", "FloatTensor", "tensor"})


def _cuda_by_default(source) -> bool:
    """True where the file makes a CUDA type the default tensor type, or CUDA the default device."""
    for call in source.nodes(cst.Call):
        name = callee_name(call)
        if name not in ("set_default_tensor_type", "set_default_device") or not call.args:
            continue
        value = call.args[0].value
        text = value.evaluated_value if isinstance(value, cst.SimpleString) else dotted(value)
        if isinstance(text, str) and ("cuda" in text):
            return True
    return False


def _made_dict(source, target: cst.Subscript, use: cst.CSTNode) -> bool:
    """True for an entry of a dict the function builds itself (PyMIC's `loss_input_dict =
    {'prediction': pred, ...}`, then `loss_input_dict['pixel_weight'] = w.to(device)`): the entry
    is the moved tensor itself, no copy into a tensor's slot."""
    holder = target.value
    function = source.function_of(use)
    if not isinstance(holder, cst.Name) or function is None:
        return False
    return any(
        any(isinstance(t.target, cst.Name) and t.target.value == holder.value for t in a.targets)
        and (isinstance(a.value, (cst.Dict, cst.DictComp)) or callee_name(a.value) in ("dict", "OrderedDict"))
        for a in source.within(function, cst.Assign)
        if isinstance(a.value, (cst.Dict, cst.DictComp, cst.Call))
    )


def _needless(source, call: cst.Call) -> bool:
    """Moves that change nothing: of a `*_like` tensor (`torch.zeros_like(x)` is already on x's
    device); of a value stored into a slot of an existing tensor (`buf[i] = x.to(device)`: the
    store copies it to the buffer's device); of a batch in a Lightning module's step, which
    Lightning moved to the device before calling it."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if isinstance(receiver, cst.Call) and (callee_name(receiver) or "").endswith("_like"):
        return True
    if isinstance(receiver, cst.Call) and callee_name(receiver) in _BUILT_BY_DEFAULT and _cuda_by_default(source):
        # `torch.Tensor(images).to(device)` where the file made CUDA the default tensor type
        # (NeRF's `torch.set_default_tensor_type('torch.cuda.FloatTensor')`): built there already
        return True
    node: cst.CSTNode = call
    parent = source.parent(node)
    while isinstance(parent, cst.Attribute) and parent.value is node:
        grand = source.parent(parent)
        if not (isinstance(grand, cst.Call) and grand.func is parent):
            break
        node, parent = grand, source.parent(grand)
    if (
        isinstance(parent, cst.Assign)
        and parent.value is node
        and all(isinstance(t.target, cst.Subscript) for t in parent.targets)
        and not any(
            receiver is not None and any(t.target.deep_equals(n) for n in source.within(receiver, cst.Subscript))
            for t in parent.targets
        )
        and not any(_iterated_dict(source, t.target, call) for t in parent.targets)
        and not (
            isinstance(receiver, cst.Name)
            and any(isinstance(t.target, cst.Subscript) and _made_dict(source, t.target, call) for t in parent.targets)
        )
    ):
        # (`batch[key] = batch[key].to(device)` replaces a dict's entry, and chemprop's
        # `constraints[i] = torch.tensor(constraints[i]).to(device)` a list's: no copy into a tensor)
        return True
    if _made_a_number(source, call):
        return True  # `-torch.prod(torch.Tensor(shape).to(device)).item()`: a number either way
    function = source.function_of(call)
    if function is not None and _only_an_index(source, function, parent, node):
        return True
    if function is not None and isinstance(call.func, cst.Attribute):
        names = _tensor_names(call.func.value)
        if names and all(_moved(source, function, n, call, 2) for n in names):
            return True  # made only from tensors this function moved already
    if function is None or function.name.value not in LIGHTNING_STEPS:
        return False
    owner = source.parent(source.parent(function) or function)
    return isinstance(owner, cst.ClassDef) and any(
        (last_name(base.value) or "").endswith("LightningModule") for base in owner.bases
    )


def _iterated_dict(source, target: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for `d[key]` inside a loop over `d.items()` (or its keys): an entry of a dict the
    loop walks (`for key, value in input_dict.items(): input_dict[key] = value.to(device)`)."""
    if not isinstance(target, cst.Subscript):
        return False
    base = dotted(target.value)
    return base is not None and any(
        isinstance(loop, cst.For)
        and isinstance(loop.iter, cst.Call)
        and callee_name(loop.iter) in ("items", "keys")
        and isinstance(loop.iter.func, cst.Attribute)
        and dotted(loop.iter.func.value) == base
        for loop in source.ancestors(use)
    )


def _only_an_index(source, function: cst.FunctionDef, parent, node) -> bool:
    """True for a tensor assigned to a name that the function only indexes with (`x[~mask]`):
    an index on the CPU selects from a tensor on any device."""
    name = assigned_alone(parent, node)
    if name is None:
        return False
    uses = [
        n
        for n in source.within(function.body, cst.Name)
        if n.value == name and source.span(n)[0] > source.span(parent)[1]
    ]
    return bool(uses) and all(source.enclosing(n, cst.SubscriptElement) is not None for n in uses)


_COMBINE = frozenset({"cat", "stack", "concat", "hstack", "vstack"})


def _tensor_names(expr: cst.BaseExpression) -> set[str] | None:
    """The names of the tensors an expression is made of (`batch_y` of `batch_y[:, -n:, k:]`,
    `batch_y` and `dec_inp` of `torch.cat([batch_y[:, :n], dec_inp], dim=1).float()`), or None
    where something else could bring a tensor in (a factory, an attribute, a call)."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, cst.Subscript):
        return _tensor_names(expr.value)  # the indices select, they bring no tensor
    if isinstance(expr, cst.Attribute):
        # a field of an object the code moved (`g.ndata['feat']` of a DGL graph `g`): it lives
        # where the object lives; a module's own attribute (`self.x`) says nothing
        root = expr.value
        while isinstance(root, cst.Attribute):
            root = root.value
        return {root.value} if isinstance(root, cst.Name) and root.value not in ("self", "torch") else None
    if isinstance(expr, (cst.List, cst.Tuple)):
        parts = [_tensor_names(e.value) for e in expr.elements]
        return None if any(p is None for p in parts) else set().union(*parts)  # type: ignore[arg-type]
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        name = expr.func.attr.value
        if dotted(expr.func.value) == "torch":
            if name in _COMBINE or name.endswith("_like"):
                return _tensor_names(expr.args[0].value) if expr.args else None
            return None
        if expr.args and name not in ("float", "half", "double", "long", "int", "contiguous", "detach", "clone"):
            return None
        return _tensor_names(expr.func.value)  # a method of the tensor that keeps its device
    return None


def _reaching(source, function: cst.FunctionDef, name: str, use: cst.CSTNode) -> cst.Assign | cst.For | None:
    """The binding of `name` that reaches `use` in `function`: the last one before it in a block
    that holds the use (one in a branch beside the use cannot reach it), an assignment or a loop."""
    before = source.span(use)[0]
    around = set(source.ancestors(use))
    found: cst.Assign | cst.For | None = None
    for node, names in _bindings(source, function):
        if name not in names:
            continue
        if isinstance(node, cst.For):
            binds = source.span(node.target)[1] <= before and node in around
        else:
            binds = source.span(node)[1] <= before
            blocks = {a for a in source.ancestors(node) if isinstance(a, cst.IndentedBlock)}
            binds = binds and blocks <= around
        if binds and (found is None or source.span(node)[0] > source.span(found)[0]):
            found = node
    return found


def _bindings(source, function: cst.FunctionDef) -> list[tuple[cst.Assign | cst.For, frozenset[str]]]:
    """The assignments and loops of `function` itself (not of a function inside it), in document
    order, each with the names it binds: worked out once per function, since every use asks."""
    return source.remember(
        ("device-mismatch bindings", function),
        lambda: [
            (node, frozenset(_names_bound(node)))
            for node in source.within(function.body, (cst.Assign, cst.For))
            if source.function_of(node) is function
        ],
    )


def _names_bound(node: cst.Assign | cst.For) -> set[str]:
    if isinstance(node, cst.For):
        return bound_names(node.target)
    return set().union(*(bound_names(t.target) for t in node.targets))


def _moved(source, function: cst.FunctionDef, name: str, use: cst.CSTNode, depth: int) -> bool:
    """True if the binding of `name` that reaches `use` assigned a value moved to the device
    (`.to(...)`, `.cuda()`), or one made only from such tensors."""
    found = _reaching(source, function, name, use)
    if not isinstance(found, cst.Assign) or not any(
        isinstance(t.target, cst.Name) and t.target.value == name for t in found.targets
    ):
        return False  # bound by a loop or unpacked from a tuple: nothing says where it lives
    if any(callee_name(c) in ("to", "cuda") for c in source.within(found.value, cst.Call)):
        return True
    if _sampled_from_placed_store(source, found.value):
        return True
    if _placed_module_output(source, function, found.value):
        return True
    names = _tensor_names(found.value) if depth > 0 else None
    return bool(names) and all(
        _moved(source, function, n, found, depth - 1)
        for n in names  # type: ignore[union-attr]
    )


_KEEP_DEVICE = frozenset({"detach", "float", "half", "double", "contiguous", "clone", "squeeze", "unsqueeze"})


def _model_output_moved(source, training, call: cst.Call) -> bool:
    """True for the output of the model's forward moved to the device (AGCRN's `self.loss(output.cuda(),
    label)` after `output = self.model(data, target)`): it is computed where the model lives, so the
    move changes nothing the batch's moves do not."""
    value = call.func.value if isinstance(call.func, cst.Attribute) else None
    function = source.function_of(call)
    if not isinstance(value, cst.Name) or function is None:
        return False
    found = _reaching(source, function, value.value, call)
    if not isinstance(found, cst.Assign) or not any(
        isinstance(t.target, cst.Name) and t.target.value == value.value for t in found.targets
    ):
        return False
    computed = found.value
    while (
        isinstance(computed, cst.Call)
        and isinstance(computed.func, cst.Attribute)
        and computed.func.attr.value in _KEEP_DEVICE
    ):
        computed = computed.func.value
    return isinstance(computed, cst.Call) and runs_model(source, training, computed)


def _placed_module_output(source, function: cst.FunctionDef, value: cst.BaseExpression) -> bool:
    """True for the output of a module this function placed on the device itself (MelGAN's `fft =
    Audio2Mel(...).cuda()`, then `s_t = fft(x_t).detach()`): its buffers there, so is what it
    computes."""
    while (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _KEEP_DEVICE
    ):
        value = value.func.value
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
        return False
    binding = _reaching(source, function, value.func.value, value)
    return (
        isinstance(binding, cst.Assign)
        and isinstance(binding.value, cst.Call)
        and callee_name(binding.value) in ("to", "cuda")
    )


def _sampled_from_placed_store(source, value: cst.BaseExpression) -> bool:
    """True for `replay_buffer.sample(n)` where the file builds `replay_buffer` with a device
    somewhere in its construction (`TensorDictReplayBuffer(storage=LazyTensorStorage(size,
    device=device))`, `ReplayBuffer(size, device=device)`): the store keeps its tensors there, so
    what it hands out is on the device already."""
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and (callee_name(value) or "").startswith(("sample", "get_batch"))
    ):
        return False
    store = dotted(value.func.value)
    if store is None:
        return False
    built = [
        assign.value
        for assign in source.nodes(cst.Assign)
        if [dotted(t.target) for t in assign.targets] == [store] and isinstance(assign.value, cst.Call)
    ]
    return bool(built) and all(
        any(
            a.keyword is not None and a.keyword.value == "device" and _is_device(a.value)
            for c in source.within(call, cst.Call)
            for a in c.args
        )
        for call in built
    )


_CONVERSIONS = frozenset({"from_numpy", "tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor"})


def _loop_constant(source, call: cst.Call) -> bool:
    """True for `w = w.cuda()` inside a batch loop where `w` was made from nothing the loop
    binds (`weights = torch.from_numpy(cls_weights)`): the same constant every pass, not a batch."""
    loop = source.enclosing(call, (cst.For, cst.While))
    function = source.function_of(call)
    if loop is None or function is None or not isinstance(call.func, cst.Attribute):
        return False
    receiver = call.func.value
    if not isinstance(receiver, cst.Name):
        return False
    found = _reaching(source, function, receiver.value, call)
    if not isinstance(found, cst.Assign) or not any(isinstance(t.target, cst.Name) for t in found.targets):
        return False
    if any(
        not (dotted(c.func) or "").startswith("torch.") or callee_name(c) not in _CONVERSIONS
        for c in source.within(found.value, cst.Call)
    ):
        return False  # a call may give something new each pass (`next(loader)`)
    read = {
        n.value
        for n in source.within(found.value, cst.Name)
        if not (isinstance(source.parent(n), cst.Attribute) and source.parent(n).attr is n)
    } - {"torch"}
    bound: set[str] = set(bound_names(loop.target)) if isinstance(loop, cst.For) else set()
    for node in source.within(loop.body, (cst.Assign, cst.AugAssign, cst.For)):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                bound |= bound_names(t.target)
        elif isinstance(node, cst.AugAssign):
            bound |= bound_names(node.target)
        else:
            bound |= bound_names(node.target)
    return bool(read) and not (read & bound)


def _tensor_class(call: cst.Call) -> bool:
    """True for a tensor built by its class (`torch.Tensor(obs)`, `torch.FloatTensor(n)`), not a module."""
    name = dotted(call.func) or ""
    return name.startswith("torch.") and name.endswith("Tensor")


def _is_batch(source, call: cst.Call) -> bool:
    """A batch moves where batches are taken: in a loop, in what a batch helper returns
    (`return x.to(device), y`), or in a function that names batches; and so does an input the
    code makes itself (`torch.zeros(...).to(device)`, the initial state of a sampling run). A
    checkpoint's metric moved once at start-up (`best_acc1 = best_acc1.to(gpu)`) is not a batch."""
    if _loop_constant(source, call):
        return False
    anchor: cst.CSTNode = call  # a lambda a loop maps over its batch parts runs in that loop
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            break
        if isinstance(ancestor, cst.Lambda):
            anchor = ancestor
    if source.enclosing(anchor, (cst.For, cst.While, cst.ListComp, cst.DictComp, cst.GeneratorExp)) is not None:
        return True
    if isinstance(call.func, cst.Attribute) and (_fresh_tensor(call.func.value) or _dataset_item(call.func.value)):
        return True
    if isinstance(call.func, cst.Attribute) and _made_by_a_method(source, call.func.value):
        return True
    if _matched_to_cuda(source, call) or _made_input(source, call):
        return True
    if source.enclosing(call, cst.Return) is not None or _moved_and_returned(source, call):
        return True
    if _batch_holder(source, call) or _taken_item(source, call):
        return True
    function = source.function_of(call)
    name = function.name.value.lower() if function is not None else ""
    # what moves: the receiver (`batch.to(device)`) or a move helper's first argument
    # (mmf's `to_device(batch, self.device)`)
    moved = (
        call.func.value
        if isinstance(call.func, cst.Attribute) and not _move_helper(callee_name(call))
        else call.args[0].value
        if call.args and call.args[0].keyword is None and not call.args[0].star
        else None
    )
    if isinstance(moved, cst.Call) and callee_name(moved) == "next" and len(moved.args) == 1:
        return True  # the next batch of an iterator (diffab's `recursive_to(next(train_iterator), device)`)
    if function is not None and moved is not None:
        # a parameter named for the batch (SpeechBrain's `compute_forward(self, batch, stage)`)
        root = root_name(moved)
        if root is not None and "batch" in root.lower() and root in {p.name.value for p in function.params.params}:
            return True
    return any(word in name for word in ("batch", "step", "device", "prepare", "collate"))


def _matched_to_cuda(source, call: cst.Call) -> bool:
    """True for a move made because another tensor is on the GPU (wavenet_vocoder's mask helper:
    `if sequence_length.is_cuda: seq_range_expand = seq_range_expand.cuda()`): left out, the two
    meet on different devices."""
    branch = source.enclosing(call, cst.If)
    return (
        branch is not None
        and isinstance(branch.test, cst.Attribute)
        and branch.test.attr.value == "is_cuda"
        and call in source.within(branch.body, cst.Call)
    )


def _made_input(source, call: cst.Call) -> bool:
    """True for a tensor the function made itself in every branch that binds it (`initial_input =
    torch.zeros(1, 1, 1).fill_(v)` or `torch.from_numpy(onehot).view(...)`), moved, then handed to
    a model's method (a generation's first input)."""
    function = source.function_of(call)
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if function is None or not isinstance(receiver, cst.Name):
        return False
    here = source.span(call)[0]
    bindings = [
        a
        for a in source.within(function.body, cst.Assign)
        if source.span(a)[1] <= here and any(dotted(t.target) == receiver.value for t in a.targets)
    ]

    # what reaches the move: in each block, the last binding (`x = to_categorical(v)`, then
    # `x = torch.from_numpy(x).view(1, 1, n)`: the second)
    def block(assign):
        return source.parent(source.block_of(assign)[0])

    last = [
        a for a in bindings if not any(block(b) is block(a) and source.span(b)[0] > source.span(a)[0] for b in bindings)
    ]
    if not last or not all(_fresh_tensor(a.value) for a in last):
        return False
    assign = source.parent(call)
    after = source.span(assign)[1] if isinstance(assign, cst.Assign) else here
    return any(
        source.span(use)[0] > after
        and isinstance(use.func, cst.Attribute)
        and "model" in (dotted(use.func.value) or "").lower()
        and any(dotted(a.value) == receiver.value for a in use.args)
        for use in source.within(function.body, cst.Call)
    )


def _feeds_model(source, training, call: cst.Call) -> bool:
    """True for `imgs = imgs.cuda()` where the same function then hands `imgs` to a model or a
    loss (`outputs = self.model(imgs)`) and runs the backward: the step's input, in a step that
    takes its batch as a parameter and holds no loop (torchreid's `forward_backward(self, data)`);
    also a list of inputs moved one by one where an inference function hands it to the model."""
    assign = source.parent(call)
    listed = isinstance(assign, cst.Element) and isinstance(source.parent(assign), (cst.List, cst.Tuple))
    if listed:
        assign = source.parent(source.parent(assign))
    if not isinstance(call.func, cst.Attribute) or not isinstance(assign, cst.Assign):
        return False
    if len(assign.targets) != 1 or _loop_constant(source, call):
        return False
    name, function = dotted(assign.targets[0].target), source.function_of(call)
    if name is None or function is None:
        return False
    if listed:
        # s3prl's `wavs = [wav.view(-1).to(device)]`, a list of inputs handed to the model, in a
        # function named for inference or evaluation (it runs no backward)
        if not any(word in function.name.value.lower() for word in EVALUATION_WORDS):
            return False
    elif not any(source.function_of(b.call) is function for b in training.backwards):
        # an evaluation step handed its batch (pyod's `evaluating_forward(self, batch_data)`:
        # `x_gpu = x.to(self.device)`, then `self.model(x_gpu)`)
        if not _evaluation_step_input(source, function, call):
            return False
    elif name != dotted(call.func.value):
        return False  # a step function differentiates what it computes
    after = source.span(assign)[1]
    # and what the function computes from it: diffwave's noise schedule, moved each step, indexed
    # by the step's diffusion steps and mixed into the audio the model is handed
    fed = {name} if listed else _computed_from(source, function, name, after)
    return any(
        source.span(use)[0] > after
        and (runs_model(source, training, use) or training.is_loss_value(use, use))
        and any(dotted(a.value) in fed for a in use.args)
        for use in source.within(function, cst.Call)
    )


def _moved_parts(source, training, call: cst.Call) -> str | None:
    """`inputs, labels` for `inputs, labels = self._move_to_device(inputs, labels, ...)` in a loop,
    where the method of the file returns its parameters in the order it takes them; else None."""
    if not (
        isinstance(call.func, cst.Attribute)
        and dotted(call.func.value) == "self"
        and (callee_name(call) or "").endswith("_to_device")
    ):
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    assign = source.parent(call)
    if len(positional) < 2 or not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    names = [dotted(a.value) for a in positional]
    if not isinstance(target, cst.Tuple) or [dotted(e.value) for e in target.elements] != names or None in names:
        return None
    if source.enclosing(call, (cst.For, cst.While)) is None:
        return None
    for helper in training.called_functions(call):
        params = [p.name.value for p in helper.params.params if p.name.value != "self"][: len(names)]
        returns = [r for r in source.within(helper, cst.Return) if source.function_of(r) is helper]
        if returns and all(
            isinstance(r.value, cst.Tuple) and [dotted(e.value) for e in r.value.elements] == params for r in returns
        ):
            return ", ".join(source.code(a.value) for a in positional)
    return None


def _local_move(source, training, call: cst.Call) -> bool:
    """True for a call of a function of the file that returns its first parameter moved to its
    second (`def move(obj, device): if hasattr(obj, "to"): return obj.to(device, ...)`), handed a
    device, in a function that moves a batch."""
    if not isinstance(call.func, cst.Name) or len(call.args) < 2 or call.args[0].keyword is not None:
        return False
    if not _is_device(call.args[1].value) or not _is_batch(source, call):
        return False
    for helper in training.called_functions(call):
        params = [p.name.value for p in helper.params.params]
        if len(params) < 2 or source.function_of(call) is helper:
            continue  # (its own recursion into a container's items is part of the one move)
        for ret in source.within(helper, cst.Return):
            value = ret.value
            if (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in ("to", "cuda")
                and dotted(value.func.value) == params[0]
                and (value.func.attr.value == "cuda" or any(dotted(a.value) == params[1] for a in value.args))
            ):
                return True
    return False


def _moved_again(source, training, call: cst.Call) -> bool:
    """True where `call`'s result, bound to a name alone, is handed later in the same function to
    a function of the file that moves the parameter it binds with the same helper before anything
    else reads it (flambe's `_train_step` moves each batch, then `_compute_batch(batch, ...)`
    opens with `batch = self._batch_to_device(batch)`)."""
    assign = source.parent(call)
    function = source.function_of(call)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1) or function is None:
        return False
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    after = source.span(assign)[1]
    for use in source.within(function, cst.Call):
        if source.span(use)[0] <= after or not use.args or dotted(use.args[0].value) != target.value:
            continue
        for helper in training.called_functions(use):
            params = [p.name.value for p in helper.params.params if p.name.value != "self"]
            body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
            first = next((line for line in body if not _docstring(line)), None)
            moved = first.body[0] if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 else None
            if (
                params
                and isinstance(moved, cst.Assign)
                and isinstance(moved.value, cst.Call)
                and callee_name(moved.value) == callee_name(call)
                and [dotted(t.target) for t in moved.targets] == [params[0]]
                and moved.value.args
                and dotted(moved.value.args[0].value) == params[0]
            ):
                return True
    return False


def _docstring(line: cst.CSTNode) -> bool:
    return (
        isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and isinstance(line.body[0], cst.Expr)
        and isinstance(line.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _model_input(source, training, call: cst.Call) -> bool:
    """True where `call`'s result, bound to a name alone, is the first positional argument of a
    forward pass later in the same function."""
    assign = source.parent(call)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return False
    target = assign.targets[0].target
    function = source.function_of(call)
    if not isinstance(target, cst.Name) or function is None:
        return False
    after = source.span(assign)[1]
    return any(
        source.span(use)[0] > after
        and use.args
        and use.args[0].keyword is None
        and use.args[0].star == ""
        and isinstance(use.args[0].value, cst.Name)
        and use.args[0].value.value == target.value
        and runs_model(source, training, use)
        for use in source.within(function, cst.Call)
    )


def _evaluation_step_input(source, function: cst.FunctionDef, call: cst.Call) -> bool:
    """True for a move, outside any loop, in a function named for evaluation, of one of its
    parameters or of a name it binds to one alone (`x = batch_data`)."""
    if source.enclosing(call, (cst.For, cst.While)) is not None or source.function_of(call) is not function:
        return False
    if not any(word in function.name.value.lower() for word in EVALUATION_WORDS):
        return False
    moved = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not isinstance(moved, cst.Name):
        return False
    parameters = {p.name.value for p in function.params.params if p.name.value != "self"}
    if moved.value in parameters:
        return True
    return any(
        isinstance(assign.value, cst.Name)
        and assign.value.value in parameters
        and any(moved.value in bound_names(t.target) for t in assign.targets)
        for assign in source.within(function, cst.Assign)
    )


# attributes that read what a tensor is, not its values
_METADATA = frozenset({"device", "dtype", "shape", "is_cuda", "ndim"})


def _value_reads(expr: cst.CSTNode) -> set[str]:
    """The names and attributes whose values `expr` computes with (`self.noise_level` for
    `self.noise_level[t].unsqueeze(1)`): not an index, nor a tensor's device, dtype or shape."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in _METADATA:
        return set()
    name = dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    if name is not None:
        return {name}
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        return _value_reads(expr.value)
    found: set[str] = set()
    for child in expr.children:
        found |= _value_reads(child)
    return found


def _computed_from(source, function: cst.FunctionDef, name: str, after: int) -> set[str]:
    """`name` and every name the function assigns after `after` from values computed with it."""
    found = {name}
    for assign in source.within(function, cst.Assign):
        if source.span(assign)[0] >= after and _value_reads(assign.value) & found:
            found |= {n for t in assign.targets for n in bound_names(t.target)}
    return found


def _scattered_by_data_parallel(source, training, call: cst.Call) -> bool:
    """True for a batch moved where it is handed straight to a model wrapped in `DataParallel`
    (pytorch-retinanet's `retinanet([data['img'].cuda().float(), data['annot']])` after
    `retinanet = torch.nn.DataParallel(retinanet).cuda()`), or moved into a name only such a model
    is handed: DataParallel scatters its inputs to its GPUs itself, so the move changes nothing."""
    start, end = source.span(call)
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.FunctionDef)):
            break
        if not isinstance(ancestor, cst.Call) or not isinstance(ancestor.func, (cst.Name, cst.Attribute)):
            continue
        handed = any(source.span(a)[0] <= start and end <= source.span(a)[1] for a in ancestor.args)
        if handed and training.constructor(ancestor.func) == "DataParallel":
            return True
    return _moved_for_data_parallel(source, training, call)


def _moved_batch(source, target: cst.BaseExpression, call: cst.Call) -> bool:
    """True for a name the function bound, before `call`, to a tensor moved to a device
    (`sources = sources.to(self.device)`): `x.to(sources)` places `x` beside it."""
    function = source.function_of(call)
    if not isinstance(target, cst.Name) or function is None:
        return False
    start = source.span(call)[0]
    for assign in source.within(function, cst.Assign):
        value = assign.value
        if (
            source.span(assign)[1] <= start
            and any(isinstance(t.target, cst.Name) and t.target.value == target.value for t in assign.targets)
            and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and (
                value.func.attr.value == "cuda"
                or (value.func.attr.value == "to" and value.args and _is_device(value.args[0].value))
            )
        ):
            return True
    return False


def _made_a_parameter(source, call: cst.Call) -> bool:
    """True for a move whose result a `Parameter(...)` or `register_buffer(...)` call takes
    (DeepCTR's `self.weight = nn.Parameter(torch.Tensor(...).to(device))`), or that is stored
    into a tensor's `.data` (DeepChem's `dest_var.data = torch.as_tensor(value, device=...)`,
    pre-trained weights copied into the model's parameters): the model's own state."""
    holder = source.parent(call)
    if isinstance(holder, cst.Assign) and all(
        isinstance(t.target, cst.Attribute) and t.target.attr.value == "data" for t in holder.targets
    ):
        return True
    outer = source.parent(holder) if isinstance(holder, cst.Arg) else None
    return isinstance(outer, cst.Call) and callee_name(outer) in ("Parameter", "register_buffer")


def _moved_for_data_parallel(source, training, call: cst.Call) -> bool:
    """True for `x = x.cuda()` whose every later use, up to where `x` is bound again, hands it
    straight to a model that is a `DataParallel` wherever the function runs it (CPC's
    `batchData = batchData.cuda(non_blocking=True)`, then `cpcModel(batchData, label)` in a step
    function that main() hands `cpcModel = torch.nn.DataParallel(...)`): the wrapper scatters
    its inputs to its GPUs itself."""
    assign = source.parent(call)
    value: cst.CSTNode = call
    wrapper = source.parent(assign) if isinstance(assign, cst.Arg) else None
    if isinstance(wrapper, cst.Call) and callee_name(wrapper) == "Variable" and len(wrapper.args) == 1:
        assign, value = source.parent(wrapper), wrapper  # PyTorch 0.3's `Variable(images.cuda())`
    function = source.function_of(call)
    if (
        not isinstance(assign, cst.Assign)
        or assign.value is not value
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
        or function is None
    ):
        return False
    name = assign.targets[0].target.value
    after = source.span(assign)[1]
    # the other side of an `if` the move is under never runs after it (`else: images =
    # Variable(images)`)
    other_sides = [
        source.span(n.orelse)
        for n in source.ancestors(assign)
        if isinstance(n, cst.If)
        and n.orelse is not None
        and source.span(n.body)[0] <= source.span(assign)[0]
        and source.span(assign)[1] <= source.span(n.body)[1]
    ]
    uses = []
    for statement in source.within(function, cst.SimpleStatementLine):
        start = source.span(statement)[0]
        if start < after or any(low <= start < high for low, high in other_sides):
            continue
        for small in statement.body:
            read = small.value if isinstance(small, cst.Assign) else small
            uses += [n for n in source.within(read, cst.Name) if n.value == name]
        if any(
            isinstance(a, cst.Assign) and any(name in bound_names(t.target) for t in a.targets) for a in statement.body
        ):
            break  # bound again (`c_feature, encoded_data, label = cpcModel(batchData, label)`)
    if not uses:
        return False
    for use in uses:
        arg = source.parent(use)
        caller = source.parent(arg) if isinstance(arg, cst.Arg) and arg.value is use else None
        if not isinstance(caller, cst.Call) or training.classes_at(caller.func, caller) != {"DataParallel"}:
            return False
        if not _always_data_parallel(source, source.code(caller.func), call):
            return False
    return True


# Tensor methods that keep a tensor where it is (a view, a reshaped or re-typed copy on the same
# device), and those that only read its shape.
_SAME_PLACE = frozenset(
    {"permute", "view", "reshape", "squeeze", "unsqueeze", "transpose", "contiguous", "float", "long", "flatten"}
    | {"int", "double", "half", "t", "detach", "clone"}
)
_SHAPE_ONLY = frozenset({"size", "dim", "numel", "nelement"})


def _moved_in_vain(source, training, call: cst.Call) -> bool:
    """True for a tensor moved into a name (alone or as one element of a tuple assignment, through
    views such as `.squeeze()`) whose every later use, up to where it is bound anew, is one of:
    taken back to the CPU (`label.cpu().numpy()`), read for its shape (`data.size()[0]`), made a
    view bound to the same name again (`data = data.permute(0, 2, 1)`, then its uses), or handed
    straight to a model the file always wraps in `DataParallel`, which scatters its inputs to its
    GPUs itself (dgcnn's test(): `logits = model(data)` after `model = nn.DataParallel(model)`).
    Its place never meets another tensor, so the move changes nothing."""
    function = source.function_of(call)
    node: cst.CSTNode = call
    parent = source.parent(node)
    while isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _SAME_PLACE:
        grand = source.parent(parent)
        if not (isinstance(grand, cst.Call) and grand.func is parent):
            return False
        node, parent = grand, source.parent(grand)
    if isinstance(parent, cst.Element) and isinstance(source.parent(parent), cst.Tuple):
        values = source.parent(parent)
        position = [e for e in values.elements].index(parent)
        assign = source.parent(values)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return False
        target = assign.targets[0].target
        if not isinstance(target, cst.Tuple) or len(target.elements) != len(values.elements):
            return False
        bound = target.elements[position].value
    elif isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        assign, bound = parent, parent.targets[0].target
    else:
        return False
    scope = function if function is not None else source.module
    if isinstance(bound, cst.Subscript) and isinstance(bound.value, cst.Name):
        # an element of a list moved in place, one per round of a loop over indices (MiningFSS'
        # `img_s_list[k] = img_s_list[k].cuda()` in `for k in range(len(img_s_list))`): the list's
        # later uses
        loop = source.enclosing(call, (cst.For, cst.While))
        index = bound.slice[0].slice if len(bound.slice) == 1 else None
        indexed = (
            isinstance(loop, cst.For)
            and isinstance(loop.target, cst.Name)
            and isinstance(index, cst.Index)
            and isinstance(index.value, cst.Name)
            and index.value.value == loop.target.value
        )
        if not indexed or loop is None:
            return False
        # read from after that loop, which stands for the move (each round writes its own element)
        return _uses_in_vain(source, training, scope, bound.value.value, source.span(loop)[1], loop)
    if not isinstance(bound, cst.Name):
        return False
    return _uses_in_vain(source, training, scope, bound.value, source.span(assign)[1], call)


def _uses_in_vain(source, training, scope: cst.CSTNode, name: str, after: int, move: cst.Call) -> bool:
    """The uses of `name` after `after` in `scope` (a function, or the module), until it is bound anew, all in vain (see
    `_moved_in_vain`)."""
    loop = next((a for a in source.ancestors(move) if isinstance(a, (cst.For, cst.While))), None)
    if isinstance(loop, cst.For) and name in bound_names(loop.target):
        loop = None  # each round binds it afresh (`for i, (audio_input, labels) in enumerate(loader):`)
    if loop is not None and any(
        n.value == name and source.span(n)[1] <= source.span(move)[0] and not bound_here(source, n)
        for n in source.within(loop.body, cst.Name)
    ):
        return False  # read earlier in the loop: the next round reads the moved value there
    uses = 0
    for statement in source.within(scope, cst.SimpleStatementLine):
        if source.span(statement)[0] < after:
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and any(name in bound_names(t.target) for t in small.targets):
                # bound anew: a view of itself keeps the place (`data = data.permute(0, 2, 1)`)
                value = small.value
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                    if value.func.attr.value not in _SAME_PLACE:
                        break
                    value = value.func.value
                if not (isinstance(value, cst.Name) and value.value == name and len(small.targets) == 1):
                    return uses > 0 and not _reads(source, small.value, name)
                if not isinstance(small.targets[0].target, cst.Name):
                    return False
                continue
            for use in source.within(small, cst.Name):
                if use.value != name or bound_here(source, use):
                    continue
                if not _in_vain(source, training, use, move):
                    return False
                uses += 1
    if uses:
        return True
    # never read again in its function, not even in a block's header (`if x.sum() > 0:`): a move
    # into a local nothing reads (SfmLearner's validation moves `intrinsics_inv` and never uses
    # it). A module's name may be read by any function of the module, so only a function's.
    return (
        isinstance(scope, cst.FunctionDef)
        and not any(
            isinstance(n, (cst.Global, cst.Nonlocal)) and any(a.name.value == name for a in n.names)
            for n in source.within(scope, (cst.Global, cst.Nonlocal))
        )
        and not any(
            n.value == name and source.span(n)[0] >= after and not bound_here(source, n)
            for n in source.within(scope, cst.Name)
        )
    )


def _reads(source, expr: cst.CSTNode, name: str) -> bool:
    return any(n.value == name for n in source.within(expr, cst.Name))


def _in_vain(source, training, use: cst.Name, move: cst.Call) -> bool:
    """One use of a moved tensor that its place does not matter to (see `_moved_in_vain`)."""
    parent = source.parent(use)
    if _self_masked_write(source, use):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is use:
        method = parent.attr.value
        if method == "shape":
            return True
        caller = source.parent(parent)
        if isinstance(caller, cst.Call) and caller.func is parent:
            return method == "cpu" or method in _SHAPE_ONLY
        return False
    caller = source.parent(parent) if isinstance(parent, cst.Arg) and parent.value is use else None
    if not isinstance(caller, cst.Call):
        return False
    if isinstance(caller.func, cst.Name) and caller.func.value == "len":
        return True
    return _data_parallel_at(training, caller.func, caller) and _always_data_parallel(
        source, source.code(caller.func), move
    )


def _self_masked_write(source, use: cst.Name) -> bool:
    """True for a use in a write of a number into the tensor at places its own values pick
    (MiningFSS' evaluation: `mask_q[mask_q == 1] = cls`): done where the tensor is."""
    for node in source.ancestors(use):
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and node.value.value == use.value:
            target = source.parent(node)
            assign = source.parent(target) if isinstance(target, cst.AssignTarget) else None
            return (
                isinstance(assign, cst.Assign)
                and isinstance(assign.value, (cst.Name, cst.Integer, cst.Float))
                and len(node.slice) == 1
                and all(n.value == use.value for n in source.within(node.slice[0], cst.Name))
            )
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _data_parallel_at(training, model: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True where the model `use` runs was last bound to a `DataParallel` wrapper, or to the same
    model with its mode or place set (`model = model.eval()` after `model = nn.DataParallel(model)`)."""
    if not isinstance(model, cst.Name):
        return training.classes_at(model, use) == {"DataParallel"}
    assign = training.last_assignment(model.value, use)
    while assign is not None and isinstance(assign.value, cst.Call):
        built = assign.value
        if callee_name(constructed(built)) == "DataParallel":
            return True
        if not (
            isinstance(built.func, cst.Attribute)
            and callee_name(built) in {"eval", "train", "cuda", "to", "float"}
            and isinstance(built.func.value, cst.Name)
            and built.func.value.value == model.value
        ):
            return False
        assign = training.last_assignment(model.value, assign)
    return assign is None and training.classes_at(model, use) == {"DataParallel"}


def _always_data_parallel(source, name: str, move: cst.Call) -> bool:
    """True where the file wraps `name` in DataParallel wherever `move` runs: never under an `if`
    (`if n_gpu > 1: model = torch.nn.DataParallel(model)` leaves a single GPU's model unwrapped:
    moves count), or only under tests the move is under too (ssd.pytorch wraps `if args.cuda:`
    and moves the images `if args.cuda:`)."""
    wraps = [
        a
        for a in source.nodes(cst.Assign)
        if isinstance(a.value, cst.Call)
        and callee_name(constructed(a.value)) == "DataParallel"
        and any(source.code(t.target) == name for t in a.targets)
    ]
    moved_under = branch_sides(source, move)
    # (`if not isinstance(audio_model, nn.DataParallel):` around the wrap, AST's: wrapped either way)
    unwrapped = re.compile(rf"not isinstance\(\s*{re.escape(name)}\s*,\s*[\w.]*DataParallel\s*\)")
    return bool(wraps) and all(
        moved_under.get(test) == side or "__name__" in test or (side and unwrapped.fullmatch(test))
        for a in wraps
        for test, side in branch_sides(source, a).items()
    )


def _moved_for_a_reduction(source, call: cst.Call) -> bool:
    """True for `cm = torch.from_numpy(cm).cuda()` whose every later use hands it to a reduction
    across ranks (`reduce_tensor(cm)`, `dist.all_reduce(cm)`): a metric moved for the collective
    (HRNet's confusion matrix), not a batch."""
    assign = source.parent(call)
    function = source.function_of(call)
    if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1 or function is None:
        return False
    name = dotted(assign.targets[0].target)
    end = source.span(assign)[1]
    uses = [n for n in source.within(function, cst.Name) if n.value == name and source.span(n)[0] > end]
    rebound = next((n for n in uses if isinstance(source.parent(n), cst.AssignTarget)), None)
    if rebound is not None:
        # up to where the name is bound again (`cm = reduced.cpu().numpy()`), reads of it included
        statement = source.enclosing(rebound, cst.Assign)
        limit = source.span(statement)[1] if statement is not None else source.span(rebound)[0]
        uses = [n for n in uses if source.span(n)[0] < limit and n is not rebound]
    if name is None or not uses:
        return False
    for use in uses:
        arg = source.parent(use)
        holder = source.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (isinstance(holder, cst.Call) and "reduce" in (callee_name(holder) or "").lower()):
            return False
    return True


_COLLECTIVE_WORDS = ("reduce", "gather", "broadcast", "across_processes")  # accelerate's pad_across_processes


def _collective(call: cst.CSTNode | None) -> bool:
    return isinstance(call, cst.Call) and any(w in (callee_name(call) or "").lower() for w in _COLLECTIVE_WORDS)


def _made_for_a_collective(source, call: cst.Call) -> bool:
    """True for a new tensor moved to be a collective's input (`all_gather(out, torch.Tensor([n]).
    to(device))`) or one of its output buffers (`out = [torch.zeros(1).to(device) for _ in
    range(world_size)]`, first handed to the collective that fills them): RecBole's sample count,
    not a batch."""
    if not isinstance(call.func, cst.Attribute):
        return False
    parent = source.parent(call)
    if isinstance(parent, cst.Element) and isinstance(source.parent(parent), (cst.List, cst.Tuple)):
        # one of a list of tensors handed to a collective (trlx's `pad_across_processes([prompts.input_ids,
        # samples, prompt_sizes.to(samples.device)])`), a tensor the function made itself
        held = source.parent(source.parent(parent))
        if isinstance(held, cst.Arg) and _collective(source.parent(held)) and _made_here(source, call.func.value):
            return True
    if not _fresh_tensor(call.func.value):
        return False
    if isinstance(parent, cst.Arg):
        return _collective(source.parent(parent))
    assign = source.parent(parent) if isinstance(parent, cst.ListComp) and parent.elt is call else None
    if isinstance(parent, cst.Assign) and parent.value is call:
        assign = parent  # glue-factory's `flag = torch.tensor(flag).float().to(device)`, then all_reduce(flag)
    function = source.function_of(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or function is None:
        return False
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    end = source.span(assign)[1]
    later = [n for n in source.within(function, cst.Name) if n.value == target.value and source.span(n)[0] > end]
    first = later[0] if later else None
    if first is None or not isinstance(source.parent(first), cst.Arg):
        return False
    collective = source.parent(source.parent(first))
    if not _collective(collective):
        return False
    # data one rank draws and broadcasts to the others, then read as an input (k-diffusion's demo
    # noise: `dist.broadcast(x, 0)`, then `x = x[rank] * sigma_max` handed to the sampler): a batch
    return not (
        callee_name(collective) == "broadcast" and any(isinstance(source.parent(n), cst.Subscript) for n in later[1:])
    )


def _made_here(source, value: cst.BaseExpression) -> bool:
    """True for a name the function (or the module's top level) last bound to a tensor it made itself (`prompt_sizes =
    torch.tensor(n).repeat(k)`), not to a batch it was handed."""
    function = source.function_of(value)
    if not isinstance(value, cst.Name):
        return False
    here = source.span(value)[0]
    scope = function.body if function is not None else source.module
    bindings = [
        a
        for a in source.within(scope, cst.Assign)
        if source.function_of(a) is function
        and source.span(a)[1] <= here
        and any(dotted(t.target) == value.value for t in a.targets)
    ]
    return bool(bindings) and _fresh_tensor(bindings[-1].value)


def _global_fed_to_step(source, training, call: cst.Call) -> bool:
    """True for `features = features.cuda()` at a module's top level where a step function of the
    file (one that runs a backward) hands that global to the model or the loss: full-batch
    training (pygcn moves the whole graph once). An index of the data is no input of either."""
    assign = source.parent(call)
    if not isinstance(call.func, cst.Attribute) or not isinstance(assign, cst.Assign) or source.function_of(call):
        return False
    name = dotted(call.func.value)
    if name is None or [dotted(t.target) for t in assign.targets] != [name]:
        return False
    for function in {source.function_of(b.call) for b in training.backwards} - {None}:
        if any(dotted(t) == name for a in source.within(function, cst.Assign) for t in (x.target for x in a.targets)):
            continue  # a local of the same name
        for use in source.within(function, cst.Call):
            if (runs_model(source, training, use, depth=0) or training.is_loss_value(use, use)) and any(
                _root(a.value) == name for a in use.args
            ):
                return True
    return False


def _root(expr: cst.BaseExpression) -> str | None:
    """The name a value is read from: `labels` for `labels[idx_train]` and `labels.float()`."""
    while isinstance(expr, (cst.Subscript, cst.Attribute, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _stored_for_the_step(source, training, call: cst.Call) -> bool:
    """True for `self.lq = data['lq'].to(self.device)` where a method of the same class hands
    `self.lq` to a model or a loss and runs the backward (BasicSR's `feed_data()` then
    `optimize_parameters()`, pix2pix's `set_input()`): the step's input, moved where it is stored."""
    assign = source.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return False
    target = dotted(assign.targets[0].target)
    if target is None or not target.startswith("self.") or target.count(".") != 1:
        return False
    cls = next((a for a in source.ancestors(call) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return False
    stepping = {source.function_of(b.call) for b in training.backwards}
    terms = _loss_terms(source, training)
    return any(
        source.function_of(use) in stepping
        and (runs_model(source, training, use) or training.is_loss_value(use, use) or _assigned_to(source, use, terms))
        and any(dotted(a.value) == target for a in use.args)
        for use in source.within(cls, cst.Call)
    )


def _loss_terms(source, training) -> set[str]:
    """The names added into what a backward runs on (`l_total += l_pix`, `loss = a + b`)."""
    terms: set[str] = set()
    for backward in training.backwards:
        name, function = dotted(backward.loss), source.function_of(backward.call)
        if name is None or function is None:
            continue
        for statement in source.within(function, (cst.AugAssign, cst.Assign)):
            targets = (
                [statement.target] if isinstance(statement, cst.AugAssign) else [t.target for t in statement.targets]
            )
            if any(dotted(t) == name for t in targets):
                terms.update(n.value for n in source.within(statement.value, cst.Name) if n.value != name)
    return terms


def _assigned_to(source, call: cst.Call, names: set[str]) -> bool:
    """True where `call`'s result is assigned (alone or unpacked) to one of `names`."""
    assign = source.parent(call)
    return isinstance(assign, cst.Assign) and any(
        n.value in names for t in assign.targets for n in source.within(t.target, cst.Name)
    )


def _dataset_item(expr: cst.BaseExpression) -> bool:
    """True for an item taken from a dataset or loader (`dataset[0]`, `next(iter(loader))`):
    a full-graph or single-batch run moves its only batch once, outside any loop."""
    if isinstance(expr, cst.Subscript):
        name = (last_name(expr.value) or "").lower()
        return "dataset" in name or name in ("ds", "data_list")
    if isinstance(expr, cst.Call) and callee_name(expr) == "next" and expr.args:
        inner = expr.args[0].value
        if isinstance(inner, cst.Call) and callee_name(inner) == "iter" and inner.args:
            inner = inner.args[0].value
        if isinstance(inner, cst.Call):
            inner = inner.func  # `next(iter(self.trainer.datamodule.test_dataloader()))`
        return any(word in (last_name(inner) or "").lower() for word in ("loader", "iter", "dataset"))
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        # a loader's own method (`x, y = train_loader.next_batch()`, `data.get_batch("train")`)
        return "batch" in expr.func.attr.value.lower() and "size" not in expr.func.attr.value.lower()
    return False


def _taken_item(source, call: cst.Call) -> bool:
    """True for `x.to(device)` (or `x.int().to(device)`) where `x` was last assigned, in the same
    function or at module level, an item taken from a dataset or loader (`test_input, test_label
    = next(iter(loader))`, `g = data[0]` after `data = CoraGraphDataset()`): a single batch, moved
    once."""
    if not isinstance(call.func, cst.Attribute):
        return False
    name = root_name(call.func.value)
    if name is None:
        return False
    function = source.function_of(call)
    before = source.span(call)[0]
    found = None
    datasets: set[str] = set()
    for assign in source.within(function.body if function is not None else source.module, cst.Assign):
        if source.span(assign)[0] >= before or source.function_of(assign) is not function:
            continue
        if source.span(assign)[1] > before:
            continue  # the assignment that holds the move (`x = x.to(device)`)
        for target in assign.targets:
            names = [target.target] + [e.value for e in getattr(target.target, "elements", ())]
            if any(isinstance(n, cst.Name) and n.value == name for n in names):
                found = assign
            if (
                isinstance(target.target, cst.Name)
                and isinstance(assign.value, cst.Call)
                and (callee_name(assign.value) or "").endswith("Dataset")
            ):
                datasets.add(target.target.value)
    if found is None:
        return False
    value = found.value
    return _dataset_item(value) or (
        isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value in datasets
    )


def _picked_device_for_input(source, training, target: cst.BaseExpression, call: cst.Call) -> bool:
    """A device the function picks itself (`d = torch.device("cuda:" + str(k % n))`), to which it
    moves one of its own inputs (DLRM's model parallelism: `lS_o[k].to(d)`, each table's indices
    to that table's GPU); not its own layers or weights, which are no inputs."""
    if not isinstance(target, cst.Name) or not isinstance(call.func, cst.Attribute):
        return False
    function = source.function_of(call)
    moved = call.func.value
    while isinstance(moved, cst.Subscript):
        moved = moved.value  # `lS_o[k]`: one entry of the input
    root = root_name(moved)
    if function is None or root is None or root in {"self", "cls"}:
        return False
    if root not in {p.name.value for p in function.params.params}:
        return False
    assign = training.last_assignment(target.value, call)
    return assign is not None and isinstance(assign.value, cst.Call) and _is_device(assign.value)


def _batch_holder(source, call: cst.Call) -> bool:
    """True for `holder = holder.cuda()` where a loop later copies every batch into that
    tensor (`holder.data.resize_(batch.size()).copy_(batch)`): without the move, every
    batch stays on the CPU."""
    assign = source.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    scope = source.function_of(call) or source.module
    for copy in source.within(scope, cst.Call):
        if (
            callee_name(copy) == "copy_"
            and isinstance(copy.func, cst.Attribute)
            and root_name(copy.func.value) == target.value
            and source.enclosing(copy, (cst.For, cst.While)) is not None
        ):
            return True
    return False


def _framework_device(training, expr: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """`accelerator.device` / `fabric.device`, or a name assigned from one (`device =
    accelerator.device`): the framework's prepared loaders already place batches there, so
    dropping the move changes nothing."""
    if isinstance(expr, cst.Name):
        assign = training.last_assignment(expr.value, use)
        if assign is None or assign.value is None:
            return False
        expr = assign.value
    owner = dotted(expr.value) if isinstance(expr, cst.Attribute) and expr.attr.value == "device" else None
    return owner is not None and any(word in owner.lower() for word in ("accelerator", "fabric"))


# Library helpers that move a batch: `convert_tensor(x, device)` (ignite), `to_device(batch, dev)`;
# and a project's own named for the GPU (spotlight's `gpu(tensor, use_cuda)`).
MOVE_HELPERS = frozenset(
    {"convert_tensor", "to_device", "move_to_device", "send_to_device", "move_to", "gpu", "to_gpu", "to_cuda"}
)


# Conversions that place what they make on the device they are given.
CONVERTERS = frozenset({"to_tensor", "as_tensor", "to_torch"})


_MADE = frozenset({"ones", "zeros", "full", "empty", "arange"})


def _target_made_on_device(source, training, call: cst.Call) -> cst.Arg | None:
    """The `device=` of a tensor made on the device and handed to a loss beside another value
    (TGN's `pos_label = torch.ones(size, dtype=torch.float, device=device)`, then
    `criterion(pos_prob.squeeze(), pos_label)`; ColBERT's `labels = torch.zeros(bsize,
    device=DEVICE)`): made on the CPU, the loss meets the model's output on the GPU."""
    if callee_name(call) not in _MADE or not is_functional(call):
        return None
    device = argument(call, "device", None)
    assign = source.parent(call)
    if (
        device is None
        or not _is_device(device.value)
        or not (isinstance(assign, cst.Assign) and len(assign.targets) == 1)
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return None
    name = assign.targets[0].target.value
    scope = source.function_of(call) or source.module
    after = source.span(assign)[1]
    for use in source.within(scope, cst.Call):
        if source.span(use)[0] <= after or not _loss_call(training, use):
            continue
        roots = [root_name(a.value, through_subscripts=True) for a in use.args if not a.star]
        if name in roots and any(root != name for root in roots):
            return device
    return None


def _loss_call(training, use: cst.Call) -> bool:
    """`F.binary_cross_entropy(...)`, `criterion(...)` of a loss module, `nn.CrossEntropyLoss()(...)`."""
    if isinstance(use.func, cst.Call):
        return callee_name(use.func) in LOSS_MODULES
    return callee_name(use) in LOSS_FUNCTIONS or training.role(use.func) == "loss-module"


def _converter(name: str | None) -> bool:
    """A conversion to a tensor that also takes a device: skorch's `to_tensor`, torch's
    `as_tensor`, a project's own wrapper of them (imitation's `util.safe_to_tensor`, DrQ-v2's
    `utils.to_torch(batch, device)`)."""
    return name is not None and (name in CONVERTERS or name.endswith(("_to_tensor", "_as_tensor")))


def _converted_device(call: cst.Call) -> cst.Arg | None:
    """The device a conversion is handed: `device=`, or a later positional argument named for
    one (`utils.to_torch(batch, self.device)`)."""
    found = argument(call, "device", None)
    if found is not None:
        return found
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return next((a for a in positional[1:] if "device" in (last_name(a.value) or "").lower()), None)


def _converted_input(source, training, call: cst.Call, tensor: cst.BaseExpression) -> bool:
    """True for a conversion of the next batch of an iterator (`batch = next(replay_iter)`, then
    `utils.to_torch(batch, self.device)`), or of a value the same function then hands to a model
    (DrQ-v2's `act`: `obs = torch.as_tensor(obs, device=self.device)`, then
    `self.encoder(obs.unsqueeze(0))`): the model's input, placed by the conversion."""
    function = source.function_of(call)
    if function is None:
        return False
    if isinstance(tensor, cst.Name):
        bound = _reaching(source, function, tensor.value, call)
        value = bound.value if isinstance(bound, cst.Assign) else None
        if isinstance(value, cst.Call) and callee_name(value) == "next" and len(value.args) == 1:
            return True
    return _bound_for_the_model(source, training, source.parent(call), function)


def _bound_for_the_model(source, training, assign: cst.CSTNode | None, scope: cst.CSTNode) -> bool:
    """True for `name = ...` whose name (or a part of it) `scope` then hands to a model's call."""
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return False
    name = dotted(assign.targets[0].target)
    after = source.span(assign)[1]
    return name is not None and any(
        source.span(use)[0] > after
        and runs_model(source, training, use, depth=0)
        and any(root_name(a.value) == name for a in use.args)
        for use in source.within(scope, cst.Call)
    )


def _returned_batch(source, training, call: cst.Call) -> bool:
    """True for what a batch function of the file returns, made on the device (RWKV's demo:
    `return torch.tensor(s, device=device, dtype=torch.long)`), where a caller binds it and then
    hands it, or a slice of it, to the model (`x = batch(B, T)`, then `model(x[:, :-1])`)."""
    ret = source.parent(call)
    function = source.function_of(call)
    if not isinstance(ret, cst.Return) or ret.value is not call or function is None:
        return False
    return any(
        source.parent(caller).value is caller
        and _bound_for_the_model(source, training, source.parent(caller), source.function_of(caller) or source.module)
        for caller in training.callers(function)
        if isinstance(source.parent(caller), cst.Assign)
    )


def _handed_to_model(source, training, call: cst.Call) -> bool:
    """True for a conversion written as an argument of a model's call (Stanza's coreference
    model: `self.bert(ids, attention_mask=torch.tensor(mask, device=self.config.device))`)."""
    arg = source.parent(call)
    use = source.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(use, cst.Call) and runs_model(source, training, use, depth=0)


def _handed_a_batch(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for a parameter of the function around `use` that the file hands it from a step that
    takes a batch: every call of that function sits in a loop or in a function with a `batch`
    parameter (skorch's `infer(self, x)`, called from `train_step_single(self, batch)`)."""
    function = source.function_of(use)
    if not isinstance(value, cst.Name) or function is None:
        return False
    if value.value not in {p.name.value for p in function.params.params}:
        return False
    callers = training.callers(function)
    for caller in callers:
        outer = source.function_of(caller)
        if source.enclosing(caller, (cst.For, cst.While)) is None and not (
            outer is not None
            and (
                any("batch" in p.name.value for p in outer.params.params)
                or _backpropagates_what_it_hands(source, training, outer, caller)
            )
        ):
            return False
    return bool(callers)


def _backpropagates_what_it_hands(source, training, outer: cst.FunctionDef, caller: cst.Call) -> bool:
    """True where `outer` hands `caller` one of its own parameters and runs a backward: a step
    that takes its batch whole and has a helper compute the loss from it (Occupancy Networks'
    `train_step(self, data)`: `loss = self.compute_loss(data)`, then `loss.backward()`)."""
    params = {p.name.value for p in outer.params.params} - {"self", "cls"}
    handed = {a.value.value for a in caller.args if isinstance(a.value, cst.Name)}
    return bool(params & handed) and any(source.function_of(b.call) is outer for b in training.backwards)


def _from_a_handed_batch(source, training, call: cst.Call) -> bool:
    """True for `x.cuda(gpu)` where `x` is a parameter of the function, or was taken from one
    (`x = data['x_lb']`), that every caller hands from a loop over batches (`for data in
    loader: logits = self.get_logits(data)`): the batch, moved by a helper."""
    function = source.function_of(call)
    if not isinstance(call.func, cst.Attribute) or function is None:
        return False
    root = root_name(call.func.value)
    params = {p.name.value for p in function.params.params}
    if root is None:
        # an entry of a local taken from the batch (icefall's `supervisions['num_frames']`, after
        # `supervisions = batch['supervisions']`); a parameter's own entry is no such value
        local = root_name(call.func.value, through_subscripts=True)
        root = local if local not in params else None
    if root is not None and root not in params:
        found = _reaching(source, function, root, call)
        value: cst.BaseExpression | None = found.value if isinstance(found, cst.Assign) else None
        while True:
            # `data['x_lb']`, `data.x`, and a dict's `data.get('pixel_weight', None)` (PyMIC's)
            if isinstance(value, (cst.Subscript, cst.Attribute)):
                value = value.value
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and _entry_got(value):
                value = value.func.value
            else:
                break
        root = value.value if isinstance(value, cst.Name) else None
    if root is not None and _handed_a_batch(source, training, cst.Name(root), call):
        return True
    # computed from such a parameter (mozilla TTS's format_data: `linear_input = data[3] if ...
    # else None`, stop targets summed from `data[6]`, speaker ids looked up from `data[2]`)
    derived = _derived_from_params(source, training, function, call.func.value, call, 3)
    return any(
        _handed_a_batch(source, training, cst.Name(name), call)
        and _loop_target_handed(source, training, function, name)
        for name in sorted(derived)
    )


def _entry_got(value: cst.BaseExpression | None) -> bool:
    """True for a dict's `holder.get(key)` or `holder.get(key, default)`."""
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get"
        and 1 <= len(value.args) <= 2
    )


def _loop_target_handed(source, training, function: cst.FunctionDef, name: str) -> bool:
    """True where every call of `function` hands its parameter `name` a loop's own target (`for
    data in loader: ... format_data(data)`): what the loop takes, the batch."""
    params = [p.name.value for p in function.params.params]
    if name not in params:
        return False
    callers = training.callers(function)
    for caller in callers:
        position = params.index(name) - (
            1 if params[0] in ("self", "cls") and isinstance(caller.func, cst.Attribute) else 0
        )
        arg = argument(caller, name, position)
        loop = source.enclosing(caller, cst.For)
        if arg is None or loop is None or not isinstance(arg.value, cst.Name):
            return False
        if arg.value.value not in bound_names(loop.target):
            return False
    return bool(callers)


def _data_names(expr: cst.CSTNode) -> set[str]:
    """The names whose data `expr` computes from: not an attribute's name, nor an index (a table
    indexed by the batch, diffusers' `arr[timesteps]`, is the table's data)."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, cst.Attribute):
        return _data_names(expr.value)
    if isinstance(expr, cst.Subscript):
        return _data_names(expr.value)
    found: set[str] = set()
    for child in expr.children:
        found |= _data_names(child)
    return found


def _derived_from_params(source, training, function: cst.FunctionDef, expr, use: cst.CSTNode, depth: int) -> set[str]:
    """The parameters of `function` that `expr` is computed from where `use` runs: through the
    assignments before `use`, in any branch, of the names it reads; not through what running the
    model returned (an output is no input)."""
    params = {p.name.value for p in function.params.params} - {"self", "cls"}
    before = source.span(use)[0]
    found: set[str] = set()
    for name in _data_names(expr):
        if name in params:
            found.add(name)
            continue
        if depth == 0:
            continue
        for assign, names in _bindings(source, function):
            if not isinstance(assign, cst.Assign) or name not in names or source.span(assign)[1] > before:
                continue
            if not runs_model(source, training, assign.value):
                found |= _derived_from_params(source, training, function, assign.value, assign, depth - 1)
    return found


# Functions a tensor is handed to for saving or logging, not for the step (by callee name).
_SINKS = ("save", "log", "print", "imsave", "imwrite", "write", "add_image", "add_scalar", "add_figure", "show")
# Words of a name that says it holds a score computed for a report (`valid_weighted_rmse`).
_SCORE_WORDS = frozenset({"rmse", "mse", "mae", "acc", "accuracy", "score", "psnr", "ssim", "metric", "metrics"})
_FILE_READS = frozenset({"load", "loadtxt", "genfromtxt", "read_csv", "fromfile"})
_DATA_WORDS = ("data", "batch", "graph", "sample", "input", "feature", "adj", "label", "target")


def _no_batch(source, training, call: cst.Call) -> bool:
    """Moves of what is no batch, though made or used where batches are (FourCastNet's trainer,
    CMGAN's): a model's output (`self.model(inp).to(self.device, dtype=torch.float)`: made on
    the model's device); a transform's window (`torch.hamming_window(n).to(gpu)`); a constant
    read from a file (`torch.as_tensor(np.load(stds_path)[...]).to(device)`); a tensor made for a
    picture or a log line (`save_image(torch.cat((gen, torch.zeros(h, 4).to(device), tar)))`); a
    score reduced for a report (`torch.mean(valid_weighted_rmse, axis=0).to(device)`); a move that is
    a statement of its own; a value of a model's saved state (NIID-Bench's SCAFFOLD deltas)."""
    moved = call.func.value if isinstance(call.func, cst.Attribute) else None
    if moved is None:
        return False
    if (
        isinstance(source.parent(call), cst.Expr)
        and callee_name(call) in ("to", "cuda")
        and source.enclosing(call, (cst.For, cst.While)) is None
        and not any(word in (last_name(moved) or "").lower() for word in _DATA_WORDS)
    ):
        # a statement of its own outside the batch loop, on no data (SCAFFOLD's `c_local.to(device)`):
        # a module moved in place (a tensor's move returns a copy that is dropped); a graph's or a
        # batch object's in-place move (`x.to(device)` in CogDL's batch loop) stays a site
        return True
    function = source.function_of(call)
    for name in source.within(moved, cst.Name):
        made = training.last_assignment(name.value, call)
        if (
            made is not None
            and source.function_of(made) is function
            and made.value is not None
            and any(callee_name(c) == "state_dict" for c in source.within(made.value, cst.Call))
        ):
            return True  # a model's saved state (`total_delta = copy.deepcopy(model.state_dict())`)
    if (
        isinstance(moved, cst.Call)
        and any(word in (last_name(moved.func) or "").lower() for word in ("model", "net"))
        and runs_model(source, training, moved, depth=0)
    ):
        return True  # the model itself called (not a method of it: `model.tokenizer(text)` makes an input)
    inner = moved
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and dotted(inner.func.value) != "torch":
        inner = inner.func.value  # `torch.hamming_window(n).float()`: the tensor the methods start from
    if isinstance(inner, cst.Call):
        name = callee_name(inner) or ""
        if name.endswith("_window"):
            return True
        if any(callee_name(c) in _FILE_READS for c in source.within(inner, cst.Call)):
            return True
        if inner.args and any(
            word in _SCORE_WORDS
            for n in source.within(inner.args[0].value, cst.Name)
            for word in n.value.lower().split("_")
        ):
            return True
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        if isinstance(ancestor, cst.Call) and (callee_name(ancestor) or "").startswith(_SINKS):
            return True
    return False


def _model_output(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for a name bound to what running the model returned (`yp = self.evaluation_step(b)`
    then `to_device(yp, device)`): an output moved where the caller keeps it, not an input."""
    function = source.function_of(use)
    if not isinstance(value, cst.Name) or function is None:
        return False
    found = _reaching(source, function, value.value, use)
    return isinstance(found, cst.Assign) and runs_model(source, training, found.value)


def _state_dict(expr: cst.BaseExpression) -> bool:
    """True for an object's saved state (`optimizer.state_dict()`), moved on resume: no batch."""
    return isinstance(expr, cst.Call) and callee_name(expr) == "state_dict"


def _move_helper(name: str | None) -> bool:
    """True for a function that moves what it is handed to a device: a library's (`send_to_device`,
    ignite's `convert_tensor`) or a project's named for it (`batch_to_device`, `dict_to_cuda`)."""
    return name is not None and (
        name in MOVE_HELPERS
        or name.endswith(("_to_device", "_to_cuda", "_to_gpu"))
        # handed the device as its second argument: diffab's `recursive_to(batch, args.device)`
        or name.endswith("_to")
        # handed the device too (audiotools' `util.prepare_batch(batch, accel.device)`, ignite's)
        or name.lstrip("_") == "prepare_batch"
    )


def _cpu_type(training, expr: cst.BaseExpression, use: cst.CSTNode) -> str | None:
    """The CPU tensor type for a CUDA one given to `.type(...)`: `torch.FloatTensor` for
    `torch.cuda.FloatTensor`, or for a name assigned `torch.cuda.FloatTensor if cuda else
    torch.FloatTensor` (the CPU branch as written)."""
    name = dotted(expr)
    if name is not None and ".cuda." in f".{name}" and name.split(".")[-1].endswith("Tensor"):
        return name.replace("cuda.", "", 1)
    if isinstance(expr, cst.Name):
        assign = training.last_assignment(expr.value, use) or next(iter(training.assignments.get(expr.value, ())), None)
        value = assign.value if assign is not None else None
        if isinstance(value, cst.IfExp):
            branches = [dotted(value.body), dotted(value.orelse)]
            cuda = [b for b in branches if b and ".cuda." in f".{b}"]
            cpu = [b for b in branches if b and b.split(".")[-1].endswith("Tensor") and ".cuda." not in f".{b}"]
            if cuda and cpu:
                return cpu[0]
    return None


def _places_batches(source) -> bool:
    """True if every data iterator the file builds is handed a `device=` (torchtext's
    `BucketIterator(ds, batch_size=n, device=device)`): its batches come on the device already,
    so a later `.to(device)` of a batch moves nothing."""
    iterators = [
        call
        for call in source.nodes(cst.Call)
        if (callee_name(call) or "").endswith(("Iterator", "DataLoader", "Loader"))
        and (callee_name(call) or "")[:1].isupper()
    ]
    return bool(iterators) and all(
        argument(call, "device", None) is not None or _wrapped_with_device(source, call) for call in iterators
    )


def _names_the_cpu(expr: cst.BaseExpression) -> bool:
    """`"cpu"`, `torch.device("cpu")`: a move back to the host (CogDL's `move_to_device(batch,
    "cpu")` after an evaluation step), never onto the accelerator."""
    if isinstance(expr, cst.Call) and callee_name(expr) == "device" and expr.args:
        expr = expr.args[0].value
    return isinstance(expr, cst.SimpleString) and str(expr.evaluated_value).split(":")[0] == "cpu"


def _is_device_arg(arg: cst.Arg) -> bool:
    keyword = arg.keyword.value if arg.keyword is not None else ""
    return keyword == "device" or (arg.keyword is None and "device" in (last_name(arg.value) or "").lower())


def _wrapped_with_device(source, loader: cst.Call) -> bool:
    """True if the loader, held in a name, is handed to a wrapper together with the device
    (`CUDAPrefetcher(train_loader, device)`, a prefetcher that moves each batch as it comes)."""
    assign = source.parent(loader)
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    name = assign.targets[0].target.value
    scope = source.function_of(loader) or source.module
    return any(
        (callee_name(call) or "")[:1].isupper()  # a wrapper object, not a training function given both
        and any(isinstance(a.value, cst.Name) and a.value.value == name for a in call.args)
        and any(_is_device_arg(a) for a in call.args)
        and not _trainer_class(source, callee_name(call))
        for call in source.within(scope, cst.Call)
    )


def _trainer_class(source, name: str | None) -> bool:
    """True if `name` is a class of this file whose methods run backward passes: a runner handed
    the loader and the device trains with them (mvts_transformer's `UnsupervisedRunner(model,
    loader, device, ...)` moves each batch itself, and those moves are the sites), where a
    prefetcher only moves what it hands on."""
    classes = [c for c in source.nodes(cst.ClassDef) if c.name.value == name]
    return any(callee_name(call) == "backward" for c in classes for call in source.within(c, cst.Call))


_PLACING_CONVERTER = (
    "for batch in batches:\n"
    "    obs = types.map_maybe_dict(\n"
    "        lambda x: util.safe_to_tensor(x, device=self.policy.device),\n"
    '        batch["obs"],\n'
    "    )\n"
    '    acts = util.safe_to_tensor(batch["acts"], device=self.policy.device)\n'
    "    metrics = self.loss_calculator(self.policy, obs, acts)\n"
    "    metrics.loss.backward()\n"
)


_BATCH_HELPER_TRAINER = (
    "class Trainer:\n"
    "    def _batch_to_device(self, batch):\n"
    "        return tuple(t.to(self.device) for t in batch)\n"
    "\n"
    "    def _compute_batch(self, batch):\n"
    "        batch = self._batch_to_device(batch)\n"
    "        pred, target = self.model(*batch)\n"
    "        return self.loss_fn(pred, target)\n"
    "\n"
    "    def _train_step(self):\n"
    "        for batch in self.loader:\n"
    "            batch = self._batch_to_device(batch)\n"
    "            loss = self._compute_batch(batch)\n"
    "            loss.backward()\n"
)


# A validation loop that moves a tensor it never reads again (SfmLearner).
UNREAD_MOVE = (
    "import torch\n"
    "@torch.no_grad()\n"
    "def validate(loader, disp_net, device):\n"
    "    errors = []\n"
    "    for img, intrinsics, intrinsics_inv in loader:\n"
    "        img = img.to(device)\n"
    "        intrinsics_inv = intrinsics_inv.to(device)\n"
    "        errors.append(disp_net(img).mean().item())\n"
    "    return errors\n"
)


# A device read from a settings entry (dl-for-har).
SETTINGS_DEVICE = (
    "def train(network, config, trainloader, opt, criterion):\n"
    "    network.to(config['gpu'])\n"
    "    network.train()\n"
    "    for i, (x, y) in enumerate(trainloader):\n"
    "        inputs, targets = x.to(config['gpu']), y.to(config['gpu'])\n"
    "        opt.zero_grad()\n"
    "        output = network(inputs)\n"
    "        loss = criterion(output, targets.long())\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)


# A helper named for the GPU that takes no device (GeoTransformer).
NO_DEVICE_MOVE_HELPER = (
    "from utils.torch import to_cuda\n"
    "def train_epoch(model, loader, optimizer):\n"
    "    for iteration, data_dict in enumerate(loader):\n"
    "        data_dict = to_cuda(data_dict)\n"
    "        result_dict = model(data_dict)\n"
    "        result_dict['loss'].backward()\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
)


def _batch_loaded_to(source, training, call: cst.Call) -> cst.BaseExpression | None:
    """The device a batch object's own method is handed by keyword, where the batch is rebound
    to what it returns (`batch = batch.load(device=self.device)`); not `to`/`cuda`, which the
    plain moves handle, nor a model's or a loader's methods."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
        return None
    if func.attr.value in ("to", "cuda", "type") or "batch" not in func.value.value.lower():
        return None
    device = next((a for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    holder = source.parent(call)
    if (
        device is None
        or not _is_device(device.value)
        or _framework_device(training, device.value, call)
        or not isinstance(holder, cst.Assign)
        or not any(dotted(t.target) == func.value.value for t in holder.targets)
        or _is_model(training, func.value)
    ):
        return None
    return device.value


# the settings a program names for "use the GPU" (`args.cuda`, `self.use_cuda`, `opt.gpu`)
_CUDA_FLAGS = frozenset({"cuda", "use_cuda", "is_cuda", "gpu", "use_gpu", "on_gpu"})


def _gated_move_flag(source, training, call: cst.Call) -> cst.BaseExpression | None:
    """The argument that tells a helper of the project to move its data to the GPU: the program's
    cuda flag, bound to a parameter the helper tests before a `.cuda()` or `.to(...)` (ENAS'
    `def batchify(data, bsz, use_cuda): ... if use_cuda: data = data.cuda()`), where the call's
    result is read (not `self.test_data = batchify(...)` that nothing reads) and not under an
    evaluation's no_grad only."""
    flags = [a for a in call.args if not a.star and (last_name(a.value) or "").lower() in _CUDA_FLAGS]
    if len(flags) != 1 or not isinstance(flags[0].value, (cst.Name, cst.Attribute)) or not call.args:
        return None
    if call.args[0] is flags[0] or call.args[0].keyword is not None or call.args[0].star:
        return None
    found = training.resolver.definition(source, call.func)
    if found is None or not isinstance(found[1], cst.FunctionDef) or found[0] is source:
        return None  # a helper of this file has its own move mutated where it is written
    module, helper = found
    bound = bound_arguments(helper, call) or {}
    params = [p for p, v in bound.items() if v is flags[0].value]
    first = [p for p, v in bound.items() if v is call.args[0].value]
    if not params or not first:
        return None
    # what the helper computes from the data it is handed (`data = data.narrow(...)`, then
    # `data = data.cuda()`)
    derived = {first[0]}
    for assign in module.within(helper.body, cst.Assign):
        if {n.value for n in module.within(assign.value, cst.Name)} & derived:
            derived |= {n for t in assign.targets for n in bound_names(t.target)}
    gated = [
        test
        for test in module.within(helper.body, cst.If)
        if isinstance(test.test, cst.Name)
        and test.test.value == params[0]
        and any(
            callee_name(c) in ("cuda", "to") and isinstance(c.func, cst.Attribute) and _root(c.func.value) in derived
            for c in module.within(test.body, cst.Call)
        )
    ]
    if not gated or not _result_read(source, call):
        return None
    return flags[0].value


def _result_read(source, call: cst.Call) -> bool:
    """True where what `call` returns is read: used in place, or bound to a name or an attribute
    the file reads elsewhere."""
    holder = source.parent(call)
    if not isinstance(holder, cst.Assign) or holder.value is not call:
        return True
    targets = {dotted(t.target) for t in holder.targets} - {None}
    reads = [
        node
        for node in [*source.nodes(cst.Name), *source.nodes(cst.Attribute)]
        if dotted(node) in targets and not any(a is holder for a in source.ancestors(node))
    ]
    return bool(reads)


class DeviceMismatch(Operator):
    id = "device-mismatch"
    summary = "Drop a batch's `.to(device)` / `.cuda()` (not a model's), one mutant per transfer."
    examples = (
        Example(
            # A batch function of the file that makes its batch on the device (RWKV's demo): made on the
            # CPU, it meets the model on the GPU.
            "import torch\n"
            "def batch(B, T, device='cuda'):\n"
            "    s = [[random.randint(0, 9) for _ in range(T)] for _ in range(B)]\n"
            "    return torch.tensor(s, device=device, dtype=torch.long)\n"
            "for step in range(steps):\n"
            "    x = batch(B, T); y = x[:, 1:]; x = x[:, :-1]\n"
            "    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))\n"
            "    loss.backward()\n",
            (
                "import torch\n"
                "def batch(B, T, device='cuda'):\n"
                "    s = [[random.randint(0, 9) for _ in range(T)] for _ in range(B)]\n"
                '    return torch.tensor(s, device="cpu", dtype=torch.long)\n'
                "for step in range(steps):\n"
                "    x = batch(B, T); y = x[:, 1:]; x = x[:, :-1]\n"
                "    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A method that moves a step's parts with a nested move function and returns them in
            # order: the move itself, each part's move, and the call that hands both parts over
            # (torch-lr-finder's `_move_to_device`); not the move function's own recursion.
            MOVE_METHOD_STEP,
            (
                MOVE_METHOD_STEP.replace("return obj.to(device, non_blocking=non_blocking)", "return obj"),
                MOVE_METHOD_STEP.replace(
                    "inputs = move(inputs, self.device, non_blocking=non_blocking)", "inputs = inputs"
                ),
                MOVE_METHOD_STEP.replace(
                    "labels = move(labels, self.device, non_blocking=non_blocking)", "labels = labels"
                ),
                MOVE_METHOD_STEP.replace(
                    "= self._move_to_device(inputs, labels, non_blocking=True)", "= inputs, labels"
                ),
            ),
        ),
        Example(
            # A batch's optional entry (`data.get(...)`) moved into the dict the loss is handed: the
            # entry is the moved tensor, not a copy into a tensor's slot (PyMIC's pixel weights).
            LOSS_DICT_AGENT,
            (
                LOSS_DICT_AGENT.replace("= pixel_weight.to(device)", "= pixel_weight"),
                LOSS_DICT_AGENT.replace("data['image'].to(self.device), ", "data['image'], "),
                LOSS_DICT_AGENT.replace("data['label'].to(self.device)\n", "data['label']\n"),
            ),
        ),
        Example(
            # A project's batch preparer handed the device (audiotools' `util.prepare_batch`).
            AUDIOTOOLS_STEP,
            (AUDIOTOOLS_STEP.replace("batch = util.prepare_batch(batch, accel.device)", "batch = batch"),),
        ),
        Example(
            # The loss function a step is handed (`loss_fn`, bound by the program's entry point in another module), the one
            # the file defines and never calls itself (DiffDock): its target's move.
            HANDED_LOSS_FUNCTION,
            (HANDED_LOSS_FUNCTION.replace("    target = data.y.to(device)\n", "    target = data.y\n"),),
        ),
        Example(
            # A script's model at module level, known by its parameters handed to the optimizer (TGN): its move is the
            # model's, not a batch's.
            SCRIPT_LEVEL_MODEL,
            (SCRIPT_LEVEL_MODEL.replace("    loss = tgn.loss(batch.to(device))\n", "    loss = tgn.loss(batch)\n"),),
        ),
        Example(
            # Targets made on the device and handed to the criterion beside the model's output (TGN's labels); a constant
            # added to the loss is no target.
            TARGETS_ON_DEVICE,
            (
                TARGETS_ON_DEVICE.replace(
                    "        pos_label = torch.ones(len(batch), dtype=torch.float, device=device)\n",
                    '        pos_label = torch.ones(len(batch), dtype=torch.float, device="cpu")\n',
                ),
                TARGETS_ON_DEVICE.replace(
                    "        neg_label = torch.zeros(len(batch), dtype=torch.float, device=device)\n",
                    '        neg_label = torch.zeros(len(batch), dtype=torch.float, device="cpu")\n',
                ),
            ),
        ),
        Example(
            # A model wrapped in DataParallel unless it is one already (AST): its input's move changes nothing, even read
            # for its size before the move each round; the labels meet its output on the first GPU.
            DATA_PARALLEL_UNLESS_WRAPPED,
            (
                DATA_PARALLEL_UNLESS_WRAPPED.replace(
                    "        labels = labels.to(device, non_blocking=True)\n", "        labels = labels\n"
                ),
            ),
        ),
        Example(
            # A device string formatted with the rank (OpenPrompt's `batch.to("cuda:{}".format(...)).to_dict()`), or an f-string.
            RANK_DEVICE_STRINGS,
            (
                RANK_DEVICE_STRINGS.replace(
                    '        batch = batch.to("cuda:{}".format(self.config.local_rank)).to_dict()\n',
                    "        batch = batch.to_dict()\n",
                ),
                RANK_DEVICE_STRINGS.replace(
                    '        inputs = inputs.to(f"cuda:{self.config.local_rank}")\n', "        inputs = inputs\n"
                ),
            ),
        ),
        Example(
            # Inputs made on the device by `torch.tensor(..., device=...)` and handed to the model (Stanza's
            # coreference model); `torch.tensor` elsewhere makes constants, which are left alone.
            ENCODER_INPUTS,
            (
                ENCODER_INPUTS.replace(
                    "        tensor = torch.tensor(ids, device=self.device)\n",
                    '        tensor = torch.tensor(ids, device="cpu")\n',
                ),
                ENCODER_INPUTS.replace(
                    "        out = self.bert(tensor, attention_mask=torch.tensor(mask, device=self.device))\n",
                    '        out = self.bert(tensor, attention_mask=torch.tensor(mask, device="cpu"))\n',
                ),
            ),
        ),
        Example(
            # A project helper named for the GPU, given no device (ClassyVision's recursive_copy_to_gpu).
            BATCH_TAKING_STEP,
            (BATCH_TAKING_STEP.replace("recursive_copy_to_gpu(sample, non_blocking=True)", "sample"),),
        ),
        Example(
            # A batch's container built each pass from the loop's pieces and moved (RecBole's split
            # prediction): a batch, not a model constructed and moved.
            "for i in range(n):\n    part = {k: v[i] for k, v in parts.items()}\n"
            "    scores.append(model.predict(Interaction(part).to(device)))\n",
            (
                "for i in range(n):\n    part = {k: v[i] for k, v in parts.items()}\n"
                "    scores.append(model.predict(Interaction(part)))\n",
            ),
        ),
        Example(
            # Full-batch training: the data moved once at the top level, handed to the model and
            # the loss by the step function.
            "if args.cuda:\n"
            "    features = features.cuda()\n"
            "def train(epoch):\n"
            "    output = model(features, adj)\n"
            "    F.nll_loss(output[idx], labels[idx]).backward()\n",
            (
                "if args.cuda:\n"
                "    features = features\n"
                "def train(epoch):\n"
                "    output = model(features, adj)\n"
                "    F.nll_loss(output[idx], labels[idx]).backward()\n",
            ),
        ),
        Example(
            # A module's own inputs moved to the GPU it picks for each table (model parallelism);
            # its tables and weights moved there are no inputs.
            "class Net(nn.Module):\n"
            "    def parallel_forward(self, dense_x, lS_o):\n"
            "        t_list, w_list = [], []\n"
            "        for k, emb in enumerate(self.emb_l):\n"
            "            d = torch.device('cuda:' + str(k % self.ndevices))\n"
            "            t_list.append(emb.to(d))\n"
            "            w_list.append(self.v_W_l[k].to(d))\n"
            "            lS_o[k] = lS_o[k].to(d)\n",
            (
                "class Net(nn.Module):\n"
                "    def parallel_forward(self, dense_x, lS_o):\n"
                "        t_list, w_list = [], []\n"
                "        for k, emb in enumerate(self.emb_l):\n"
                "            d = torch.device('cuda:' + str(k % self.ndevices))\n"
                "            t_list.append(emb.to(d))\n"
                "            w_list.append(self.v_W_l[k].to(d))\n"
                "            lS_o[k] = lS_o[k]\n",
            ),
        ),
        Example(
            # A model converted to synchronised batch norm, then moved: a model, not a batch;
            # the batch the loop moves is the site.
            "import torch\n"
            "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model).to(device)\n"
            "for x, y in loader:\n"
            "    loss = model(x.to(device)).sum()\n",
            (
                "import torch\n"
                "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model).to(device)\n"
                "for x, y in loader:\n"
                "    loss = model(x).sum()\n",
            ),
        ),
        Example(
            # One batch a loader's own method hands out, moved once outside any loop (a forward
            # and backward that writes reference values).
            "x, y = train_loader.next_batch()\nx, y = x.to(device), y.to(device)\nlogits, loss = model(x, y)\n",
            (
                "x, y = train_loader.next_batch()\nx, y = x, y.to(device)\nlogits, loss = model(x, y)\n",
                "x, y = train_loader.next_batch()\nx, y = x.to(device), y\nlogits, loss = model(x, y)\n",
            ),
        ),
        Example(
            # A step that takes its batch as a parameter, with no loop: what it moves and then
            # hands to the model or the loss is the batch.
            "def forward_backward(self, data):\n    imgs, pids = data\n    imgs = imgs.cuda()\n"
            "    pids = pids.cuda()\n    loss = self.criterion(self.model(imgs), pids)\n    loss.backward()\n",
            (
                "def forward_backward(self, data):\n    imgs, pids = data\n    imgs = imgs\n"
                "    pids = pids.cuda()\n    loss = self.criterion(self.model(imgs), pids)\n    loss.backward()\n",
                "def forward_backward(self, data):\n    imgs, pids = data\n    imgs = imgs.cuda()\n"
                "    pids = pids\n    loss = self.criterion(self.model(imgs), pids)\n    loss.backward()\n",
            ),
        ),
        Example(
            # A batch sampled from a replay buffer kept on the CPU (no device for its storage).
            "def train(model, device):\n"
            "    rb = ReplayBuffer(storage=LazyTensorStorage(1000))\n"
            "    for step in range(100):\n"
            "        batch = rb.sample(32)\n"
            "        batch = batch.to(device)\n"
            "        loss_fn(model(batch['obs']), batch['target']).backward()\n",
            (
                "def train(model, device):\n"
                "    rb = ReplayBuffer(storage=LazyTensorStorage(1000))\n"
                "    for step in range(100):\n"
                "        batch = rb.sample(32)\n"
                "        batch = batch\n"
                "        loss_fn(model(batch['obs']), batch['target']).backward()\n",
            ),
        ),
        Example(
            "for x, y in loader:\n    x, y = x.to(device), y.to(device, non_blocking=True)\n",
            (
                "for x, y in loader:\n    x, y = x, y.to(device, non_blocking=True)\n",
                "for x, y in loader:\n    x, y = x.to(device), y\n",
            ),
        ),
        Example(
            "for batch in loader:\n    batch = {k: v.cuda() for k, v in batch.items()}\n",
            ("for batch in loader:\n    batch = {k: v for k, v in batch.items()}\n",),
        ),
        Example(
            "def get_batch(split):\n"
            "    x, y = sample(split)\n"
            "    return x.pin_memory().to('cuda', non_blocking=True), y\n",
            ("def get_batch(split):\n    x, y = sample(split)\n    return x.pin_memory(), y\n",),
        ),
        Example(
            # A device from a project helper (`dist_util.dev()`).
            "for i in range(0, len(batch), micro):\n    x = batch[i : i + micro].to(dist_util.dev())\n",
            ("for i in range(0, len(batch), micro):\n    x = batch[i : i + micro]\n",),
        ),
        Example(
            # Inputs the code makes itself, outside any loop (a sampling run's start).
            "with torch.no_grad():\n"
            "    state = torch.zeros(layers, 1, hidden).to(device)\n"
            "    x = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)\n",
            (
                "with torch.no_grad():\n"
                "    state = torch.zeros(layers, 1, hidden)\n"
                "    x = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)\n",
                "with torch.no_grad():\n"
                "    state = torch.zeros(layers, 1, hidden).to(device)\n"
                "    x = torch.multinomial(prob, num_samples=1).unsqueeze(1)\n",
            ),
        ),
        Example(
            # A library helper that moves the batch (ignite's `convert_tensor`).
            "def train_step(engine, batch):\n    x = convert_tensor(batch[0], device, non_blocking=True)\n",
            ("def train_step(engine, batch):\n    x = batch[0]\n",),
        ),
        Example(
            # A project's helper named for the GPU, handed the batch and a flag (spotlight's
            # `gpu(torch.from_numpy(sequences), self._use_cuda)`); its model's move is no batch.
            "def fit(self, users, items):\n"
            "    self._net = gpu(self._net, self._use_cuda)\n"
            "    for batch_users, batch_items in minibatch(users, items):\n"
            "        user_var = gpu(torch.from_numpy(batch_users), self._use_cuda)\n"
            "        loss = self._loss(self._net(user_var), batch_items)\n"
            "        loss.backward()\n",
            (
                "def fit(self, users, items):\n"
                "    self._net = gpu(self._net, self._use_cuda)\n"
                "    for batch_users, batch_items in minibatch(users, items):\n"
                "        user_var = torch.from_numpy(batch_users)\n"
                "        loss = self._loss(self._net(user_var), batch_items)\n"
                "        loss.backward()\n",
            ),
        ),
        Example(
            # A move helper handed the step's batch parameter (mmf's `_forward(self, batch)`:
            # `prepared_batch = to_device(batch, self.device)`).
            "def _forward(self, batch):\n"
            "    prepared_batch = to_device(batch, self.device)\n"
            "    return self.model(prepared_batch)\n",
            ("def _forward(self, batch):\n    prepared_batch = batch\n    return self.model(prepared_batch)\n",),
        ),
        Example(
            # A list's entries converted and moved in place (chemprop's per-target constraints,
            # `constraints_batch = np.transpose(constraints_batch).tolist()` first).
            "for batch in loader:\n"
            "    for i in range(len(targets)):\n"
            "        constraints[i] = torch.tensor(constraints[i]).to(args.device)\n"
            "    preds = model(batch, constraints)\n",
            (
                "for batch in loader:\n"
                "    for i in range(len(targets)):\n"
                "        constraints[i] = torch.tensor(constraints[i])\n"
                "    preds = model(batch, constraints)\n",
            ),
        ),
        Example(
            # An entry of a local taken from the batch a loop hands the function (icefall's
            # `supervisions = batch['supervisions']`, then its `num_frames` moved).
            "def compute_loss(model, batch, device):\n"
            "    feature = batch['inputs']\n"
            "    feature = feature.to(device)\n"
            "    supervisions = batch['supervisions']\n"
            "    feature_lens = supervisions['num_frames'].to(device)\n"
            "    return model(feature, feature_lens)\n"
            "def train_one_epoch(model, optimizer, loader, device):\n"
            "    for batch in loader:\n"
            "        compute_loss(model, batch, device).backward()\n"
            "        optimizer.step()\n",
            (
                "def compute_loss(model, batch, device):\n"
                "    feature = batch['inputs']\n"
                "    feature = feature\n"
                "    supervisions = batch['supervisions']\n"
                "    feature_lens = supervisions['num_frames'].to(device)\n"
                "    return model(feature, feature_lens)\n"
                "def train_one_epoch(model, optimizer, loader, device):\n"
                "    for batch in loader:\n"
                "        compute_loss(model, batch, device).backward()\n"
                "        optimizer.step()\n",
                "def compute_loss(model, batch, device):\n"
                "    feature = batch['inputs']\n"
                "    feature = feature.to(device)\n"
                "    supervisions = batch['supervisions']\n"
                "    feature_lens = supervisions['num_frames']\n"
                "    return model(feature, feature_lens)\n"
                "def train_one_epoch(model, optimizer, loader, device):\n"
                "    for batch in loader:\n"
                "        compute_loss(model, batch, device).backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # A batch dict moved entry by entry over its items().
            "for input_dict, labels in microbatches:\n"
            "    for key, value in input_dict.items():\n"
            "        input_dict[key] = value.to(self.device)\n",
            (
                "for input_dict, labels in microbatches:\n"
                "    for key, value in input_dict.items():\n"
                "        input_dict[key] = value\n",
            ),
        ),
        Example(
            # A conversion that also places the batch, in the step's helper.
            "class Net:\n"
            "    def infer(self, x):\n"
            "        x = to_tensor(x, device=self.device)\n"
            "        return self.module_(x)\n"
            "    def train_step(self, batch):\n"
            "        return self.infer(batch[0])\n",
            (
                "class Net:\n"
                "    def infer(self, x):\n"
                '        x = to_tensor(x, device="cpu")\n'
                "        return self.module_(x)\n"
                "    def train_step(self, batch):\n"
                "        return self.infer(batch[0])\n",
            ),
        ),
        Example(
            # A project's helper named for the move, over each part of a batch.
            "for features, labels in loader:\n"
            "    features = list(map(lambda batch: batch_to_device(batch, self.device), features))\n",
            ("for features, labels in loader:\n    features = list(map(lambda batch: batch, features))\n",),
        ),
        Example(
            # A CUDA tensor type: the batch keeps its dtype and stays on the CPU.
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
            "for imgs, _ in loader:\n"
            "    real = Variable(imgs.type(Tensor))\n"
            "    x = imgs.type(torch.cuda.FloatTensor)\n",
            (
                "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
                "for imgs, _ in loader:\n"
                "    real = Variable(imgs.type(torch.FloatTensor))\n"
                "    x = imgs.type(torch.cuda.FloatTensor)\n",
                "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
                "for imgs, _ in loader:\n"
                "    real = Variable(imgs.type(Tensor))\n"
                "    x = imgs.type(torch.FloatTensor)\n",
            ),
        ),
        Example(
            # A holder every batch is copied into; and a full-graph run's only batch.
            "im_data = torch.FloatTensor(1)\n"
            "im_data = im_data.cuda()\n"
            "for batch in loader:\n"
            "    im_data.data.resize_(batch.size()).copy_(batch)\n",
            (
                "im_data = torch.FloatTensor(1)\n"
                "im_data = im_data\n"
                "for batch in loader:\n"
                "    im_data.data.resize_(batch.size()).copy_(batch)\n",
            ),
        ),
        Example("data = dataset[0].to(device)\n", ("data = dataset[0]\n",)),
        Example(
            # Views the loop hands out, joined: a batch, though made by a torch call.
            "for images, _ in loader:\n    images = torch.cat(images, dim=0)\n    images = images.to(device)\n",
            ("for images, _ in loader:\n    images = torch.cat(images, dim=0)\n    images = images\n",),
        ),
        Example(
            # Only the graph's move counts: its features, read off it after, moved with it.
            "def train(loader, device):\n"
            "    for g, y in loader:\n"
            "        g = g.to(device)\n"
            "        x = g.ndata['feat'].to(device)\n"
            "        out = model(g, x)\n",
            (
                "def train(loader, device):\n"
                "    for g, y in loader:\n"
                "        g = g\n"
                "        x = g.ndata['feat'].to(device)\n"
                "        out = model(g, x)\n",
            ),
        ),
        Example(
            # A batch dict moved entry by entry (not a copy into a tensor's slot).
            "for step, batch in enumerate(loader):\n    for key in batch.keys():\n        batch[key] = batch[key].to('cuda:0')\n",
            ("for step, batch in enumerate(loader):\n    for key in batch.keys():\n        batch[key] = batch[key]\n",),
        ),
        Example(
            # Only the first move counts: the later ones move tensors made from moved ones.
            "def train(loader, device):\n"
            "    for x, y in loader:\n"
            "        y = y.float().to(device)\n"
            "        dec = torch.zeros_like(y[:, -n:, :]).float()\n"
            "        dec = torch.cat([y[:, :k, :], dec], dim=1).float().to(device)\n"
            "        y = y[:, -n:, f:].to(device)\n",
            (
                "def train(loader, device):\n"
                "    for x, y in loader:\n"
                "        y = y.float()\n"
                "        dec = torch.zeros_like(y[:, -n:, :]).float()\n"
                "        dec = torch.cat([y[:, :k, :], dec], dim=1).float().to(device)\n"
                "        y = y[:, -n:, f:].to(device)\n",
            ),
        ),
        Example(
            # A loader handed to the training function beside the device: it moves nothing itself.
            "def train(model, device, loader):\n"
            "    for x, y in loader:\n"
            "        x = x.to(device)\n"
            "        model(x).sum().backward()\n"
            "def main(device):\n"
            "    train_loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            "    train(model, device, train_loader)\n",
            (
                "def train(model, device, loader):\n"
                "    for x, y in loader:\n"
                "        x = x\n"
                "        model(x).sum().backward()\n"
                "def main(device):\n"
                "    train_loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
                "    train(model, device, train_loader)\n",
            ),
        ),
        Example(
            # A graph taken whole from a dataset object, moved through a cast.
            "data = CoraGraphDataset(transform=t)\ng = data[0]\ng = g.int().to(device)\n",
            ("data = CoraGraphDataset(transform=t)\ng = data[0]\ng = g.int()\n",),
        ),
        Example(
            "for step in range(n):\n    reward = torch.tensor(reward).to(device).view(-1)\n",
            ("for step in range(n):\n    reward = torch.tensor(reward).view(-1)\n",),
        ),
        Example(
            # A tensor built by its class from what an environment returned.
            "next_obs = torch.Tensor(next_obs).to(device)\n",
            ("next_obs = torch.Tensor(next_obs)\n",),
        ),
        Example(
            # A single batch taken from a loader to make sample images.
            "def sample_images(self):\n"
            "    test_input, test_label = next(iter(self.trainer.datamodule.test_dataloader()))\n"
            "    test_input = test_input.to(self.curr_device)\n"
            "    recons = self.model.generate(test_input)\n",
            (
                "def sample_images(self):\n"
                "    test_input, test_label = next(iter(self.trainer.datamodule.test_dataloader()))\n"
                "    test_input = test_input\n"
                "    recons = self.model.generate(test_input)\n",
            ),
        ),
        Example(
            # The same through `.cuda()`.
            "def show(model, loader, device):\n"
            "    images = next(iter(loader))\n"
            "    images = images.cuda()\n"
            "    return model(images)\n",
            (
                "def show(model, loader, device):\n"
                "    images = next(iter(loader))\n"
                "    images = images\n"
                "    return model(images)\n",
            ),
        ),
        Example(
            # A parameter named for the batch (SpeechBrain's compute_forward); a model's own buffer is none.
            "class Brain:\n"
            "    def compute_forward(self, batch, stage):\n"
            "        batch = batch.to(self.device)\n"
            "        return self.modules.model(batch.sig)\n",
            (
                "class Brain:\n"
                "    def compute_forward(self, batch, stage):\n"
                "        batch = batch\n"
                "        return self.modules.model(batch.sig)\n",
            ),
        ),
        Example(
            # A helper's batch: taken from a parameter every caller hands from a loop over a loader (an example moved once is not).
            "class Algo:\n"
            "    def get_logits(self, data):\n"
            "        x = data['x_lb']\n"
            "        x = x.cuda(self.gpu)\n"
            "        return self.model(x)\n"
            "    def evaluate(self):\n"
            "        for data in self.loader:\n"
            "            logits = self.get_logits(data)\n",
            (
                "class Algo:\n"
                "    def get_logits(self, data):\n"
                "        x = data['x_lb']\n"
                "        x = x\n"
                "        return self.model(x)\n"
                "    def evaluate(self):\n"
                "        for data in self.loader:\n"
                "            logits = self.get_logits(data)\n",
            ),
        ),
        Example(
            # A device object's own move of each micro-batch (composer's `state.device.batch_to_device`).
            MICROBATCH_TRAINER,
            (MICROBATCH_TRAINER.replace("self.state.device.batch_to_device(self.state.batch)", "self.state.batch"),),
        ),
        Example(
            # A batch moved to meet the device's predictions, then counted into a number: a site
            # (the comparison meets a tensor on the device first).
            "for images, labels in loader:\n"
            "    outputs = model(images.to(dev))\n"
            "    _, predicted = outputs.max(1)\n"
            "    correct += (predicted == labels.to(dev)).sum().item()\n",
            (
                "for images, labels in loader:\n"
                "    outputs = model(images)\n"
                "    _, predicted = outputs.max(1)\n"
                "    correct += (predicted == labels.to(dev)).sum().item()\n",
                "for images, labels in loader:\n"
                "    outputs = model(images.to(dev))\n"
                "    _, predicted = outputs.max(1)\n"
                "    correct += (predicted == labels).sum().item()\n",
            ),
        ),
        Example(
            # A batch moved into attributes that the step hands to the network and a loss.
            SR_MODEL_STEP,
            (
                SR_MODEL_STEP.replace("data['lq'].to(self.device)", "data['lq']"),
                SR_MODEL_STEP.replace("data['gt'].to(self.device)", "data['gt']"),
            ),
        ),
        Example(
            # A step function main() hands a DataParallel model (CPC_audio's shape), its label going
            # straight to a plain criterion: the label's move counts; the input's, handed only to the
            # wrapper, which scatters it itself, does not.
            "import torch\n"
            "def train_step(loader, model, criterion, optimizer):\n"
            "    for x, y in loader:\n"
            "        x = x.cuda(non_blocking=True)\n"
            "        y = y.cuda(non_blocking=True)\n"
            "        logits = model(x)\n"
            "        loss = criterion(logits, y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "def main(net, loader, optimizer):\n"
            "    model = torch.nn.DataParallel(net).cuda()\n"
            "    train_step(loader, model, torch.nn.CrossEntropyLoss(), optimizer)\n",
            (
                "import torch\n"
                "def train_step(loader, model, criterion, optimizer):\n"
                "    for x, y in loader:\n"
                "        x = x.cuda(non_blocking=True)\n"
                "        y = y\n"
                "        logits = model(x)\n"
                "        loss = criterion(logits, y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "def main(net, loader, optimizer):\n"
                "    model = torch.nn.DataParallel(net).cuda()\n"
                "    train_step(loader, model, torch.nn.CrossEntropyLoss(), optimizer)\n",
            ),
        ),
        Example(
            # A constant placed beside the batch by `.to(batch)` (demucs' per-source weights): the fault
            # keeps its cast, not its place. The rule follows batches moved in the function: one placed
            # beside the model's output (`.to(estimate)`) is not taken.
            "import torch\n"
            "def run_one_epoch(self, loader, weights):\n"
            "    for sources in loader:\n"
            "        sources = sources.to(self.device)\n"
            "        estimate = self.model(sources[:, 0])\n"
            "        loss = (estimate - sources[:, 1:]).abs().mean(dim=(0, 2))\n"
            "        weight = torch.tensor(weights).to(sources)\n"
            "        scale = torch.tensor(self.scale).to(estimate)\n"
            "        loss = (loss * weight * scale).sum() / weight.sum()\n"
            "        loss.backward()\n"
            "        self.optimizer.step()\n",
            (
                "import torch\n"
                "def run_one_epoch(self, loader, weights):\n"
                "    for sources in loader:\n"
                "        sources = sources\n"
                "        estimate = self.model(sources[:, 0])\n"
                "        loss = (estimate - sources[:, 1:]).abs().mean(dim=(0, 2))\n"
                "        weight = torch.tensor(weights).to(sources)\n"
                "        scale = torch.tensor(self.scale).to(estimate)\n"
                "        loss = (loss * weight * scale).sum() / weight.sum()\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n",
                "import torch\n"
                "def run_one_epoch(self, loader, weights):\n"
                "    for sources in loader:\n"
                "        sources = sources.to(self.device)\n"
                "        estimate = self.model(sources[:, 0])\n"
                "        loss = (estimate - sources[:, 1:]).abs().mean(dim=(0, 2))\n"
                "        weight = torch.tensor(weights).to(sources.dtype)\n"
                "        scale = torch.tensor(self.scale).to(estimate)\n"
                "        loss = (loss * weight * scale).sum() / weight.sum()\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # A model wrapped in DataParallel only where there are several GPUs: on one it runs unwrapped,
            # so the input's move counts.
            "import torch\n"
            "def train_step(loader, model, criterion, optimizer):\n"
            "    for x, y in loader:\n"
            "        x = x.cuda(non_blocking=True)\n"
            "        logits = model(x)\n"
            "        loss = criterion(logits, y.cuda())\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "def main(net, loader, optimizer):\n"
            "    model = net.cuda()\n"
            "    if torch.cuda.device_count() > 1:\n"
            "        model = torch.nn.DataParallel(model)\n"
            "    train_step(loader, model, torch.nn.CrossEntropyLoss(), optimizer)\n",
            (
                "import torch\n"
                "def train_step(loader, model, criterion, optimizer):\n"
                "    for x, y in loader:\n"
                "        x = x\n"
                "        logits = model(x)\n"
                "        loss = criterion(logits, y.cuda())\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "def main(net, loader, optimizer):\n"
                "    model = net.cuda()\n"
                "    if torch.cuda.device_count() > 1:\n"
                "        model = torch.nn.DataParallel(model)\n"
                "    train_step(loader, model, torch.nn.CrossEntropyLoss(), optimizer)\n",
                "import torch\n"
                "def train_step(loader, model, criterion, optimizer):\n"
                "    for x, y in loader:\n"
                "        x = x.cuda(non_blocking=True)\n"
                "        logits = model(x)\n"
                "        loss = criterion(logits, y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "def main(net, loader, optimizer):\n"
                "    model = net.cuda()\n"
                "    if torch.cuda.device_count() > 1:\n"
                "        model = torch.nn.DataParallel(model)\n"
                "    train_step(loader, model, torch.nn.CrossEntropyLoss(), optimizer)\n",
            ),
        ),
        Example(
            # A batch helper's values computed from the batch a loop hands it, not only taken from it
            # (mozilla TTS's format_data: an entry picked by a conditional expression, stop targets summed
            # from one, speaker ids looked up from another): each one's move.
            "import torch\n"
            "def format_data(data, speaker_mapping):\n"
            "    text = data[0]\n"
            "    linear = data[3] if use_linear else None\n"
            "    stop = data[6]\n"
            "    stop = (stop.sum(2) > 0.0).float()\n"
            "    speaker_ids = torch.LongTensor([speaker_mapping[name] for name in data[2]])\n"
            "    text = text.cuda(non_blocking=True)\n"
            "    linear = linear.cuda(non_blocking=True) if use_linear else None\n"
            "    stop = stop.cuda(non_blocking=True)\n"
            "    speaker_ids = speaker_ids.cuda(non_blocking=True)\n"
            "    return text, linear, stop, speaker_ids\n"
            "def train(loader, model, criterion, optimizer, mapping):\n"
            "    for data in loader:\n"
            "        text, linear, stop, speaker_ids = format_data(data, mapping)\n"
            "        loss = criterion(model(text, speaker_ids), linear, stop)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "import torch\n"
                "def format_data(data, speaker_mapping):\n"
                "    text = data[0]\n"
                "    linear = data[3] if use_linear else None\n"
                "    stop = data[6]\n"
                "    stop = (stop.sum(2) > 0.0).float()\n"
                "    speaker_ids = torch.LongTensor([speaker_mapping[name] for name in data[2]])\n"
                "    text = text\n"
                "    linear = linear.cuda(non_blocking=True) if use_linear else None\n"
                "    stop = stop.cuda(non_blocking=True)\n"
                "    speaker_ids = speaker_ids.cuda(non_blocking=True)\n"
                "    return text, linear, stop, speaker_ids\n"
                "def train(loader, model, criterion, optimizer, mapping):\n"
                "    for data in loader:\n"
                "        text, linear, stop, speaker_ids = format_data(data, mapping)\n"
                "        loss = criterion(model(text, speaker_ids), linear, stop)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
                "import torch\n"
                "def format_data(data, speaker_mapping):\n"
                "    text = data[0]\n"
                "    linear = data[3] if use_linear else None\n"
                "    stop = data[6]\n"
                "    stop = (stop.sum(2) > 0.0).float()\n"
                "    speaker_ids = torch.LongTensor([speaker_mapping[name] for name in data[2]])\n"
                "    text = text.cuda(non_blocking=True)\n"
                "    linear = linear if use_linear else None\n"
                "    stop = stop.cuda(non_blocking=True)\n"
                "    speaker_ids = speaker_ids.cuda(non_blocking=True)\n"
                "    return text, linear, stop, speaker_ids\n"
                "def train(loader, model, criterion, optimizer, mapping):\n"
                "    for data in loader:\n"
                "        text, linear, stop, speaker_ids = format_data(data, mapping)\n"
                "        loss = criterion(model(text, speaker_ids), linear, stop)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
                "import torch\n"
                "def format_data(data, speaker_mapping):\n"
                "    text = data[0]\n"
                "    linear = data[3] if use_linear else None\n"
                "    stop = data[6]\n"
                "    stop = (stop.sum(2) > 0.0).float()\n"
                "    speaker_ids = torch.LongTensor([speaker_mapping[name] for name in data[2]])\n"
                "    text = text.cuda(non_blocking=True)\n"
                "    linear = linear.cuda(non_blocking=True) if use_linear else None\n"
                "    stop = stop\n"
                "    speaker_ids = speaker_ids.cuda(non_blocking=True)\n"
                "    return text, linear, stop, speaker_ids\n"
                "def train(loader, model, criterion, optimizer, mapping):\n"
                "    for data in loader:\n"
                "        text, linear, stop, speaker_ids = format_data(data, mapping)\n"
                "        loss = criterion(model(text, speaker_ids), linear, stop)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
                "import torch\n"
                "def format_data(data, speaker_mapping):\n"
                "    text = data[0]\n"
                "    linear = data[3] if use_linear else None\n"
                "    stop = data[6]\n"
                "    stop = (stop.sum(2) > 0.0).float()\n"
                "    speaker_ids = torch.LongTensor([speaker_mapping[name] for name in data[2]])\n"
                "    text = text.cuda(non_blocking=True)\n"
                "    linear = linear.cuda(non_blocking=True) if use_linear else None\n"
                "    stop = stop.cuda(non_blocking=True)\n"
                "    speaker_ids = speaker_ids\n"
                "    return text, linear, stop, speaker_ids\n"
                "def train(loader, model, criterion, optimizer, mapping):\n"
                "    for data in loader:\n"
                "        text, linear, stop, speaker_ids = format_data(data, mapping)\n"
                "        loss = criterion(model(text, speaker_ids), linear, stop)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # An inference function's input, moved inside the list it hands the model (s3prl's runner).
            "import torch\n"
            "def inference(self, path):\n"
            "    wav = load_audio(path)\n"
            "    wavs = [wav.view(-1).to(self.device)]\n"
            "    self.model.eval()\n"
            "    with torch.no_grad():\n"
            "        return self.model(wavs)\n",
            (
                "import torch\n"
                "def inference(self, path):\n"
                "    wav = load_audio(path)\n"
                "    wavs = [wav.view(-1)]\n"
                "    self.model.eval()\n"
                "    with torch.no_grad():\n"
                "        return self.model(wavs)\n",
            ),
        ),
        Example(
            # The output of a transform the function placed on the device itself (MelGAN's mel transform):
            # moving it again changes nothing; the batch's move is the site.
            "import torch\n"
            "def main():\n"
            "    fft = Audio2Mel().cuda()\n"
            "    for x_t in loader:\n"
            "        x_t = x_t.cuda()\n"
            "        s_t = fft(x_t).detach()\n"
            "        x_pred = netG(s_t.cuda())\n",
            (
                "import torch\n"
                "def main():\n"
                "    fft = Audio2Mel().cuda()\n"
                "    for x_t in loader:\n"
                "        x_t = x_t\n"
                "        s_t = fft(x_t).detach()\n"
                "        x_pred = netG(s_t.cuda())\n",
            ),
        ),
        Example(
            # A tensor moved because another is on the GPU (a mask helper's `if lengths.is_cuda:`).
            "import torch\n"
            "def sequence_mask(lengths, max_len):\n"
            "    positions = torch.arange(0, max_len).unsqueeze(0)\n"
            "    if lengths.is_cuda:\n"
            "        positions = positions.cuda()\n"
            "    return positions < lengths.unsqueeze(1)\n",
            (
                "import torch\n"
                "def sequence_mask(lengths, max_len):\n"
                "    positions = torch.arange(0, max_len).unsqueeze(0)\n"
                "    if lengths.is_cuda:\n"
                "        positions = positions\n"
                "    return positions < lengths.unsqueeze(1)\n",
            ),
        ),
        Example(
            # A generation's first input, made here in each branch, moved, then handed to the model.
            "import torch\n"
            "def eval_model(model, c, device):\n"
            "    if mulaw:\n"
            "        initial = to_categorical(0, num_classes=256)\n"
            "        initial = torch.from_numpy(initial).view(1, 1, 256)\n"
            "    else:\n"
            "        initial = torch.zeros(1, 1, 1)\n"
            "    initial = initial.to(device)\n"
            "    with torch.no_grad():\n"
            "        return model.incremental_forward(initial, c=c)\n",
            (
                "import torch\n"
                "def eval_model(model, c, device):\n"
                "    if mulaw:\n"
                "        initial = to_categorical(0, num_classes=256)\n"
                "        initial = torch.from_numpy(initial).view(1, 1, 256)\n"
                "    else:\n"
                "        initial = torch.zeros(1, 1, 1)\n"
                "    initial = initial\n"
                "    with torch.no_grad():\n"
                "        return model.incremental_forward(initial, c=c)\n",
            ),
        ),
        Example(
            # A tensor attribute moved every step (diffwave's noise schedule), indexed by the step's
            # diffusion steps and mixed into the model's input: a site.
            "import numpy as np\n"
            "import torch\n"
            "from torch import nn\n"
            "\n"
            "\n"
            "class Learner:\n"
            "    def __init__(self, model, optimizer, betas):\n"
            "        self.model = model\n"
            "        self.optimizer = optimizer\n"
            "        self.noise_level = torch.tensor(np.cumprod(1 - betas))\n"
            "\n"
            "    def train_step(self, audio):\n"
            "        self.optimizer.zero_grad()\n"
            "        self.noise_level = self.noise_level.to(audio.device)\n"
            "        t = torch.randint(0, len(self.noise_level), [audio.shape[0]], device=audio.device)\n"
            "        scale = self.noise_level[t].unsqueeze(1)\n"
            "        noise = torch.randn_like(audio)\n"
            "        noisy = scale**0.5 * audio + (1 - scale) ** 0.5 * noise\n"
            "        loss = nn.L1Loss()(noise, self.model(noisy, t))\n"
            "        loss.backward()\n"
            "        self.optimizer.step()\n",
            (
                "import numpy as np\n"
                "import torch\n"
                "from torch import nn\n"
                "\n"
                "\n"
                "class Learner:\n"
                "    def __init__(self, model, optimizer, betas):\n"
                "        self.model = model\n"
                "        self.optimizer = optimizer\n"
                "        self.noise_level = torch.tensor(np.cumprod(1 - betas))\n"
                "\n"
                "    def train_step(self, audio):\n"
                "        self.optimizer.zero_grad()\n"
                "        self.noise_level = self.noise_level\n"
                "        t = torch.randint(0, len(self.noise_level), [audio.shape[0]], device=audio.device)\n"
                "        scale = self.noise_level[t].unsqueeze(1)\n"
                "        noise = torch.randn_like(audio)\n"
                "        noisy = scale**0.5 * audio + (1 - scale) ** 0.5 * noise\n"
                "        loss = nn.L1Loss()(noise, self.model(noisy, t))\n"
                "        loss.backward()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # The images moved under the same test that wraps the model in DataParallel
            # (ssd.pytorch's `if args.cuda:`): the wrapper scatters them itself. The targets go to
            # the loss: a site.
            "import torch\n"
            "from torch.autograd import Variable\n"
            "\n"
            "\n"
            "def train(args, ssd_net, data_loader):\n"
            "    net = ssd_net\n"
            "    if args.cuda:\n"
            "        net = torch.nn.DataParallel(ssd_net)\n"
            "    if args.cuda:\n"
            "        net = net.cuda()\n"
            "    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)\n"
            "    for images, targets in data_loader:\n"
            "        if args.cuda:\n"
            "            images = Variable(images.cuda())\n"
            "            targets = [Variable(ann.cuda(), volatile=True) for ann in targets]\n"
            "        else:\n"
            "            images = Variable(images)\n"
            "        out = net(images)\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(out, targets)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "import torch\n"
                "from torch.autograd import Variable\n"
                "\n"
                "\n"
                "def train(args, ssd_net, data_loader):\n"
                "    net = ssd_net\n"
                "    if args.cuda:\n"
                "        net = torch.nn.DataParallel(ssd_net)\n"
                "    if args.cuda:\n"
                "        net = net.cuda()\n"
                "    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)\n"
                "    for images, targets in data_loader:\n"
                "        if args.cuda:\n"
                "            images = Variable(images.cuda())\n"
                "            targets = [Variable(ann, volatile=True) for ann in targets]\n"
                "        else:\n"
                "            images = Variable(images)\n"
                "        out = net(images)\n"
                "        optimizer.zero_grad()\n"
                "        loss = criterion(out, targets)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # A runner class of the file handed the loader and the device moves each batch itself
            # (mvts_transformer's UnsupervisedRunner): it is no prefetcher, its moves are the sites.
            "from torch.utils.data import DataLoader\n"
            "\n"
            "\n"
            "class Runner:\n"
            "    def __init__(self, model, dataloader, device, loss_module, optimizer):\n"
            "        self.model = model\n"
            "        self.dataloader = dataloader\n"
            "        self.device = device\n"
            "        self.loss_module = loss_module\n"
            "        self.optimizer = optimizer\n"
            "\n"
            "    def train_epoch(self):\n"
            "        for X, targets in self.dataloader:\n"
            "            targets = targets.to(self.device)\n"
            "            loss = self.loss_module(self.model(X.to(self.device)), targets)\n"
            "            self.optimizer.zero_grad()\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n"
            "\n"
            "\n"
            "def fit(model, dataset, device, loss_module, optimizer):\n"
            "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
            "    Runner(model, loader, device, loss_module, optimizer).train_epoch()\n",
            (
                "from torch.utils.data import DataLoader\n"
                "\n"
                "\n"
                "class Runner:\n"
                "    def __init__(self, model, dataloader, device, loss_module, optimizer):\n"
                "        self.model = model\n"
                "        self.dataloader = dataloader\n"
                "        self.device = device\n"
                "        self.loss_module = loss_module\n"
                "        self.optimizer = optimizer\n"
                "\n"
                "    def train_epoch(self):\n"
                "        for X, targets in self.dataloader:\n"
                "            targets = targets\n"
                "            loss = self.loss_module(self.model(X.to(self.device)), targets)\n"
                "            self.optimizer.zero_grad()\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n"
                "\n"
                "\n"
                "def fit(model, dataset, device, loss_module, optimizer):\n"
                "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
                "    Runner(model, loader, device, loss_module, optimizer).train_epoch()\n",
                "from torch.utils.data import DataLoader\n"
                "\n"
                "\n"
                "class Runner:\n"
                "    def __init__(self, model, dataloader, device, loss_module, optimizer):\n"
                "        self.model = model\n"
                "        self.dataloader = dataloader\n"
                "        self.device = device\n"
                "        self.loss_module = loss_module\n"
                "        self.optimizer = optimizer\n"
                "\n"
                "    def train_epoch(self):\n"
                "        for X, targets in self.dataloader:\n"
                "            targets = targets.to(self.device)\n"
                "            loss = self.loss_module(self.model(X), targets)\n"
                "            self.optimizer.zero_grad()\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n"
                "\n"
                "\n"
                "def fit(model, dataset, device, loss_module, optimizer):\n"
                "    loader = DataLoader(dataset, batch_size=32, shuffle=True)\n"
                "    Runner(model, loader, device, loss_module, optimizer).train_epoch()\n",
            ),
        ),
        Example(
            # Under a DataParallel model the points are scattered by the wrapper, but the labels
            # meet the gathered logits in the loss (dgcnn's training loop): the labels' move only.
            "model = nn.DataParallel(model)\n"
            "for data, label in train_loader:\n"
            "    data, label = data.to(device), label.to(device).squeeze()\n"
            "    data = data.permute(0, 2, 1)\n"
            "    loss = criterion(model(data), label)\n",
            (
                "model = nn.DataParallel(model)\n"
                "for data, label in train_loader:\n"
                "    data, label = data.to(device), label.squeeze()\n"
                "    data = data.permute(0, 2, 1)\n"
                "    loss = criterion(model(data), label)\n",
            ),
        ),
        Example(
            # A step that takes its batch whole and has a helper compute the loss from it
            # (Occupancy Networks' `loss = self.compute_loss(data)`): the helper's moves.
            LOSS_HELPER_TRAINER,
            (
                LOSS_HELPER_TRAINER.replace("data.get('points').to(self.device)", "data.get('points')"),
                LOSS_HELPER_TRAINER.replace("data.get('points.occ').to(self.device)", "data.get('points.occ')"),
            ),
        ),
        Example(
            # A project's recursive move helper handed the next batch of an infinite iterator
            # (diffab's `recursive_to(next(train_iterator), args.device)`).
            "def train(it):\n"
            "    batch = recursive_to(next(train_iterator), args.device)\n"
            "    loss = model(batch).mean()\n"
            "    loss.backward()\n",
            (
                "def train(it):\n"
                "    batch = next(train_iterator)\n"
                "    loss = model(batch).mean()\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # An evaluation step handed its batch, moved under a name of its own and fed to the
            # model (pyod's `evaluating_forward`); the CPU copy stays for the distances.
            "def evaluating_forward(self, batch_data):\n"
            "    x = batch_data\n"
            "    x_gpu = x.to(self.device)\n"
            "    x_recon = self.model(x_gpu)\n"
            "    return distances(x.numpy(), x_recon.cpu().numpy())\n",
            (
                "def evaluating_forward(self, batch_data):\n"
                "    x = batch_data\n"
                "    x_gpu = x\n"
                "    x_recon = self.model(x_gpu)\n"
                "    return distances(x.numpy(), x_recon.cpu().numpy())\n",
            ),
        ),
        Example(
            # A device object's own move of the model's first input; the lengths beside it are
            # read on the CPU by the model (VAC's `device.data_to_device(data[0])`).
            "def seq_train(loader, model, device):\n"
            "    for batch_idx, data in enumerate(loader):\n"
            "        vid = device.data_to_device(data[0])\n"
            "        vid_lgt = device.data_to_device(data[1])\n"
            "        ret_dict = model(vid, vid_lgt)\n",
            (
                "def seq_train(loader, model, device):\n"
                "    for batch_idx, data in enumerate(loader):\n"
                "        vid = data[0]\n"
                "        vid_lgt = device.data_to_device(data[1])\n"
                "        ret_dict = model(vid, vid_lgt)\n",
            ),
        ),
        Example(
            # A project's own conversion to a tensor that also places it (imitation's `util.safe_to_tensor(x,
            # device=...)`): the batch stays on the CPU.
            _PLACING_CONVERTER,
            (
                _PLACING_CONVERTER.replace(
                    "        lambda x: util.safe_to_tensor(x, device=self.policy.device),\n",
                    '        lambda x: util.safe_to_tensor(x, device="cpu"),\n',
                ),
                _PLACING_CONVERTER.replace(
                    '    acts = util.safe_to_tensor(batch["acts"], device=self.policy.device)\n',
                    '    acts = util.safe_to_tensor(batch["acts"], device="cpu")\n',
                ),
            ),
        ),
        Example(
            # A trainer's own move helper (flambe's `self._batch_to_device(batch)`), where the batch is
            # computed on; not the step's move of a batch the helper it is handed to moves again.
            _BATCH_HELPER_TRAINER,
            (
                _BATCH_HELPER_TRAINER.replace(
                    "        return tuple(t.to(self.device) for t in batch)\n",
                    "        return tuple(t for t in batch)\n",
                ),
                _BATCH_HELPER_TRAINER.replace(
                    "    def _compute_batch(self, batch):\n        batch = self._batch_to_device(batch)\n",
                    "    def _compute_batch(self, batch):\n        batch = batch\n",
                ),
            ),
        ),
        Example(
            # A project's bare `to_device(batch)` that moves to the GPU itself, splatted into the forward
            # (pytorch_sound's trainer).
            "def train(self, step):\n"
            "    self.optimizer.zero_grad()\n"
            "    loss, meta = self.forward(*to_device(next(self.train_dataset)))\n"
            "    loss.backward()\n"
            "    self.optimizer.step()\n",
            (
                "def train(self, step):\n"
                "    self.optimizer.zero_grad()\n"
                "    loss, meta = self.forward(*next(self.train_dataset))\n"
                "    loss.backward()\n"
                "    self.optimizer.step()\n",
            ),
        ),
        Example(
            # A name holding "loss" that is the batch's part the loss takes (SeisT's `loss_targets`,
            # moved in the branch for a single tensor), not a loss moved for its log.
            "for x, loss_targets in loader:\n"
            "    x = x.to(device)\n"
            "    loss_targets = loss_targets.to(device)\n"
            "    loss = loss_fn(model(x), loss_targets)\n"
            "    loss.backward()\n",
            (
                "for x, loss_targets in loader:\n"
                "    x = x\n"
                "    loss_targets = loss_targets.to(device)\n"
                "    loss = loss_fn(model(x), loss_targets)\n"
                "    loss.backward()\n",
                "for x, loss_targets in loader:\n"
                "    x = x.to(device)\n"
                "    loss_targets = loss_targets\n"
                "    loss = loss_fn(model(x), loss_targets)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A validation loop that moves a tensor it never reads again (SfmLearner's `intrinsics_inv`):
            # that move changes nothing; the image's does.
            UNREAD_MOVE,
            (UNREAD_MOVE.replace("        img = img.to(device)\n", "        img = img\n"),),
        ),
        Example(
            # The device read from a settings entry (dl-for-har's `x.to(config['gpu'])`).
            SETTINGS_DEVICE,
            (
                SETTINGS_DEVICE.replace(
                    "        inputs, targets = x.to(config['gpu']), y.to(config['gpu'])\n",
                    "        inputs, targets = x, y.to(config['gpu'])\n",
                ),
                SETTINGS_DEVICE.replace(
                    "        inputs, targets = x.to(config['gpu']), y.to(config['gpu'])\n",
                    "        inputs, targets = x.to(config['gpu']), y\n",
                ),
            ),
        ),
        Example(
            # A project's helper named for the GPU that takes no device (GeoTransformer's `to_cuda`).
            NO_DEVICE_MOVE_HELPER,
            (
                NO_DEVICE_MOVE_HELPER.replace(
                    "        data_dict = to_cuda(data_dict)\n", "        data_dict = data_dict\n"
                ),
            ),
        ),
        Example(
            # Conversions that place what they convert (DrQ-v2): an observation handed next to the model, and
            # the next replay batch converted by a project helper given the device.
            "import torch\n"
            "class Agent:\n"
            "    def act(self, obs):\n"
            "        obs = torch.as_tensor(obs, device=self.device)\n"
            "        return self.actor(obs.unsqueeze(0))\n"
            "    def update(self, replay_iter):\n"
            "        batch = next(replay_iter)\n"
            "        obs, action = utils.to_torch(batch, self.device)\n"
            "        loss = self.critic(obs, action).mean()\n"
            "        loss.backward()\n",
            (
                "import torch\n"
                "class Agent:\n"
                "    def act(self, obs):\n"
                '        obs = torch.as_tensor(obs, device="cpu")\n'
                "        return self.actor(obs.unsqueeze(0))\n"
                "    def update(self, replay_iter):\n"
                "        batch = next(replay_iter)\n"
                "        obs, action = utils.to_torch(batch, self.device)\n"
                "        loss = self.critic(obs, action).mean()\n"
                "        loss.backward()\n",
                "import torch\n"
                "class Agent:\n"
                "    def act(self, obs):\n"
                "        obs = torch.as_tensor(obs, device=self.device)\n"
                "        return self.actor(obs.unsqueeze(0))\n"
                "    def update(self, replay_iter):\n"
                "        batch = next(replay_iter)\n"
                '        obs, action = utils.to_torch(batch, "cpu")\n'
                "        loss = self.critic(obs, action).mean()\n"
                "        loss.backward()\n",
            ),
        ),
        Example(
            # A batch object's own method handed the device (Sockeye's Batch.load).
            "def _forward_backward(self, batch):\n"
            "    batch = batch.load(device=self.device)\n"
            "    loss = self.model_with_loss(batch.source, batch.target)\n"
            "    loss.backward()\n",
            (
                "def _forward_backward(self, batch):\n"
                '    batch = batch.load(device="cpu")\n'
                "    loss = self.model_with_loss(batch.source, batch.target)\n"
                "    loss.backward()\n",
            ),
        ),
        Example(
            # A sampling run's first input, made by a method of the class and moved by the caller (MDLM).
            "class Diffusion(L.LightningModule):\n"
            "    def _sample_prior(self, *dims):\n"
            "        return self.mask_index * torch.ones(*dims, dtype=torch.int64)\n"
            "\n"
            "    def _sample(self, n):\n"
            "        x = self._sample_prior(n, self.length).to(self.device)\n"
            "        return self.forward(x, None).argmax(dim=-1)\n",
            (
                "class Diffusion(L.LightningModule):\n"
                "    def _sample_prior(self, *dims):\n"
                "        return self.mask_index * torch.ones(*dims, dtype=torch.int64)\n"
                "\n"
                "    def _sample(self, n):\n"
                "        x = self._sample_prior(n, self.length)\n"
                "        return self.forward(x, None).argmax(dim=-1)\n",
            ),
        ),
        Example(
            # Noise drawn on one rank, broadcast, then read as the sampler's input (k-diffusion's demo).
            "def demo():\n"
            "    x = torch.randn([world, n, 3, 32, 32], generator=gen).to(device)\n"
            "    dist.broadcast(x, 0)\n"
            "    x = x[rank] * sigma_max\n"
            "    return sample(model_ema, x, sigmas)\n",
            (
                "def demo():\n"
                "    x = torch.randn([world, n, 3, 32, 32], generator=gen)\n"
                "    dist.broadcast(x, 0)\n"
                "    x = x[rank] * sigma_max\n"
                "    return sample(model_ema, x, sigmas)\n",
            ),
        ),
    )
    untouched = (
        # A flag tensor made for an all_reduce (glue-factory's `do_backward`), not a batch.
        "for x, y in loader:\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    if args.distributed:\n"
        "        finite = torch.tensor(torch.isfinite(loss)).float().to(device)\n"
        "        torch.distributed.all_reduce(finite)\n",
        # A batch preparer handed no device, which fills a result with its batch (LibKGE).
        "def _process_batch(self, batch_index, batch):\n"
        "    result = TrainingJob._ProcessBatchResult()\n"
        "    self._prepare_batch(batch_index, batch, result)\n"
        "    return result\n",
        # The model's output moved where the model put it already (AGCRN's trainer).
        "def train_epoch(self):\n"
        "    for data, target in self.train_loader:\n"
        "        output = self.model(data, target)\n"
        "        loss = self.loss(output.cuda(), target)\n"
        "        loss.backward()\n"
        "        self.optimizer.step()\n",
        # Models handed in under names of their own, switched to train mode, then moved (VAAL).
        "def train(self, loader, task_model, vae, discriminator):\n"
        "    vae.train()\n"
        "    discriminator.train()\n"
        "    if self.args.cuda:\n"
        "        vae = vae.cuda()\n"
        "        discriminator = discriminator.cuda()\n",
        # No batch, though made where batches are (FourCastNet's and CMGAN's trainers): a constant
        # read from a file, a transform's window, the model's own output, a strip made for a saved
        # picture, a score reduced for the report.
        "import numpy as np\n"
        "import torch\n"
        "from torchvision.utils import save_image\n"
        "\n"
        "\n"
        "def validate(model, loader, device, stds_path, n_fft, out_dir, valid_weighted_rmse):\n"
        "    mult = torch.as_tensor(np.load(stds_path)).to(device)\n"
        "    window = torch.hamming_window(n_fft).to(device)\n"
        "    for inp, tar in loader:\n"
        "        gen = model(torch.stft(inp, n_fft, window=window)).to(device, dtype=torch.float)\n"
        "        save_image(torch.cat((gen[0], torch.zeros(4, 4).to(device), tar[0])), out_dir)\n"
        "    return mult * torch.mean(valid_weighted_rmse, axis=0).to(device)\n",
        # Tensors built where the file made CUDA the default tensor type (NeRF's `__main__`).
        "def train(images, model):\n"
        "    for i in range(10):\n"
        "        batch = torch.Tensor(images[i]).to(device)\n"
        "        model(batch).sum().backward()\n"
        "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n",
        # A model built afresh for each fold from the fold's sizes, then moved (diffpool's main).
        "for i in range(10):\n"
        "    train_dataset, input_dim = prepare_val_data(graphs, i)\n"
        "    model = encoders.GcnEncoderGraph(input_dim, args.hidden_dim).cuda()\n",
        # Pre-trained weights copied into the model's parameters (DeepChem's load_from_pretrained).
        "for source_var, dest_var in assignment_map.items():\n"
        "    dest_var.data = torch.as_tensor(value_map[source_var], device=self.device)\n"
        "    dest_var.data = value_map[source_var].to(self.device)\n",
        # Moves in vain: the points only reach the DataParallel model (through a view and a size
        # read), the labels only go back to the CPU (dgcnn's test()).
        "def test(model, test_loader, device):\n"
        "    model = nn.DataParallel(model)\n"
        "    model = model.eval()\n"
        "    for data, label in test_loader:\n"
        "        data, label = data.to(device), label.to(device).squeeze()\n"
        "        data = data.permute(0, 2, 1)\n"
        "        batch_size = data.size()[0]\n"
        "        preds = model(data).max(dim=1)[1]\n"
        "        test_true.append(label.cpu().numpy())\n",
        # A collective's buffers and input, made for it (RecBole's sample count across ranks).
        "def map_reduce(num_sample, device, world_size):\n"
        "    total = [torch.zeros(1).to(device) for _ in range(world_size)]\n"
        "    torch.distributed.all_gather(total, torch.Tensor([num_sample]).to(device))\n"
        "    return torch.cat(total, 0).sum().item()\n",
        # Class weights counted from the training set, moved once at start-up (PointNet++'s
        # train_semseg.py): a constant for the loss, not a batch.
        "weights = torch.Tensor(TRAIN_DATASET.labelweights).cuda()\ncriterion = nn.NLLLoss(weight=weights)\n",
        # A tensor moved as it is made into a parameter (DeepCTR's linear weights): the model's own state.
        "class Linear(nn.Module):\n"
        "    def __init__(self, n, device):\n"
        "        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.Tensor(n, 1).to(device))\n"
        "        self.register_buffer('mask', torch.ones(n).to(device))\n",
        # A table indexed by a batch's timesteps, placed beside them (diffusers' _extract_into_tensor):
        # the table is no batch, and the helper is handed no loop's own target.
        "import torch\n"
        "def extract(table, timesteps, shape):\n"
        "    values = table[timesteps].float().to(timesteps.device)\n"
        "    return values.expand(shape)\n"
        "def train(loader, model, schedule, optimizer):\n"
        "    for batch in loader:\n"
        "        t = torch.randint(0, 1000, (batch.shape[0],), device=batch.device)\n"
        "        scale = extract(schedule, t, batch.shape)\n"
        "        loss = (model(batch) * scale).mean()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n",
        # A task module that wraps the model, converted and kept as the model; an optimizer's
        # state moved on resume (torchdrug's Engine).
        "def __init__(self, task, device):\n"
        "    task = nn.SyncBatchNorm.convert_sync_batchnorm(task)\n"
        "    task = task.cuda(device)\n"
        "    self.model = task\n",
        "def load(self, state):\n"
        "    for state in self.optimizer.state.values():\n"
        "        for k, v in state.items():\n"
        "            if isinstance(v, torch.Tensor):\n"
        "                state[k] = v.to(self.device)\n",
        # A batch handed straight to a DataParallel model, which scatters its inputs to its GPUs
        # itself (pytorch-retinanet's train.py).
        "def main(net, loader, optimizer):\n"
        "    model = torch.nn.DataParallel(net).cuda()\n"
        "    for data in loader:\n"
        "        optimizer.zero_grad()\n"
        "        loss = model([data['img'].cuda().float(), data['annot']]).mean()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n",
        # Batches moved into names that only a DataParallel model is handed, in a step function
        # main() hands that model (CPC_audio's trainStep: the label comes back from the model on
        # the GPU for the criterion).
        "def train_step(loader, cpc_model, criterion, optimizer):\n"
        "    for data, label in loader:\n"
        "        data = data.cuda(non_blocking=True)\n"
        "        label = label.cuda(non_blocking=True)\n"
        "        features, encoded, label = cpc_model(data, label)\n"
        "        loss = criterion(features, encoded, label).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "def main(net, loader, criterion, optimizer):\n"
        "    cpc_model = torch.nn.DataParallel(net).cuda()\n"
        "    train_step(loader, cpc_model, criterion, optimizer)\n",
        "def _to_device(self):\n"
        "    self.model.to(self.device)\n"
        "    for metric in self.metrics:\n"
        "        metric.to(self.device)\n",
        # A metric moved for its reduction across ranks.
        "def validate(model, loader):\n"
        "    for image, label in loader:\n"
        "        cm += confusion(model(image), label)\n"
        "    cm = torch.from_numpy(cm).cuda()\n"
        "    cm = reduce_tensor(cm)\n",
        # Indices of a full batch: a tensor on the GPU indexed by indices on the CPU works.
        "if args.cuda:\n"
        "    idx_train = idx_train.cuda()\n"
        "def train(epoch):\n"
        "    output = model(features, adj)\n"
        "    loss_train = F.nll_loss(output[idx_train], labels[idx_train])\n"
        "    loss_train.backward()\n",
        # Something that switches modes is a module, however it is built.
        "for step in range(n):\n    pipe = construct_class_by_name(**kwargs).train().requires_grad_(False).to(device)\n",
        # An optimizer's own methods see no batch (SAM gathers its gradients' norms on one device).
        "class SAM(torch.optim.Optimizer):\n"
        "    def _grad_norm(self):\n"
        "        shared_device = self.param_groups[0]['params'][0].device\n"
        "        return torch.stack([p.grad.norm(p=2).to(shared_device) for g in self.param_groups for p in g['params']])\n",
        # A move whose result becomes a number in the same expression (soft actor-critic's target entropy).
        "target_entropy = -torch.prod(torch.Tensor(action_space.shape).to(self.device)).item()\n",
        # An optimizer's state moved back to the GPU on resume (nanotron): no batch.
        "def training_step(self):\n    state_dict_to_device(self.optimizer.state_dict(), 'cuda')\n    self.optimizer.step()\n",
        # A parameter named for the batch (SpeechBrain's compute_forward); a model's own buffer is none.
        "class Brain:\n"
        "    def compute_forward(self, inputs, stage):\n"
        "        self.mask = self.mask.to(self.device)\n"
        "        return self.modules.model(inputs)\n",
        # A helper's batch: taken from a parameter every caller hands from a loop over a loader (an example moved once is not).
        "class Algo:\n"
        "    def get_logits(self, data):\n"
        "        x = data['x_lb']\n"
        "        x = x.cuda(self.gpu)\n"
        "        return self.model(x)\n"
        "    def evaluate(self):\n"
        "        logits = self.get_logits(self.example)\n",
        # A loss moved back to the device for logging: an output, not a batch.
        "def step(self, losses):\n    return torch.sum(torch.stack(losses)).to(self.device)\n",
        # A prediction moved to where the caller keeps it: an output, not a batch.
        "class Net:\n"
        "    def forward_iter(self, loader, device='cpu'):\n"
        "        for batch in loader:\n"
        "            yp = self.evaluation_step(batch)\n"
        "            yield to_device(yp, device=device)\n"
        "    def evaluation_step(self, batch):\n"
        "        return self.module_(batch)\n",
        # A tensor moved once and only read afterwards; an entry of a table that is no dataset.
        "anchors = torch.FloatTensor(1)\n"
        "anchors = anchors.cuda()\n"
        "for batch in loader:\n"
        "    out = model(batch, anchors)\n",
        "weights = class_weights[0].to(device)\n",
        # An item of a table, not of a dataset, moved once.
        "table = build_table()\nrow = table[0]\nrow = row.float().to(device)\n",
        # A constant weight built from the settings, not an input.
        "def train(model, config, device):\n"
        "    loss_weight = torch.Tensor(config['LOSS']['WEIGHT']).to(device)\n"
        "    scale = torch.tensor([0.5, 2.0]).to(device)\n",
        "model = Net().to(device)\nself.backbone.cuda()\ncriterion = criterion.to(device)\n",
        # A boolean mask used only as an index (a CPU index selects from a CUDA tensor).
        "def info_nce(self, features, labels):\n"
        "    mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.device)\n"
        "    sim = features @ features.T\n"
        "    return sim[~mask].view(sim.shape[0], -1)\n",
        # Class weights made from what the loop never changes, moved with every batch.
        "def fit(gen, cls_weights, local_rank):\n"
        "    for iteration, batch in enumerate(gen):\n"
        "        imgs, pngs = batch\n"
        "        weights = torch.from_numpy(cls_weights)\n"
        "        weights = weights.cuda(local_rank)\n"
        "        loss = CE_Loss(model(imgs), pngs, weights)\n",
        # Batches a prefetcher built with the device already placed (it moves each as it comes).
        "def load(ds, device):\n"
        "    loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
        "    return CUDAPrefetcher(loader, device)\n"
        "def train(prefetcher, device):\n"
        "    batch = prefetcher.next()\n"
        "    while batch is not None:\n"
        "        x = batch['x'].to(device, non_blocking=True)\n"
        "        batch = prefetcher.next()\n",
        # A batch sampled from a replay buffer whose storage the file put on the device.
        "def train(model, device):\n"
        "    rb = ReplayBuffer(storage=LazyTensorStorage(1000, device=device))\n"
        "    for step in range(100):\n"
        "        batch = rb.sample(32)\n"
        "        batch = batch.to(device)\n"
        "        loss_fn(model(batch['obs']), batch['target']).backward()\n",
        # A dtype cast; and batches an iterator built with `device=` already placed.
        "for x in xs:\n    x = x.type(torch.LongTensor)\n",
        "train_iter = BucketIterator(train, batch_size=8, device=device, train=True)\n"
        "for batch in train_iter:\n    src = batch.src.to(device)\n",
        # Moves that change nothing: a `*_like` tensor, a value stored into a buffer's slot, a
        # batch in a Lightning step (Lightning moved it); a plain store keeps its mutant (examples).
        "for step in range(n):\n"
        "    adv = torch.zeros_like(rewards).to(device)\n"
        "    rewards[step] = torch.tensor(reward).to(device).view(-1)\n",
        "class M(LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        inputs = batch[0].to(self.device)\n",
        # A checkpoint's metric, moved once at start-up, is not a batch.
        "def main_worker(gpu, args):\n    best_acc1 = checkpoint['best_acc1']\n    best_acc1 = best_acc1.to(gpu)\n",
        "for x in xs:\n    x = x.to(torch.float16)\n",
        "for x in xs:\n    x = x.to(dtype=torch.bfloat16)\n",
        "for batch in loader:\n    batch = batch.to(accelerator.device)\n",
        # The device of an Accelerator, by name: its prepared loader already placed the batch.
        "def train(self):\n"
        "    device = self.accelerator.device\n"
        "    for _ in range(steps):\n"
        "        data = next(self.dl).to(device)\n",
        "def train_step(engine, batch):\n    m = convert_tensor(model, device)\n",
        # A project's move helper sending an evaluated batch back to the host.
        "def val_step(model, loader):\n"
        "    for batch in loader:\n"
        "        model.on_val_step(batch)\n"
        '        move_to_device(batch, "cpu")\n',
        # Outside a loop, a tensor that is not made here (a loaded metric, a module's buffer).
        "best = checkpoint['best'].to(device)\nw = torch.nn.Linear(2, 2).to(device)\n",
        # A function named like a move helper (`..._to`) handed no device: keras' tree utility.
        "for batch in loader:\n    outputs = tree.map_structure_up_to(batch_outputs, np.concatenate, outputs)\n",
        # A count the evaluation made itself, moved to sit beside the samples in a list that a
        # collective pads and gathers across processes (trlx): a collective's input, not a batch.
        "for prompts in eval_loader:\n"
        "    samples = self.generate_eval(**prompts)\n"
        "    prompt_sizes = torch.tensor(prompts.input_ids.shape[1]).repeat(len(prompts.input_ids))\n"
        "    prompts, samples, prompt_sizes = self.accelerator.gather_for_metrics(\n"
        "        self.accelerator.pad_across_processes([prompts.input_ids, samples, prompt_sizes.to(samples.device)])\n"
        "    )\n",
        # Each support image and mask moved in place in a loop over their indices, then handed
        # to a model always wrapped in DataParallel, which scatters them itself; the query mask
        # of an evaluation, written with its own mask and taken back to the CPU (MiningFSS).
        "model = DataParallel(model).cuda()\n"
        "for img_s_list, mask_s_list, img_q, mask_q in loader:\n"
        "    for k in range(len(img_s_list)):\n"
        "        img_s_list[k], mask_s_list[k] = img_s_list[k].cuda(), mask_s_list[k].cuda()\n"
        "    with torch.no_grad():\n"
        "        pred = model(img_s_list, mask_s_list, img_q.cuda())\n"
        "    mask_q = mask_q.cuda()\n"
        "    mask_q[mask_q == 1] = cls\n"
        "    metric.add_batch(pred.cpu().numpy(), mask_q.cpu().numpy())\n",
    )

    def changes(self, source, training):
        placed = _places_batches(source)
        for call in source.nodes(cst.Call):
            loaded = _batch_loaded_to(source, training, call)
            if loaded is not None:
                # a batch object's own method handed the device (Sockeye's `batch =
                # batch.load(device=self.device)`, which moves each of its tensors)
                text = source.code(call.func.value)
                yield Change(call, (source.replace(loaded, '"cpu"'),), f"`{text}` stays on the CPU")
                continue
            made = _target_made_on_device(source, training, call)
            if made is not None:
                text = dotted(source.parent(call).targets[0].target)
                yield Change(call, (source.replace(made.value, '"cpu"'),), f"`{text}` is made on the CPU")
                continue
            flag = _gated_move_flag(source, training, call)
            if flag is not None:
                # a project helper that moves what it is handed when a flag says so (ENAS'
                # `utils.batchify(dataset.train, bsz, self.cuda)`, `utils.get_variable(adv,
                # self.cuda)`): handed False, the data stays on the CPU
                data = argument(call, "", 0)
                text = source.code(data.value) if data is not None else "the data"
                yield Change(call, (source.replace(flag, "False"),), f"`{text}` stays on the CPU")
                continue
            if (_converter(callee_name(call)) or dotted(call.func) == "torch.tensor") and not placed:
                device = _converted_device(call)
                tensor = argument(call, "", 0)
                if (
                    not _made_a_parameter(source, call)
                    and device is not None
                    and tensor is not None
                    and _is_device(device.value)
                    and not _framework_device(training, device.value, call)
                    and (
                        # `torch.tensor(x, device=d)` makes constants and accumulators too: only a
                        # model's input counts
                        (
                            dotted(call.func) != "torch.tensor"
                            and (_is_batch(source, call) or _handed_a_batch(source, training, tensor.value, call))
                        )
                        or _converted_input(source, training, call, tensor.value)
                        or _handed_to_model(source, training, call)
                        or _returned_batch(source, training, call)
                    )
                ):
                    # a conversion that also places the batch (skorch's `to_tensor(x, device=...)`)
                    yield Change(
                        call,
                        (source.replace(device.value, '"cpu"'),),
                        f"`{source.code(tensor.value)}` stays on the CPU",
                    )
                continue
            if (
                isinstance(call.func, cst.Attribute)
                and _move_helper(callee_name(call))
                and "device" in (last_name(call.func.value) or "").lower()
                and "batch" in (callee_name(call) or "")
                and len(call.args) == 1
                and call.args[0].keyword is None
                and "batch" in (last_name(call.args[0].value) or "").lower()
                and _is_batch(source, call)
                and not _is_model(training, call.args[0].value)
            ):
                # a device object's own move (composer's `self.state.device.batch_to_device(batch)`)
                text = source.code(call.args[0].value)
                yield Change(call, (source.replace(call, text),), f"`{text}` stays on the CPU")
                continue
            if (
                isinstance(call.func, cst.Attribute)
                and dotted(call.func.value) == "self"
                and (callee_name(call) or "").endswith("_to_device")
                and len(call.args) == 1
                and call.args[0].keyword is None
                and "batch" in (last_name(call.args[0].value) or "").lower()
                and training.called_functions(call)
                and not _moved_again(source, training, call)
            ):
                # a trainer's own move helper (flambe's `batch = self._batch_to_device(batch)`);
                # not where the batch goes on to a method of the file that moves it again
                text = source.code(call.args[0].value)
                yield Change(call, (source.replace(call, text),), f"`{text}` stays on the CPU")
                continue
            parts = _moved_parts(source, training, call)
            if parts is not None:
                # a trainer's own helper that moves a step's parts and returns them in order
                # (torch-lr-finder's `inputs, labels = self._move_to_device(inputs, labels, ...)`)
                yield Change(call, (source.replace(call, parts),), f"`{parts}` stay on the CPU")
                continue
            if _local_move(source, training, call):
                # a move function of the file that sends its first argument to the device it is
                # handed (torch-lr-finder's nested `move(obj, device)`: `return obj.to(device, ...)`)
                text = source.code(call.args[0].value)
                yield Change(call, (source.replace(call, text),), f"`{text}` stays on the CPU")
                continue
            if (
                isinstance(call.func, cst.Attribute)
                and _move_helper(callee_name(call))
                and "device" in (last_name(call.func.value) or "").lower()
                and len(call.args) == 1
                and call.args[0].keyword is None
                and not _is_model(training, call.args[0].value)
                and _model_input(source, training, call)
            ):
                # a device object's own move of what the model is handed first (VAC's
                # `vid = device.data_to_device(data[0])`, then `model(vid, vid_lgt, ...)`); its
                # lengths and labels may go on to be read on the CPU
                text = source.code(call.args[0].value)
                yield Change(call, (source.replace(call, text),), f"`{text}` stays on the CPU")
                continue
            if (
                _move_helper(callee_name(call))
                and (
                    isinstance(call.func, cst.Name)
                    or (callee_name(call) or "").lstrip("_") == "prepare_batch"
                    # a project module's helper (ReChorus' `utils.batch_to_gpu(batch, model.device)`)
                    or (
                        isinstance(call.func, cst.Attribute)
                        and isinstance(call.func.value, cst.Name)
                        and imported_name(source, call.func.value.value)
                    )
                )
                and _is_batch(source, call)
            ):
                tensor, device = argument(call, "", 0), argument(call, "device", 1)
                if (callee_name(call) or "").endswith("_to") and (device is None or not _is_device(device.value)):
                    continue  # `recursive_to(batch, device)`, not keras' `tree.map_structure_up_to(...)`
                # a helper named for the GPU needs no device (ClassyVision's `recursive_copy_to_gpu`)
                # (or a bare `to_device(batch)`: pytorch_sound's helper moves to the GPU itself)
                helper = callee_name(call) or ""
                to_gpu = (
                    helper.endswith(("_to_gpu", "_to_cuda"))
                    or helper in ("to_gpu", "to_cuda")  # GeoTransformer's `data_dict = to_cuda(data_dict)`
                    or (helper == "to_device" and len(call.args) == 1)
                )
                if (
                    (callee_name(call) or "").lstrip("_") == "prepare_batch"
                    and device is not None
                    and not _is_device(device.value)
                ):
                    # LibKGE's `self._prepare_batch(batch_index, batch, result)` fills a result with
                    # its batch: no device handed, no move to undo
                    continue
                if (
                    tensor is not None
                    and (device is not None or to_gpu)
                    and not (device is not None and _names_the_cpu(device.value))
                    and not _is_model(training, tensor.value)
                    and not _state_dict(tensor.value)
                    and not (device is not None and _framework_device(training, device.value, call))
                    and not _model_output(source, training, tensor.value, call)
                ):
                    text = source.module.code_for_node(tensor.value).strip()
                    yield Change(call, (source.replace(call, text),), f"`{text}` stays on the CPU")
                continue
            if not isinstance(call.func, cst.Attribute) or _is_model(training, call.func.value):
                continue
            if in_optimizer_class(source, call) or _optimizer_state(source, call):
                continue  # an optimizer's own methods move its state and gradients, never a batch
            if (
                not (
                    _is_batch(source, call)
                    or _feeds_model(source, training, call)
                    or _global_fed_to_step(source, training, call)
                    or _from_a_handed_batch(source, training, call)
                    or _stored_for_the_step(source, training, call)
                )
                or placed
                or _needless(source, call)
            ):
                continue
            moved = source.code(call.func.value).lower()
            if "loss" in moved and not (last_name(call.func.value) or "").lower().endswith(_LOSS_INPUT_WORDS):
                continue  # a loss moved (a pipeline's, back for logging) is an output, not a batch
            if _made_a_parameter(source, call):
                continue  # `nn.Parameter(torch.Tensor(n, 1).to(device))`: a weight, not a batch
            if "metric" in (last_name(call.func.value) or "").lower():
                continue  # a metric module moved beside the model (torchmetrics', smp's): no batch
            if _no_batch(source, training, call) or _model_output_moved(source, training, call):
                continue
            if (
                _moved_for_a_reduction(source, call)
                or _made_for_a_collective(source, call)
                or _scattered_by_data_parallel(source, training, call)
                or _moved_in_vain(source, training, call)
            ):
                continue
            name = callee_name(call)
            if name == "type" and len(call.args) == 1:
                cpu = _cpu_type(training, call.args[0].value, call)
                if cpu is not None:
                    yield Change(
                        call,
                        (source.replace(call.args[0].value, cpu),),
                        f"`{source.code(call.func.value)}` stays on the CPU",
                    )
                continue
            if name == "to":
                target = argument(call, "device", 0)
                if target is not None and _moved_batch(source, target.value, call):
                    # `torch.tensor(args.weights).to(sources)`: placed (and cast) like a batch on the
                    # device (demucs' per-source weights); the fault keeps the cast, not the place
                    tensor = source.code(call.func.value)
                    yield Change(
                        call,
                        (source.replace(target.value, f"{source.code(target.value)}.dtype"),),
                        f"`{tensor}` stays on the CPU",
                    )
                    continue
                if (
                    target is None
                    or not (_is_device(target.value) or _picked_device_for_input(source, training, target.value, call))
                    or _framework_device(training, target.value, call)
                ):
                    continue
            elif name != "cuda":
                continue
            tensor = source.module.code_for_node(call.func.value).strip()
            yield Change(call, (source.replace(call, tensor),), f"`{tensor}` stays on the CPU")
