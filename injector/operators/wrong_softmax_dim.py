from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import LOGGED_ACCURACY_STEP
from injector.patterns import argument, callee_name, int_value, is_functional, value_uses

FUNCTIONS = {"softmax", "log_softmax"}
MODULES = {"Softmax", "LogSoftmax"}


def other_axes(dim: int) -> list[int]:
    """The one axis to normalise over instead of `dim`: its neighbour on the same side.

    One mutant per call: `-1` and its alternatives `0` and `-2` name the same axis of 2-D
    logits, so two mutants there would be one fault counted twice. The neighbour is a different
    axis for every rank where `dim` is valid and the softmax is over more than one axis.
    """
    if dim < 0:
        return [dim - 1]
    return [1] if dim == 0 else [dim - 1]


def _eval_mode_only(source, call: cst.Call) -> bool:
    """True for a softmax only eval mode runs (`if not self.training: return F.softmax(x, -1)`,
    or the `else` of `if self.training:`): training never reaches it, so the fault is not a
    training one (a model that returns logits in training and probabilities for decoding)."""
    child: cst.CSTNode = call
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            return False
        if isinstance(ancestor, cst.If):
            test = source.code(ancestor.test).replace(" ", "")
            if test.startswith("not") and test[3:].endswith(".training") and child is ancestor.body:
                return True
            if test.endswith(".training") and not test.startswith("not") and child is not ancestor.body:
                return True
        child = ancestor
    return False


