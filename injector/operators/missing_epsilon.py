from __future__ import annotations

import re

import libcst as cst

from injector.neighbours import bound_arguments
from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, assigned_alone, callee_name, dotted, is_functional, last_name, needs_parens

GUARDED = {"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"}
CLAMPS = {"clamp", "clamp_min", "clip"}


def _is_epsilon(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Float):
        return 0 < float(expr.evaluated_value) <= 1e-3
    # `eps`, `self.eps`, `adam_epsilon`, `eps2`: a word of the name, not a part of one (`nb_tr_steps`)
    return bool(_EPSILON_WORD.search((last_name(expr) or "").lower()))


_EPSILON_WORD = re.compile(r"(?:^|_)eps(?:ilon)?(?:$|_|\d)")


# A floor under a distribution's scale, by its name (`min_std`, `self.min_scale`, `sigma_min`).
_SCALE_FLOOR = re.compile(r"min_?(?:std|scale|sigma)|(?:std|scale|sigma)_?min")


def _scale_floor(kept: cst.BaseExpression, floor: cst.BaseExpression) -> bool:
    """True for `F.softplus(x) + self.min_std` (mbrl-lib's PlaNet, Dreamer's heads): the floor
    under a Normal's standard deviation, whose log-probability and KL take its log and divide by
    it; a softplus that underflows makes them inf."""
    return (
        isinstance(kept, cst.Call)
        and callee_name(kept) in ("softplus", "exp")
        and bool(_SCALE_FLOOR.fullmatch((last_name(floor) or "").lower()))
    )


def _epsilon_value(expr: cst.BaseExpression) -> bool:
    """An epsilon, or a tensor of one (`1e-10 * torch.ones_like(x)`, `torch.tensor(1e-10)`,
    `torch.full_like(x, eps)`)."""
    if _is_epsilon(expr):
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        sides = (expr.left, expr.right)
        return any(_is_epsilon(a) for a in sides) and any(
            isinstance(b, cst.Call) and (callee_name(b) or "") in ("ones_like", "ones") for b in sides
        )
    if isinstance(expr, cst.Call) and callee_name(expr) in ("tensor", "full_like", "full"):
        return any(_is_epsilon(a.value) for a in expr.args if a.keyword is None)
    return False


def _epsilon_floor(call: cst.Call) -> cst.BaseExpression | None:
    """The value `torch.max(eps, x)` / `torch.maximum(x, eps)` floors (either order), or None."""
    if (
        callee_name(call) not in ("max", "maximum", "fmax")
        or not isinstance(call.func, cst.Attribute)
        or dotted(call.func.value) not in ("torch", "th")  # not Python's own `max(n, 1e-8)` on numbers
        or len(call.args) != 2
    ):
        return None
    if any(a.keyword is not None or a.star for a in call.args):
        return None
    first, second = call.args[0].value, call.args[1].value
    if _epsilon_value(first) and not _epsilon_value(second):
        return second
    if _epsilon_value(second) and not _epsilon_value(first):
        return first
    return None


# A guarded sum squared before it divides (noise2noise's HDR loss).
SQUARED_GUARD = (
    "import torch\n"
    "class HDRLoss(torch.nn.Module):\n"
    "    def __init__(self, eps=0.01):\n"
    "        super().__init__()\n"
    "        self._eps = eps\n"
    "\n"
    "    def forward(self, denoised, target):\n"
    "        loss = ((denoised - target) ** 2) / (denoised + self._eps) ** 2\n"
    "        return torch.mean(loss.view(-1))\n"
    "\n"
    "    def other(self, a, b):\n"
    "        return a / (b + self._eps)\n"
    "\n"
    "    def third(self, a, b):\n"
    "        return a / (b + self.eps) ** 2\n"
)


