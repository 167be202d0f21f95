"""Recognisers for the idioms of PyTorch training code, shared by the operators.

Training code names things loosely (`opt`, `self.optimizer`, `optimizers[i]`), so each
recogniser combines what the file itself says (a name assigned from `torch.optim.AdamW(...)`
is an optimizer) with naming conventions for objects built elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import libcst as cst

from injector.source import Source, walk_children

OPTIMIZERS = frozenset(
    {
        "SGD",
        "Adam",
        "AdamW",
        "Adamax",
        "Adagrad",
        "Adadelta",
        "RMSprop",
        "Rprop",
        "NAdam",
        "RAdam",
        "LBFGS",
        "SparseAdam",
        "ASGD",
        "Adafactor",
        "Muon",
        "Lion",
        "LAMB",
        "Lamb",
    }
)
LOSS_FUNCTIONS = frozenset(
    {
        "cross_entropy",
        "nll_loss",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "poisson_nll_loss",
        "gaussian_nll_loss",
        "soft_margin_loss",
        "multilabel_soft_margin_loss",
        "margin_ranking_loss",
        "cosine_embedding_loss",
        "hinge_embedding_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "multilabel_margin_loss",
        "ctc_loss",
    }
)
LOSS_MODULES = frozenset(
    {
        "CrossEntropyLoss",
        "NLLLoss",
        "MSELoss",
        "L1Loss",
        "SmoothL1Loss",
        "HuberLoss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "KLDivLoss",
        "PoissonNLLLoss",
        "GaussianNLLLoss",
        "SoftMarginLoss",
        "MultiLabelSoftMarginLoss",
        "MarginRankingLoss",
        "CosineEmbeddingLoss",
        "HingeEmbeddingLoss",
        "TripletMarginLoss",
        "MultiMarginLoss",
        "MultiLabelMarginLoss",
        "CTCLoss",
    }
)
FUNCTIONAL_MODULES = frozenset(
    {
        "F",
        "functional",
        "torch.nn.functional",
        "nn.functional",
        "torch",
        "torch.special",
    }
)


CLIPS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
# A model's own walks: a loop over them goes over modules or parameters, never over batches.
MODULE_WALKS = frozenset({"modules", "named_modules", "children", "named_children", "parameters", "named_parameters"})
# calls that hand back their (last) argument, only checked or typed: `none_throws(self.lr_scheduler)`
UNWRAPPERS = frozenset({"none_throws", "not_none", "cast", "unwrap"})
MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "bfloat16", "double", "train", "eval"})


def constructed(call: cst.Call) -> cst.Call:
    """The constructor call under device and dtype moves: `nn.CrossEntropyLoss()` for
    `nn.CrossEntropyLoss().to(device)` or `.cuda()`."""
    while (
        isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVES and isinstance(call.func.value, cst.Call)
    ):
        call = call.func.value
    return call


def dotted(expr: cst.BaseExpression) -> str | None:
    """`torch.nn.functional.softmax` for a Name/Attribute chain; None for anything else."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


def bound_names(target: cst.BaseExpression) -> set[str]:
    """The names a loop or assignment target binds (`i, (x, y)` binds i, x and y)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(bound_names(e.value) for e in target.elements)) if target.elements else set()
    return set()


def root_name(expr: cst.BaseExpression, through_subscripts: bool = False) -> str | None:
    """The name a chain of attributes and method calls starts from: `im_data` for
    `im_data.data.resize_(size)`; with `through_subscripts`, also `supervisions` for
    `supervisions['num_frames']`."""
    while True:
        if isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, cst.Attribute) or (through_subscripts and isinstance(expr, cst.Subscript)):
            expr = expr.value
        else:
            return expr.value if isinstance(expr, cst.Name) else None


def last_name(expr: cst.BaseExpression) -> str | None:
    """The identifier that names an object: `optimizer` for `self.optimizer`,
    `optimizers` for `optimizers[i]`, `step` for `scaler.step`."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Subscript):
        return last_name(expr.value)
    return None


def becomes_number(expr: cst.BaseExpression) -> bool:
    """True for a value made a Python number or list in the expression itself (`t.item()`,
    `t.tolist()`, `float(t)`, or a tuple of those): it keeps no autograd graph."""
    if isinstance(expr, cst.Tuple):
        return bool(expr.elements) and all(becomes_number(e.value) for e in expr.elements)
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute):
        if expr.func.attr.value == "numpy" and not expr.args:
            # an array of a value cut first (`actor(state).cpu().data.numpy()`, `.detach().numpy()`);
            # `.numpy()` on a tensor that requires grad raises instead
            return _cut_in_chain(expr.func.value)
        return expr.func.attr.value in {"item", "tolist"} and not expr.args
    return isinstance(expr.func, cst.Name) and expr.func.value in {"float", "int", "bool"}


def _cut_in_chain(expr: cst.BaseExpression) -> bool:
    """True where a chain of attributes and method calls reads `.data` or calls `.detach()`."""
    while isinstance(expr, (cst.Attribute, cst.Call)):
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "detach":
            return True
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return False


def read_as_a_number(source: Source, name: cst.Name) -> bool:
    """True where `name` is read as a Python number: `name.item()` or `float(name)`."""
    parent = source.parent(name)
    if isinstance(parent, cst.Attribute) and parent.value is name and parent.attr.value == "item":
        return isinstance(source.parent(parent), cst.Call)
    call = source.parent(parent) if isinstance(parent, cst.Arg) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "float"


def bound_here(source: Source, name: cst.Name) -> bool:
    """True for a name an assignment binds (`x = ...`, `a, (x, b) = ...`), not one it reads."""
    node: cst.CSTNode = name
    parent = source.parent(node)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
        node, parent = parent, source.parent(parent)
    return isinstance(parent, cst.AssignTarget)


def value_uses(source: Source, statement: cst.Assign, name: str) -> list[cst.Name] | None:
    """The reads of the value `statement` binds to `name`: every later read of the name in the
    function (the module's top level outside one) until it is bound again. None where the
    statement's loop reads the name before it in a pass that has not bound it yet: the next pass
    reads this value there too."""
    scope = source.function_of(statement) or source.module
    start = source.span(statement)[1]
    loop = next((a for a in source.ancestors(statement) if isinstance(a, (cst.For, cst.While))), None)
    fresh = (
        [source.span(n)[0] for n in source.within(loop.body, cst.Name) if n.value == name and bound_here(source, n)]
        if loop is not None
        else []
    )
    fresh_from = min(fresh) if fresh else None
    uses = []
    for node in source.within(scope, cst.Name):
        if node.value != name:
            continue
        place = source.span(node)[0]
        if place < start:
            carried = loop is not None and source.span(loop)[0] <= place and (fresh_from is None or place < fresh_from)
            if carried and not bound_here(source, node):
                return None
            continue
        if bound_here(source, node):
            break  # bound again: what follows reads another value
        uses.append(node)
    return uses


def callee_name(call: cst.Call) -> str | None:
    """The called function's own name: `softmax` for `F.softmax(...)` and `x.softmax(...)`."""
    return last_name(call.func)


def is_functional(call: cst.Call, aliases: frozenset[str] = frozenset()) -> bool:
    """True for `F.f(...)`, `torch.f(...)`, `torch.nn.functional.f(...)` and bare `f(...)`, and
    through the file's own alias of torch (`th.mean(...)` after `import torch as th`) given in
    `aliases`; False for a tensor method `x.f(...)`."""
    if isinstance(call.func, cst.Name):
        return True
    if isinstance(call.func, cst.Attribute):
        return dotted(call.func.value) in FUNCTIONAL_MODULES | aliases
    return False


def assigned_alone(statement: cst.CSTNode | None, value: cst.CSTNode) -> str | None:
    """The name `value` is assigned to alone (`neg = torch.clamp(...)`: `neg`), or None where
    `statement` is not such an assignment of it."""
    if (
        isinstance(statement, cst.Assign)
        and statement.value is value
        and len(statement.targets) == 1
        and isinstance(statement.targets[0].target, cst.Name)
    ):
        return statement.targets[0].target.value
    return None