class WrongSoftmaxDim(Operator):
    id = "wrong-softmax-dim"
    summary = "Normalise a softmax/log-softmax over the neighbouring axis (functional, method or `nn.Softmax`)."
    examples = (
        Example(
            # The axis a caller chooses: the one before it.
            "def pi(self, x, softmax_dim=0):\n    return F.softmax(self.fc(x), dim=softmax_dim)\n",
            ("def pi(self, x, softmax_dim=0):\n    return F.softmax(self.fc(x), dim=softmax_dim - 1)\n",),
        ),
        Example(
            "probs = F.softmax(logits, dim=-1)\n",
            ("probs = F.softmax(logits, dim=-2)\n",),
        ),
        Example(
            "attn = scores.softmax(-1)\nlogp = torch.log_softmax(out, 1)\n",
            (
                "attn = scores.softmax(-2)\nlogp = torch.log_softmax(out, 1)\n",
                "attn = scores.softmax(-1)\nlogp = torch.log_softmax(out, 0)\n",
            ),
        ),
        Example(
            # A log-softmax written out (MDLM's SUBS parameterisation): the normaliser's axis.
            "logits = logits - torch.logsumexp(logits, dim=-1, keepdim=True)\n",
            ("logits = logits - torch.logsumexp(logits, dim=-2, keepdim=True)\n",),
        ),
        Example(
            # A softmax written out: the sum that normalises the exponentials.
            "e = torch.exp(scores)\nattn = e / e.sum(dim=1, keepdim=True)\n",
            ("e = torch.exp(scores)\nattn = e / e.sum(dim=0, keepdim=True)\n",),
        ),
        Example(
            "self.head = nn.Sequential(nn.Linear(8, 4), nn.LogSoftmax(dim=1))\n",
            ("self.head = nn.Sequential(nn.Linear(8, 4), nn.LogSoftmax(dim=0))\n",),
        ),
        Example(
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        if self.training:\n"
            "            return F.log_softmax(x, dim=-1)\n"
            "        return x\n",
            (
                "class Head(nn.Module):\n"
                "    def forward(self, x):\n"
                "        if self.training:\n"
                "            return F.log_softmax(x, dim=-2)\n"
                "        return x\n",
            ),
        ),
        Example(
            # The probabilities a logged accuracy reads (PyTorchVideo): the metric a run is judged by.
            LOGGED_ACCURACY_STEP,
            (
                LOGGED_ACCURACY_STEP.replace(
                    '        acc = self.train_accuracy(F.softmax(y_hat, dim=-1), batch["label"])\n',
                    '        acc = self.train_accuracy(F.softmax(y_hat, dim=-2), batch["label"])\n',
                ),
            ),
        ),
    )
    untouched = (
        # A prediction image made for a logger (SSL4MIS's `writer.add_image('train/Prediction', ...)`).
        "for x, y in loader:\n"
        "    outputs = model(x)\n"
        "    loss = criterion(outputs, y)\n"
        "    outputs = torch.argmax(torch.softmax(outputs, dim=1), dim=1, keepdim=True)\n"
        "    writer.add_image('train/Prediction', outputs[1, ...] * 50, it)\n",
        # A softmax read only for its shape keeps it over any axis.
        "n = torch.softmax(logits, dim=-1).shape[1]\nm = F.softmax(x, dim=1).size(0)\n",
        # An axis held in a name the function does not take: nothing tells which axis it is.
        "AXIS = 1\ndef head(x):\n    return F.softmax(x, dim=AXIS)\n",
        # Only eval mode runs it (the same softmax in the training branch keeps its mutant).
        "class Head(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if not self.training:\n"
        "            return F.softmax(x, dim=-1)\n"
        "        return x\n",
        "p = F.softmax(x, dim=self.dim)\n",
        # A logsumexp that normalises nothing it is taken of, and a sum of what is not an exponential.
        "lse = torch.logsumexp(scores, dim=-1)\ny = x - torch.logsumexp(scores, dim=-1, keepdim=True)\n",
        "share = counts / counts.sum(dim=1, keepdim=True)\n",
        "p = F.softmax(x)\n",
        "p = self.softmax(x)\n",
        "y = torch.sum(x, dim=-1)\n",
    )

    def changes(self, source, training):
        yield from _written_out(source)
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            if name in FUNCTIONS:
                position = 1 if is_functional(call) else 0
            elif name in MODULES:
                position = 0
            else:
                continue
            if _read_for_shape(source, call) or _only_logged(source, call):
                continue
            dim = argument(call, "dim", position)
            value = None if dim is None else int_value(dim.value)
            if (
                dim is not None
                and value is None
                and _parameter(source, call, dim.value)
                and not _eval_mode_only(source, call)
            ):
                # the axis a caller chooses (`def pi(self, x, softmax_dim=0)`, called with 1 for a
                # batch): the axis before the chosen one is another axis of any input of rank 2+
                text = source.code(dim.value)
                yield Change(call, (source.replace(dim.value, f"{text} - 1"),), f"{name} over the axis before `{text}`")
                continue
            if value is None or _eval_mode_only(source, call):
                continue
            for axis in other_axes(value):
                yield Change(
                    call, (source.replace(dim.value, str(axis)),), f"{name} over dim {axis} instead of dim {value}"
                )


def _written_out(source):
    """A (log-)softmax written out by hand: `x - torch.logsumexp(x, dim=d, keepdim=True)`, or
    `e / e.sum(dim=d, keepdim=True)` of exponentials `e`. The normaliser's axis is the softmax's;
    over the neighbouring one the values still broadcast, and no longer normalise over classes."""
    for operation in source.nodes(cst.BinaryOperation):
        call = operation.right
        if not isinstance(call, cst.Call):
            continue
        if isinstance(operation.operator, cst.Subtract) and callee_name(call) == "logsumexp":
            what = "log-softmax"
        elif (
            isinstance(operation.operator, cst.Divide)
            and callee_name(call) == "sum"
            and _exponentials(source, operation.left)
        ):
            what = "softmax"
        else:
            continue
        functional = is_functional(call)
        if functional:
            taken = argument(call, "input", 0)
            normalised = None if taken is None else taken.value
        else:
            normalised = call.func.value if isinstance(call.func, cst.Attribute) else None
        keepdim = argument(call, "keepdim", 2 if functional else 1)
        if normalised is None or keepdim is None or source.code(keepdim.value) != "True":
            continue
        if source.code(normalised) != source.code(operation.left):
            continue
        dim = argument(call, "dim", 1 if functional else 0)
        value = None if dim is None else int_value(dim.value)
        if dim is None or value is None or _eval_mode_only(source, call):
            continue
        for axis in other_axes(value):
            yield Change(
                operation,
                (source.replace(dim.value, str(axis)),),
                f"the written-out {what} normalised over dim {axis} instead of dim {value}",
            )


