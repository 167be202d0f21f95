"""Recognisers for the idioms of PyTorch training code, shared by the operators.

Training code names things loosely (`opt`, `self.optimizer`, `optimizers[i]`), so each
recogniser combines what the file itself says (a name assigned from `torch.optim.AdamW(...)`
is an optimizer) with naming conventions for objects built elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from injector.source import Source

OPTIMIZERS = frozenset({
    "SGD", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSprop", "Rprop", "NAdam",
    "RAdam", "LBFGS", "SparseAdam", "ASGD", "Adafactor", "Muon", "Lion", "LAMB", "Lamb",
})
LOSS_FUNCTIONS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "margin_ranking_loss",
    "cosine_embedding_loss", "hinge_embedding_loss", "triplet_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "ctc_loss",
})
LOSS_MODULES = frozenset({
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "SoftMarginLoss",
    "MultiLabelSoftMarginLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
    "HingeEmbeddingLoss", "TripletMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "CTCLoss",
})
FUNCTIONAL_MODULES = frozenset({
    "F", "functional", "torch.nn.functional", "nn.functional", "torch", "torch.special",
})


def dotted(expr: cst.BaseExpression) -> str | None:
    """`torch.nn.functional.softmax` for a Name/Attribute chain; None for anything else."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


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


def callee_name(call: cst.Call) -> str | None:
    """The called function's own name: `softmax` for `F.softmax(...)` and `x.softmax(...)`."""
    return last_name(call.func)


def is_functional(call: cst.Call) -> bool:
    """True for `F.f(...)`, `torch.f(...)`, `torch.nn.functional.f(...)` and bare `f(...)`;
    False for a tensor method `x.f(...)`."""
    if isinstance(call.func, cst.Name):
        return True
    if isinstance(call.func, cst.Attribute):
        return dotted(call.func.value) in FUNCTIONAL_MODULES
    return False


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
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and \
            isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.evaluated_value)
    return None


def needs_parens(expr: cst.BaseExpression) -> bool:
    """True if `expr` must be parenthesised to take an attribute (`(a + b).detach()`)."""
    if getattr(expr, "lpar", None):
        return False
    return not isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript,
                                 cst.SimpleString, cst.List, cst.Tuple, cst.Dict))


def method_on(source: Source, expr: cst.BaseExpression, method: str, args: str = "") -> str:
    """Source text calling `method` on `expr`, parenthesising `expr` where needed."""
    text = source.module.code_for_node(expr)
    if needs_parens(expr):
        text = f"({text})"
    return f"{text}.{method}({args})"


@dataclass(frozen=True)
class Backward:
    """One backward call and the loss it differentiates."""

    call: cst.Call
    loss: cst.BaseExpression
    scaler: cst.BaseExpression | None  # the GradScaler in `scaler.scale(loss).backward()`


class Training:
    """What a file says about its training step: roles of names, backward calls, loops."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.roles: dict[str, str] = {}
        self.constructors: dict[str, str] = {}  # name -> class it was built from
        for assign in source.nodes(cst.Assign):
            if isinstance(assign.value, cst.Call):
                role = _constructor_role(assign.value)
                for target in assign.targets:
                    text = dotted(target.target) or source.module.code_for_node(target.target).strip()
                    self.constructors[text] = callee_name(assign.value) or ""
                    if role:
                        self.roles[text] = role

    def constructor(self, expr: cst.BaseExpression) -> str | None:
        """The class an object was built from: `CrossEntropyLoss` for `criterion` after
        `criterion = nn.CrossEntropyLoss()`, and for `nn.CrossEntropyLoss()` itself."""
        if isinstance(expr, cst.Call):
            return callee_name(expr)
        return self.constructors.get(self._text(expr))

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
            return self.role(expr.value)
        name = (last_name(expr) or "").lower()
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
        found = []
        for call in self.source.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
                loss = call.func.value
                scaler = None
                if isinstance(loss, cst.Call) and callee_name(loss) == "scale" and loss.args \
                        and isinstance(loss.func, cst.Attribute):
                    scaler = loss.func.value
                    loss = loss.args[0].value
                found.append(Backward(call, loss, scaler))
        return found

    @cached_property
    def steps(self) -> list[cst.Call]:
        """Optimizer steps: `optimizer.step()` and `scaler.step(optimizer)`."""
        found = []
        for call in self.source.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "step":
                if self.role(call.func.value) in {"optimizer", "scaler"}:
                    found.append(call)
        return found

    @cached_property
    def training_loops(self) -> list[cst.For | cst.While]:
        """Loops whose own body (not a nested loop's) runs backward or an optimizer step."""
        loops = []
        for call in [b.call for b in self.backwards] + self.steps:
            loop = self.source.enclosing(call, (cst.For, cst.While))
            if loop is not None and loop not in loops:
                loops.append(loop)
        return sorted(loops, key=self.source.span)

    @cached_property
    def assignments(self) -> dict[str, list[cst.Assign]]:
        """Assignments to each plain name, in source order."""
        found: dict[str, list[cst.Assign]] = {}
        for assign in self.source.nodes(cst.Assign):
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(assign)
        return found

    def loss_assignment(self, backward: Backward) -> cst.Assign | None:
        """The last assignment of the backward's loss name before the backward call."""
        name = _first_name(backward.loss)
        function = self.source.function_of(backward.call)
        before = self.source.span(backward.call)[0]
        found = None
        for assign in self.assignments.get(name or "", ()):
            if self.source.span(assign)[0] < before and self.source.function_of(assign) is function:
                found = assign
        return found


def _first_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.BinaryOperation):
        return _first_name(expr.left)
    return None


def _constructor_role(call: cst.Call) -> str | None:
    name = callee_name(call) or ""
    path = dotted(call.func) or ""
    if name in OPTIMIZERS or ".optim." in f".{path}" and name[:1].isupper() and "lr_scheduler" not in path:
        return "optimizer"
    if "lr_scheduler" in path or name.endswith("LR") or name.endswith("Scheduler") or \
            name in {"LambdaLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"}:
        return "scheduler"
    if name == "GradScaler":
        return "scaler"
    if name in LOSS_MODULES:
        return "loss-module"
    return None


_DATA_MOVES = (".to(", ".cuda(", "next(", "zero_grad", ".item(")


def forward_run(source: Source, training: Training,
                backward: Backward) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The statements that compute the forward pass and the loss a backward call uses.

    From the loss assignment (or the `with autocast` block around it) back through the
    assignments just before it, stopping at data movement and `zero_grad`. Returns the
    first and last statement, siblings in one block, or None if there is no such run.
    """
    assign = training.loss_assignment(backward)
    if assign is None:
        return None
    line = source.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    last: cst.CSTNode = line
    block = source.parent(line)
    holder = source.parent(block) if block is not None else None
    if isinstance(holder, cst.With) and not any(
            "no_grad" in source.code(item) or "inference_mode" in source.code(item)
            for item in holder.items):
        last = holder
    elif isinstance(holder, cst.With):
        return None  # already under no_grad
    _, siblings = source.block_of(last)
    if last not in siblings or source.span(backward.call)[0] < source.span(last)[1]:
        return None
    index = siblings.index(last)
    first = last
    while index > 0:
        previous = siblings[index - 1]
        if not (isinstance(previous, cst.SimpleStatementLine) and len(previous.body) == 1 and
                isinstance(previous.body[0], (cst.Assign, cst.AnnAssign))):
            break
        if any(marker in source.code(previous) for marker in _DATA_MOVES):
            break
        first = previous
        index -= 1
    if source.has_multiline_string(first) or source.has_multiline_string(last):
        return None
    return first, last
