from __future__ import annotations

import re

import libcst as cst

from injector.neighbours import Resolver, bound_arguments, constructor_or_function
from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, assigned_alone, callee_name, dotted, statement_call

LIMIT = {"clip_grad_norm_": "max_norm", "clip_grad_norm": "max_norm", "clip_grad_value_": "clip_value"}
# Settings that turn a framework's clipping on; 0 turns it off in each (DeepSpeed's config,
# Lightning's Trainer). Not a generic `max_grad_norm`: handed to `clip_grad_norm_`, 0 would
# zero every gradient instead of leaving them unclipped.
SETTINGS = frozenset({"gradient_clipping", "gradient_clip_val"})
# A callable loss scaler's clipping limit (timm's and Swin's `loss_scaler(..., clip_grad=...)`):
# `None` is how those scalers are told not to clip, so the mutant passes `None`.
SCALER_LIMITS = frozenset({"clip_grad", "grad_clip", "max_norm", "clip_value", "max_grad_norm"})


# A clipping function held under a name of its own (`self.grad_clip_fn = partial(clip_grad_norm_, ...)`).
_HELD_CLIP = re.compile(r"grad_clip|clip_fn")


def _wrapper_method(call: cst.Call) -> bool:
    """True for a model wrapper's own clipping method (`self.ddp_model.clip_grad_norm_(max_norm)`,
    FSDP's): it clips its own parameters, so the limit is its first argument."""
    if not isinstance(call.func, cst.Attribute):
        return False
    owner = dotted(call.func.value) or ""
    return not (owner == "torch" or owner.startswith("torch.") or owner.endswith(("utils", "nn")))


def _result_unused(source, statement, call: cst.Call) -> bool:
    """True for `name = call` where nothing in the function reads `name` again."""
    name = assigned_alone(statement, call)
    if name is None:
        return False
    scope = source.function_of(statement)
    for node in source.within(scope.body if scope is not None else source.module, cst.Name):
        if node.value == name and not isinstance(source.parent(node), cst.AssignTarget):
            return False  # read somewhere (assigning it again is no read)
    return True


def _project_helper_limit(source, resolver: Resolver, call: cst.Call) -> cst.BaseExpression | None:
    """The argument of a call of another project module's function that the function hands
    `clip_grad_norm_`/`clip_grad_value_` as the limit (a helper of the file itself has its own
    mutant where it clips); None for any other call."""
    found = resolver.definition(source, call.func)
    if found is None or found[0] is source:
        return None
    module, definition = found
    function = constructor_or_function(definition)
    bound = bound_arguments(definition, call)
    if function is None or not bound:
        return None
    for inner in module.within(function, cst.Call):
        inner_name = callee_name(inner) or ""
        if inner_name not in LIMIT:
            continue
        limit = argument(inner, LIMIT[inner_name], 1)
        if limit is not None and isinstance(limit.value, cst.Name) and limit.value.value in bound:
            return bound[limit.value.value]
    if isinstance(definition, cst.ClassDef):
        # a class that keeps the limit it is built with and clips at it in a method
        # (pytorch-seq2seq's `Optimizer(optim.Adam(...), max_grad_norm=5)`, whose step() clips at
        # `self.max_grad_norm`)
        kept = {
            dotted(assign.targets[0].target): assign.value.value
            for assign in module.within(function, cst.Assign)
            if len(assign.targets) == 1
            and isinstance(assign.value, cst.Name)
            and assign.value.value in bound
            and (dotted(assign.targets[0].target) or "").startswith("self.")
        }
        for inner in module.within(definition, cst.Call):
            inner_name = callee_name(inner) or ""
            limit = argument(inner, LIMIT[inner_name], 1) if inner_name in LIMIT else None
            if limit is not None and dotted(limit.value) in kept:
                return bound[kept[dotted(limit.value)]]
    return None