def _exponentials(source, expr: cst.BaseExpression) -> bool:
    """True for `torch.exp(x)` / `x.exp()`, or a name the function last bound to one."""
    if isinstance(expr, cst.Call):
        return callee_name(expr) == "exp"
    if not isinstance(expr, cst.Name):
        return False
    function = source.function_of(expr)
    scope = function.body if function is not None else source.module
    bound = [
        a
        for a in source.within(scope, cst.Assign)
        if len(a.targets) == 1
        and isinstance(a.targets[0].target, cst.Name)
        and a.targets[0].target.value == expr.value
        and source.span(a)[0] < source.span(expr)[0]
    ]
    return bool(bound) and isinstance(bound[-1].value, cst.Call) and callee_name(bound[-1].value) == "exp"


# Calls that only show what they are handed (a logger's image or scalar, a print).
# Pictures only: a logged figure (`self.log("train_acc", acc)`, `add_scalar`) is a metric a run is
# judged by, and a softmax over the wrong axis changes it (pytorchvideo's accuracies).
_SHOWN_BY = ("add_image", "add_figure", "add_video")
_SHOWERS = frozenset({"imshow", "savefig", "save_image", "imsave", "log_image", "log_images"})


def _only_logged(source, call: cst.Call) -> bool:
    """True for a softmax assigned (inside the expression that makes a prediction image, such as
    `torch.argmax(torch.softmax(outputs, dim=1), dim=1)`) to a name every later use of which, until
    it is bound again, hands it to a logger (SSL4MIS's `writer.add_image('train/Prediction', ...)`)
    and that its loop does not read before: only a picture changes."""
    statement = next((a for a in source.ancestors(call) if isinstance(a, cst.Assign)), None)
    if statement is None or len(statement.targets) != 1 or not isinstance(statement.targets[0].target, cst.Name):
        return False
    uses = value_uses(source, statement, statement.targets[0].target.value)
    return uses is not None and bool(uses) and all(_shown(source, n) for n in uses)


def _shown(source, name: cst.Name) -> bool:
    """True where `name` is read only to be handed to a logger or a print."""
    for ancestor in source.ancestors(name):
        if isinstance(ancestor, cst.Call) and not any(n is name for n in source.within(ancestor.func, cst.Name)):
            callee = callee_name(ancestor) or ""
            if callee.startswith(_SHOWN_BY) or callee in _SHOWERS:
                return True
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _read_for_shape(source, call: cst.Call) -> bool:
    """True for a softmax read only for its shape (`torch.softmax(logits, dim=-1).shape[1]`,
    `.size(1)`): a softmax over any axis keeps it."""
    parent = source.parent(call)
    if not isinstance(parent, cst.Attribute) or parent.value is not call:
        return False
    if parent.attr.value in ("shape", "ndim"):
        return True
    grand = source.parent(parent)
    return isinstance(grand, cst.Call) and grand.func is parent and parent.attr.value in ("size", "dim", "numel")


def _parameter(source, call: cst.Call, expr: cst.BaseExpression) -> bool:
    """True if `expr` is a parameter of the function that holds `call`."""
    function = source.function_of(call)
    return (
        isinstance(expr, cst.Name)
        and function is not None
        and any(p.name.value == expr.value for p in (*function.params.params, *function.params.kwonly_params))
    )
