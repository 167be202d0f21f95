from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from injector.neighbours import bound_arguments, top_level
from injector.operators.base import Change, Example, Operator, inherited_mode_helper_calls, removed_mode_switches
from injector.operators.snippets import (
    CALLBACK_RUNNER,
    CRITIC_WITH_DROPOUT,
    FLAG_CHOSEN_EVAL,
    MICROBATCH_TRAINER,
    MLP_CRITIC,
    TRAINING_PROPERTY,
    TRIAL_LIBRARY,
)
from injector.patterns import (
    argument,
    bound_parameter,
    callee_name,
    dotted,
    enclosing_class,
    helper_owned,
    is_criterion,
    is_literal_bool,
    keeps_records,
    last_name,
    mode_by_method_name,
    mode_calls_by_value,
    only_times_model,
    read_from_settings,
    sets_mode,
)


def _a_setting(value: cst.BaseExpression) -> bool:
    """True for a mode read from the run's settings, negated or not (CSAIL's
    `segmentation_module.train(not cfg.TRAIN.fix_bn)`): fixed for the run, which freezes batch
    norm or not while training; no evaluation switches through it."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not):
        value = value.expression
    return read_from_settings(value)


MODE_KEYWORDS = frozenset({"training", "train", "is_training", "train_mode"})  # a mode handed to a context manager


def _is_eval(call: cst.Call, trained: Collection[str] = ()) -> bool:
    if (
        not isinstance(call.func, cst.Attribute)
        or is_criterion(call.func.value, trained)
        or keeps_records(call.func.value)
    ):
        return False
    if callee_name(call) == "eval":
        # PyText's models take the stage they switch to (`model.eval(Stage.EVAL)`, `Stage.TEST`)
        return not call.args or (
            len(call.args) == 1
            and call.args[0].keyword is None
            and (last_name(call.args[0].value) or "") in {"EVAL", "TEST", "EVALUATION"}
        )
    if callee_name(call) == "train":  # model.train(False) means eval mode
        mode = argument(call, "mode", 0)
        return mode is not None and isinstance(mode.value, cst.Name) and mode.value.value == "False"
    return False


def _trains_by_default(source, call: cst.Call, mode: cst.BaseExpression) -> bool:
    """True for `model.train(flag)` where `flag` is a parameter of the function around it that
    defaults to True (DeiT's `set_training_mode=True`): by default the call sets training mode."""
    function = source.function_of(call)
    if function is None or not isinstance(mode, cst.Name):
        return False
    return any(
        p.name.value == mode.value and p.default is not None and is_literal_bool(p.default, True)
        for p in function.params.params
    )


def _never_trained(source) -> set[str]:
    """Modules (as written) that the file switches to eval mode more than once and never to
    training mode (an EMA copy of a generator): any one of those `.eval()` calls can go, the
    others keep it in eval mode. A module trained as an attribute is trained under its name too
    (jiant's `self.jiant_model.train()`, then `jiant_model.eval()` in the functions it is handed to)."""
    evals: dict[str, int] = {}
    trained: set[str] = set()
    for call in source.nodes(cst.Call):
        if not isinstance(call.func, cst.Attribute):
            continue
        receiver = source.code(call.func.value)
        if callee_name(call) == "eval" and not call.args:
            evals[receiver] = evals.get(receiver, 0) + 1
        elif callee_name(call) == "train":
            trained.update((receiver, last_name(call.func.value) or receiver))
    return {r for r, n in evals.items() if n > 1 and r not in trained}


def _trained_by_base(source, training, call: cst.Call) -> bool:
    """True for `self.<module>.eval()` in a class whose base class, in another module of the
    project, switches the same module with `.train(...)` (AudioCraft's MusicGenSolver: the base
    solver's epoch runs `self.model.train(self.is_training)`): the file alone never trains it."""
    receiver = source.code(call.func.value)  # type: ignore[attr-defined]
    owner = enclosing_class(source, call)
    if owner is None or not receiver.startswith("self."):
        return False
    for base in owner.bases:
        found = training.resolver.definition(source, base.value)
        if found is None or found[0] is source or not isinstance(found[1], cst.ClassDef):
            continue
        module, cls = found
        if any(
            callee_name(c) == "train" and isinstance(c.func, cst.Attribute) and module.code(c.func.value) == receiver
            for c in module.within(cls, cst.Call)
        ):
            return True
    return False


# What a module can be asked without running it.
_NOT_RUNNING = frozenset(
    {
        "state_dict", "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers",
        "to", "cuda", "cpu", "half", "float", "eval", "train", "requires_grad_",
    }
)  # fmt: skip


def _local_model(source, call: cst.Call) -> tuple[cst.FunctionDef, str] | None:
    """The function and the name of a local the function assigns (not a parameter, a global or
    a name a nested function or lambda reads) that `call` switches, outside any loop."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    function = source.function_of(call)
    if not isinstance(receiver, cst.Name) or function is None:
        return None
    name = receiver.value
    params = function.params
    if name in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}:
        return None
    for ancestor in source.ancestors(call):
        if ancestor is function:
            break
        if isinstance(ancestor, (cst.For, cst.While)):
            return None
    for node in source.within(function, (cst.Global, cst.Nonlocal, cst.FunctionDef, cst.Lambda)):
        if node is function:
            continue
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(n.name.value == name for n in node.names):
                return None
        elif any(n.value == name for n in source.within(node, cst.Name)):
            return None
    assigned = any(
        isinstance(t.target, cst.Name) and t.target.value == name
        for a in source.within(function, cst.Assign)
        for t in a.targets
    )
    return (function, name) if assigned else None


def _unused_after(source, call: cst.Call) -> bool:
    """True for `model.eval()` on a local of a function that nothing reads afterwards (DiT's
    `model.eval()` before `cleanup()` at the end of training): the mode it sets is never used."""
    local = _local_model(source, call)
    if local is None:
        return False
    function, name = local
    end = source.span(call)[1]
    return not any(n.value == name and source.span(n)[0] >= end for n in source.within(function, cst.Name))


def _switched_again_by_callee(source, training, call: cst.Call) -> bool:
    """True for `model.eval()` (also `model.cuda().eval()`) whose model is next used by being
    handed to a function of another module of the project that switches that parameter to eval
    mode itself before anything else (DeepLearningExamples' TFT: `model.cuda().eval()`, then
    `predict(args, config, model, ...)`, whose first line is `model.eval()`): the model is
    switched twice, and dropping the first switch changes nothing. (Within one file each switch
    of such a pair gets its mutant, as each of a redundant pair would.)"""
    statement = source.parent(call)
    if not isinstance(statement, cst.Expr) or not isinstance(call.func, cst.Attribute):
        return False
    receiver = call.func.value
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        receiver = receiver.func.value  # `model.cuda().eval()`: the model moved, then switched
    name = dotted(receiver)
    function = source.function_of(call)
    if name is None or function is None:
        return False
    end = source.span(call)[1]
    later = sorted(
        (node for node in source.within(function.body, (cst.Name, cst.Attribute)) if source.span(node)[0] >= end),
        key=lambda node: source.span(node)[0],
    )
    first = next((node for node in later if dotted(node) == name), None)
    arg = source.parent(first) if first is not None else None
    if not isinstance(arg, cst.Arg) or arg.star or not isinstance(source.parent(arg), cst.Call):
        return False
    handed_to = source.parent(arg)
    found = training.resolver.definition(source, handed_to.func)
    if found is None or found[0] is source or not isinstance(found[1], cst.FunctionDef):
        return False
    module, callee = found
    param = bound_parameter(callee, handed_to, arg)
    if param is None:
        return False
    uses = [n for n in module.within(callee.body, cst.Name) if n.value == param]  # in document order
    if not uses:
        return False
    attribute = module.parent(uses[0])
    switch = module.parent(attribute) if isinstance(attribute, cst.Attribute) else None
    return (
        isinstance(switch, cst.Call)
        and _is_eval(switch)
        and switch.func is attribute
        and isinstance(module.parent(switch), cst.Expr)
    )


def _left_in_eval_before(source, call: cst.Call) -> bool:
    """True for `model.eval()` on a parameter of a function of the file that every caller runs
    right after another function of the file that switches the same model to eval mode and never
    back (fastMRI's `evaluate(...)` then `visualize(...)`, each starting with `model.eval()`): the
    model is in eval mode already, and dropping the second switch changes nothing."""
    statement = source.parent(call)
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    function = source.function_of(call)
    if (
        not isinstance(statement, cst.Expr)
        or not isinstance(receiver, cst.Name)
        or not isinstance(function, cst.FunctionDef)
    ):
        return False
    if top_level(source, function.name.value) is not function:
        return False
    callers = [
        c for c in source.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == function.name.value
    ]
    return bool(callers) and all(_after_eval_call(source, caller, function, receiver.value) for caller in callers)


def _after_eval_call(source, caller: cst.Call, function: cst.FunctionDef, param: str) -> bool:
    """True where the statement before `caller`'s hands the model `caller` binds to `param` to a
    function of the file that switches it to eval mode first and never to training mode."""
    handed = (bound_arguments(function, caller) or {}).get(param)
    line = next((a for a in source.ancestors(caller) if isinstance(a, cst.SimpleStatementLine)), None)
    block = source.parent(line) if line is not None else None
    body = getattr(block, "body", None)
    if handed is None or dotted(handed) is None or not isinstance(body, (list, tuple)) or line not in body:
        return False
    index = body.index(line)
    if index == 0 or not isinstance(body[index - 1], cst.SimpleStatementLine):
        return False
    for before in source.within(body[index - 1], cst.Call):
        found = top_level(source, before.func.value) if isinstance(before.func, cst.Name) else None
        if not isinstance(found, cst.FunctionDef):
            continue
        name = next((k for k, v in (bound_arguments(found, before) or {}).items() if dotted(v) == dotted(handed)), None)
        if name is not None and _switches_to_eval_only(source, found, name):
            return True
    return False


def _switches_to_eval_only(source, function: cst.FunctionDef, name: str) -> bool:
    """True if `function`'s body switches `name` to eval mode as one of its own statements and
    nowhere to training mode."""
    switches = [
        c
        for c in source.within(function, cst.Call)
        if isinstance(c.func, cst.Attribute)
        and isinstance(c.func.value, cst.Name)
        and c.func.value.value == name
        and c.func.attr.value in ("eval", "train")
    ]
    return any(
        c.func.attr.value == "eval" and not c.args and source.parent(source.parent(c)) in function.body.body
        for c in switches
    ) and not any(c.func.attr.value == "train" for c in switches)


def _never_run(source, call: cst.Call) -> bool:
    """True for `ema.eval()` on a local the function never runs: it is only asked for its
    parameters or state, or handed to functions of the file that only do that (DiT's EMA copy,
    updated by `update_ema(ema, model)` and saved): its mode changes nothing."""
    local = _local_model(source, call)
    if local is None:
        return False
    function, name = local
    for use in source.within(function, cst.Name):
        if use.value != name:
            continue
        parent = source.parent(use)
        if isinstance(parent, cst.AssignTarget):
            continue
        if isinstance(parent, cst.Attribute) and parent.value is use:
            outer = source.parent(parent)
            if isinstance(outer, cst.Call) and outer.func is parent and parent.attr.value in _NOT_RUNNING:
                continue
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is None and _handed_to_reader(source, parent):
            continue
        return False
    return True


def _handed_to_reader(source, arg: cst.Arg) -> bool:
    """True for a positional argument of a call of the file's own top-level function whose
    parameter at that place is only asked for parameters or state in its body."""
    call = source.parent(arg)
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
        return False
    definition = next(
        (s for s in source.module.body if isinstance(s, cst.FunctionDef) and s.name.value == call.func.value), None
    )
    if definition is None:
        return False
    index = list(call.args).index(arg)
    params = [*definition.params.posonly_params, *definition.params.params]
    if index >= len(params):
        return False
    param = params[index].name.value
    for use in source.within(definition.body, cst.Name):
        if use.value != param:
            continue
        parent = source.parent(use)
        outer = source.parent(parent) if parent is not None else None
        if not (
            isinstance(parent, cst.Attribute)
            and parent.value is use
            and isinstance(outer, cst.Call)
            and outer.func is parent
            and parent.attr.value in _NOT_RUNNING
        ):
            return False
    return True


COGDL_EVALUATION = (
    "class Trainer:\n"
    "    def train_step(self, model_w, loader, opt):\n"
    "        model_w.train()\n"
    "        for x in loader:\n"
    "            model_w(x).sum().backward()\n"
    "            opt.step()\n"
    "    def validate(self, model_w, loader):\n"
    "        model_w.eval()\n"
    "        with torch.no_grad():\n"
    "            return self.val_step(model_w, loader)\n"
    "    def run(self, model_w, val_loader, test_loader):\n"
    "        a = self.distributed_test(model_w, val_loader, self.val_step)\n"
    "        return a, self.distributed_test(model_w, test_loader, self.test_step)\n"
    "    def distributed_test(self, model_w, loader, fn):\n"
    "        model_w.eval()\n"
    "        with torch.no_grad():\n"
    "            return fn(model_w, loader)\n"
    "    def val_step(self, model_w, loader):\n"
    "        model_w.eval()\n"
    "        return [model_w(x) for x in loader]\n"
    "    def test_step(self, model_w, loader):\n"
    "        model_w.eval()\n"
    "        return [model_w(x) for x in loader]\n"
)


_EVALUATE_THEN_VISUALIZE = (
    "def evaluate(model, loader):\n"
    "    model.eval()\n"
    "    return [model(x) for x in loader]\n"
    "def visualize(model, loader):\n"
    "    model.eval()\n"
    "    show(model(next(iter(loader))))\n"
    "def train(model, loader, optimizer):\n"
    "    model.train()\n"
    "    for x, y in loader:\n"
    "        optimizer.zero_grad()\n"
    "        F.l1_loss(model(x), y).backward()\n"
    "        optimizer.step()\n"
    "def main(model, train_loader, dev_loader, optimizer):\n"
    "    for epoch in range(10):\n"
    "        train(model, train_loader, optimizer)\n"
    "        evaluate(model, dev_loader)\n"
    "        visualize(model, dev_loader)\n"
)


class MissingEvalMode(Operator):
    id = "missing-eval-mode"
    summary = (
        "Delete `model.eval()` (or `model.train(False)`, `model = model.eval()`, a helper's "
        "`set_training(False)`) before evaluation, or make `model.train(flag)` never switch to eval."
    )
    examples = (
        Example(
            # A library object's own eval() switching the model it holds (torchbearer's Trial).
            TRIAL_LIBRARY,
            (
                TRIAL_LIBRARY.replace("        self.eval()\n        self._test_pass", "        self._test_pass"),
                TRIAL_LIBRARY.replace("        self.state[torchbearer.MODEL].eval()\n", ""),
            ),
        ),
        Example(
            # A model switched by the stage it is handed (PyText's `model.eval(Stage.EVAL)`).
            "def evaluate(model, loader, opt):\n"
            "    model.train()\n"
            "    for x in loader:\n"
            "        model(x).sum().backward()\n"
            "        opt.step()\n"
            "    model.eval(Stage.EVAL)\n"
            "    with torch.no_grad():\n"
            "        return [model(x) for x in loader]\n",
            (
                "def evaluate(model, loader, opt):\n"
                "    model.train()\n"
                "    for x in loader:\n"
                "        model(x).sum().backward()\n"
                "        opt.step()\n"
                "    with torch.no_grad():\n"
                "        return [model(x) for x in loader]\n",
            ),
        ),
        Example(
            # A mode set by assigning the flag (Stanza's coreference model: its `training` property switches
            # every module it holds): the assignment deleted.
            TRAINING_PROPERTY,
            (
                TRAINING_PROPERTY.replace("            module.train(value)\n", "            module.train(True)\n"),
                TRAINING_PROPERTY.replace("        self.training = False\n", ""),
            ),
        ),
        Example(
            # A switch chosen by a flag in a statement of its own (PyTorch Connectomics' test()): its eval arm
            # emptied; the train arm picks batch statistics for inference and is left alone.
            FLAG_CHOSEN_EVAL,
            (
                FLAG_CHOSEN_EVAL.replace(
                    "    self.model.eval() if self.cfg.DO_EVAL else self.model.train()\n",
                    "    None if self.cfg.DO_EVAL else self.model.train()\n",
                ),
            ),
        ),
        Example(
            # Each evaluation switches before calling its step and inside it (CogDL's Trainer): a
            # switch is deleted with the step's, and with those of the steps a shared evaluation is
            # handed; a step's own switch gets no mutant where every use of it follows a switch.
            COGDL_EVALUATION,
            (
                COGDL_EVALUATION.replace(
                    "    def validate(self, model_w, loader):\n        model_w.eval()\n",
                    "    def validate(self, model_w, loader):\n",
                ).replace(
                    "    def val_step(self, model_w, loader):\n        model_w.eval()\n",
                    "    def val_step(self, model_w, loader):\n",
                ),
                COGDL_EVALUATION.replace(
                    "    def distributed_test(self, model_w, loader, fn):\n        model_w.eval()\n",
                    "    def distributed_test(self, model_w, loader, fn):\n",
                )
                .replace(
                    "    def val_step(self, model_w, loader):\n        model_w.eval()\n",
                    "    def val_step(self, model_w, loader):\n",
                )
                .replace(
                    "    def test_step(self, model_w, loader):\n        model_w.eval()\n",
                    "    def test_step(self, model_w, loader):\n",
                ),
            ),
        ),
        Example(
            # A mode helper of the class handed a value that is False by default.
            "class Net:\n"
            "    def _set_training(self, training=True):\n"
            "        self.module_.train(training)\n"
            "    def evaluation_step(self, batch, training=False):\n"
            "        self._set_training(training)\n",
            (
                "class Net:\n"
                "    def _set_training(self, training=True):\n"
                "        self.module_.train(training)\n"
                "    def evaluation_step(self, batch, training=False):\n"
                "        self._set_training(True)\n",
            ),
        ),
        Example(
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",
            (
                "def evaluate(model, loader):\n"
                "    with torch.no_grad():\n"
                "        return sum(model(x).argmax(1).eq(y).sum() for x, y in loader)\n",
            ),
        ),
        Example(
            "self.model.train(False)\nscore = run(self.model)\n",
            ("score = run(self.model)\n",),
        ),
        Example(
            # Through a value: an assignment and a helper of the class.
            "class Runner:\n"
            "    def _set_training(self, flag):\n"
            "        self.model.train(flag)\n"
            "    def validate(self):\n"
            "        self.encoder = self.encoder.eval()\n"
            "        self._set_training(False)\n",
            (
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def validate(self):\n"
                "        self.encoder = self.encoder\n"
                "        self._set_training(False)\n",
                "class Runner:\n"
                "    def _set_training(self, flag):\n"
                "        self.model.train(flag)\n"
                "    def validate(self):\n"
                "        self.encoder = self.encoder.eval()\n",
            ),
        ),
        Example(
            "for phase in ('train', 'val'):\n    model.train(mode=phase == 'train')\n",
            ("for phase in ('train', 'val'):\n    model.train(mode=True)\n",),
        ),
        Example(
            # A flag that defaults to evaluation, not to training.
            "def run_epoch(model, loader, training=False):\n    model.train(training)\n",
            ("def run_epoch(model, loader, training=False):\n    model.train(True)\n",),
        ),
        Example(
            # A context manager handed the model and its mode (YOLOX's adjust_status).
            "with adjust_status(evalmodel, training=False):\n    ap = evaluate(evalmodel)\n",
            ("with adjust_status(evalmodel, training=True):\n    ap = evaluate(evalmodel)\n",),
        ),
        Example(
            # A mode applied by its method's name (catalyst's `maybe_recursive_call`), from a value.
            CALLBACK_RUNNER,
            (CALLBACK_RUNNER.replace("mode=self.is_train_loader)", "mode=True)"),),
        ),
        Example(
            # The same as a decorator (k-diffusion's demo and evaluation of the EMA model).
            "@torch.no_grad()\n@K.utils.eval_mode(model_ema)\ndef demo():\n    return sample(model_ema, x)\n",
            ("@torch.no_grad()\n@(lambda function: function)\ndef demo():\n    return sample(model_ema, x)\n",),
        ),
        Example(
            # A context manager named for eval mode (composer's `model_eval_mode(model)`).
            MICROBATCH_TRAINER,
            (
                MICROBATCH_TRAINER.replace(
                    "model_eval_mode(self.state.model)", '__import__("contextlib").nullcontext()'
                ),
            ),
        ),
        Example(
            # A model class of the file with a dropout layer: its mode matters.
            CRITIC_WITH_DROPOUT,
            (CRITIC_WITH_DROPOUT.replace("    critic.eval()\n", ""),),
        ),
        Example(
            # The same local, evaluated after the switch.
            "def main(args):\n    model = build(args)\n    train(model)\n    model.eval()\n    return evaluate(model)\n",
            ("def main(args):\n    model = build(args)\n    train(model)\n    return evaluate(model)\n",),
        ),
        Example(
            # An EMA copy that samples after training: it runs, so its mode matters.
            "def main(args):\n    model = build(args)\n    ema = deepcopy(model)\n    ema.eval()\n"
            "    for x, y in loader:\n        model(x, y).backward()\n    samples = ema(noise)\n",
            (
                "def main(args):\n    model = build(args)\n    ema = deepcopy(model)\n"
                "    for x, y in loader:\n        model(x, y).backward()\n    samples = ema(noise)\n",
            ),
        ),
        Example(
            # A criterion whose parameters the optimizer trains with the model's (CPC_audio's prediction
            # heads, with dropout): its switch counts. Each switch written twice in a row (CPC's valStep) is
            # deleted with its repeat: either alone changes nothing.
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
                "    model.train()\n"
                "    criterion.train()\n"
                "    for x, y in loader:\n"
                "        loss = criterion(model(x), y).sum()\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n"
                "def validate(loader, model, criterion):\n"
                "    model.eval()\n"
                "    logs = {}\n"
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
                "    criterion.train()\n"
                "    for x, y in loader:\n"
                "        loss = criterion(model(x), y).sum()\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        optimizer.zero_grad()\n"
                "def validate(loader, model, criterion):\n"
                "    criterion.eval()\n"
                "    logs = {}\n"
                "    criterion.eval()\n"
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
            # A function every caller runs right after another that leaves the model in eval mode
            # (fastMRI's `visualize` after `evaluate`): its own switch finds it there already, so
            # only the first switch is a site.
            _EVALUATE_THEN_VISUALIZE,
            (_EVALUATE_THEN_VISUALIZE.replace("    model.eval()\n    return", "    return", 1),),
        ),
    )
    untouched = (
        # A mode read from the run's settings (CSAIL's `train(not cfg.TRAIN.fix_bn)`): batch norm
        # frozen for the whole run or not, no evaluation.
        "def train(segmentation_module, loader, optimizer, cfg):\n"
        "    segmentation_module.train(not cfg.TRAIN.fix_bn)\n"
        "    for batch in loader:\n"
        "        segmentation_module(batch).mean().backward()\n",
        # A writer's own switch of where its records go (visloc_retrieval's `self.writer.eval()`).
        "def val_epoch(self):\n    self.writer.eval()\n    return self.evaluate()\n",
        # A model of linear layers and layer norms, some built by an alternate constructor that
        # returns an instance of the class; math from the standard library; a flag set on the
        # wrapped model each step: both modes compute the same.
        "import math\n"
        "import torch\n"
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.ln = nn.LayerNorm(width)\n"
        "        self.fc = nn.Linear(width, width)\n"
        "    def forward(self, x):\n"
        "        return self.fc(self.ln(x)) / math.sqrt(x.size(-1))\n"
        "    @classmethod\n"
        "    def from_checkpoint(cls, path):\n"
        "        model = cls(8)\n"
        "        model.load_state_dict(torch.load(path))\n"
        "        return model\n"
        "    def configure_optimizers(self, lr):\n"
        "        return torch.optim.AdamW(self.parameters(), lr=lr)\n"
        "if fresh:\n"
        "    model = Net(8)\n"
        "else:\n"
        "    model = Net.from_checkpoint(path)\n"
        "model.require_backward_grad_sync = step == last\n"
        "model.eval()\n",
        # The same helper handed a literal training mode.
        'maybe_recursive_call(self.model, "train", mode=True)\n',
        # The same manager handed training mode, and a context that is handed no model.
        "with adjust_status(model, training=True):\n    loss = model(x)\n",
        "with torch.autocast('cpu', training=False):\n    y = model(x)\n",
        # A flag that defaults to training; a module put in eval mode twice and never trained.
        "def train_one_epoch(model, loader, set_training_mode=True):\n    model.train(set_training_mode)\n",
        "g_ema.eval()\nfor i in range(steps):\n    with torch.no_grad():\n        g_ema.eval()\n        sample = g_ema(z)\n",
        # A data wrapper's switch between a graph's edge sets (CogDL's `dataset_w.eval()`): no model.
        "def validate(dataset_w, loader):\n    dataset_w.eval()\n    return dataset_w.on_val_wrapper()\n",
        # A criterion's mode: no dropout or batch-norm in it.
        "criterion.eval()\n",
        "result = eval('1 + 1')\n",
        "model.train()\n",
        "model.eval(deep=True)\n",
        # A throughput benchmark: the outputs are dropped, so the mode changes no number.
        "def throughput(model, images):\n    model.eval()\n    for i in range(30):\n        model(images)\n",
        # The same model of linear layers only: both modes compute the same (a sibling module's
        # class is read the same way, through the project's files).
        MLP_CRITIC,
        # A model of linear layers only, handed to the function that switches it (SimCLR's linear
        # evaluation: every caller hands `test` a `LogisticRegression`).
        "import torch.nn as nn\n"
        "class LogisticRegression(nn.Module):\n"
        "    def __init__(self, n_features, n_classes):\n"
        "        super().__init__()\n"
        "        self.model = nn.Linear(n_features, n_classes)\n"
        "    def forward(self, x):\n"
        "        return self.model(x)\n"
        "def test(loader, model):\n"
        "    model.eval()\n"
        "    return [model(x).argmax(1) for x, y in loader]\n"
        "def main(loader, device):\n"
        "    model = LogisticRegression(512, 10).to(device)\n"
        "    print(test(loader, model))\n",
        # A local switched to eval mode at the end of training that nothing reads afterwards.
        "def main(args):\n"
        "    model = build(args)\n"
        "    for x, y in loader:\n"
        "        loss = model(x, y)\n"
        "        loss.backward()\n"
        "    model.eval()\n"
        "    cleanup()\n",
        # An EMA copy that is only updated from the model's parameters and saved: never run.
        "def update_ema(ema_model, model, decay=0.9999):\n"
        "    for name, param in model.named_parameters():\n"
        "        dict(ema_model.named_parameters())[name].mul_(decay).add_(param.data, alpha=1 - decay)\n"
        "def main(args):\n"
        "    model = build(args)\n"
        "    ema = deepcopy(model)\n"
        "    ema.eval()\n"
        "    for x, y in loader:\n"
        "        model(x, y).backward()\n"
        "        update_ema(ema, model)\n"
        "    torch.save(ema.state_dict(), path)\n",
        # A trainer's own evaluation routine, called on itself for the validation loss it returns
        # (EGG's `validation_loss, interaction = self.eval()`): no module's mode switch.
        "class Trainer:\n"
        "    def __init__(self, game, optimizer, train_data, validation_data):\n"
        "        self.game = game\n"
        "        self.optimizer = optimizer\n"
        "        self.train_data = train_data\n"
        "        self.validation_data = validation_data\n"
        "\n"
        "    def eval(self):\n"
        "        mean_loss = 0.0\n"
        "        for batch in self.validation_data:\n"
        "            loss, _ = self.game(*batch)\n"
        "            mean_loss += loss.item()\n"
        "        return mean_loss / len(self.validation_data), None\n"
        "\n"
        "    def train(self, n_epochs):\n"
        "        for epoch in range(n_epochs):\n"
        "            for batch in self.train_data:\n"
        "                self.optimizer.zero_grad()\n"
        "                loss, _ = self.game(*batch)\n"
        "                loss.backward()\n"
        "                self.optimizer.step()\n"
        "            validation_loss, interaction = self.eval()\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            named = None if sets_mode(call) else mode_by_method_name(call)
            if named is not None and not helper_owned(source, training, call):
                yield Change(
                    call,
                    (source.replace(named.value, "True"),),
                    f"`{source.code(call)}` never switches to eval mode",
                )
            if sets_mode(call):
                mode = argument(call, "mode", 0)
                if (
                    mode is not None
                    and not is_literal_bool(mode.value)
                    and not helper_owned(source, training, call)
                    and not _trains_by_default(source, call, mode.value)
                    and not _a_setting(mode.value)
                ):
                    yield Change(
                        call,
                        (source.replace(mode.value, "True"),),
                        f"`{source.code(call)}` never switches to eval mode",
                    )

        for call, mode in mode_calls_by_value(source, training):
            # a mode helper of the file handed a value (skorch's `self._set_training(training)`)
            if not _trains_by_default(source, call, mode.value):
                yield Change(
                    call,
                    (source.replace(mode.value, "True"),),
                    f"`{source.code(call)}` never switches to eval mode",
                )

        for item in source.nodes(cst.WithItem):
            # a context manager handed the model and a mode (YOLOX's `with adjust_status(model,
            # training=False):`): the block runs with the mode it is handed
            call = item.item
            if not (
                isinstance(call, cst.Call)
                and call.args
                and call.args[0].keyword is None
                and isinstance(call.args[0].value, (cst.Name, cst.Attribute))
            ):
                continue  # handed no model first
            mode = next((a for a in call.args if a.keyword is not None and a.keyword.value in MODE_KEYWORDS), None)
            if mode is None and "eval_mode" in (callee_name(call) or "").lower():
                # a context manager named for eval mode (composer's `model_eval_mode(model)`)
                yield Change(
                    call,
                    (source.replace(call, '__import__("contextlib").nullcontext()'),),
                    f"`{source.code(call)}` no longer puts the model in eval mode",
                )
            if mode is not None and is_literal_bool(mode.value, False):
                yield Change(
                    call,
                    (source.replace(mode.value, "True"),),
                    f"`{source.code(call)}` runs its block in training mode",
                )

        for decorator in source.nodes(cst.Decorator):
            # the same, applied as a decorator (k-diffusion's `@K.utils.eval_mode(model_ema)` on
            # its demo and evaluation): the function runs with the model's modes as they were
            call = decorator.decorator
            if (
                isinstance(call, cst.Call)
                and "eval_mode" in (callee_name(call) or "").lower()
                and call.args
                and call.args[0].keyword is None
                and isinstance(call.args[0].value, (cst.Name, cst.Attribute))
                and not any(a.keyword is not None and a.keyword.value in MODE_KEYWORDS for a in call.args)
            ):
                yield Change(
                    decorator,
                    (source.replace(call, "(lambda function: function)"),),
                    f"`{source.code(call)}` no longer puts the model in eval mode",
                )

        never_trained = _never_trained(source)

        def is_switch(call: cst.Call) -> bool:
            function = source.function_of(call)
            return (
                _is_eval(call, training.trained_criteria)
                and not (function is not None and only_times_model(source, training, function.body))
                and (
                    source.code(call.func.value) not in never_trained  # type: ignore[attr-defined]
                    or _trained_by_base(source, training, call)
                )
                and not _unused_after(source, call)
                and not _never_run(source, call)
                and not _switched_again_by_callee(source, training, call)
                and not _left_in_eval_before(source, call)
            )

        yield from removed_mode_switches(source, training, is_switch, False, "evaluation runs in training mode")
        for statement in inherited_mode_helper_calls(source, training, "eval"):
            yield Change(
                statement,
                (source.delete_statement(statement),),
                f"removed `{source.code(statement.value)}`: evaluation runs in training mode",
            )