def _project_helper_model(source, resolver: Resolver, call: cst.Call) -> cst.BaseExpression | None:
    """The model a call of another project module's function hands it, where the function clips
    that model's parameters (`clip_grad_norm_(flow.parameters(), max_norm=...)`) at a limit it
    computes itself; None for any other call (a limit it is handed: `_project_helper_limit`)."""
    found = resolver.definition(source, call.func)
    if found is None or found[0] is source or not isinstance(found[1], cst.FunctionDef):
        return None
    module, function = found
    bound = bound_arguments(function, call) or {}
    for inner in module.within(function, cst.Call):
        if (callee_name(inner) or "") not in LIMIT or not inner.args:
            continue
        params = inner.args[0].value
        if (
            isinstance(params, cst.Call)
            and callee_name(params) == "parameters"
            and isinstance(params.func, cst.Attribute)
            and isinstance(params.func.value, cst.Name)
            and params.func.value.value in bound
        ):
            return bound[params.func.value.value]
    return None


_CLAMPED_BY_HAND = (
    "def clip_grad(self):\n"
    "    if self.grad_clip:\n"
    "        for p in self.model.parameters():\n"
    "            if p.grad is not None:\n"
    "                p.grad = p.grad.clamp(-self.grad_clip, self.grad_clip)\n"
    "    for p in self.critic.parameters():\n"
    "        p.grad.data.clamp_(-0.01, 0.01)\n"
)