def statement_call(small: cst.CSTNode) -> cst.Call | None:
    """The call of an expression statement such as `optimizer.zero_grad()`."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return small.value
    return None


def argument(call: cst.Call, keyword: str, position: int | None) -> cst.Arg | None:
    """The argument passed as `keyword=` or at `position` (among positional ones)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if position is not None and position < len(positional):
        return positional[position]
    return None


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended to its arguments, commas as a person writes them."""
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.comma is cst.MaybeSentinel.DEFAULT:
            args[index] = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args, cst.Arg(value, keyword=cst.Name(name), equal=tight)])


def int_value(expr: cst.BaseExpression) -> int | None:
    """The value of an integer literal such as `1` or `-1`; None for anything else."""
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
    ):
        return -int(expr.expression.evaluated_value)
    return None


def needs_parens(expr: cst.BaseExpression) -> bool:
    """True if `expr` must be parenthesised to take an attribute (`(a + b).detach()`)."""
    if getattr(expr, "lpar", None):
        return False
    return not isinstance(
        expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.List, cst.Tuple, cst.Dict)
    )


def method_on(source: Source, expr: cst.BaseExpression, method: str, args: str = "") -> str:
    """Source text calling `method` on `expr`, parenthesising `expr` where needed. The file's own
    text of `expr` is kept, so a call spread over lines keeps its continuation lines' indentation
    (JoeyNMT's `batch.normalize(\n    batch_loss, ...\n).detach()`)."""
    try:
        # the file's text of `expr` leaves out its own parentheses, which stay around the edit:
        # `(a\n + b)` becomes `((a\n + b).detach())`, not `(a\n + b.detach())`
        text = source.code(expr)
        bare = expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr
    except KeyError:  # a node made by an operator, not one of the file's
        text = source.module.code_for_node(expr)
        bare = expr
    if needs_parens(bare):
        text = f"({text})"
    return f"{text}.{method}({args})"


@dataclass(frozen=True)
class Backward:
    """One backward call and the loss it differentiates."""

    call: cst.Call
    loss: cst.BaseExpression
    scaler: cst.BaseExpression | None  # the GradScaler in `scaler.scale(loss).backward()`
    # A callable loss scaler (timm's and Swin's `loss_scaler(loss, optimizer, clip_grad=...)`): the
    # one call runs the backward, the clipping and the optimizer step.
    steps: bool = False
    # A call of a function of this file that runs the backward of the parameter the loss is
    # handed as (`backward(total_loss, scaler)` with `def backward(loss, scaler): ...`): the
    # backward itself is inside the function, the loss is computed where the call is.
    helper: bool = False


@dataclass(frozen=True)
class ReturnedLoss:
    """A loss a framework differentiates after a method returns it (Lightning's automatic
    optimization runs the backward of what `training_step` returns). Its fields mirror
    `Backward`'s, so the helpers that find where a loss is computed read both."""

    call: cst.Return  # where the loss leaves the training step (a Backward's backward call)
    loss: cst.BaseExpression
    scaler: None = None
    steps: bool = False
    helper: bool = False


LossUse = Backward | ReturnedLoss

# Calls that only record what they are handed (a dict of settings for a logger, a printed line, a
# logger's call): handed a loss and an optimizer, they run neither.
RECORDING_BUILTINS = frozenset({"dict", "list", "tuple", "set", "print", "repr", "str", "vars", "setattr", "format"})
RECORDING_METHODS = frozenset(
    {"log", "info", "debug", "warning", "log_dict", "log_hyperparams", "save_hyperparameters"}
)

# Methods whose returned loss a framework differentiates (PyTorch Lightning's automatic optimization).
# USB's `train_step` returns `(out_dict, log_dict)`, `out_dict` holding the loss a hook backpropagates;
# SpeechBrain's Brain backpropagates what `compute_objectives` returns.
LOSS_RETURNING_METHODS = frozenset({"training_step", "train_step", "compute_objectives"})


class Training:
    """What a file says about its training step: roles of names, backward calls, loops."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._bases_seen: frozenset[str] = frozenset()  # modules whose classes derive from this one's
        self.roles: dict[str, str] = {}
        self.constructors: dict[str, str] = {}  # name -> class it was built from
        for assign in source.nodes(cst.Assign):
            if isinstance(assign.value, cst.Call):
                built = constructed(assign.value)
                role = _constructor_role(built)
                for target in assign.targets:
                    text = dotted(target.target) or source.module.code_for_node(target.target).strip()
                    if callee_name(built) in MOVES and isinstance(built.func, cst.Attribute):
                        continue  # `criterion = criterion.to(device)` keeps what was built before
                    self.constructors[text] = callee_name(built) or ""
                    if role == "scheduler" and _rewraps(built, text) and self.roles.get(text) != "scheduler":
                        # `optimizer = utils.ReduceLROnPlateau(optimizer, ...)`: a wrapper bound to
                        # the optimizer's own name (self-critical.pytorch's, an Optimizer subclass)
                        # steps it; torch's scheduler is never bound so
                        continue
                    if role:
                        self.roles[text] = role

    def constructor(self, expr: cst.BaseExpression) -> str | None:
        """The class an object was built from: `CrossEntropyLoss` for `criterion` after
        `criterion = nn.CrossEntropyLoss().to(device)`, and for `nn.CrossEntropyLoss()` itself."""
        if isinstance(expr, cst.Call):
            return callee_name(constructed(expr))
        return self.constructors.get(self._text(expr))

    def classes_at(self, expr: cst.BaseExpression, use: cst.CSTNode) -> set[str]:
        """Every class the object `expr` may have been built from where `use` runs: in the function
        around `use`, a parameter's annotation (`criterion: DistillationLoss`) and the function's
        own assignments to the name (`if args.cosub: criterion = nn.BCEWithLogitsLoss()`); an
        unannotated parameter, or a name the function does not bind, has the class the file
        builds it from elsewhere. Empty when unknown."""
        if isinstance(expr, cst.Call):
            return {callee_name(constructed(expr)) or ""}
        text = self._text(expr)
        function = self.source.function_of(use)
        found: set[str] = set()
        bound = False
        if function is not None and isinstance(expr, cst.Name):
            for param in function.params.params:
                if param.name.value == text:
                    bound = True
                    if param.annotation is not None:
                        found.add(last_name(param.annotation.annotation) or "")
                    elif text in self.constructors:
                        found.add(self.constructors[text])
            sides = branch_sides(self.source, use)
            for assign in self.assignments.get(text, ()):
                if self.source.function_of(assign) is function and isinstance(assign.value, cst.Call):
                    theirs = branch_sides(self.source, assign)
                    if any(theirs.get(test, side) != side for test, side in sides.items()):
                        continue  # built in the other branch of a test the use is under too
                    built = constructed(assign.value)
                    if callee_name(built) in MOVES and isinstance(built.func, cst.Attribute):
                        continue
                    bound = True
                    found.add(callee_name(built) or "")
        if not bound and text in self.constructors:
            found.add(self.constructors[text])
        if not bound and not found and text.startswith("self."):
            # a default built by a method of the file (OpenPrompt's `self.loss_function =
            # loss_function if loss_function else self.configure_loss_function()`, which returns
            # `torch.nn.CrossEntropyLoss()` or `torch.nn.NLLLoss()` by a setting)
            for bound_here in self.assigned_names.get(text, ()):
                found |= self._returned_classes(bound_here.value)
        return self._narrowed(found, text, use)

    def _narrowed(self, classes: set[str], text: str, use: cst.CSTNode) -> set[str]:
        """`classes` where `use` runs under `if isinstance(<text>, C):` (only C) or in its `else`
        (all but C): AST's `if isinstance(loss_fn, torch.nn.CrossEntropyLoss): ... else:
        loss = loss_fn(audio_output, labels)` runs the BCE there."""
        for test, side in branch_sides(self.source, use).items():
            checked = _ISINSTANCE.fullmatch(test)
            if checked is None or checked.group(1) != text:
                continue
            kind = checked.group(2).rsplit(".", 1)[-1]
            classes = ({kind} if kind in classes or not classes else set()) if side else classes - {kind}
        return classes

    def _returned_classes(self, value: cst.BaseExpression | None) -> set[str]:
        """The classes `value` builds: one constructor, either arm of `a if c else b`, or every
        return of the method of the file it calls (`self.configure_loss_function()`)."""
        if isinstance(value, cst.IfExp):
            return self._returned_classes(value.body) | self._returned_classes(value.orelse)
        if not isinstance(value, cst.Call):
            return set()
        methods = self.called_functions(value)
        if not methods:
            name = callee_name(constructed(value)) or ""
            return {name} if name[:1].isupper() else set()
        return {
            name
            for method in methods
            for ret in self.source.within(method, cst.Return)
            if isinstance(ret.value, cst.Call) and not self.called_functions(ret.value)
            for name in [callee_name(constructed(ret.value)) or ""]
            if name[:1].isupper()
        }

    def _text(self, expr: cst.BaseExpression) -> str:
        """The expression as written (cheap for the usual dotted names)."""
        return dotted(expr) or self.source.module.code_for_node(expr).strip()

    @staticmethod
    def role_of_constructor(call: cst.Call) -> str | None:
        """`optimizer`, `scheduler`, `scaler` or `loss-module` for a constructor call."""
        return _constructor_role(call)

    def role(self, expr: cst.BaseExpression) -> str | None:
        """`optimizer`, `scheduler`, `scaler` or `loss-module` for a receiver expression."""
        text = self._text(expr)
        if text in self.roles:
            return self.roles[text]
        if isinstance(expr, cst.Subscript):
            held = self.role(expr.value)
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            if held is None and isinstance(index, cst.Index) and isinstance(index.value, (cst.Name, cst.Attribute)):
                # a state mapping's entry by a named key (torchbearer's `state[torchbearer.OPTIMIZER]`)
                key = last_name(index.value) or ""
                if key.isupper():
                    return self._role_by_name(key.lower(), None)
            return held
        if isinstance(expr, cst.Call) and callee_name(expr) in UNWRAPPERS and expr.args:
            return self.role(expr.args[-1].value)  # `none_throws(self.lr_scheduler)`, `cast(T, opt)`
        if isinstance(expr, cst.Name) and expr.value == "self" and in_optimizer_class(self.source, expr):
            return "optimizer"  # the optimizer's own methods (SAM's `self.second_step()` in its `step`)
        if (
            isinstance(expr, cst.Name)
            and (container := self._iterated(expr)) is not None
            and expr.value not in {n.value for n in self.source.within(container, cst.Name)}
        ):
            # `for k, v in self.optimizers.items(): v.step()`; not a loop that rebinds the name it
            # reads (hrtr's `for k, train_loss in train_loss.items():`)
            held = self.role(container)
            if held is not None:
                return held
        return self._role_by_name((last_name(expr) or "").lower(), text)

    def _role_by_name(self, name: str, text: str | None) -> str | None:
        """The role a receiver's last name tells (`optimizer_g`, `lr_scheduler`, `grad_scaler`)."""
        if "opt" in name and "sched" in name:
            # the word that comes last names the thing: `scheduled_optim` (FastSpeech's wrapper that
            # writes the rate, then steps) is an optimizer, `optim_scheduler` a scheduler; one that
            # holds its optimizer (jiant's `self.optimizer_scheduler.optimizer.zero_grad()`) steps it
            if name.rfind("opt") > name.rfind("sched") or text in self._holding_an_optimizer:
                return "optimizer"
            return "scheduler"
        if "sched" in name or name in {"lr_scheduler", "warmup"}:
            return "scheduler"
        if "scaler" in name:
            return "scaler"
        if "opt" in name:
            return "optimizer"
        if name in {"criterion", "loss_fn", "loss_func", "lossfn", "loss_function"}:
            return "loss-module"
        return None

    @cached_property
    def _holding_an_optimizer(self) -> frozenset[str]:
        """What the file reads an optimizer off (`X` of `X.optimizer`, `X.optim`), as written."""
        return frozenset(
            text
            for a in self.source.nodes(cst.Attribute)
            if a.attr.value in ("optimizer", "optim") and (text := dotted(a.value)) is not None
        )

    def _iterated(self, name: cst.Name) -> cst.BaseExpression | None:
        """The container a loop takes `name` from: `X` for `for v in X`, `for v in X.values()` and
        the value of `for k, v in X.items()`; None where no loop around it binds the name."""
        for loop in self.source.ancestors(name):
            if not isinstance(loop, cst.For):
                continue
            iterable, target = loop.iter, loop.target
            owner, method = None, None
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
                owner, method = iterable.func.value, iterable.func.attr.value
            if isinstance(target, cst.Name) and target.value == name.value:
                if method == "values":
                    return owner
                return None if isinstance(iterable, cst.Call) else iterable
            if (
                method == "items"
                and isinstance(target, cst.Tuple)
                and len(target.elements) == 2
                and isinstance(target.elements[1].value, cst.Name)
                and target.elements[1].value.value == name.value
            ):
                return owner
            if name.value in {n.value for n in self.source.within(target, cst.Name)}:
                return None
        return None

    @cached_property
    def resolver(self) -> Any:
        """One `injector.neighbours.Resolver` for the file (it keeps the imports it has read)."""
        from injector.neighbours import Resolver  # neighbours reads this module's helpers

        return Resolver()

    def project_method(self, call: cst.Call) -> tuple[Source, cst.FunctionDef] | None:
        """The method `recv.m(...)` runs where every value the file gives `recv` builds one class of
        the project (this file's or a module's it imports, read through the neighbours), directly
        or through a method of the file that returns it (nerfstudio's Trainer: `self.optimizers =
        self.setup_optimizers()`, which returns `Optimizers(...)`): that class's own `m`."""
        if not isinstance(call.func, cst.Attribute):
            return None
        text = dotted(call.func.value)
        assigned = [a for a in self.assigned_names.get(text or "", ()) if a.value is not None]
        if text and text.startswith("self."):
            owner = enclosing_class(self.source, call)
            assigned = [a for a in assigned if enclosing_class(self.source, a) is owner]
        if not assigned:
            return None
        classes: set[str] = set()
        for assign in assigned:
            built = self._returned_classes(assign.value)
            if not built:
                return None  # a value that builds no class the file names
            classes |= built
        if len(classes) != 1:
            return None
        found = self.resolver.definition(self.source, cst.Name(classes.pop()))
        if found is None or not isinstance(found[1], cst.ClassDef):
            return None
        module, cls = found
        method = next(
            (s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == call.func.attr.value),
            None,
        )
        return (module, method) if method is not None else None

    @cached_property
    def torch(self) -> str:
        """How this file reaches the `torch` module (`torch`, an alias, or an import call)."""
        for node in self.source.nodes(cst.Import):
            for alias in node.names:
                if dotted(alias.name) == "torch" or (dotted(alias.name) or "").startswith("torch."):
                    if alias.asname is None:
                        return "torch"
                    if dotted(alias.name) == "torch":
                        return alias.asname.name.value  # type: ignore[union-attr]
        return '__import__("torch")'

    @cached_property
    def backwards(self) -> list[Backward]:
        """Every backward call with the loss it differentiates.

        `loss.backward()`, `scaler.scale(loss).backward()`, `cast(T, scaler.scale(loss)).backward()`,
        `scaled.backward()` after `scaled = scaler.scale(loss)`; the framework forms that take
        the loss as an argument: `accelerator.backward(loss)`, `self.manual_backward(loss)`; and a
        callable loss scaler's `loss_scaler(loss, optimizer, ...)` (see `is_scaler_call`).
        """
        found = []
        for call in self.source.nodes(cst.Call):
            if self.is_scaler_call(call):
                found.append(Backward(call, argument(call, "loss", 0).value, None, steps=True))  # type: ignore[union-attr]
                continue
            if not isinstance(call.func, cst.Attribute):
                continue
            name = call.func.attr.value
            receiver = call.func.value
            if name == "backward" and self.source.function_of(call) in self.input_gradients:
                continue  # a saliency or Jacobian: the gradient of an input, read off it
            if name == "manual_backward" or (name == "backward" and _takes_loss(receiver, call)):
                loss_arg = argument(call, "loss", 0)
                if loss_arg is None:
                    continue
                loss, scaler = _unscaled(loss_arg.value)
            elif name == "backward":
                loss, scaler = _unscaled(receiver)
                if scaler is None and isinstance(receiver, cst.Name):
                    scaled = self.scaled_value(receiver, call)
                    if scaled is not None:
                        loss, scaler = _unscaled(scaled)
                    else:
                        loss = self._context_scaled(receiver, call) or loss
            else:
                continue
            found.append(Backward(call, loss, scaler))
        return found + self._helper_backwards(found)

    @cached_property
    def input_gradients(self) -> set[cst.FunctionDef]:
        """Functions that run a backward for the gradient of an input: they make a tensor require
        gradients (`X_tensor.requires_grad_(True)`, `x.requires_grad = True`), read that
        tensor's `.grad` and step no optimizer (DeepChem's `compute_saliency`: one
        `output.backward(grad_output, retain_graph=True)` per row of the Jacobian). No training
        step, so none of the training faults apply there."""
        found = set()
        for function in self.source.nodes(cst.FunctionDef):
            calls = self.source.within(function, cst.Call)
            if not any(callee_name(c) == "backward" for c in calls):
                continue
            looped = {n for f in self.source.within(function, cst.For) for n in bound_names(f.target)}
            watched = {
                dotted(c.func.value)
                for c in calls
                if isinstance(c.func, cst.Attribute) and c.func.attr.value == "requires_grad_"
            } | {
                dotted(t.target.value)
                for a in self.source.within(function, cst.Assign)
                for t in a.targets
                if isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
            }
            watched = {w for w in watched if w is not None and w.split(".")[0] not in looped}
            read = any(
                a.attr.value == "grad" and dotted(a.value) in watched
                for a in self.source.within(function, cst.Attribute)
            )
            if read and not any(callee_name(c) in {"step", "optimizer_step", "step_and_update_lr"} for c in calls):
                found.add(function)
        return found

    @cached_property
    def returned_losses(self) -> list[ReturnedLoss]:
        """Losses returned by a `training_step` method for its framework to differentiate
        (`return loss`, `return {"loss": loss, ...}`), where that class runs no backward itself
        (no `manual_backward`, no `automatic_optimization = False`, no backward in the method: a
        trainer's own `training_step` that calls `fabric.backward(loss)` is not one)."""
        found = []
        for name in LOSS_RETURNING_METHODS:
            for function in self.functions.get(name, ()):
                owner = enclosing_class(self.source, function)
                if owner is None or self._optimizes_by_hand(owner, function):
                    continue
                for ret in self.source.within(function.body, cst.Return):
                    if ret.value is None or self.source.function_of(ret) is not function:
                        continue
                    value: cst.BaseExpression | None = ret.value
                    if isinstance(value, cst.Tuple):
                        # `return out_dict, log_dict`, `out_dict` built with the loss
                        # (`out_dict = self.process_out_dict(loss=total_loss, ...)`)
                        found.extend(self._loss_in_returned_tuple(function, ret, value))
                        continue
                    if isinstance(value, cst.Call) and callee_name(value) == "dict":
                        arg = argument(value, "loss", None)  # `return dict(loss=loss)`
                        value = arg.value if arg is not None else value
                    if isinstance(value, cst.Dict):
                        value = next(
                            (
                                e.value
                                for e in value.elements
                                if isinstance(e, cst.DictElement)
                                and isinstance(e.key, cst.SimpleString)
                                and e.key.evaluated_value == "loss"
                            ),
                            None,
                        )
                    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
                        found.append(ReturnedLoss(ret, value))  # `return train_loss['loss']`
                    elif isinstance(value, (cst.Name, cst.Attribute)):
                        found.append(ReturnedLoss(ret, value))
                        found.extend(self._helper_returns(value, ret))
                    elif isinstance(value, cst.Call):
                        found.extend(self._helper_losses(value))  # `return self.shared_step(batch)`
        found.extend(self._transformed_losses())
        found.extend(self._wrapper_losses())
        return found

    def _wrapper_losses(self) -> list[ReturnedLoss]:
        """The loss a module of the file that wraps a model computes in its `forward` and returns
        for the caller to differentiate (Sockeye's `ModelWithLoss`, CenterNet's `ModelWithLoss`,
        HRNet's `FullModel`): `__init__` keeps a model it is handed (`self.model = model`), and
        `forward` runs it and returns a loss by name (alone or in a tuple) without a backward of
        its own."""
        found = []
        for owner in self.source.nodes(cst.ClassDef):
            methods = {m.name.value: m for m in owner.body.body if isinstance(m, cst.FunctionDef)}
            init, forward = methods.get("__init__"), methods.get("forward")
            if init is None or forward is None:
                continue
            params = {p.name.value for p in init.params.params}
            kept = {
                t.target.attr.value
                for a in self.source.within(init.body, cst.Assign)
                for t in a.targets
                if isinstance(t.target, cst.Attribute)
                and dotted(t.target.value) == "self"
                and isinstance(a.value, cst.Name)
                and a.value.value in params
                and names_a_model(t.target)
            }
            runs = any(
                isinstance(c.func, cst.Attribute) and dotted(c.func.value) == "self" and c.func.attr.value in kept
                for c in self.source.within(forward.body, cst.Call)
            )
            if not runs or any(callee_name(c) == "backward" for c in self.source.within(forward.body, cst.Call)):
                continue
            for ret in self.source.within(forward.body, cst.Return):
                if ret.value is None or self.source.function_of(ret) is not forward:
                    continue
                elements = [e.value for e in ret.value.elements] if isinstance(ret.value, cst.Tuple) else [ret.value]
                losses = [e for e in elements if isinstance(e, cst.Name) and loss_name(e) and "loss" in e.value.lower()]
                if losses:
                    found.append(ReturnedLoss(ret, losses[0]))
        return found

    def _loss_in_returned_tuple(
        self, function: cst.FunctionDef, ret: cst.Return, value: cst.Tuple
    ) -> list[ReturnedLoss]:
        """The loss a returned tuple carries in a dict built in the method: `out = {"loss":
        total}` or `out = self.process_out_dict(loss=total, ...)`, then `return out, logs`."""
        names = {dotted(e.value) for e in value.elements} - {None}
        for assign in self.source.within(function.body, cst.Assign):
            if self.source.function_of(assign) is not function:
                continue
            if not any(dotted(t.target) in names for t in assign.targets):
                continue
            built = assign.value
            loss = None
            if isinstance(built, cst.Call):
                arg = argument(built, "loss", None)
                loss = arg.value if arg is not None and arg.keyword is not None else None
            elif isinstance(built, cst.Dict):
                loss = next(
                    (
                        e.value
                        for e in built.elements
                        if isinstance(e, cst.DictElement)
                        and isinstance(e.key, cst.SimpleString)
                        and e.key.evaluated_value == "loss"
                    ),
                    None,
                )
            if isinstance(loss, (cst.Name, cst.Attribute)):
                return [ReturnedLoss(ret, loss)]
        return []

    def _transformed_losses(self) -> list[ReturnedLoss]:
        """Losses returned by a function that torch.func differentiates (`grad_and_value(
        compute_loss)`, opacus' per-sample gradients under `vmap`): what it returns is the loss."""
        imported = set()
        for node in self.source.nodes(cst.ImportFrom):
            if node.module is None or dotted(node.module) not in ("torch.func", "functorch"):
                continue
            for alias in () if isinstance(node.names, cst.ImportStar) else node.names:
                if isinstance(alias.name, cst.Name) and alias.name.value in ("grad", "grad_and_value"):
                    local = alias.asname.name if alias.asname is not None else alias.name
                    imported.add(local.value if isinstance(local, cst.Name) else alias.name.value)
        found = []
        for call in self.source.nodes(cst.Call):
            func = dotted(call.func) or ""
            if not call.args or not (func in imported or func.startswith(("torch.func.grad", "functorch.grad"))):
                continue
            target = call.args[0].value
            if not isinstance(target, cst.Name):
                continue
            for function in self.functions.get(target.value, ()):
                for ret in self.source.within(function.body, cst.Return):
                    if self.source.function_of(ret) is function and isinstance(ret.value, cst.Name):
                        found.append(ReturnedLoss(ret, ret.value))
        return found

    def _helper_returns(self, value: cst.BaseExpression, ret: cst.Return) -> list[ReturnedLoss]:
        """Where the returned loss was assigned from a call of a function of this file
        (`loss = self.common_step(batch, batch_nb, train=True)`), the losses that function
        returns: its forward pass and loss are the training step's too."""
        name = dotted(value)
        assign = self.last_assignment(name, ret) if name is not None else None
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
            return []
        position = None  # `loss, logs = self.step(batch)`: the element the loss is unpacked from
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [dotted(e.value) for e in target.elements]
            position = names.index(name) if name in names else None
            if position is None:
                return []
        return self._helper_losses(assign.value, position)

    def _helper_losses(self, call: cst.Call, position: int | None = None) -> list[ReturnedLoss]:
        """The losses a function of this file that `call` runs returns (`return loss`; with
        `position`, that element of a returned tuple: `return loss, logs`)."""
        found = []
        for helper in self.called_functions(call):
            for inner in self.source.within(helper.body, cst.Return):
                if self.source.function_of(inner) is not helper:
                    continue
                value = inner.value
                if position is not None:
                    elements = value.elements if isinstance(value, cst.Tuple) else ()
                    value = elements[position].value if position < len(elements) else None
                if isinstance(value, (cst.Name, cst.Attribute)) and self.is_loss_value(value, inner):
                    found.append(ReturnedLoss(inner, value))
        return found

    def _optimizes_by_hand(self, owner: cst.ClassDef, function: cst.FunctionDef) -> bool:
        if any(callee_name(c) == "backward" for c in self.source.within(function.body, cst.Call)):
            return True
        if self.training_calls(function.body):
            return True  # a step that runs its backward or step through its own helpers (OLMo's train_step)
        if any(callee_name(c) == "manual_backward" for c in self.source.within(owner.body, cst.Call)):
            return True
        return any(
            (dotted(t.target) or "").endswith("automatic_optimization") and is_literal_bool(a.value, False)
            for a in self.source.within(owner.body, cst.Assign)
            for t in a.targets
        )

    @property
    def loss_uses(self) -> list[LossUse]:
        """Every place a loss is differentiated: the backward calls and the returned losses, and
        the losses a function of the file returns for a backward to read out of what it hands
        back (see `held_helper_losses`)."""
        return [*self.backwards, *self.returned_losses, *self.held_helper_losses, *self.weight_gradients]

    @cached_property
    def weight_gradients(self) -> list[Backward]:
        """`torch.autograd.grad(loss, weights)` taken for an update written by hand (MAML's inner
        loop: `grad = torch.autograd.grad(loss, fast_weights)`, then `fast_weights = [w - lr * g
        ...]`): the loss is differentiated there as at a backward. Not the gradient of an input
        (a gradient penalty's `inputs=interpolates`): the weights are parameters, by name."""
        found = []
        for call in self.source.nodes(cst.Call):
            if dotted(call.func) not in ("torch.autograd.grad", "autograd.grad"):
                continue
            outputs = argument(call, "outputs", 0)
            inputs = argument(call, "inputs", 1)
            if outputs is None or inputs is None or not isinstance(outputs.value, (cst.Name, cst.Attribute)):
                continue
            text = self.source.code(inputs.value).lower()
            if "param" in text or "weight" in text:
                found.append(Backward(call, outputs.value, None))
        return found

    @cached_property
    def held_helper_losses(self) -> list[ReturnedLoss]:
        """Where a backward's loss is an entry of what a function of the file returns (DiffDock's
        `loss_tuple = loss_fn(...)`, then `loss = loss_tuple[0]` and `loss.backward()`): the value
        that function returns there, a sum of terms computed in its body. The caller's own cut
        detaches every term at once; the terms are each a loss of the helper's."""
        found: list[ReturnedLoss] = []
        for backward in self.backwards:
            assign = self.loss_assignment(backward)
            if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call):
                found.extend(r for r in self._summed_helper_returns(backward, assign) if r not in found)
                continue
            if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Subscript):
                continue
            entry = assign.value
            index = entry.slice[0].slice if len(entry.slice) == 1 else None
            if not isinstance(entry.value, cst.Name) or not isinstance(index, cst.Index):
                continue
            if not isinstance(index.value, cst.Integer):
                continue
            position = int(index.value.value)
            holder = self.last_assignment(entry.value.value, assign)
            if not isinstance(holder, cst.Assign) or not isinstance(holder.value, cst.Call):
                continue
            if len(holder.targets) != 1 or not isinstance(holder.targets[0].target, cst.Name):
                continue
            for helper in self.called_functions(holder.value):
                for ret in self.source.within(helper.body, cst.Return):
                    if self.source.function_of(ret) is not helper or not isinstance(ret.value, cst.Tuple):
                        continue
                    elements = ret.value.elements
                    value = elements[position].value if position < len(elements) else None
                    if isinstance(value, cst.Name) and not any(r.call is ret for r in found):
                        found.append(ReturnedLoss(ret, value))
        return found

    def _summed_helper_returns(self, backward: Backward, assign: cst.Assign) -> list[ReturnedLoss]:
        """Where a backward's loss is what a function of the file returns (`loss = self.compute_loss(
        batch)`, `loss, logs = compute_loss(...)`) and that function adds it up from two or more
        named losses (`loss = rec_loss + self.kl_weight * kl_loss`, then `return loss, ...`): that
        returned loss, whose terms are each a loss of the helper's."""
        name = loss_name(backward.loss)
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        position = None
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [dotted(e.value) for e in target.elements]
            if name not in names:
                return []
            position = names.index(name)
        elif not isinstance(target, cst.Name):
            return []
        found = []
        for helper in self.called_functions(assign.value):  # type: ignore[arg-type]
            if helper is self.source.function_of(assign):
                continue
            for ret in self.source.within(helper.body, cst.Return):
                if self.source.function_of(ret) is not helper or ret.value is None:
                    continue
                value: cst.BaseExpression | None = ret.value
                if position is not None or isinstance(value, cst.Tuple):
                    elements = value.elements if isinstance(value, cst.Tuple) else ()
                    index = position or 0
                    value = elements[index].value if index < len(elements) else None
                if not isinstance(value, cst.Name):
                    continue
                total = self.last_assignment(value.value, ret)
                while (
                    isinstance(total, cst.Assign)
                    and isinstance(total.value, cst.BinaryOperation)
                    and isinstance(total.value.operator, (cst.Divide, cst.Multiply))
                    and dotted(total.value.left) == value.value
                ):
                    # rescaled for accumulation first (UER-py's `loss = loss / self.accumulation_steps`)
                    total = self.last_assignment(value.value, total)
                if isinstance(total, cst.Assign) and len(_added_losses(self.source, total.value)) >= 2:
                    found.append(ReturnedLoss(ret, value))
        return found

    def _helper_backwards(self, direct: list[Backward]) -> list[Backward]:
        """Calls of the file's functions that run the backward of one of their parameters, with
        the argument passed for it as the loss; not where the function's own backward already
        finds its loss computed elsewhere (`_returned_elsewhere`)."""
        differentiated: dict[cst.FunctionDef, tuple[str, int]] = {}
        for backward in direct:
            function = self.source.function_of(backward.call)
            name = loss_name(backward.loss)
            if function is None or name is None or backward.steps:
                continue
            params = [p.name.value for p in function.params.params]
            if params and params[0] in {"self", "cls"}:
                params = params[1:]
            if name in params and not self.loss_alternatives(backward):
                differentiated.setdefault(function, (name, params.index(name)))
        found = self._imported_backwards()
        for backward in found:
            # the file's function that hands its own parameter on to another module's backward
            # (jiant's `Runner.complex_backpropagate(self, loss, ...)` calling the shared one)
            function = self.source.function_of(backward.call)
            name = loss_name(backward.loss)
            params = [p.name.value for p in function.params.params] if function is not None else []
            if params and params[0] in {"self", "cls"}:
                params = params[1:]
            if name in params:
                differentiated.setdefault(function, (name, params.index(name)))  # type: ignore[arg-type]
        if not differentiated:
            return found
        calls = {b.call for b in (*direct, *found)}
        for _ in range(3):
            # and the functions that hand their own parameter on to such a function (connectomics'
            # `train()` calls `self._train_misc(loss, ...)`, which calls `self.backward_pass(loss)`)
            added: dict[cst.FunctionDef, tuple[str, int]] = {}
            for call in self.source.nodes(cst.Call):
                if call in calls:
                    continue
                for function in self.called_functions(call):
                    if function in differentiated and self.source.function_of(call) is not function:
                        arg = argument(call, *differentiated[function])
                        if arg is not None and not arg.star:
                            # flair's `self._backward(scaler.scale(loss))`: the loss, scaled on its way in
                            loss, scaler = _unscaled(arg.value)
                            found.append(Backward(call, loss, scaler, helper=True))
                            calls.add(call)
                            outer = self.source.function_of(call)
                            name = dotted(loss)
                            params = [p.name.value for p in outer.params.params] if outer is not None else []
                            if params and params[0] in {"self", "cls"}:
                                params = params[1:]
                            if outer is not None and name in params and outer not in differentiated:
                                added[outer] = (name, params.index(name))
                        break
            if not added:
                break
            differentiated.update(added)
        return found

    def _imported_backwards(self) -> list[Backward]:
        """Calls of a function of another module of the project that runs the backward of one of
        its parameters (jiant's shared `complex_backpropagate(loss, optimizer, model, ...)`: `loss.
        backward()`), with the argument handed for it as the loss."""
        if getattr(self.source, "neighbours", None) is None:
            return []
        from injector.neighbours import bound_arguments  # neighbours reads this module's helpers

        found = []
        for call in self.source.nodes(cst.Call):
            if self.called_functions(call):
                continue
            if isinstance(call.func, cst.Name):
                definition = self.resolver.definition(self.source, call.func)
                if definition is None or definition[0] is self.source or not isinstance(definition[1], cst.FunctionDef):
                    continue
                function = definition[1]
                bound = bound_arguments(function, call) or {}
            elif isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self":
                # a method inherited from a base class of another module (FAIR-Chem's OCPTrainer:
                # `self._backward(loss)`, BaseTrainer's zero_grad, backward, clipping and step)
                owner = enclosing_class(self.source, call)
                method = inherited_method(self, self.source, owner, call.func.attr.value, 0) if owner else None
                if method is None:
                    continue
                function = method
                # a method's first positional parameter is `self`: the call's arguments bind from the second
                params = [p.name.value for p in function.params.params][1:]
                positional = [a for a in call.args if a.keyword is None and not a.star]
                bound = {params[i]: a.value for i, a in enumerate(positional) if i < len(params)} | {
                    a.keyword.value: a.value for a in call.args if a.keyword is not None
                }
            else:
                continue
            params = [p.name.value for p in function.params.params]
            differentiated = {
                c.func.value.value
                for c in walk_children(function.body)
                if isinstance(c, cst.Call)
                and isinstance(c.func, cst.Attribute)
                and c.func.attr.value == "backward"
                and isinstance(c.func.value, cst.Name)
                and c.func.value.value in params
            }
            for name in params:
                if name in differentiated and name in bound:
                    loss, scaler = _unscaled(bound[name])
                    if scaler is None and isinstance(loss, cst.Name):
                        # scaled the line before (`loss = self.scaler.scale(loss) if self.scaler else loss`)
                        scaled = self.scaled_value(loss, call)
                        if scaled is not None:
                            loss, scaler = _unscaled(scaled)
                    found.append(Backward(call, loss, scaler, helper=True))
                    break
        return found

    @cached_property
    def scaler_classes(self) -> dict[str, cst.FunctionDef]:
        """Classes of this file whose `__call__` runs a backward pass (a loss scaler such as timm's
        NativeScaler), with that `__call__`."""
        found = {}
        for cls in self.source.nodes(cst.ClassDef):
            for statement in cls.body.body:
                if (
                    isinstance(statement, cst.FunctionDef)
                    and statement.name.value == "__call__"
                    and any(callee_name(c) == "backward" for c in self.source.within(statement.body, cst.Call))
                ):
                    found[cls.name.value] = statement
        return found

    def is_scaler_call(self, call: cst.Call) -> bool:
        """True for a call of a loss scaler that runs the backward itself: `loss_scaler(loss,
        optimizer, clip_grad=...)`. Decided by what is called, never by its name: an object built
        from a class of this file whose `__call__` runs a backward, or a callable built elsewhere
        (timm's `NativeScaler()`, a `loss_scaler` parameter) that is handed a loss and an
        optimizer. A function of this file is not one (its body says what it does: see
        `backwards`), nor is torch's GradScaler (never called) or another class of this file."""
        func = call.func
        loss = argument(call, "loss", 0)
        if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)) or loss is None or loss.star:
            return False
        if isinstance(func, cst.Attribute) and func.attr.value in {"backward", "manual_backward"}:
            # a framework's backward handed the optimizer for its loss scaling (ColossalAI's
            # `booster.backward(loss=loss, optimizer=optimizer)`): it runs the backward, never the step
            return False
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "step"
            and self.role(func.value) == "optimizer"
            and not self.called_functions(call)
        ):
            # an optimizer wrapper stepped with the loss (tianshou's `self.optim.step(loss)` runs
            # zero_grad, backward, clipping and the step); torch's `step(closure)` takes no loss
            return self.is_loss_value(loss.value, call)
        if self.called_functions(call) or (isinstance(func, cst.Name) and func.value in self.functions):
            return False
        if isinstance(self.source.parent(call), cst.WithItem):
            return False  # a context (apex's `amp.scale_loss(loss, optimizer)`) runs no backward itself
        if (isinstance(func, cst.Name) and func.value in RECORDING_BUILTINS) or callee_name(call) in RECORDING_METHODS:
            return False  # settings recorded (DeepChem's `dict(loss=loss, optimizer=optimizer, ...)` for wandb)
        built = self.constructors.get(self._text(func))
        if built in self.scaler_classes:
            return True
        if built == "GradScaler" or built in self.classes:
            return False
        optimizer = argument(call, "optimizer", 1)
        return (
            optimizer is not None and self.role(optimizer.value) == "optimizer" and self.is_loss_value(loss.value, call)
        )

    @cached_property
    def trained_criteria(self) -> set[str]:
        """Criteria, by name, whose parameters the file hands an optimizer built in the same
        function (CPC's `g_params = list(cpcCriterion.parameters()) + list(cpcModel.parameters())`,
        then `Adam(g_params, ...)`: prediction heads with dropout, trained with the model): modules
        whose modes count."""
        found = set()
        for call in self.source.nodes(cst.Call):
            holder = call.func.value if isinstance(call.func, cst.Attribute) else None
            if holder is None or callee_name(call) not in ("parameters", "named_parameters"):
                continue
            if not is_criterion(holder):
                continue
            function = self.source.function_of(call)
            scope = function.body if function is not None else self.source.module
            if any(_constructor_role(c) == "optimizer" for c in self.source.within(scope, cst.Call)):
                found.add(last_name(holder) or "")
        return found

    @cached_property
    def moded(self) -> set[str]:
        """What the file switches to eval mode (`g_ema.eval()`, `model.train(False)`), as written:
        modules with a forward pass (a criterion's mode switch does not count)."""
        found = set()
        for call in self.source.nodes(cst.Call):
            if (
                isinstance(call.func, cst.Attribute)
                and callee_name(call) in {"eval", "train"}
                and (callee_name(call) == "train" or not call.args)
                and (callee_name(call) == "eval" or sets_mode(call, self.trained_criteria))
                and not is_criterion(call.func.value, self.trained_criteria)
            ):
                name = dotted(call.func.value)
                if name is not None and name != "self":
                    found.add(name)
        return found

    @cached_property
    def optimized(self) -> set[str]:
        """Objects whose parameters an optimizer of the file is built over (`agent` for
        `optim.Adam(agent.parameters(), lr=...)`), as written: models, whatever their names."""
        found = set()
        for call in self.source.nodes(cst.Call):
            if _constructor_role(call) != "optimizer" and callee_name(call) not in CLIPS:
                continue  # an optimizer built over its parameters, or its gradients clipped
            for inner in self.source.within(call, cst.Call):
                if isinstance(inner.func, cst.Attribute) and inner.func.attr.value in (
                    "parameters",
                    "named_parameters",
                ):
                    name = dotted(inner.func.value)
                    if name is not None and name != "self":
                        found.add(name)
        return found

    @cached_property
    def classes(self) -> set[str]:
        """The names of the classes this file defines."""
        return {c.name.value for c in self.source.nodes(cst.ClassDef)}

    def is_loss_value(self, expr: cst.BaseExpression, use: cst.CSTNode, depth: int = 2) -> bool:
        """True for a loss: a criterion's or loss function's result (`criterion(out, y)`,
        `F.cross_entropy(...)`), a value named so (`loss`, `total_loss / accum`), or a name last
        assigned from one of those before `use`."""
        if isinstance(expr, cst.BinaryOperation):
            return self.is_loss_value(expr.left, use, depth) or self.is_loss_value(expr.right, use, depth)
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = (last_name(target) or "").lower()
        if "loss" in name or "criterion" in name or name in LOSS_FUNCTIONS:
            return True
        if isinstance(expr, cst.Call):
            return self.role(expr.func) == "loss-module"
        if isinstance(expr, cst.Name) and depth > 0:
            assign = self.last_assignment(expr.value, use)
            if assign is not None and assign.value is not None:
                return self.is_loss_value(assign.value, use, depth - 1)
        return False

    def _context_scaled(self, name: cst.Name, use: cst.CSTNode) -> cst.BaseExpression | None:
        """The loss of apex's `with amp.scale_loss(loss, optimizer) as scaled_loss:` around
        `scaled_loss.backward()`: the value the context scales (its scaler is apex's own, which
        missing-grad-scaler reads from the `with`)."""
        for ancestor in self.source.ancestors(use):
            if not isinstance(ancestor, cst.With):
                continue
            for item in ancestor.items:
                bound = item.asname.name if item.asname is not None else None
                value = item.item
                if (
                    isinstance(bound, cst.Name)
                    and bound.value == name.value
                    and isinstance(value, cst.Call)
                    and callee_name(value) == "scale_loss"
                    and value.args
                ):
                    return value.args[0].value
        return None

    def scaled_value(self, name: cst.Name, use: cst.CSTNode) -> cst.Call | None:
        """`scaler.scale(loss)` when `name` was last assigned from it before `use` (also through
        `cast(Tensor, scaler.scale(loss))`, composer's)."""
        assign = self.last_assignment(name.value, use)
        value = assign.value if assign is not None else None
        while isinstance(value, cst.Call) and callee_name(value) in UNWRAPPERS and value.args:
            value = value.args[-1].value
        if isinstance(value, cst.IfExp) and isinstance(value.body, cst.Call):
            value = value.body  # FAIR-Chem's `loss = self.scaler.scale(loss) if self.scaler else loss`
        if isinstance(value, cst.Call) and callee_name(value) == "scale":
            return value
        return None

    def last_assignment(
        self, name: str, use: cst.CSTNode, unconditional: bool = False, fresh: bool = False
    ) -> cst.Assign | cst.AnnAssign | None:
        """The last assignment to `name` (a plain name, `self.x`, or one element of a tuple
        target) before `use` in the same function.

        `unconditional`: skip assignments under an `if`/loop that does not also hold `use`
        (`if accum > 1: loss = loss / accum` only sometimes runs). `fresh`: skip assignments
        that read the name they assign (`loss = loss / accum` rescales, it does not compute).
        """
        function = self.source.function_of(use)
        before = self.source.span(use)[0]
        around_use = set(self.source.ancestors(use))
        found = None
        for assign in self.assigned_names.get(name, ()):
            if self.source.span(assign)[0] >= before or self.source.function_of(assign) is not function:
                continue
            if unconditional and any(
                isinstance(a, (cst.If, cst.For, cst.While, cst.Try)) and a not in around_use
                for a in _ancestors_within(self.source, assign, function)
            ):
                continue
            if fresh and assign.value is not None and _reads(self.source, assign.value, name):
                continue
            found = assign
        return found

    @cached_property
    def assigned_names(self) -> dict[str, list[cst.Assign | cst.AnnAssign]]:
        """Assignments by the names they bind (`loss`, `self.loss`, each element of a tuple)."""
        found: dict[str, list] = {}
        for assign in self.source.nodes(cst.Assign) + self.source.nodes(cst.AnnAssign):
            targets: list[cst.BaseExpression] = (
                [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
            )
            while any(isinstance(t, (cst.Tuple, cst.List)) for t in targets):
                # each element of a tuple, and of a tuple in it (`(t_batch, t_out), (s_batch, s_out) = ...`)
                targets = [
                    e.value for t in targets for e in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else ())
                ] + [t for t in targets if not isinstance(t, (cst.Tuple, cst.List))]
            for element in targets:
                text = dotted(element)
                if text is not None:
                    found.setdefault(text, []).append(assign)
        for values in found.values():
            values.sort(key=self.source.span)
        return found

    @cached_property
    def steps(self) -> list[cst.Call]:
        """Optimizer steps: `optimizer.step()`, `scaler.step(optimizer)`, and a scheduled optimizer's
        `optimizer.step_and_update_lr()`."""
        engines = {
            self._text(b.call.func.value)
            for b in self.backwards
            if isinstance(b.call.func, cst.Attribute)
            and b.call.func.attr.value == "backward"
            and b.loss is not b.call.func.value
        }
        found = []
        for call in self.source.nodes(cst.Call):
            if not isinstance(call.func, cst.Attribute):
                continue
            if call.func.attr.value == "step" and (
                self.role(call.func.value) in {"optimizer", "scaler"}
                or (
                    self._text(call.func.value) in engines
                    and (not call.args or self.role(call.args[0].value) == "optimizer")
                )
            ):
                # an engine that takes the loss also takes the step, of the optimizer it is handed
                # too (audiotools' `accel.step(state.optimizer_d)` after `accel.backward(loss)`),
                # also with its closure (Ludwig's `self.distributed.step(self.optimizer, closure)`)
                found.append(call)
            elif call.func.attr.value.startswith("step_") and self.role(call.func.value) == "optimizer":
                found.append(call)  # a scheduled-optimizer wrapper's `step_and_update_lr()`
            elif call.func.attr.value in TWO_PHASE_UPDATES and self.role(call.func.value) == "optimizer":
                found.append(call)  # SAM's `optimizer.second_step(zero_grad=True)`
        return found

    @cached_property
    def training_loops(self) -> list[cst.For | cst.While]:
        """Batch loops: loops whose body runs a backward or an optimizer step itself, or through a
        function of this file (a method of the same class) that runs one outside a loop of its own.

        A loop over optimizers (`for name in self._optimizers: self._optimizers[name].step()`) is not
        a batch loop, nor is an epoch loop whose batch loop sits in a called `train_one_epoch()`.
        """
        loops = []
        for loop in self.source.nodes(cst.For) + self.source.nodes(cst.While):
            if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and callee_name(loop.iter) in MODULE_WALKS:
                continue  # over a model's modules or parameters, not over batches
            reached = self.training_calls(loop.body)
            if not reached:
                continue
            if isinstance(loop, cst.For) and all(c in self.steps for c in reached):
                targets = {n.value for n in self.source.within(loop.target, cst.Name)}
                if all(
                    # the receiver, not the method: `optimizer.step()` in `for step in ...` is a batch loop
                    any(n.value in targets for n in self.source.within(_receiver(c), cst.Name))
                    or any(dotted(a.value) in targets for a in c.args)  # `scaler.step(opt)`
                    for c in reached
                ):
                    continue  # iterating over optimizers, not over batches
            loops.append(loop)
        return sorted(loops, key=self.source.span)

    def steps_within(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """True if running `node` steps an optimizer: itself or through the functions of this file
        it calls (up to `depth` calls deep)."""
        start, end = self.source.span(node)
        if any(start <= self.source.span(step)[0] < end for step in self.steps):
            return True
        return depth > 0 and any(
            self.steps_within(function.body, depth - 1)
            for call in self.source.within(node, cst.Call)
            for function in self.called_functions(call)
            if function is not self.source.function_of(node)
        )

    def _helper_step(self, call: cst.Call) -> bool:
        """True for a call of a function another module defines that runs the step it is named
        for: `batch_backward(model, scaler, info)`, `update_parameter_and_lr(model, optimizer,
        ...)` handed the optimizer (wenet's executor runs its whole step through such helpers)."""
        if self._accumulated_step(call):
            return True
        if isinstance(call.func, cst.Attribute) and computes_gradients(call) and not self.called_functions(call):
            return True  # stylegan2-ada's `loss.accumulate_gradients(phase=..., ...)`, defined elsewhere
        if isinstance(call.func, cst.Attribute) and call.args:
            # a step the class leaves to its subclasses (torchreid's Engine: `loss_summary =
            # self.forward_backward(data)`, whose body here only raises NotImplementedError)
            # or named for the whole training step (USB's AlgorithmBase: `self.train_step(**batch)`,
            # each algorithm's override returning the loss a hook then backpropagates)
            functions = self.called_functions(call)
            attr = call.func.attr.value.lower()
            return bool(functions) and (
                (all(is_abstract(f) for f in functions) and "backward" in attr)
                # the base's declaration, whatever a subclass of the same file overrides it with
                or (any(is_abstract(f) for f in functions) and attr in ABSTRACT_STEPS)
            )
        if not isinstance(call.func, cst.Name) or self.called_functions(call) or not call.args:
            return False
        name = call.func.value.lower()
        if "backward" in name:
            return True
        return ("update" in name or "step" in name) and any(self.role(a.value) == "optimizer" for a in call.args)

    def _accumulated_step(self, call: cst.Call) -> bool:
        """True for the call that is the whole body's work of a `with accelerator.accumulate(model):`
        block holding no backward or step of its own (torchkeras's `step_losses, step_metrics =
        self.step_runner(batch)`): accelerate's accumulation context wraps a training step only."""
        statement = self.source.parent(call)
        if not isinstance(statement, (cst.Expr, cst.Assign)) or statement.value is not call:
            return False
        line = self.source.parent(statement)
        block = self.source.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
        around = self.source.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(around, cst.With) or not any(_accelerator_accumulate(i.item) for i in around.items):
            return False
        wanted = {b.call for b in self.backwards} | set(self.steps)
        calls = list(self.source.within(around.body, cst.Call))
        statements = [c for c in calls if isinstance(self.source.parent(c), (cst.Expr, cst.Assign))]
        return not any(c in wanted for c in calls) and statements[:1] == [call]

    def in_a_step(self, node: cst.CSTNode) -> bool:
        """True if `node` sits in a step function: one that runs a backward or an optimizer step
        itself, outside its loops (OLMo's train_step, MONAI's `_iteration`), whoever loops over it."""
        function = self.source.function_of(node)
        return function is not None and bool(self.training_calls(function.body))

    def training_calls(self, node: cst.CSTNode, depth: int = 3) -> list[cst.Call]:
        """The backward and optimizer-step calls that running `node` makes once, outside any loop
        inside `node`: its own, and those of the functions of this file that it calls."""
        key = (node, depth)
        if key in self._reach_cache:
            return self._reach_cache[key]
        self._reach_cache[key] = []  # recursion guard
        wanted = {b.call for b in self.backwards} | set(self.steps)
        found = []
        for call in self.source.within(node, cst.Call):
            if _nested_in(self.source, call, node, (cst.FunctionDef, cst.Lambda)) or any(
                not _once_per_step(self.source, loop)
                for loop in _ancestors_within(self.source, call, node)
                if isinstance(loop, (cst.For, cst.While))
            ):
                continue
            if call in wanted or self._helper_step(call):
                found.append(call)
            elif depth > 0:
                for function in self.called_functions(call):
                    if self.training_calls(function.body, depth - 1):
                        found.append(call)
                        break
        self._reach_cache[key] = found
        return found

    @cached_property
    def _reach_cache(self) -> dict:
        return {}

    @cached_property
    def functions(self) -> dict[str, list[cst.FunctionDef]]:
        """The functions and methods of the file by name."""
        found: dict[str, list[cst.FunctionDef]] = {}
        for function in self.source.nodes(cst.FunctionDef):
            found.setdefault(function.name.value, []).append(function)
        return found

    def called_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of this file that `call` may run: `f(...)` a function named f, `self.m(...)`
        a method m of the class around the call (also when passed on, as in `partial(self.m, ...)`)."""
        # asked of the same calls again and again by every operator: worked out once per call
        found = self._called.get(call)
        if found is None:
            found = self._called[call] = self._called_functions(call)
        return found

    @cached_property
    def _called(self) -> dict[cst.Call, list[cst.FunctionDef]]:
        return {}

    def callers(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The calls of this file that may run `function` (see `called_functions`), in order."""
        return list(self._callers.get(function, ()))

    @cached_property
    def _callers(self) -> dict[cst.FunctionDef, list[cst.Call]]:
        found: dict[cst.FunctionDef, list[cst.Call]] = {}
        for call in self.source.nodes(cst.Call):
            for function in self.called_functions(call):
                calls = found.setdefault(function, [])
                if not calls or calls[-1] is not call:
                    calls.append(call)
        return found

    def _called_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        target = call.func
        if callee_name(call) == "partial" and call.args:
            target = call.args[0].value
        if isinstance(target, cst.Name):
            return [
                f
                for f in self.functions.get(target.value, ())
                if not isinstance(self.source.parent(self.source.parent(f) or f), cst.ClassDef)
            ] or self._handed_loss_function(call, target.value)
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            owner = enclosing_class(self.source, call)
            if owner is None:
                return []
            name = target.attr.value
            if not any(enclosing_class(self.source, f) is owner for f in self.functions.get(name, ())):
                # a method held in an attribute (`self.fwd_bwd_fn = self._forward_backward_body`)
                name = self._method_alias(owner, name) or name
            own = [f for f in self.functions.get(name, ()) if enclosing_class(self.source, f) is owner]
            if not own:
                own = self._held_closures(owner, target.attr.value)
            # `self.run_step()` in a base class runs the override of a subclass of this file
            # (detectron2's TrainerBase.train loop and SimpleTrainer.run_step).
            below = subclasses(self.source, owner)
            return own + [f for f in self.functions.get(name, ()) if enclosing_class(self.source, f) in below]
        return []

    def _handed_loss_function(self, call: cst.Call, name: str) -> list[cst.FunctionDef]:
        """For a loss function a step is handed (`loss_fn`, a parameter no call of this file binds):
        the one module-level loss function the file defines and never calls itself, which the
        program's entry point hands it (DiffDock's train.py: `loss_fn = partial(loss_function,
        tr_weight=...)`, then `train_epoch(..., loss_fn, ...)` of utils/training.py)."""
        from injector.neighbours import bound_arguments  # neighbours reads this module's helpers

        function = self.source.function_of(call)
        if "loss" not in name.lower() or function is None or name not in {p.name.value for p in function.params.params}:
            return []
        for caller in self.source.nodes(cst.Call):
            if last_name(caller.func) == function.name.value and name in (bound_arguments(function, caller) or {}):
                return []  # handed by a call of this file: what it hands is read there
        candidates = [
            f
            for f in self.source.module.body
            if isinstance(f, cst.FunctionDef)
            and "loss" in f.name.value.lower()
            and len(f.params.params) >= 2
            and not self._named_elsewhere(f.name.value)
        ]
        return candidates if len(candidates) == 1 else []

    def _named_elsewhere(self, name: str) -> bool:
        """True where the file calls or names `name` anywhere but its own definition."""
        return any(
            n.value == name and not isinstance(self.source.parent(n), cst.FunctionDef)
            for n in self.source.nodes(cst.Name)
        )

    def _held_closures(self, owner: cst.ClassDef, attribute: str) -> list[cst.FunctionDef]:
        """The functions defined in a method of `owner` that the method stores in `self.<attribute>`:
        a default the caller may replace (DeBERTa's trainer: `def _loss_fn(trainer, model, batch):`
        then `self.loss_fn = loss_fn if loss_fn is not None else _loss_fn`)."""
        found = []
        for assign in self._self_assignments(owner).get(attribute, ()):
            method = self.source.function_of(assign)
            if method is None:
                continue
            nested = (
                {s.name.value: s for s in method.body.body if isinstance(s, cst.FunctionDef)}
                if isinstance(method.body, cst.IndentedBlock)
                else {}
            )
            found += [nested[n.value] for n in self.source.within(assign.value, cst.Name) if n.value in nested]
        return found

    def _method_alias(self, owner: cst.ClassDef, attribute: str) -> str | None:
        """The method `self.<attribute>` is bound to in `owner`, where every assignment to it is
        `self.<attribute> = self.<method>` of that one method, or wraps what it holds already
        (`self.fwd_bwd_fn = wrap_with_cuda_graph(self.fwd_bwd_fn)`)."""
        held = f"self.{attribute}"
        methods = {
            dotted(a.value)
            for a in self._self_assignments(owner).get(attribute, ())
            if not (isinstance(a.value, cst.Call) and any(dotted(arg.value) == held for arg in a.value.args))
        }
        if len(methods) != 1:
            return None
        (method,) = methods
        return method[len("self.") :] if method and method.startswith("self.") and method.count(".") == 1 else None

    def _self_assignments(self, owner: cst.ClassDef) -> dict[str, list[cst.Assign]]:
        """The assignments in `owner` to each `self.<attribute>`, by attribute, in order."""

        def index() -> dict[str, list[cst.Assign]]:
            found: dict[str, list[cst.Assign]] = {}
            for assign in self.source.within(owner, cst.Assign):
                for attribute in dict.fromkeys(
                    name[len("self.") :]
                    for t in assign.targets
                    if (name := dotted(t.target) or "").startswith("self.") and name.count(".") == 1
                ):
                    found.setdefault(attribute, []).append(assign)
            return found

        return self.source.remember(("self assignments", owner), index)

    @cached_property
    def distributed(self) -> bool:
        """True if the file runs distributed code (process groups, DDP/FSDP, an Accelerator or
        Fabric, XLA): only there can one rank miss a collective."""
        for name in self.source.nodes(cst.Name):
            if name.value in _DISTRIBUTED_NAMES:
                parent = self.source.parent(name)
                if isinstance(parent, cst.Attribute) and parent.attr is name and dotted(parent.value) == "torch":
                    continue  # `torch.accelerator` is the device API, not Hugging Face's Accelerator
                if isinstance(parent, cst.Arg) and parent.keyword is name:
                    continue  # a keyword argument's name (`accelerated_dtw(x, y, dist=manhattan)`)
                if name.value == "dist" and not _distributed_dist(self.source, name, parent):
                    continue  # a distance, not `torch.distributed as dist`
                if name.value == "local_rank" and _in_device_string(self.source, name):
                    continue  # a device index (OpenPrompt's `"cuda:{}".format(config.local_rank)`)
                if name.value == "distributed" and _sampler_module_import(self.source, name):
                    continue  # ASL's bare `import torch.utils.data.distributed`: a module imported, no process group
                return True
        imports: list[cst.Import | cst.ImportFrom] = [
            *self.source.nodes(cst.Import),
            *self.source.nodes(cst.ImportFrom),
        ]
        if any(_mpi(node) for node in imports):
            return True
        if any(
            s.value.strip("'\"") in {"LOCAL_RANK", "RANK", "WORLD_SIZE"} for s in self.source.nodes(cst.SimpleString)
        ):
            return True
        return self._distributed_base() or self._distributed_builder()

    def _distributed_builder(self) -> bool:
        """True where the file builds its model with a function of another project module that it
        hands the process's rank and that wraps the model in DDP (connectomics' `self.model =
        build_model(self.cfg, self.device, rank)`): the step runs on every rank."""
        for call in self.source.nodes(cst.Call):
            if not any("rank" in (last_name(a.value) or "").lower() for a in call.args if not a.star):
                continue
            found = self.resolver.definition(self.source, call.func)
            if found is None or found[0] is self.source or not isinstance(found[1], cst.FunctionDef):
                continue
            from injector.neighbours import top_level  # neighbours reads this module's helpers

            module, builder = found
            # the builder, and the functions of its module it hands the rank on to (connectomics'
            # `make_parallel(model, cfg, device, rank)`)
            functions = [builder] + [
                f
                for c in module.within(builder.body, cst.Call)
                if isinstance(c.func, cst.Name)
                and any("rank" in (last_name(a.value) or "").lower() for a in c.args if not a.star)
                and isinstance(f := top_level(module, c.func.value), cst.FunctionDef)
            ]
            if any(
                (last_name(n) or "") in ("DistributedDataParallel", "DDP")
                for f in functions
                for n in module.within(f.body, (cst.Name, cst.Attribute))
            ):
                return True
        return False

    def _distributed_base(self) -> bool:
        """True if a class of the file derives from a class of another project module that runs
        distributed code (FullSubNet's `Trainer(BaseTrainer)`, whose base wraps the model in DDP and
        runs the epoch loop): the subclass's step runs on every rank."""
        for owner in self.source.nodes(cst.ClassDef):
            for base in owner.bases:
                found = self.resolver.definition(self.source, base.value)
                if found is None or found[0] is self.source or not isinstance(found[1], cst.ClassDef):
                    continue
                module = found[0]
                if module.path in self._bases_seen:
                    continue
                above = Training(module)
                above._bases_seen = self._bases_seen | {self.source.path}
                if above.distributed:
                    return True
        return False

    @cached_property
    def mpi_only(self) -> bool:
        """True if the file's processes talk through MPI and not through torch.distributed:
        their ranks are MPI's (spinningup's `mpi_avg_grads`, mpi4py's `COMM_WORLD`)."""
        imports: list[cst.Import | cst.ImportFrom] = [
            *self.source.nodes(cst.Import),
            *self.source.nodes(cst.ImportFrom),
        ]
        if not any(_mpi(node) for node in imports):
            return False
        return (
            "torch.distributed" not in self.source.module.code and "init_process_group" not in self.source.module.code
        )

    @cached_property
    def assignments(self) -> dict[str, list[cst.Assign]]:
        """Assignments to each plain name, in source order."""
        found: dict[str, list[cst.Assign]] = {}
        for assign in self.source.nodes(cst.Assign):
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(assign)
        return found

    def loss_assignment(self, backward: LossUse) -> cst.Assign | cst.AnnAssign | None:
        """Where the backward's loss is computed: its last assignment before the backward call
        in the same function that always runs and does not merely rescale it; failing that, the
        first of the alternatives that compute it in branches (`if kind == "eps": loss = ...
        elif ...: loss = ...`: the first branch is the default one); failing that, the last
        assignment at all."""
        alternatives = self.loss_alternatives(backward)
        if alternatives:
            return alternatives[0]
        if isinstance(backward.loss, cst.Subscript):
            # the entry's own assignment first (DAC's `output["loss"] = sum(...)` after `output = {}`)
            stored = self.stored_entry(backward.loss, backward.call)
            if stored is not None:
                return stored
        name = loss_name(backward.loss)
        found = None if name is None else self.last_assignment(name, backward.call)
        if found is None and name is not None:
            found = self._walked_losses(name, backward.call)
        if found is None and isinstance(backward, ReturnedLoss) and isinstance(backward.loss, cst.Attribute):
            root = dotted(backward.loss.value)  # `return {"loss": out.loss}` after `out = self.model(**batch)`
            found = self.last_assignment(root, backward.call) if root is not None else None
        if found is None and isinstance(backward.loss, cst.Subscript):
            found = self.stored_entry(backward.loss, backward.call)
        return found

    def _walked_losses(self, name: str, use: cst.CSTNode) -> cst.Assign | cst.AnnAssign | None:
        """Where the losses a loop walks are computed, for a backward of the loop's own target
        (PyDreamer: `losses, new_state, ... = model.training_step(obs, state)`, then `for loss in
        losses: scaler.scale(loss).backward()`)."""
        loop = walking_loop(self.source, use, name)
        if loop is None or not isinstance(loop.iter, cst.Name):
            return None
        return self.last_assignment(loop.iter.value, loop)

    def stored_terms(self, backward: LossUse) -> list[cst.Assign]:
        """The assignments of the entries a backward's loss adds up (`(out[RECON] + out[GEN])
        .backward()`, or `out[LOSS] = out[RECON] + out[GEN]` before `out[LOSS].backward()`)."""
        total: cst.BaseExpression | None = backward.loss
        if isinstance(total, cst.Subscript):
            assign = self.stored_entry(total, backward.call)
            total = assign.value if assign is not None else None
        found: list[cst.Assign] = []
        if not isinstance(total, cst.BinaryOperation):
            return found
        for term in self.source.within(total, cst.Subscript):
            assign = self.stored_entry(term, backward.call)
            if assign is not None and assign not in found:
                found.append(assign)
        return found

    def stored_entry(self, loss: cst.Subscript, use: cst.CSTNode) -> cst.Assign | None:
        """The assignment of a loss kept as an entry (`engine.state.output[Keys.LOSS] = ...` for
        `engine.state.output[Keys.LOSS].backward()`): the last one before `use` in its function,
        or in a function nested in it that it calls before `use` (MONAI's trainers compute the
        forward and the loss in `_compute_pred_loss()`, called in an AMP branch and a plain one)."""
        function = self.source.function_of(use)
        if function is None:
            return None
        text, before = self.source.code(loss), self.source.span(use)[0]
        nested = {f.name.value: f for f in self.source.within(function, cst.FunctionDef)}
        called = {
            nested[call.func.value]
            for call in self.source.within(function, cst.Call)
            if isinstance(call.func, cst.Name) and call.func.value in nested and self.source.span(call)[0] < before
        }
        found = None
        for assign in self.source.within(function, cst.Assign):
            if len(assign.targets) != 1 or self.source.code(assign.targets[0].target) != text:
                continue
            owner = self.source.function_of(assign)
            if owner in called or (owner is function and self.source.span(assign)[0] < before):
                found = assign
        return found

    def loss_alternatives(self, backward: LossUse) -> list[cst.Assign | cst.AnnAssign]:
        """Every assignment that may compute the backward's loss: the unconditional one that
        does not merely rescale it, or, where each branch of an `if` computes it its own way,
        one per branch (assignments that read the loss they assign are rescalings). A loss kept as
        an entry is computed where the entry is assigned (DAC's `output["loss"] = sum(...)`), not
        where its holder was made (`output = {}`)."""
        if isinstance(backward.loss, cst.Subscript):
            stored = self.stored_entry(backward.loss, backward.call)
            if stored is not None:
                return [stored]
        name = loss_name(backward.loss)
        if name is None:
            # per-task losses appended to a list that the backward sums (chemprop's
            # `loss_multi_task.append(loss)`, then `sum(loss_multi_task).backward()`): each
            # appended loss, as computed where it is appended
            return [a for name, use in self._appended_losses(backward) for a in self.alternatives(name, use)]
        return self.alternatives(name, backward.call)

    def alternatives(self, name: str, use: cst.CSTNode) -> list[cst.Assign | cst.AnnAssign]:
        """The assignments of `name` that may reach `use`: the last unconditional one that does not
        merely rescale it, else one per branch of an `if` that computes it its own way."""
        always = self.last_assignment(name, use, unconditional=True, fresh=True)
        if always is not None:
            return [always]
        function = self.source.function_of(use)
        if function is not None and name in {p.name.value for p in function.params.params}:
            return self._returned_elsewhere(name, function)
        before = self.source.span(use)[0]
        return [
            assign
            for assign in self.assigned_names.get(name, ())
            if self.source.span(assign)[0] < before
            and self.source.function_of(assign) is function
            and assign.value is not None
            and not _reads(self.source, assign.value, name)
            and self.branch_of(assign, use) is not None
        ]

    def _appended_losses(self, backward: LossUse) -> list[tuple[str, cst.Call]]:
        """For a backward of `sum(losses)` (or `torch.stack(losses).sum()`, `.mean()`): each name
        appended to that list in the backward's function before it, with its `append` call."""
        loss = backward.loss
        if (
            isinstance(loss, cst.Call)
            and isinstance(loss.func, cst.Attribute)
            and loss.func.attr.value in ("sum", "mean")
        ):
            loss = loss.func.value  # `torch.stack(losses).sum()`
        if not (
            isinstance(loss, cst.Call)
            and callee_name(loss) in ("sum", "stack", "cat")
            and loss.args
            and isinstance(loss.args[0].value, cst.Name)
        ):
            return []
        listed = loss.args[0].value.value
        return [
            (call.args[0].value.value, call)
            for call in appended_to(self.source, listed, backward.call)
            if isinstance(call.args[0].value, cst.Name)
        ]

    def _returned_elsewhere(self, name: str, function: cst.FunctionDef) -> list[cst.Assign | cst.AnnAssign]:
        """A loss handed to the backward's function as a parameter (timm's `_backward(_loss)`):
        where a sibling function of the file computes a value of that name and returns it
        (`def _forward(): ... _loss = result['loss'] ... return _loss, result`)."""
        found: list[cst.Assign | cst.AnnAssign] = []
        for assign in self.assigned_names.get(name, ()):
            owner = self.source.function_of(assign)
            if owner is None or owner is function or assign.value is None or _reads(self.source, assign.value, name):
                continue
            if any(
                isinstance(a, (cst.If, cst.For, cst.While, cst.Try))
                for a in _ancestors_within(self.source, assign, owner)
            ):
                continue
            returns = [
                r
                for r in self.source.within(owner.body, cst.Return)
                if r.value is not None and self.source.function_of(r) is owner
            ]
            if any(
                any(
                    isinstance(n, cst.Name) and n.value == name
                    for n in ([r.value] + [e.value for e in getattr(r.value, "elements", [])])
                )
                for r in returns
            ):
                found = [a for a in found if self.source.function_of(a) is not owner] + [assign]
        return found

    def branch_of(self, assign: cst.CSTNode, use: cst.CSTNode) -> cst.If | None:
        """The outermost `if` around `assign` (within its function) that does not also hold `use`."""
        function = self.source.function_of(assign)
        around_use = set(self.source.ancestors(use))
        found = None
        for ancestor in _ancestors_within(self.source, assign, function):
            if isinstance(ancestor, (cst.For, cst.While)) and ancestor not in around_use:
                return None
            if (
                isinstance(ancestor, cst.Try)
                and ancestor not in around_use
                and ancestor.body not in set(self.source.ancestors(assign))
            ):
                return None  # a handler's or a `finally`'s assignment; the `try` body's runs first
            if isinstance(ancestor, cst.If) and ancestor not in around_use:
                found = ancestor
        return found


def _added_losses(source: Source, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a sum (`rec_loss + self.beta * kl_loss`, also subtracted) that hold a
    loss-named value, weighted or not; a rescale (`loss / loss_factor`) is no sum."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        return _added_losses(source, expr.left) + _added_losses(source, expr.right)
    named = any("loss" in n.value.lower() for n in source.within(expr, cst.Name))
    return [expr] if named else []


def loss_name(expr: cst.BaseExpression) -> str | None:
    """The name a loss expression is held in: `loss` for `loss / accum`, `self.loss`, and in a
    weighted sum the operand named as a loss (`r1_loss` in `(args.r1 / 2 * r1_loss + 0 * x[0])`),
    else its first named operand."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name):
        return expr.value.value  # a loss kept in a dict: `train_loss['loss']`
    names = _operand_names(expr)
    for name in names:
        if "loss" in name.split(".")[-1].lower():
            return name
    return names[0] if names else None


def _operand_names(expr: cst.BaseExpression) -> list[str]:
    """The names and dotted names an arithmetic expression combines, left to right."""
    if isinstance(expr, (cst.Name, cst.Attribute)):
        name = dotted(expr)
        return [name] if name is not None else []
    if isinstance(expr, cst.BinaryOperation):
        return _operand_names(expr.left) + _operand_names(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _operand_names(expr.expression)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        method = expr.func.attr.value
        if method in ("mean", "sum") and not expr.args:
            return _operand_names(expr.func.value)  # reduced where it is differentiated: `loss.mean().backward()`
        if method in _SCALINGS and len(expr.args) <= 1:
            # scaled where it is differentiated: `loss_Gmain.mean().mul(gain).backward()`
            # (stylegan2-ada); the factor is no loss
            return _operand_names(expr.func.value)
    return []


# Methods that scale or cast a value: the loss they are called on stays the loss.
_SCALINGS = frozenset({"mul", "div", "multiply", "divide", "float", "double", "half"})


# Receivers of `.backward(loss)` that are frameworks, not tensors.
_BACKWARD_OWNERS = ("accel", "fabric", "engine", "strategy", "trainer", "booster", "deepspeed")


def bound_parameter(callee: cst.FunctionDef, call: cst.Call, arg: cst.Arg, bound: bool = False) -> str | None:
    """The parameter of `callee` that `arg` of `call` binds (by keyword or by position), or None.
    `bound`: the callee is a method called bound (`self.step(...)`, a bound method handed in), so
    its `self` takes no argument."""
    params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)]
    if bound and params and params[0] == "self":
        params = params[1:]
    if arg.keyword is not None:
        return arg.keyword.value if arg.keyword.value in params else None
    position = call.args.index(arg)
    return params[position] if position < len(params) else None


def _string_key(expr: cst.BaseExpression) -> str:
    """The string key of `holder["key"]`, or ""."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            return str(index.value.evaluated_value)
    return ""


def _takes_loss(receiver: cst.BaseExpression, call: cst.Call) -> bool:
    """True for `accelerator.backward(loss)`: the argument is the loss, not a gradient."""
    if not call.args or call.args[0].keyword is not None:
        return any(a.keyword is not None and a.keyword.value == "loss" for a in call.args)
    owner = (last_name(receiver) or "").lower()
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        return True
    if "loss" in (last_name(call.args[0].value) or "").lower() or "loss" in _string_key(call.args[0].value).lower():
        return True  # a tensor's `backward(gradient)` is not handed a loss (`output["adv/disc_loss"]` is one)
    return any(word in owner for word in _BACKWARD_OWNERS) or "opt" in owner


def _unscaled(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression | None]:
    """The loss and the GradScaler of `scaler.scale(loss)` (through `cast(T, ...)`), or (expr, None)."""
    if isinstance(expr, cst.Call) and callee_name(expr) == "cast" and expr.args:
        expr = expr.args[-1].value
    if (
        isinstance(expr, cst.Call)
        and callee_name(expr) == "scale"
        and expr.args
        and isinstance(expr.func, cst.Attribute)
    ):
        return expr.args[0].value, expr.func.value
    return expr, None


# Methods a base class leaves to its subclasses that run a whole training step.
ABSTRACT_STEPS = frozenset({"train_step", "training_step", "train_batch", "handle_batch"})

# The update of a two-phase optimizer: sharpness-aware minimisation and its variants (SAM, ASAM,
# GSAM) climb to a nearby worse point in `first_step`, then restore the weights and take the base
# optimizer's step in `second_step`. Without the first, the second fails (nothing to restore);
# without the second, the parameters never get an update.
TWO_PHASE_UPDATES = frozenset({"second_step"})


def computes_gradients(call: cst.Call) -> bool:
    """A method named for computing the gradients it runs the backward for (`loss.accumulate_
    gradients(...)`, `compute_grads(...)`): the forward and backward of a step, by its name."""
    if not isinstance(call.func, cst.Attribute):
        return False
    words = set(call.func.attr.value.lower().split("_"))
    return bool(words & {"accumulate", "compute", "calc"}) and bool(words & {"gradients", "grads", "grad"})


def in_optimizer_class(source: Source, node: cst.CSTNode) -> bool:
    """True inside a class that subclasses torch's `Optimizer` (`class SAM(torch.optim.Optimizer)`):
    its methods update parameters; they see no batch and no model output."""
    for ancestor in source.ancestors(node):
        if isinstance(ancestor, cst.ClassDef):
            return any((dotted(base.value) or "").rsplit(".", 1)[-1] == "Optimizer" for base in ancestor.bases)
    return False


def _sampler_module_import(source: Source, name: cst.Name) -> bool:
    """True for `distributed` in an import of `torch.utils.data.distributed` (the sampler's module)."""
    statement = source.enclosing(name, (cst.Import, cst.ImportFrom))
    if isinstance(statement, cst.Import):
        return any(dotted(alias.name) == "torch.utils.data.distributed" for alias in statement.names)
    return False


_DISTRIBUTED_NAMES = frozenset(
    {
        "distributed",
        "DistributedDataParallel",
        "DDP",
        "FSDP",
        "FullyShardedDataParallel",
        "fully_shard",
        "init_process_group",
        "get_rank",
        "get_world_size",
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "barrier",
        "Accelerator",
        "accelerator",
        "Fabric",
        "fabric",
        "xm",
        "deepspeed",
        "hvd",
        "horovod",
        "local_rank",
        "world_size",
        "no_sync",
        "ddp",
        "dist",
        # the reference scripts' helpers that all-reduce across processes
        "reduce_dict",
        "synchronize_between_processes",
        "reduce_across_processes",
    }
)


def _mpi(node: cst.Import | cst.ImportFrom) -> bool:
    """True for an import of MPI (`from mpi4py import MPI`, a project's `mpi_tools` helpers):
    its processes average gradients or values with collectives every rank must enter."""
    names = [dotted(node.module)] if isinstance(node, cst.ImportFrom) and node.module is not None else []
    if not isinstance(node.names, cst.ImportStar):
        names += [dotted(alias.name) for alias in node.names]
    words = {w for n in names if n for part in n.split(".") for w in part.lower().split("_")}
    return bool(words & {"mpi", "mpi4py"})


def _in_device_string(source: Source, name: cst.Name) -> bool:
    """True for a name formatted into a device string: `"cuda:{}".format(cfg.local_rank)`,
    `f"cuda:{args.local_rank}"`: a device index, which a one-process run has too."""
    for ancestor in source.ancestors(name):
        if isinstance(ancestor, cst.FormattedString):
            return source.code(ancestor).strip("fF'\"").startswith("cuda:")
        if isinstance(ancestor, cst.Call) and callee_name(ancestor) == "format":
            func = ancestor.func
            return (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.SimpleString)
                and str(func.value.evaluated_value).startswith("cuda:")
            )
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _distributed_dist(source: Source, name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """True where `dist` is torch.distributed: imported as it (`import torch.distributed as
    dist`), or the receiver of one of its functions (`dist.all_reduce(...)`, `dist.get_rank()`)."""
    if isinstance(parent, cst.AsName):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is name:
        return parent.attr.value in _DIST_FUNCTIONS
    return False


_DIST_FUNCTIONS = frozenset(
    {
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "reduce_scatter",
        "barrier",
        "monitored_barrier",
        "get_rank",
        "get_world_size",
        "init_process_group",
        "destroy_process_group",
        "is_initialized",
        "is_available",
        "new_group",
        "ReduceOp",
        "send",
        "recv",
    }
)


def subclasses(source: Source, owner: cst.ClassDef) -> set[cst.ClassDef]:
    """The classes of this file that derive from `owner`, directly or not (by base name)."""
    found: set[cst.ClassDef] = set()
    names = {owner.name.value}
    grew = True
    while grew:
        grew = False
        for cls in source.nodes(cst.ClassDef):
            if cls in found or cls is owner:
                continue
            if any(last_name(base.value) in names for base in cls.bases):
                found.add(cls)
                names.add(cls.name.value)
                grew = True
    return found


def _once_per_step(source: Source, loop: cst.For | cst.While) -> bool:
    """True for a loop a step runs through once as a whole, not once per batch: over the
    optimizers (`for optimizer in self.state.optimizers:`), or a `while True:` a step retries in
    until it succeeds (composer's out-of-memory retry, left by `break` or `return`) and that takes
    no batch of its own; or its flag-driven form, `while not done:` whose body ends by setting
    `done = True` (DeBERTa's trainer retries a step its fp16 optimizer skipped on overflow)."""
    if isinstance(loop, cst.For):
        return "optim" in (last_name(loop.iter) or "").lower()
    if not (isinstance(loop.test, cst.Name) and loop.test.value == "True") and not _retried_until_flag(loop):
        return False
    return not any(callee_name(c) == "next" for c in source.within(loop.body, cst.Call))


def _retried_until_flag(loop: cst.While) -> bool:
    """True for `while not done:` whose body, at its own level, sets `done = True`."""
    test = loop.test
    if not (
        isinstance(test, cst.UnaryOperation)
        and isinstance(test.operator, cst.Not)
        and isinstance(test.expression, cst.Name)
    ):
        return False
    flag = test.expression.value
    return isinstance(loop.body, cst.IndentedBlock) and any(
        isinstance(line, cst.SimpleStatementLine)
        and any(
            isinstance(s, cst.Assign)
            and isinstance(s.value, cst.Name)
            and s.value.value == "True"
            and any(isinstance(t.target, cst.Name) and t.target.value == flag for t in s.targets)
            for s in line.body
        )
        for line in loop.body.body
    )


def _nested_in(source: Source, node: cst.CSTNode, outer: cst.CSTNode, kinds: tuple[type, ...]) -> bool:
    """True if an ancestor of `node` below `outer` is one of `kinds`."""
    for ancestor in source.ancestors(node):
        if ancestor is outer:
            return False
        if isinstance(ancestor, kinds):
            return True
    return False


def bound_values(source: Source, function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values `function` assigns to `name`, each side of a conditional expression on its own
    (`sampler_cls = A if distributed else B`: `A` and `B`)."""
    values = [
        a.value
        for a in source.within(function.body, cst.Assign)
        if any(isinstance(t.target, cst.Name) and t.target.value == name for t in a.targets)
    ]
    while any(isinstance(v, cst.IfExp) for v in values):
        values = [side for v in values for side in ((v.body, v.orelse) if isinstance(v, cst.IfExp) else (v,))]
    return values


def handed_the_parameters(source: Source, call: cst.Call) -> bool:
    """True for a call, as a statement of its own, handed only the parameters, by name (`params`,
    `model.parameters()`): Pyro's `self.optim(params)` and `zero_grads(params)`."""
    return (
        len(call.args) == 1
        and call.args[0].keyword is None
        and "param" in source.code(call.args[0].value).lower()
        and isinstance(source.parent(call), cst.Expr)
    )


def enclosing_class(source: Source, node: cst.CSTNode) -> cst.ClassDef | None:
    for ancestor in source.ancestors(node):
        if isinstance(ancestor, cst.ClassDef):
            return ancestor
    return None


NO_GRAD_CONTEXTS = frozenset({"no_grad", "inference_mode"})


def disables_grad(expr: cst.BaseExpression, source: Source | None = None) -> bool:
    """True for `torch.no_grad()`, `torch.inference_mode()` (not `inference_mode(False)`), and the
    bare decorator forms; with the file's `source`, also a call of a function of the file that
    returns `torch.no_grad()` (ENAS' `_get_no_grad_ctx_mgr()`, a shim for old torch versions)."""
    if isinstance(expr, cst.Call):
        if source is not None and isinstance(expr.func, cst.Name) and expr.func.value in no_grad_helpers(source):
            return True
        if last_name(expr.func) not in NO_GRAD_CONTEXTS:
            return False
        mode = argument(expr, "mode", 0)
        return mode is None or not (isinstance(mode.value, cst.Name) and mode.value.value == "False")
    return last_name(expr) in NO_GRAD_CONTEXTS


# contexts that change nothing, which a version shim returns where torch has no `no_grad`
_NO_OP_CONTEXTS = frozenset({"suppress", "nullcontext", "no_context", "ExitStack"})


def no_grad_helpers(source: Source) -> frozenset[str]:
    """The module-level functions of the file that return `torch.no_grad()` (or
    `inference_mode()`), and otherwise only a context that does nothing: `def
    _get_no_grad_ctx_mgr(): if torch_version >= 0.4: return torch.no_grad(); return
    contextlib.suppress()`."""
    found = getattr(source, "_no_grad_helpers", None)
    if found is None:
        names = set()
        for statement in source.module.body:
            if not isinstance(statement, cst.FunctionDef) or statement.params.params:
                continue
            returned = [r.value for r in source.within(statement.body, cst.Return) if r.value is not None]
            if any(disables_grad(v) for v in returned) and all(
                disables_grad(v) or (isinstance(v, cst.Call) and last_name(v.func) in _NO_OP_CONTEXTS) for v in returned
            ):
                names.add(statement.name.value)
        found = frozenset(names)
        source._no_grad_helpers = found  # type: ignore[attr-defined]
    return found


# The steps a LightningModule's trainer runs under `no_grad` (inference mode).
LIGHTNING_EVALUATION_STEPS = frozenset({"validation_step", "test_step", "predict_step"})


def _lightning_evaluation(source: Source, function: cst.FunctionDef) -> bool:
    """True for `validation_step`/`test_step`/`predict_step` of a LightningModule subclass."""
    if function.name.value not in LIGHTNING_EVALUATION_STEPS:
        return False
    owner = source.parent(source.parent(function) or function)
    return isinstance(owner, cst.ClassDef) and any(
        (last_name(base.value) or "").endswith("LightningModule") for base in owner.bases
    )


def appended_to(source: Source, name: str, use: cst.CSTNode) -> list[cst.Call]:
    """The `name.append(x)` calls (one argument each) in `use`'s function (or the script) before it."""
    function = source.function_of(use)
    before = source.span(use)[0]
    return [
        call
        for call in source.within(function.body if function is not None else source.module, cst.Call)
        if isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and dotted(call.func.value) == name
        and len(call.args) == 1
        and source.span(call)[0] < before
        and source.function_of(call) is function
    ]


def under_no_grad(source: Source, node: cst.CSTNode, depth: int = 2) -> bool:
    """True if `node` runs inside a `with torch.no_grad()` block or a function decorated so, or in
    a module-level function or a method that the file calls only from such places (a loss helper
    only validation uses)."""
    for ancestor in source.ancestors(node):
        if isinstance(ancestor, cst.With) and any(disables_grad(i.item, source) for i in ancestor.items):
            return True
        if isinstance(ancestor, cst.FunctionDef) and any(disables_grad(d.decorator) for d in ancestor.decorators):
            return True
        if isinstance(ancestor, cst.FunctionDef) and _lightning_evaluation(source, ancestor):
            return True
    function = source.function_of(node)
    if depth == 0 or function is None:
        return False
    owner = source.parent(source.parent(function) or function)
    if isinstance(source.parent(function), cst.Module):
        calls = [
            call
            for call in source.nodes(cst.Call)
            if isinstance(call.func, cst.Name) and call.func.value == function.name.value
        ]
    elif isinstance(owner, cst.ClassDef):
        # A method the class (or a subclass of the file: nanotron's pipeline engines call their
        # base's `forward` to train) calls (`self._validation_loss(epoch)`) only from such places.
        classes = [owner, *subclasses(source, owner)]
        calls = [
            call
            for cls in classes
            for call in source.within(cls, cst.Call)
            if isinstance(call.func, cst.Attribute)
            and dotted(call.func.value) == "self"
            and call.func.attr.value == function.name.value
        ]
    else:
        return False
    return bool(calls) and all(under_no_grad(source, call, depth - 1) for call in calls)


MODEL_WORDS = (
    "model",
    "net",
    "module",
    "encoder",
    "decoder",
    "generator",
    "discriminator",
    "backbone",
    "transformer",
    "policy",
    "critic",
    "actor",
)
FORWARD_METHODS = frozenset(
    {"forward", "generate", "validation_step", "test_step", "predict_step", "eval_step", "evaluate", "predict"}
    | {"val_step", "valid_step"}  # mmengine's and others' spelling of the validation step
)
# an RL policy's methods that run its layers on a batch to learn from (SB3's and habitat's spellings)
POLICY_FORWARDS = frozenset({"evaluate_actions", "get_action_and_value"})
# torch's functions that run the modules they are handed (wavenet_vocoder's DataParallel workaround)
PARALLEL_FORWARDS = frozenset({"parallel_apply", "data_parallel"})
# nn.Module's own methods: calling them runs no forward pass.
MODULE_METHODS = frozenset(
    {"parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children"}
    | {"state_dict", "load_state_dict", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train"}
    | {"eval", "zero_grad", "apply", "requires_grad_", "register_buffer", "register_forward_hook", "share_memory"}
)
EVALUATION_WORDS = ("eval", "valid", "test", "estimate", "predict", "infer", "sample", "generate")
# A whole word of a name that says it serves evaluation: `val`, `validate`, `test`, `eval`,
# `evaluator`, `predict`, `inference`, alone or run into what it names (`valset`, `testloader`);
# `value_loader` or `interval_sampler` serve training.
EVALUATION_WORD = re.compile(
    r"(?:val|valid|validate|validation|test|testing|eval|evaluate|evaluation|evaluator|predict|prediction|inference)"
    r"(?:set|data|dataset|loader|dl|ds|iter|iterator|sampler)?s?"
)


_ISINSTANCE = re.compile(r"isinstance\(\s*([\w.]+)\s*,\s*([\w.]+)\s*\)")


def branch_sides(source: Source, node: cst.CSTNode) -> dict[str, bool]:
    """The `if` tests around `node` in its function, by their text, and whether it runs when each
    is true (`if 'CTC' in opt.Prediction: ... else: criterion = CrossEntropyLoss()` -> False)."""
    sides: dict[str, bool] = {}
    child = node
    for ancestor in source.ancestors(node):
        if isinstance(ancestor, cst.If):
            sides.setdefault(source.code(ancestor.test), child is ancestor.body)
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            break
        child = ancestor
    return sides


def names_an_objective(name: str) -> bool:
    """True for a value named as an objective to minimise (ElegantRL's `obj_surrogate`,
    `obj_entropy`, an `actor_objective`): a loss term by another name."""
    lowered = name.lower()
    return "objective" in lowered or lowered.startswith("obj_") or lowered.endswith("_obj")


def names_evaluation(text: str) -> bool:
    """True if a word of `text` (split at anything but letters) is an evaluation word."""
    return any(EVALUATION_WORD.fullmatch(word) for word in re.split(r"[^a-z]+", text.lower()) if word)


# A GAN's networks by the field's convention: `G(z)`, `D(x)`, `G_ema(z)`, `which_G(z)`.
_GAN_NET = re.compile(r"(?:\w+_)?[gd](?:_ema)?")
# A model's methods that make its initial recurrent state (`rnn.initHidden()`, `init_hidden(bsz)`,
# `begin_state(...)`): zeros, not a forward pass.
STATE_INITIALISERS = ("init", "reset", "zero", "begin_state")


def _accelerator_accumulate(expr: cst.BaseExpression) -> bool:
    """`accelerator.accumulate(model)`, `self.accelerator.accumulate(self.net)`."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "accumulate"
        and "accelerator" in (last_name(expr.func.value) or "").lower()
    )


def _builds_a_class(func: cst.BaseExpression) -> bool:
    """True for a callee named as a class (`ModelParams()`, `models.ResNet(cfg)`): a call that
    builds an object, not a model's forward pass."""
    name = last_name(func) or ""
    return name[:1].isupper() and any(c.islower() for c in name)


def _result_dropped(source: Source, call: cst.Call, unread: bool) -> bool:
    """True where what `call` returns is dropped: the call alone on its line, or bound to a name its
    function never reads (DCRNN's `output = self.dcrnn_model(x)` then `break`, a forward run once so
    that lazily made weights exist)."""
    parent = source.parent(call)
    if isinstance(parent, cst.Expr):
        return True
    if not unread or not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return False
    target, function = parent.targets[0].target, source.function_of(parent)
    if not isinstance(target, cst.Name) or function is None:
        return False
    return not any(n.value == target.value and not bound_here(source, n) for n in source.within(function, cst.Name))


def runs_model(
    source: Source,
    training: Training,
    node: cst.CSTNode,
    depth: int = 2,
    used: bool = False,
    generate: bool = True,
    unread_dropped: bool = False,
) -> bool:
    """True if running `node` runs a model forward pass: `model(x)`, `self.net(x)`, `self(x)`,
    `model.generate(...)`, `model.validation_step(...)`, or a function of this file that does.

    `used`: only forward passes whose result is used count (`model(images)` alone on its line, as a
    throughput benchmark runs it, does not). `generate`: whether `x.generate(...)` counts.
    `unread_dropped`: with `used`, a result bound to a name its function never reads is dropped too
    (no graph outlives it, though the forward itself still ran in whatever mode the model was in)."""
    for call in source.within(node, cst.Call):
        func = call.func
        name = (last_name(func) or "").lower()
        if isinstance(func, cst.Attribute) and func.attr.value in FORWARD_METHODS:
            if func.attr.value == "generate" and not generate:
                continue
            return True
        if (
            isinstance(func, cst.Attribute)
            and (func.attr.value.startswith("forward_") or func.attr.value in POLICY_FORWARDS)
            and names_a_model(func.value)
        ):
            return True  # habitat's `self.actor_critic.evaluate_actions(...)`, `self.model.forward_train(x)`
        if name in PARALLEL_FORWARDS:
            return True  # `torch.nn.parallel.parallel_apply(replicas, inputs)` runs each replica
        if (
            isinstance(func, (cst.Name, cst.Attribute))
            and "forward" in name
            and name != "forward"
            and not training.called_functions(call)
            and _result_dropped(source, call, unread_dropped)
            and any(names_a_model(a.value) for a in call.args if not a.star)
        ):
            # an imported forward helper handed the model, storing what it returns itself
            # (torchbearer's `_forward_with_exceptions(torchbearer.X, torchbearer.MODEL, ...)`)
            return True
        if used and _result_dropped(source, call, unread_dropped) and not training.called_functions(call):
            continue  # `model(images)` alone on its line, or bound to a name never read: its result is dropped
        if (
            isinstance(func, (cst.Name, cst.Attribute, cst.Subscript))
            and (
                name == "self"
                or (any(word in name for word in MODEL_WORDS) and not _builds_a_class(func))
                or _GAN_NET.fullmatch(name)
            )
            and training.role(func) is None
            and not name.startswith(("get_", "set_", "load", "save"))
        ):
            return True
        if (
            isinstance(func, cst.Attribute)
            and dotted(func.value) == "self"
            and (training.constructors.get(dotted(func) or "", "") or "a")[0].isupper()
            and not _parameter_free(training.constructors.get(dotted(func) or "", ""))
            and "transform" not in name  # a data transform (TorchMD-Net's `self.data_transform(batch)`)
            and training.role(func) is None
        ):
            return True  # `self.gen(z)` after `self.gen = Generator()`: a submodule's forward
        if (training.role(func) == "loss-module" or "loss" in name or "criterion" in name) and any(
            any(word in (last_name(a.value) or "").lower() for word in MODEL_WORDS) for a in call.args
        ):
            return True  # `criterion(model, sample)`: a criterion that runs the model it is handed
        if (
            isinstance(func, (cst.Name, cst.Attribute))
            and any(word in name for word in (*EVALUATION_WORDS, "forward"))
            and not training.called_functions(call)
            and any(names_a_model(a.value) for a in call.args if not a.star)
        ):
            # `validation(model, loader)`, `batch_forward(model, batch)`, jiant's
            # `wrap_jiant_forward(jiant_model=self.jiant_model, batch=batch, ...)`: an imported
            # function handed the model, by position or keyword
            return True
        if (
            isinstance(func, (cst.Name, cst.Attribute))
            and training.role(func) is None
            and dotted(func) in training.moded
        ):
            return True  # `g_ema(z)` after `g_ema.eval()`: what the file switches to eval mode is a model
        if isinstance(func, (cst.Name, cst.Attribute)) and dotted(func) in training.optimized:
            return True  # `agent(obs)` after `Adam(agent.parameters())`: what an optimizer trains is a model
        if (
            isinstance(func, cst.Attribute)
            and dotted(func.value) in training.optimized
            and func.attr.value not in MODULE_METHODS
            and not func.attr.value.lower().startswith(STATE_INITIALISERS)
        ):
            return True  # `agent.get_action_and_value(obs)`: a method of that model runs its layers
        if depth > 0 and any(
            runs_model(source, training, f.body, depth - 1, used, generate, unread_dropped)
            for f in training.called_functions(call)
        ):
            return True
        if isinstance(func, cst.Name) and _project_function_runs_model(source, training, call):
            return True  # DDIM's `generalized_steps(x, seq, model, betas)`: a sampler of another module
    return False


_PARAMETER_FREE = re.compile(
    r"(Constant|Zero|Reflection|Replication|Circular)Pad[123]d|(Adaptive)?(Max|Avg)Pool[123]d|Dropout[123]?d?"
    r"|Flatten|Unflatten|Identity|Upsample|PixelShuffle|PixelUnshuffle"
)


def _parameter_free(constructor: str) -> bool:
    """True for a torch.nn layer with no parameters (`nn.ConstantPad1d`, `nn.MaxPool2d`): calling
    it pads or pools its input, it is no model's forward (neuralforecast's `self.padder_train`)."""
    return bool(_PARAMETER_FREE.fullmatch(constructor))


def imported_name(source: Source, name: str) -> bool:
    """True for a name an import binds (CMGAN's `discriminator` module, whose `batch_pesq` is
    a plain function; ReChorus' `utils`, whose `batch_to_gpu` moves a batch)."""
    imports: list[cst.Import | cst.ImportFrom] = [*source.nodes(cst.Import), *source.nodes(cst.ImportFrom)]
    for node in imports:
        names = () if isinstance(node.names, cst.ImportStar) else node.names
        for alias in names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if (dotted(bound) or "").split(".")[0] == name:
                return True
    return False


def names_a_model(value: cst.BaseExpression) -> bool:
    """True for a value named as a model (`model`, `self.jiant_model`), not as its settings
    (`model_forward_kwargs`, `model_cfg`, `model_name`)."""
    name = (last_name(value) or "").lower()
    return any(word in name for word in MODEL_WORDS) and not name.endswith(_SETTING_SUFFIXES)


_SETTING_SUFFIXES = ("kwargs", "args", "_kw", "config", "cfg", "_name", "_path", "_dir", "_type", "_id")


def _project_function_runs_model(source: Source, training: Training, call: cst.Call) -> bool:
    """True for a call of a function another module of the project defines, handed a model
    (by position) that its definition calls: a sampler or an evaluation loop of the project."""
    handed = [
        index
        for index, arg in enumerate(call.args)
        if arg.keyword is None
        and not arg.star
        and any(word in (last_name(arg.value) or "").lower() for word in MODEL_WORDS)
    ]
    if not handed or getattr(source, "neighbours", None) is None or training.called_functions(call):
        return False
    found = training.resolver.definition(source, call.func)
    if found is None or found[0] is source:
        return False
    module, function = found
    if not isinstance(function, cst.FunctionDef):
        return False
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    names = {params[i] for i in handed if i < len(params)}
    return any(
        isinstance(inner.func, cst.Name) and inner.func.value in names for inner in module.within(function, cst.Call)
    )


def is_evaluation(source: Source, training: Training, node: cst.CSTNode) -> bool:
    """True if `node` (a `no_grad` block, a decorated function) evaluates a model: it runs a forward
    pass whose result it uses (a result bound to a name never read is not used: DCRNN's forward run
    once so that lazily made weights exist). A metrics helper or a copy of weights under `no_grad` is not
    evaluation, nor is a throughput benchmark that drops what the model returns, nor a block
    that only calls a `generate` method: libraries' generate methods (Hugging Face's, fairseq's
    sequence generators, nanoGPT's) switch autograd off themselves, unless this file defines a
    `generate` that does not."""
    own = training.functions.get("generate", ())
    generate = any(not any(disables_grad(d.decorator) for d in f.decorators) for f in own)
    return (
        runs_model(source, training, node, used=True, generate=generate, unread_dropped=True)
        or _runs_over_evaluation_data(source, node)
        or _runs_a_handed_step(source, node)
    )


# The words of a name that says it holds data to run over (`val_data`, `valid_loader`, `testset`).
_DATA_WORD = re.compile(
    r"(?:val|valid|validation|test|eval)?(?:set|data|dataset|loader|dataloader|dl|ds|iter|iterator|batches)s?"
)


def names_data(expr: cst.BaseExpression) -> bool:
    """True for a name that says it holds data (`dataset_w`, `train_loader`, `val_set`): its own
    `train()`/`eval()` (CogDL's data wrapper choosing a graph's edge set) is no model's mode."""
    name = (last_name(expr) or "").lower()
    return any(_DATA_WORD.fullmatch(word) for word in re.split(r"[^a-z]+", name) if word) and not any(
        word in name for word in ("model", "net", "module")
    )


def _runs_a_handed_step(source: Source, node: cst.CSTNode) -> bool:
    """True where a function named for evaluation calls a callable it was handed, with the model,
    and keeps what it returns (CogDL's `distributed_test(model_w, loader, rank, fn)`: `result =
    fn(model_w, loader, _device)`, fn being the validation or the test step), or one the object
    holds (PyTorch Connectomics' test(): `output = self.augmentor(self.model, volume)`, a test-time
    augmentor running the model on flipped copies), not a method of the file."""
    function = source.function_of(node)
    if function is None or not names_evaluation(function.name.value):
        return False
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params)}
    methods = {f.name.value for f in source.nodes(cst.FunctionDef)}
    return any(
        (
            (isinstance(call.func, cst.Name) and call.func.value in params)
            or (
                isinstance(call.func, cst.Attribute)
                and dotted(call.func.value) == "self"
                and call.func.attr.value not in methods
            )
        )
        and not isinstance(source.parent(call), cst.Expr)
        and any(
            a.keyword is None and any(word in (last_name(a.value) or "").lower() for word in MODEL_WORDS)
            for a in call.args
        )
        for call in source.within(node, cst.Call)
    )


def _runs_over_evaluation_data(source: Source, node: cst.CSTNode) -> bool:
    """True if `node` calls an evaluation-named callable over evaluation data and uses what it
    returns (torchkeras's `val_metrics = val_epoch_runner(val_data)`): a runner object or helper
    that runs the model it was built with. Handed predictions or labels, not data to run over, it
    only scores them (`validation(predictions, labels)`)."""
    for call in source.within(node, cst.Call):
        if isinstance(source.parent(call), cst.Expr) or not names_evaluation(last_name(call.func) or ""):
            continue
        for arg in call.args:
            name = (last_name(arg.value) or "").lower()
            if (
                arg.keyword is None
                and names_evaluation(name)
                and any(_DATA_WORD.fullmatch(word) for word in re.split(r"[^a-z]+", name) if word)
            ):
                return True
    return False


def only_times_model(source: Source, training: Training, node: cst.CSTNode) -> bool:
    """True if `node` runs the model but drops every result (a throughput benchmark): no number
    it makes depends on the model's mode or on autograd."""
    return runs_model(source, training, node) and not runs_model(source, training, node, used=True)


def is_abstract(function: cst.FunctionDef) -> bool:
    """True for a method declared `@abstractmethod`, or whose body only raises
    NotImplementedError (after any docstring)."""
    if any((dotted(d.decorator) or "").endswith("abstractmethod") for d in function.decorators):
        return True
    body = [
        s
        for s in function.body.body
        if not (
            isinstance(s, cst.SimpleStatementLine)
            and all(isinstance(b, cst.Expr) and isinstance(b.value, cst.SimpleString) for b in s.body)
        )
    ]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    statement = body[0].body[0]
    if not isinstance(statement, cst.Raise) or statement.exc is None:
        return False
    raised = statement.exc.func if isinstance(statement.exc, cst.Call) else statement.exc
    return isinstance(raised, cst.Name) and raised.value == "NotImplementedError"


def sets_mode(call: cst.Call, trained: Collection[str] = ()) -> bool:
    """True for `module.train(...)` setting a mode, not `trainer.train(epochs)` running a training:
    a module's `train` takes one argument, `mode` (`self.train(print_freq=10, open_layers=...)`
    is a trainer's own epoch method). A criterion's counts only where it is among `trained`."""
    if not isinstance(call.func, cst.Attribute) or callee_name(call) != "train":
        return False
    if len(call.args) > 1 or any(a.star or (a.keyword is not None and a.keyword.value != "mode") for a in call.args):
        return False
    owner = (last_name(call.func.value) or "").lower()
    return (
        not any(word in owner for word in ("trainer", "recipe", "runner", "engine", "experiment"))
        and not is_criterion(call.func.value, trained)
        and not keeps_records(call.func.value)
    )


# Names the run's settings go by (`args.lr`, `config["LOSS"]["WEIGHT"]`, `opt.mask`).
SETTINGS_ROOTS = frozenset({"config", "cfg", "conf", "args", "opt", "opts", "hparams", "hyp", "settings", "flags"})


def read_from_settings(expr: cst.BaseExpression) -> bool:
    """True for a value read from the run's settings through attributes and entries."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value.lower() in SETTINGS_ROOTS


# What logs or measures a run: its `train()`/`eval()` switch where its records go, not a module's mode
# (visloc_retrieval's `self.writer.train()` before each epoch's metrics).
_RECORD_KEEPERS = ("writer", "logger", "meter", "timer", "tracker", "profiler", "recorder", "monitor")


def keeps_records(expr: cst.BaseExpression) -> bool:
    """True for a writer, logger, meter or tracker by its name: no module switches mode there."""
    name = (last_name(expr) or "").lower()
    return any(word in name for word in _RECORD_KEEPERS)


def grad_switched_loops(source: Source, training: Training) -> list[tuple[cst.With, cst.BaseExpression]]:
    """`with torch.set_grad_enabled(flag):` blocks around a batch loop, with the flag (a value,
    not a literal): training with the flag on, evaluation with it off."""
    found = []
    for block in source.nodes(cst.With):
        start, end = source.span(block)
        if not any(start <= source.span(loop)[0] < end for loop in training.training_loops):
            continue
        for item in block.items:
            call = item.item
            if isinstance(call, cst.Call) and last_name(call.func) == "set_grad_enabled":
                mode = argument(call, "mode", 0)
                if mode is not None and not is_literal_bool(mode.value):
                    found.append((block, mode.value))
    return found


def mode_by_method_name(call: cst.Call) -> cst.Arg | None:
    """The `mode=` of a call that applies a module's `train` by its name to a value (catalyst's
    `maybe_recursive_call(self.model, "train", mode=self.is_train_loader)`)."""
    if not any(
        a.keyword is None and isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == "train"
        for a in call.args
    ):
        return None
    mode = argument(call, "mode", None)
    return None if mode is None or is_literal_bool(mode.value) else mode


def is_criterion(expr: cst.BaseExpression, trained: Collection[str] = ()) -> bool:
    """True for a loss module by its name (`criterion`, `loss_fn`, `self.dino_loss`): switching its
    mode changes nothing unless it holds dropout or batch-norm, which criteria do not. A loss
    model (Sentence Transformers' `loss_model`) wraps the model it trains: no criterion. Nor is
    one among `trained` (`Training.trained_criteria`: its parameters are trained)."""
    name = (last_name(expr) or "").lower()
    return ("criterion" in name or "loss" in name) and "model" not in name and (last_name(expr) or "") not in trained


def is_literal_bool(expr: cst.BaseExpression, value: bool | None = None) -> bool:
    """True for `True`/`False` (or the one given)."""
    names = {"True", "False"} if value is None else {str(value)}
    return isinstance(expr, cst.Name) and expr.value in names


def mode_helpers(source: Source, training: Training) -> dict[cst.FunctionDef, int]:
    """Functions of the file that set train/eval mode from a parameter (`def _set_training(self,
    flag): self.model.train(flag)`), with the position of that parameter among the call's
    arguments (`self` not counted)."""
    found = {}
    for function in source.nodes(cst.FunctionDef):
        params = [p.name.value for p in function.params.params]
        if params and params[0] in {"self", "cls"}:
            params = params[1:]
        for call in source.within(function.body, cst.Call):
            if not sets_mode(call):
                continue  # `trainer.train(total_epochs)` runs a training, it sets no mode
            mode = argument(call, "mode", 0)
            if mode is not None and isinstance(mode.value, cst.Name) and mode.value.value in params:
                found[function] = params.index(mode.value.value)
    return found


def helper_owned(source: Source, training: Training, call: cst.Call) -> bool:
    """True if `call` is the `.train(flag)` inside a mode helper that the file calls with literal
    modes: its call sites, not its body, are where a mode is set or missed; or a call of the
    class's own `train` method that takes no mode (see `own_train_method`)."""
    function = source.function_of(call)
    if own_train_method(source, call):
        return True
    return function in mode_helpers(source, training) and bool(
        mode_calls(source, training, True) or mode_calls(source, training, False)
    )


def own_train_method(source: Source, call: cst.Call) -> bool:
    """True for `self.train(i)` where the class around it defines its own `train` whose parameter
    is no mode (pytorch_sound's `Trainer.train(self, step)`): it runs a training step."""
    if not (
        isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self" and callee_name(call) == "train"
    ):
        return False
    owner = enclosing_class(source, call)
    body = owner.body.body if owner is not None and isinstance(owner.body, cst.IndentedBlock) else ()
    method = next((m for m in body if isinstance(m, cst.FunctionDef) and m.name.value == "train"), None)
    params = [p.name.value for p in method.params.params if p.name.value != "self"] if method is not None else []
    return bool(params) and params[0] != "mode"


# The words a function named for the mode it sets is made of (`set_to_train`, `set_eval_mode`).
MODE_HELPER_WORDS = frozenset(
    {"set", "switch", "to", "train", "training", "eval", "evaluation", "mode", "model", "models", "all"}
)


def fixed_mode_calls(source: Source, training: Training, to_train: bool) -> list[cst.Expr]:
    """Statements that call a function of this file named for the one mode it sets
    (`self.set_to_train()`, `switch_to_eval(model)`): it trains nothing and switches modules to
    that mode (`for v in self.models.values(): v.train()`)."""
    word = "train" if to_train else "eval"
    helpers = set()
    for function in source.nodes(cst.FunctionDef):
        words = set(function.name.value.lower().strip("_").split("_"))
        if not _own_mode_method(source, function, word) and (
            not words & {word, f"{word}ing", f"{word}uation"}
            or not words & {"set", "switch", "to", "mode"}
            or not words <= MODE_HELPER_WORDS
        ):
            continue  # `train(loader, model)` runs an epoch; `init_training_settings()` sets more
        if training.training_calls(function.body) or training.steps_within(function.body):
            continue
        if any(_switches_to(call, to_train) for call in source.within(function.body, cst.Call)):
            helpers.add(function.name.value)
    found = []
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if not isinstance(call, cst.Call) or not source.is_reachable(statement):
            continue
        func = call.func
        if (isinstance(func, cst.Name) and func.value in helpers) or (
            isinstance(func, cst.Attribute) and dotted(func.value) == "self" and func.attr.value in helpers
        ):
            found.append(statement)
    return found


def _own_mode_method(source: Source, function: cst.FunctionDef, word: str) -> bool:
    """True for a method named `train` or `eval`, taking nothing but `self`, of a class that is no
    module (torchbearer's `Trial.train()`, which switches the model it holds): its calls are
    mode switches, as a module's own are."""
    owner = enclosing_class(source, function)
    if function.name.value != word or owner is None:
        return False
    if [p.name.value for p in function.params.params] != ["self"]:
        return False
    return not any("Module" in (last_name(base.value) or "") for base in owner.bases)


def mode_flag_assignments(source: Source, to_train: bool) -> list[cst.SimpleStatementLine]:
    """Statements that set a mode by assigning the flag of a class whose `training` property
    setter the file defines (`self.training = False` on Stanza's coreference model, whose setter
    switches every module it holds): not in a constructor (the initial state), nor in an override of
    `nn.Module.train(mode)` (the flag it sets is that method's own business)."""
    if not any(
        f.name.value == "training" and any(dotted(d.decorator) == "training.setter" for d in f.decorators)
        for f in source.nodes(cst.FunctionDef)
    ):
        # on a plain module the flag is that module's own (RetinaNet's `retinanet.training = True`
        # flips a DataParallel wrapper's flag, not its children's): only a setter of the file's
        # that switches the modules makes the assignment a switch
        return []
    found = []
    for line in source.nodes(cst.SimpleStatementLine):
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
            continue
        assign = line.body[0]
        if not (
            len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Attribute)
            and assign.targets[0].target.attr.value == "training"
            and is_literal_bool(assign.value, to_train)
            and source.is_reachable(line)
        ):
            continue
        function = source.function_of(line)
        if function is not None and (
            function.name.value in ("__init__", "__post_init__")
            or (function.name.value == "train" and any(p.name.value == "mode" for p in function.params.params))
        ):
            continue
        found.append(line)
    return found


def _switches_to(call: cst.Call, to_train: bool) -> bool:
    """`m.train()` / `m.train(True)` (to_train), or `m.eval()` / `m.train(False)`."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "eval" and not call.args:
        return not to_train
    if not sets_mode(call):
        return False
    mode = argument(call, "mode", 0)
    if mode is None:
        return to_train
    return is_literal_bool(mode.value, to_train)


def mode_calls(source: Source, training: Training, value: bool) -> list[cst.Expr]:
    """Statements that call a mode helper of this file with the literal `value`."""
    return [statement for statement, arg in _mode_helper_calls(source, training) if is_literal_bool(arg.value, value)]


def mode_calls_by_value(source: Source, training: Training) -> list[tuple[cst.Call, cst.Arg]]:
    """Calls of a mode helper of this file whose mode is a value (`self._set_training(training)`),
    with that argument."""
    return [
        (statement.value, arg)  # type: ignore[misc]
        for statement, arg in _mode_helper_calls(source, training)
        if not is_literal_bool(arg.value)
    ]


def _mode_helper_calls(source: Source, training: Training) -> list[tuple[cst.Expr, cst.Arg]]:
    """Reachable statements that call a mode helper of this file, with the mode argument."""
    helpers = mode_helpers(source, training)
    found = []
    for statement in source.nodes(cst.Expr):
        call = statement.value
        if not isinstance(call, cst.Call) or not source.is_reachable(statement):
            continue
        for function in training.called_functions(call):
            if function in helpers:
                name = next(
                    (
                        p.name.value
                        for i, p in enumerate(
                            [q for q in function.params.params if q.name.value not in {"self", "cls"}]
                        )
                        if i == helpers[function]
                    ),
                    None,
                )
                arg = argument(call, name or "", helpers[function])
                if arg is not None:
                    found.append((statement, arg))
                    break
    return found


def _ancestors_within(source: Source, node: cst.CSTNode, function: cst.CSTNode | None):
    for ancestor in source.ancestors(node):
        if ancestor is function:
            return
        yield ancestor


def _reads(source: Source, expr: cst.CSTNode, name: str) -> bool:
    """True if `expr` reads the (dotted) name."""
    for node in source.within(expr, (cst.Name, cst.Attribute)):
        parent = source.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # the `loss` of `outputs.loss` is not the name `loss`
        if dotted(node) == name:
            return True
    return False


# torch.optim.lr_scheduler's classes, by name (imported alone, `from torch.optim.lr_scheduler import StepLR`)
TORCH_SCHEDULERS = frozenset(
    {
        "LambdaLR",
        "MultiplicativeLR",
        "StepLR",
        "MultiStepLR",
        "ConstantLR",
        "LinearLR",
        "ExponentialLR",
        "PolynomialLR",
        "CosineAnnealingLR",
        "CyclicLR",
        "OneCycleLR",
        "CosineAnnealingWarmRestarts",
        "ReduceLROnPlateau",
        "SequentialLR",
        "ChainedScheduler",
    }
)


def _rewraps(call: cst.Call, name: str) -> bool:
    """True for a call handed, first, the name its result is bound to (`x = Wrapper(x, ...)`)."""
    first = call.args[0] if call.args else None
    return first is not None and first.keyword is None and dotted(first.value) == name


def _handed_an_optimizer(call: cst.Call) -> bool:
    """True for a constructor handed an optimizer first or by keyword (`WarmupCosineLR(optimizer,
    ...)`): a class named `...LR` that is handed none is no schedule (SimCLR's `SimCLR(encoder,
    ...)` is a model)."""
    first = argument(call, "optimizer", 0)
    return first is not None and "opt" in (last_name(first.value) or "").lower()


def _constructor_role(call: cst.Call) -> str | None:
    name = callee_name(call) or ""
    path = dotted(call.func) or ""
    if name in OPTIMIZERS or ".optim." in f".{path}" and name[:1].isupper() and "lr_scheduler" not in path:
        return "optimizer"
    if (
        "lr_scheduler" in path
        or (name.endswith("LR") and _handed_an_optimizer(call))
        or name.endswith("Scheduler")
        or name in TORCH_SCHEDULERS
    ):
        return "scheduler"
    if name == "GradScaler":
        return "scaler"
    if name in LOSS_MODULES:
        return "loss-module"
    if (
        (
            name[:1].isupper()
            or isinstance(call.func, cst.Subscript)
            or (isinstance(call.func, cst.Call) and callee_name(call.func) == "getattr")
        )
        and _over_parameters(call)
        and argument(call, "lr", None) is not None
    ):
        # a class of another package built the way torch's are (`LARS(params, lr=...)`), or one
        # picked from a table of them (DLRM's `opts[args.optimizer](parameters, lr=...)`) or from
        # a module by name (TCN's `getattr(optim, args.optim)(model.parameters(), lr=lr)`)
        return "optimizer"
    if (
        isinstance(call.func, cst.Call)
        and "optim" in (callee_name(call.func) or "").lower()
        and _over_parameters(call)
        and argument(call, "lr", 1) is not None
    ) or ("opt" in name.lower() and _over_parameters(call) and argument(call, "lr", None) is not None):
        # a class a project helper looks up by name (pix2tex's `get_optimizer(args.optimizer)(
        # model.parameters(), args.lr, ...)`), or a name an if-chain bound to one (n-beats'
        # `opt_ = optim.Adam` ... `opt_(lr=1e-4, params=self.parameters())`)
        return "optimizer"
    return None


def _over_parameters(call: cst.Call) -> bool:
    """True where a call's first argument is a model's parameters: `model.parameters()`,
    `filter(..., m.parameters())`, or a name holding them (`params`, `param_groups`)."""
    first = argument(call, "params", 0)
    if first is None:
        return False
    value = first.value
    if isinstance(value, cst.Call) and callee_name(value) == "filter" and len(value.args) == 2:
        value = value.args[1].value
    if isinstance(value, cst.Call):
        return callee_name(value) in ("parameters", "named_parameters")
    return "param" in (last_name(value) or "").lower()


_DATA_MOVES = (".to(", ".cuda(", "next(", "zero_grad", ".item(")


def grad_block(source: Source, assign: cst.CSTNode) -> cst.With | None:
    """The `with` block whose body holds the statement line of `assign` directly."""
    line = source.parent(assign)
    block = source.parent(line) if line is not None else None
    holder = source.parent(block) if block is not None else None
    return holder if isinstance(holder, cst.With) else None


def grad_switch(expr: cst.BaseExpression) -> bool:
    """True for a context that decides whether autograd records: `no_grad()`, `inference_mode()`,
    `set_grad_enabled(...)`."""
    return disables_grad(expr) or (isinstance(expr, cst.Call) and last_name(expr.func) == "set_grad_enabled")


def _is_assignment(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Assign, cst.AnnAssign))
    )