class MissingEpsilon(Operator):
    id = "missing-epsilon"
    summary = "Drop the `+ eps` or `clamp(min=eps)` that keeps a `log`, `sqrt` or division finite."
    examples = (
        Example(
            # A floor made with `torch.max` against a tensor of an epsilon (NeRF's disparity).
            "disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / acc)\n",
            ("disp_map = 1. / (depth_map / acc)\n",),
        ),
        Example(
            "std = torch.sqrt(var + self.eps)\nnll = -torch.log(p + 1e-8)\n",
            (
                "std = torch.sqrt(var)\nnll = -torch.log(p + 1e-8)\n",
                "std = torch.sqrt(var + self.eps)\nnll = -torch.log(p)\n",
            ),
        ),
        Example(
            "x = x / (x.norm(dim=-1, keepdim=True) + eps)\nlogp = probs.clamp(min=EPS).log()\n",
            (
                "x = x / (x.norm(dim=-1, keepdim=True))\nlogp = probs.clamp(min=EPS).log()\n",
                "x = x / (x.norm(dim=-1, keepdim=True) + eps)\nlogp = probs.log()\n",
            ),
        ),
        Example(
            "ratio = a / torch.clamp(b - c, min=1e-6)\n",
            ("ratio = a / (b - c)\n",),
        ),
        Example(
            # the floor under a Normal's standard deviation (mbrl-lib's PlaNet MeanStdCat)
            "std = F.softplus(params[:, n:]) + self.min_std\nmean = params[:, :n]\n",
            ("std = F.softplus(params[:, n:])\nmean = params[:, :n]\n",),
        ),
        Example(
            # A clamp held in a name that is divided by later; the `+ eps` after it guards nothing.
            "def nt_xent(pos, neg, eps=1e-6):\n"
            "    neg = torch.clamp(neg - row_sub, min=eps)\n"
            "    return -torch.log(pos / (neg + eps)).mean()\n",
            (
                "def nt_xent(pos, neg, eps=1e-6):\n"
                "    neg = neg - row_sub\n"
                "    return -torch.log(pos / (neg + eps)).mean()\n",
            ),
        ),
        Example(
            # An eps added where a value is made that the function then divides by (YOLO's IoU).
            "def iou(b1, b2, eps=1e-9):\n"
            "    w1, h1 = b1[2] - b1[0], b1[3] - b1[1] + eps\n"
            "    union = w1 * h1 - inter + eps\n"
            "    return inter / union, torch.atan(w1 / h1)\n",
            (
                "def iou(b1, b2, eps=1e-9):\n"
                "    w1, h1 = b1[2] - b1[0], b1[3] - b1[1]\n"
                "    union = w1 * h1 - inter + eps\n"
                "    return inter / union, torch.atan(w1 / h1)\n",
                "def iou(b1, b2, eps=1e-9):\n"
                "    w1, h1 = b1[2] - b1[0], b1[3] - b1[1] + eps\n"
                "    union = w1 * h1 - inter\n"
                "    return inter / union, torch.atan(w1 / h1)\n",
            ),
        ),
        Example(
            # An epsilon handed to a function of the project that guards a division with it
            # (fastMRI's `normalize_instance(image, eps=1e-11)`, through `normalize`).
            "def normalize(data, mean, std, eps=0.):\n"
            "    return (data - mean) / (std + eps)\n"
            "def normalize_instance(data, eps=0.):\n"
            "    return normalize(data, data.mean(), data.std(), eps)\n"
            "image = normalize_instance(image, eps=1e-11)\n",
            (
                "def normalize(data, mean, std, eps=0.):\n"
                "    return (data - mean) / (std + eps)\n"
                "def normalize_instance(data, eps=0.):\n"
                "    return normalize(data, data.mean(), data.std(), eps)\n"
                "image = normalize_instance(image, eps=0.0)\n",
                "def normalize(data, mean, std, eps=0.):\n"
                "    return (data - mean) / (std)\n"
                "def normalize_instance(data, eps=0.):\n"
                "    return normalize(data, data.mean(), data.std(), eps)\n"
                "image = normalize_instance(image, eps=1e-11)\n",
            ),
        ),
        Example(
            # An in-place division guarded the same way (SiamFC's tracking response, normalised to
            # sum to one after its minimum is taken off: an all-equal map divides by zero).
            "def normalise(response):\n    response -= response.min()\n    response /= response.sum() + 1e-16\n",
            ("def normalise(response):\n    response -= response.min()\n    response /= response.sum()\n",),
        ),
        Example(
            # A guarded sum squared before it divides (noise2noise's HDR loss): still the divisor's guard.
            SQUARED_GUARD,
            (
                SQUARED_GUARD.replace(
                    "        loss = ((denoised - target) ** 2) / (denoised + self._eps) ** 2\n",
                    "        loss = ((denoised - target) ** 2) / (denoised) ** 2\n",
                ),
                SQUARED_GUARD.replace("        return a / (b + self._eps)\n", "        return a / (b)\n"),
                SQUARED_GUARD.replace("        return a / (b + self.eps) ** 2\n", "        return a / (b) ** 2\n"),
            ),
        ),
    )
    untouched = (
        # A counter whose name holds "eps" (CodeT5's running mean of the logged loss).
        "train_loss = round(tr_loss / (nb_tr_steps + 1), 4)\n",
        # an epsilon handed to a function that only stores or prints it, or to torch's own
        "def report(x, eps=0.):\n    print(x, eps)\nreport(x, eps=1e-8)\nn = nn.LayerNorm(8, eps=1e-6)\n",
        "y = x + eps\n",
        "z = torch.log(x + 1.0)\n",
        "w = x / (y + 2)\n",
        "v = torch.sqrt(x.clamp(min=0.0, max=1.0))\n",
        # A clamp held in a name that nothing takes a log of or divides by.
        "d = torch.clamp(dist, min=eps)\nloss = d.mean()\n",
        # The same sum assigned to a name that is only multiplied and logged, never divided by.
        "def area(b, eps=1e-9):\n    h = b[3] - b[1] + eps\n    print(h * 2)\n    return h * b[2]\n",
    )

    def changes(self, source, training):
        yield from self._handed_epsilons(source, training)
        clamped = self._clamped_names(source)
        for binop in source.nodes(cst.BinaryOperation):
            if not isinstance(binop.operator, cst.Add):
                continue
            if _scale_floor(binop.left, binop.right):
                text = source.module.code_for_node(binop.left).strip()
                yield Change(
                    binop,
                    (source.replace(binop, text),),
                    f"`{source.code(binop.right)}` no longer keeps the scale above zero",
                )
                continue
            if not self._guards_sum(source, binop):
                continue
            for kept, eps in ((binop.left, binop.right), (binop.right, binop.left)):
                if _is_epsilon(eps) and not _is_epsilon(kept):
                    if isinstance(kept, cst.Name) and (source.function_of(binop), kept.value) in clamped:
                        break  # clamped to eps already: the `+ eps` guards nothing (the clamp does)
                    text = source.module.code_for_node(kept).strip()
                    yield Change(
                        binop, (source.replace(binop, text),), f"`{source.code(eps)}` no longer guards against zero"
                    )
                    break
        for call in source.nodes(cst.Call):
            name = callee_name(call)
            floor = _epsilon_floor(call)
            if floor is not None and self._guards(source, call):
                # `torch.max(1e-10 * torch.ones_like(d), d / s)` (NeRF's disparity): the other value alone
                text = source.module.code_for_node(floor).strip()
                if needs_parens(floor):
                    text = f"({text})"
                yield Change(call, (source.replace(call, text),), f"`{name}` no longer keeps the value away from zero")
                continue
            if name not in CLAMPS or argument(call, "max", None) is not None:
                continue
            functional = is_functional(call) and isinstance(call.func, cst.Attribute)
            lower = argument(call, "min", 1 if functional else 0)
            if lower is None or not _is_epsilon(lower.value):
                continue
            if not self._guards(source, call) and not self._guards_later(source, call):
                continue
            if functional:
                inner = argument(call, "input", 0)
                if inner is None or inner is lower:
                    continue
                kept = inner.value
            elif isinstance(call.func, cst.Attribute):
                kept = call.func.value
            else:
                continue
            text = source.module.code_for_node(kept).strip()
            if needs_parens(kept) and not isinstance(source.parent(call), cst.Assign):
                text = f"({text})"
            yield Change(call, (source.replace(call, text),), f"`{name}` no longer keeps the value away from zero")

    def _handed_epsilons(self, source, training):
        """An epsilon handed by keyword to a function of the project that guards with it
        (fastMRI's `transforms.normalize_instance(image, eps=1e-11)`, whose `(stddev + eps)` is
        a divisor, reached through `normalize(data, mean, std, eps)`): handed zero instead."""
        for call in source.nodes(cst.Call):
            for arg in call.args:
                if arg.keyword is None or not isinstance(arg.value, cst.Float) or not _is_epsilon(arg.value):
                    continue
                found = training.resolver.definition(source, call.func)
                if found is None or not isinstance(found[1], cst.FunctionDef):
                    continue
                if self._parameter_guards(training.resolver, found[0], found[1], arg.keyword.value, depth=2):
                    yield Change(
                        arg.value,
                        (source.replace(arg.value, "0.0"),),
                        f"`{arg.keyword.value}` handed to `{callee_name(call)}` is zero: it no longer guards against zero",
                    )

    def _parameter_guards(self, resolver, module, function: cst.FunctionDef, name: str, depth: int) -> bool:
        """True if parameter `name` of `function` (in `module`) is added where the sum guards (a
        divisor, a log's or a root's argument), or is handed on to a function that guards with it."""
        params = (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)
        if name not in {p.name.value for p in params}:
            return False
        for use in module.within(function, cst.Name):
            if use.value != name:
                continue
            parent = module.parent(use)
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
                if self._guards_sum(module, parent):
                    return True
            elif isinstance(parent, cst.Arg) and depth > 0:
                call = module.parent(parent)
                found = resolver.definition(module, call.func) if isinstance(call, cst.Call) else None
                if found is None or not isinstance(found[1], cst.FunctionDef):
                    continue
                bound = bound_arguments(found[1], call) or {}
                handed = next((key for key, value in bound.items() if value is use), None)
                if handed is not None and self._parameter_guards(resolver, found[0], found[1], handed, depth - 1):
                    return True
        return False

    @staticmethod
    def _assigned_name(source, call: cst.Call) -> str | None:
        """The name `call` is assigned to alone (`neg = torch.clamp(neg - s, min=eps)`), or None."""
        return assigned_alone(source.parent(call), call)

    def _clamped_names(self, source) -> set[tuple[cst.FunctionDef | None, str]]:
        """(function, name) of every name assigned a clamp to an epsilon."""
        out = set()
        for call in source.nodes(cst.Call):
            lower = argument(call, "min", 1 if is_functional(call) else 0) if callee_name(call) in CLAMPS else None
            name = self._assigned_name(source, call) if lower is not None and _is_epsilon(lower.value) else None
            if name is not None:
                out.add((source.function_of(call), name))
        return out

    def _guards_later(self, source, call: cst.Call) -> bool:
        """True if the name a clamp is assigned to is then taken a log, a root or divided by
        in the same function, directly or with an epsilon added (`pos / (neg + eps)`)."""
        name = self._assigned_name(source, call)
        function = source.function_of(call)
        if name is None:
            return False
        for use in source.nodes(cst.Name):
            if use.value != name or source.function_of(use) is not function or use.deep_equals(call):
                continue
            node = use
            parent = source.parent(node)
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
                node = parent
            if self._guards(source, node):
                return True
        return False

    def _guards_sum(self, source, binop: cst.BinaryOperation) -> bool:
        """True if `x + eps` guards: it is (within sums and differences) a divisor or the
        argument of a log or root, or the value assigned to a name that the same function then
        divides by or takes a log or root of (YOLO's `h1 = y2 - y1 + eps`, then `w1 / h1`;
        `union = ... + eps`, then `inter / union`)."""
        node: cst.CSTNode = binop
        parent = source.parent(node)
        while isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Add, cst.Subtract)):
            node, parent = parent, source.parent(parent)
        if self._guards(source, node):
            return True
        name = self._name_given(source, node)
        function = source.function_of(binop)
        if name is None or function is None:
            return False
        end = source.span(binop)[1]
        for use in source.within(function, cst.Name):
            if use.value != name or source.span(use)[0] < end:
                continue
            outer = source.parent(use)
            if isinstance(outer, cst.BinaryOperation) and isinstance(outer.operator, cst.Add):
                continue  # `h1 + eps` later guards itself
            if self._guards(source, use):
                return True
        return False

    @staticmethod
    def _name_given(source, node: cst.CSTNode) -> str | None:
        """The name an assignment gives `node` (alone, or at its place in a tuple)."""
        parent = source.parent(node)
        if isinstance(parent, cst.Element):
            values = source.parent(parent)
            assign = source.parent(values)
            if not (isinstance(values, cst.Tuple) and isinstance(assign, cst.Assign) and assign.value is values):
                return None
            index = next(i for i, e in enumerate(values.elements) if e.value is node)
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            if isinstance(target, cst.Tuple) and len(target.elements) == len(values.elements):
                element = target.elements[index].value
                return element.value if isinstance(element, cst.Name) else None
            return None
        if (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return parent.targets[0].target.value
        return None

    @staticmethod
    def _guards(source, node) -> bool:
        """True if `node` is the argument of log/sqrt, the receiver of `.log()`, or a divisor (of
        `/` or of `/=`)."""
        parent = source.parent(node)
        if isinstance(parent, cst.Arg):
            call = source.parent(parent)
            return isinstance(call, cst.Call) and callee_name(call) in GUARDED and call.args[0] is parent
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = source.parent(parent)
            return isinstance(call, cst.Call) and parent.attr.value in GUARDED
        if isinstance(parent, cst.BinaryOperation) and parent.left is node and isinstance(parent.operator, cst.Power):
            # the guarded sum raised to a power, then divided by (noise2noise's HDR loss:
            # `/ (denoised + self._eps) ** 2`)
            return MissingEpsilon._guards(source, parent)
        if isinstance(parent, cst.BinaryOperation) and parent.right is node:
            return isinstance(parent.operator, (cst.Divide, cst.FloorDivide))
        if isinstance(parent, cst.AugAssign) and parent.value is node:
            # `response /= response.sum() + 1e-16` (SiamFC's tracking response)
            return isinstance(parent.operator, (cst.DivideAssign, cst.FloorDivideAssign))
        return False