class MissingGradClipping(Operator):
    id = "missing-grad-clipping"
    summary = (
        "Delete `clip_grad_norm_` / `clip_grad_value_`; where its result is used, keep the call but clip at infinity."
    )
    examples = (
        Example(
            "loss.backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\noptimizer.step()\n",
            ("loss.backward()\noptimizer.step()\n",),
        ),
        Example(
            "grad_norm = clip_grad_norm_(params, args.clip)\nlog(grad_norm=grad_norm)\n",
            ('grad_norm = clip_grad_norm_(params, float("inf"))\nlog(grad_norm=grad_norm)\n',),
        ),
        Example(
            # A clipping helper whose result nothing reads.
            "def step(args):\n"
            "    param_norms = None\n"
            "    loss.backward()\n"
            "    param_norms = utils.clip_gradients(student, args.clip_grad)\n"
            "    optimizer.step()\n",
            ("def step(args):\n    param_norms = None\n    loss.backward()\n    optimizer.step()\n",),
        ),
        Example(
            # A callable loss scaler clips when handed a limit: it is handed None.
            "loss_scaler = NativeScaler()\n"
            "norm = loss_scaler(loss, optimizer, clip_grad=config.TRAIN.CLIP_GRAD, parameters=model.parameters())\n",
            (
                "loss_scaler = NativeScaler()\n"
                "norm = loss_scaler(loss, optimizer, clip_grad=None, parameters=model.parameters())\n",
            ),
        ),
        Example(
            # A library's clipping helper, and the settings that make a framework clip.
            "if need_update:\n"
            "    utils.dispatch_clip_grad(params, value=args.clip_grad, mode=args.clip_mode)\n"
            "config = {'gradient_clipping': 1.0}\n"
            "trainer = Trainer(gradient_clip_val=0.5)\n",
            (
                "if need_update:\n"
                "    pass\n"
                "config = {'gradient_clipping': 1.0}\n"
                "trainer = Trainer(gradient_clip_val=0.5)\n",
                "if need_update:\n"
                "    utils.dispatch_clip_grad(params, value=args.clip_grad, mode=args.clip_mode)\n"
                "config = {'gradient_clipping': 1.0}\n"
                "trainer = Trainer(gradient_clip_val=0)\n",
                "if need_update:\n"
                "    utils.dispatch_clip_grad(params, value=args.clip_grad, mode=args.clip_mode)\n"
                "config = {'gradient_clipping': 0}\n"
                "trainer = Trainer(gradient_clip_val=0.5)\n",
            ),
        ),
        Example(
            # A model wrapper's own clipping method: the limit is its first argument.
            "norm = self.wrapped.clip_grad_norm_(self.max_norm).item()\n",
            ('norm = self.wrapped.clip_grad_norm_(float("inf")).item()\n',),
        ),
        Example(
            # A clipping function held in an attribute (catalyst's backward callback): its result
            # is logged, so it becomes the norm it would have reported.
            "norm = self.grad_clip_fn(self.model.parameters())\nlog(norm)\n",
            (
                'norm = __import__("torch").linalg.vector_norm(__import__("torch").stack([p.grad.norm() '
                "for p in self.model.parameters() if p.grad is not None]))\nlog(norm)\n",
            ),
        ),
        Example(
            # torch's clipping picked by name through `getattr` (self-critical.pytorch).
            "loss.backward()\n"
            "if opt.grad_clip_value != 0:\n"
            "    getattr(torch.nn.utils, 'clip_grad_%s_' % (opt.grad_clip_mode))(model.parameters(), opt.grad_clip_value)\n"
            "optimizer.step()\n",
            ("loss.backward()\nif opt.grad_clip_value != 0:\n    pass\noptimizer.step()\n",),
        ),
        Example(
            # Gradients clamped by value by hand, back into the gradient or in place (pytorch_sound's
            # trainer, a WGAN critic's).
            _CLAMPED_BY_HAND,
            (
                _CLAMPED_BY_HAND.replace(
                    "                p.grad = p.grad.clamp(-self.grad_clip, self.grad_clip)\n", "                pass\n"
                ),
                _CLAMPED_BY_HAND.replace("        p.grad.data.clamp_(-0.01, 0.01)\n", "        pass\n"),
            ),
        ),
    )
    untouched = (
        # A held clipping function handed no parameters.
        "norm = self.grad_clip_fn()\n",
        "max_norm = 1.0\n",
        "clip(x, 0, 1)\n",
        "config = {'gradient_clipping': 0.0}\ntrainer = Trainer(gradient_clip_val=None)\n",
        "config = {'lr': 2e-5, 'max_grad_norm': 1.0}\n",
        "def step():\n    norms = utils.clip_gradients(model, 1.0)\n    log(norms)\n",
        "loss_scaler = NativeScaler()\nloss_scaler(loss, optimizer, clip_grad=None, parameters=model.parameters())\n",
    )

    def changes(self, source, training):
        resolver = Resolver()
        for call in source.nodes(cst.Call):
            name = callee_name(call) or ""
            limit_handed = _project_helper_limit(source, resolver, call) if name not in LIMIT else None
            if limit_handed is not None:
                # a project module's helper that clips at the limit it is handed (mozilla TTS's
                # `grad_norm, _ = check_update(model, c.grad_clip)`): handed infinity, it still
                # returns the norm and whatever else it reports
                yield Change(
                    call,
                    (source.replace(limit_handed, 'float("inf")'),),
                    f"`{name}` clips at infinity (its norm is still computed)",
                )
                continue
            if name not in LIMIT:
                statement = source.parent(call)
                clipped = _project_helper_model(source, resolver, call)
                if clipped is not None and source.is_reachable(statement):
                    # a project helper that clips the parameters of the model it is handed at a
                    # limit of its own (e3_diffusion's `grad_norm = utils.gradient_clipping(model,
                    # gradnorm_queue)`): gone, or where its result is read, the norm it returns
                    if statement_call(statement) is call:
                        yield Change(call, (source.delete_statement(statement),), f"removed `{name}`")
                    else:
                        norm = (
                            '__import__("torch").linalg.vector_norm(__import__("torch").stack('
                            f"[p.grad.norm() for p in {source.code(clipped)}.parameters() if p.grad is not None]))"
                        )
                        yield Change(call, (source.replace(call, norm),), f"`{name}` no longer clips")
                    continue
                if _dynamic_clip(source, call) and statement_call(statement) is call and source.is_reachable(statement):
                    # torch's clipping picked by name (self-critical.pytorch's `getattr(torch.nn.utils,
                    # 'clip_grad_%s_' % opt.grad_clip_mode)(model.parameters(), opt.grad_clip_value)`)
                    yield Change(call, (source.delete_statement(statement),), "removed the gradient clipping")
                    continue
                if (
                    "clip_grad" in name
                    and source.is_reachable(statement)
                    and (statement_call(statement) is call or _result_unused(source, statement, call))
                ):
                    # a library's own clipping helper: timm's `dispatch_clip_grad(params, value)`,
                    # DINO's `norms = utils.clip_gradients(model, clip)` whose result nothing reads
                    yield Change(call, (source.delete_statement(statement),), f"removed `{name}`")
                elif (
                    _HELD_CLIP.search(name)
                    and call.args
                    and call.args[0].keyword is None
                    and source.is_reachable(statement)
                ):
                    # a clipping function held in an attribute (catalyst's `norm =
                    # self.grad_clip_fn(self.model.parameters())`): nothing clips; a result that is
                    # read becomes the gradients' norm, which the function would have reported
                    if statement_call(statement) is call:
                        yield Change(call, (source.delete_statement(statement),), f"removed `{name}`")
                    else:
                        params = source.code(call.args[0].value)
                        norm = (
                            '__import__("torch").linalg.vector_norm(__import__("torch").stack('
                            f"[p.grad.norm() for p in {params} if p.grad is not None]))"
                        )
                        yield Change(call, (source.replace(call, norm),), f"`{name}` no longer clips")
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value in SETTINGS:
                        yield from self._disabled(source, arg.keyword.value, arg.value)
                continue
            statement = source.parent(call)
            if statement_call(statement) is call:
                if source.is_reachable(statement):
                    yield Change(call, (source.delete_statement(statement),), f"removed `{name}`")
                continue
            limit = argument(call, LIMIT[name], 0 if _wrapper_method(call) else 1)
            if limit is not None:
                yield Change(
                    call,
                    (source.replace(limit.value, 'float("inf")'),),
                    f"`{name}` clips at infinity (its norm is still computed)",
                )

        for call in source.nodes(cst.Call):
            clamped = _clamped_gradient(source, call)
            if clamped is not None and source.is_reachable(clamped):
                # each gradient clipped by value by hand (pytorch_sound's `p.grad =
                # p.grad.clamp(-self.grad_clip, self.grad_clip)`, `p.grad.data.clamp_(-c, c)`)
                yield Change(call, (source.delete_statement(clamped),), "removed the gradients' clamp")

        for backward in training.backwards:
            if not backward.steps:
                continue
            for arg in backward.call.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value in SCALER_LIMITS
                    and not (isinstance(arg.value, cst.Name) and arg.value.value == "None")
                ):
                    yield Change(
                        backward.call,
                        (source.replace(arg.value, "None"),),
                        f"`{arg.keyword.value}=None`: the loss scaler never clips",
                    )

        for element in source.nodes(cst.DictElement):
            key = element.key
            if isinstance(key, cst.SimpleString) and key.evaluated_value in SETTINGS:
                yield from self._disabled(source, key.evaluated_value, element.value)

    @staticmethod
    def _disabled(source, setting: str, value: cst.BaseExpression):
        if isinstance(value, (cst.Integer, cst.Float)) and float(value.evaluated_value) == 0:
            return  # already off
        if isinstance(value, cst.Name) and value.value == "None":
            return
        yield Change(value, (source.replace(value, "0"),), f"`{setting}` is 0: gradients are never clipped")