def _is_forward_block(statement: cst.CSTNode) -> bool:
    """True for a `with autocast(...):` block of assignments (the forward pass, when the loss is
    computed after it): a context that does not switch autograd, holding only assignments."""
    return (
        isinstance(statement, cst.With)
        and not any(grad_switch(item.item) for item in statement.items)
        and isinstance(statement.body, cst.IndentedBlock)
        and all(_is_assignment(s) for s in statement.body.body)
    )


_MADE = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"})


def _made_on_device(statement: cst.CSTNode) -> bool:
    """True for a buffer made and placed on the device (`preds = torch.zeros([n, c, w, h]).cuda()`):
    no batch is moved there."""
    if not _is_assignment(statement):
        return False
    small = cst.ensure_type(statement, cst.SimpleStatementLine).body[0]
    value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
    return isinstance(value, cst.Call) and callee_name(constructed(value)) in _MADE


def _trains_a_model(source: Source, training: Training, statements: list[cst.CSTNode]) -> bool:
    """True if the statements run a model forward with autograd on."""
    return any(
        runs_model(source, training, c, depth=0) and not under_no_grad(source, c, depth=0)
        for s in statements
        for c in source.within(s, cst.Call)
    )


def _computes_targets(source: Source, training: Training, statement: cst.CSTNode) -> bool:
    """True for a `with torch.no_grad():` block, or a loop of assignments and such blocks, that
    runs models only without autograd (a mean teacher's forwards: UA-MT's `ema_output =
    ema_model(ema_inputs)` and its T noisy passes): the loss's targets, computed on the way from
    the trained model's forward to the loss, so the run goes on past them."""
    if isinstance(statement, cst.With):
        if not any(disables_grad(item.item, source) for item in statement.items):
            return False
    elif not isinstance(statement, cst.For):
        return False
    if not isinstance(statement.body, cst.IndentedBlock):
        return False
    if not all(
        _is_assignment(s)
        or _computes_targets(source, training, s)
        or (isinstance(s, cst.With) and _is_forward_block(s))
        for s in statement.body.body
    ):
        return False
    runs = [c for c in source.within(statement, cst.Call) if runs_model(source, training, c, depth=0)]
    return bool(runs) and all(under_no_grad(source, c, depth=0) for c in runs)