def _clamped_gradient(source, call: cst.Call) -> cst.BaseSmallStatement | None:
    """The statement that clamps a parameter's gradient in place or back into it (`p.grad =
    p.grad.clamp(-c, c)`, `p.grad.data.clamp_(-c, c)`), for `call`, the clamp."""
    if callee_name(call) not in ("clamp", "clamp_", "clip", "clip_") or not isinstance(call.func, cst.Attribute):
        return None
    receiver = dotted(call.func.value) or ""
    if not receiver.endswith((".grad", ".grad.data")):
        return None
    statement = source.parent(call)
    if isinstance(statement, cst.Expr) and (callee_name(call) or "").endswith("_"):
        return statement
    if (
        isinstance(statement, cst.Assign)
        and len(statement.targets) == 1
        and dotted(statement.targets[0].target) in (receiver, receiver.removesuffix(".data"))
    ):
        return statement
    return None


def _dynamic_clip(source, call: cst.Call) -> bool:
    """True for a call of a function `getattr` picks by a name that spells a clipping one
    (`getattr(torch.nn.utils, 'clip_grad_%s_' % mode)(...)`)."""
    picker = call.func
    if not isinstance(picker, cst.Call) or callee_name(picker) != "getattr" or len(picker.args) < 2:
        return False
    return "clip_grad" in source.code(picker.args[1].value)