def forward_run(source: Source, training: Training, backward: LossUse) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The statements that compute the forward pass and the loss a backward call uses.

    From the loss assignment (or the `with autocast` block around it) back through the
    assignments (and `with autocast` blocks of assignments) just before it, stopping at data
    movement and `zero_grad`. Returns the
    first and last statement, siblings in one block, or None if there is no such run.
    """
    assign = training.loss_assignment(backward)
    if assign is None and isinstance(backward.loss, cst.Attribute):
        # `losses.total_loss.backward()` after `losses = self.forward(imgs, ...)`: the forward
        # returned the losses in a tuple of its own (a namedtuple), and that call computes them
        root = dotted(backward.loss.value)
        assign = training.last_assignment(root, backward.call) if root is not None else None
    if assign is None:
        return None
    line = source.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    last: cst.CSTNode = line
    holder = grad_block(source, assign)
    if holder is not None and any(grad_switch(item.item) for item in holder.items):
        return None  # already under no_grad, or under `set_grad_enabled(...)`: see `grad_switch`
    if holder is not None and not source.span(holder)[0] <= source.span(backward.call)[0] < source.span(holder)[1]:
        last = holder  # the whole `with autocast(...)` block, when the backward comes after it
    branch = training.branch_of(assign, backward.call)
    if branch is not None:
        last = branch  # each branch computes the loss its own way: the whole `if` is the loss
    _, siblings = source.block_of(last)
    if last not in siblings or source.span(backward.call)[0] < source.span(last)[1]:
        return None
    index = siblings.index(last)
    if last is line:
        # the loss reduced or rescaled from itself on the next lines, unconditionally (CSAIL's
        # `loss, acc = segmentation_module(batch_data)`, then `loss = loss.mean()`): the loss is
        # what they leave
        name = loss_name(backward.loss)
        after = index + 1
        while after < len(siblings) and source.span(siblings[after])[1] <= source.span(backward.call)[0]:
            following = siblings[after]
            body = (
                following.body[0]
                if isinstance(following, cst.SimpleStatementLine) and len(following.body) == 1
                else None
            )
            if not (
                isinstance(body, cst.Assign)
                and name is not None
                and [dotted(t.target) for t in body.targets] == [name]
                and name in {dotted(n) for n in source.within(body.value, (cst.Name, cst.Attribute))}
            ):
                break
            last = following
            after += 1
    first = siblings[index]
    starts_empty = isinstance(assign.value, (cst.Integer, cst.Float))
    while index > 0:
        previous = siblings[index - 1]
        if not (
            _is_assignment(previous)
            or _is_forward_block(previous)
            # the teacher's targets, passed only on the way back to the trained model's forward
            or (
                _computes_targets(source, training, previous)
                and not _trains_a_model(source, training, siblings[index : siblings.index(last) + 1])
            )
        ):
            break
        if (
            any(marker in source.code(previous) for marker in _DATA_MOVES)
            and (starts_empty or not runs_model(source, training, previous))
            and not _made_on_device(previous)
        ):
            # a batch moved on its own line; a forward that moves its input inline is the forward
            # (not before a loss that starts empty: its terms' forwards are mutants of their own)
            break
        first = previous
        index -= 1
    if source.has_multiline_string(first) or source.has_multiline_string(last):
        return None
    return first, last


def _receiver(call: cst.Call) -> cst.BaseExpression:
    """What a method is called on (`self._optimizers[name]` for `self._optimizers[name].step()`),
    or the called expression itself for a plain call."""
    return call.func.value if isinstance(call.func, cst.Attribute) else call.func


def inherited_method(
    training: Training, source: Source, owner: cst.ClassDef, name: str, depth: int
) -> cst.FunctionDef | None:
    """The method `name` of a base class of `owner` defined in another module of the project."""
    if depth > 3:
        return None
    for base in owner.bases:
        found = training.resolver.definition(source, base.value)
        if found is None or not isinstance(found[1], cst.ClassDef):
            continue
        module, cls = found
        if depth == 0 and module.path == source.path:
            # a base class of this file: its own method gets its mutants there; one it inherits in
            # turn from another module is looked for further up (ElegantRL's AgentA2C(AgentPPO),
            # whose optimizer_backward is AgentBase's)
            if any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in cls.body.body):
                continue
            deeper = inherited_method(training, module, cls, name, depth + 1)
            if deeper is not None:
                return deeper
            continue
        own = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
        if own is not None:
            return own
        deeper = inherited_method(training, module, cls, name, depth + 1)
        if deeper is not None:
            return deeper
    return None


def walking_loop(source: Source, use: cst.CSTNode, name: str) -> cst.For | None:
    """The loop around `use` whose target is `name` (`for loss in losses:` for `name` "loss")."""
    return next(
        (
            a
            for a in source.ancestors(use)
            if isinstance(a, cst.For) and isinstance(a.target, cst.Name) and a.target.value == name
        ),
        None,
    )
