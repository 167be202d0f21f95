"""Where the training forward runs when the loss's own statements hold none: the searches that
no-grad-training (run it without autograd) and detached-graph (cut off its output) share."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from injector.neighbours import bound_arguments, top_level
from injector.patterns import (
    MODULE_METHODS,
    STATE_INITIALISERS,
    bound_names,
    callee_name,
    dotted,
    imported_name,
    last_name,
    loss_name,
    names_a_model,
    names_evaluation,
    root_name,
    runs_model,
    under_no_grad,
)


def grad_switch(expr: cst.BaseExpression) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(...)`."""
    return isinstance(expr, cst.Call) and (last_name(expr.func) or "") in (
        "no_grad",
        "inference_mode",
        "set_grad_enabled",
    )


def switches_grad(block: cst.With) -> bool:
    return any(grad_switch(item.item) for item in block.items)


# a step function's flag for training (demucs' `_run_one_epoch(epoch, train=True)`)
TRAINING_FLAGS = frozenset({"train", "training", "is_train", "is_training", "train_mode"})


def _training_flag(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Name, cst.Attribute)) and (last_name(expr) or "") in TRAINING_FLAGS


def _evaluation_test(test: cst.BaseExpression) -> bool:
    """`not train`, `not train and self.args.valid_apply`: a branch only evaluation takes."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _evaluation_test(test.left):
            return True
        test = test.right
    return (
        isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and _training_flag(test.expression)
    )


def branch_statements(branch: cst.If, switched=lambda with_: False) -> list[cst.CSTNode]:
    """The statements in each branch of an if/elif/else chain, in the `with` blocks there (an
    autocast) unless `switched` says the block turns autograd off, and in the branches of an `if`
    nested there (ParallelWaveGAN's VQ generator, run on the audio or on its sub-bands). Not a
    branch that only evaluation takes (`if not train and ...:`, the `else` of `if train:`)."""
    found: list[cst.CSTNode] = []
    node: cst.If | cst.Else | None = branch
    while node is not None:
        evaluation = isinstance(node, cst.If) and _evaluation_test(node.test)
        for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) and not evaluation else ():
            if isinstance(statement, cst.With) and isinstance(statement.body, cst.IndentedBlock):
                if not switched(statement):
                    found.extend(statement.body.body)
            elif isinstance(statement, cst.If):
                found.extend(branch_statements(statement, switched))
            else:
                found.append(statement)
        if isinstance(node, cst.If) and _training_flag(node.test):
            break
        node = node.orelse if isinstance(node, cst.If) else None
    return found


def _batch_rebound(source, line: cst.CSTNode) -> bool:
    """True for a line that binds the batch loop's own target again (demucs' `sources =
    self.augment(sources)`, `sources = self.model.transform_target(mix, sources)`): the data
    transformed, not the forward pass whose output the loss takes."""
    assign = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    loop = next((a for a in source.ancestors(line) if isinstance(a, cst.For)), None)
    if not isinstance(target, cst.Name) or loop is None:
        return False
    return target.value in {n.value for n in source.within(loop.target, cst.Name)}


def _forward_assignment(source, training, line: cst.CSTNode) -> bool:
    """A one-assignment line whose value runs the model (not on the batch it binds again)."""
    return (
        isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and isinstance(line.body[0], cst.Assign)
        and runs_model(source, training, line.body[0].value, depth=0)
        and not _batch_rebound(source, line)
    )


def _bound_by(line: cst.SimpleStatementLine) -> set[str]:
    assign = line.body[0]
    targets = assign.targets if isinstance(assign, cst.Assign) else ()
    return set().union(*(bound_names(t.target) for t in targets))


def helper_runs_model(source, training, value: cst.BaseExpression) -> bool:
    """True for a call of a function of the file that runs the model outside no_grad (mmf's
    `self._forward(batch)`, wavenet_vocoder's `data_parallel_workaround(model, inputs)`)."""
    return isinstance(value, cst.Call) and any(
        runs_model(source, training, f.body, depth=0) and not under_no_grad(source, f.body)
        for f in training.called_functions(value)
    )


def _helper_alternatives(source, training, statements, forwards) -> list[cst.CSTNode]:
    """In an if/else whose other branch runs the model itself, an assignment of the same output
    from a function of the file that runs the model it is handed (wavenet_vocoder: `if use_cuda:
    y_hat, _outputs, _replicas = data_parallel_workaround(model, (x, c, g, False))` else `y_hat =
    model(x, c, g, False)`)."""
    bound = set().union(*(_bound_by(f) for f in forwards)) if forwards else set()
    found: list[cst.CSTNode] = []
    for statement in statements:
        if statement in forwards or not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        assign = statement.body[0]
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
            continue
        if not (_bound_by(statement) & bound) or source.has_multiline_string(statement):
            continue
        if helper_runs_model(source, training, assign.value):
            found.append(statement)
    return found


def feeding_forwards_in_block(source, training, first) -> tuple[list[cst.CSTNode], bool]:
    """The forward passes run before `first` in its own block that feed it, nearest first: a
    one-assignment line, a loop or `with` block that runs the model, or each branch's forward of
    an if/elif chain (and of earlier chains). Also whether the search stopped there (a forward
    found, or a statement no forward may be looked for past)."""
    _, siblings = source.block_of(first)
    if first not in siblings:
        return [], True
    found: list[cst.CSTNode] = []
    chained = False  # an if/elif chain's forwards were taken: only earlier chains may follow
    trained: set[str] | None = None  # the models the next optimizer step trains, read once needed
    for line in reversed(siblings[: siblings.index(first)]):
        if chained and not isinstance(line, cst.If):
            if isinstance(line, cst.SimpleStatementLine) or runs_model(source, training, line, depth=0):
                return found, True
            continue
        if isinstance(line, (cst.For, cst.While, cst.With)) and any(
            runs_model(source, training, a.value, depth=0) for a in source.within(line.body, cst.Assign)
        ):
            # a recurrent forward run step by step (`for i in range(n): out, h = rnn(x[i], h)`),
            # or a forward alone in an autocast block (`with accelerator.autocast(): pred = unet(x)`);
            # a no_grad or set_grad_enabled block holds no forward of the training step
            if not (isinstance(line, cst.With) and switches_grad(line)) and not source.has_multiline_string(line):
                found.append(line)
            return found, True
        if isinstance(line, cst.If):
            # the forward chosen by an if/elif chain (SlowFast: by task): each branch's own; an
            # earlier chain may choose another forward the loss reads (an adversarial pass after
            # the main one, ReID's baseline)
            statements = branch_statements(line, switches_grad)
            forwards = [
                statement
                for statement in statements
                if _forward_assignment(source, training, statement) and not source.has_multiline_string(statement)
            ]
            forwards += _helper_alternatives(source, training, statements, forwards)
            if trained is None:
                trained = trained_after(source, training, first) or set()
            # (not a model the next step does not train: SPIN's `self.smplify(...)`, fitting
            # targets from detached predictions with its own optimizer, in `if run_smplify:`)
            forwards = [
                f
                for f in forwards
                if not (
                    trained
                    and isinstance(f, cst.SimpleStatementLine)
                    and isinstance(f.body[0], cst.Assign)
                    and not (model_run(f.body[0]) & trained)
                    and not read_forwards(source, training, f.body[0].value)
                )
            ]
            found.extend(forwards)
            chained = chained or bool(forwards)
            continue
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            continue
        assign = line.body[0]
        if (
            not isinstance(assign, cst.Assign)
            or _batch_rebound(source, line)
            or not (
                runs_model(source, training, assign.value, depth=0)
                # a method of the file that runs the forward (mmf's `report = self._forward(batch)`)
                or helper_runs_model(source, training, assign.value)
            )
        ):
            continue
        if trained is None:
            trained = trained_after(source, training, first) or set()
        if trained and not (model_run(assign) & trained):
            # a model the next step does not train (MOON's `global_net(x)` beside `net(x)`, whose
            # optimizer holds only `net`): without autograd it changes no gradient; look further
            continue
        if not source.has_multiline_string(line):
            found.append(line)
        return found, True
    return found, chained


def constant_start(value: cst.BaseExpression | None) -> bool:
    """True for a constant a loss starts as, for its terms to be added into (`0`, `torch.tensor(0.0)`,
    `torch.zeros(1)`, also moved or cast: `torch.zeros(1).to(pred_traj_gt)`): it holds no graph."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.ListComp):
        # one zero per step, for each step's terms to be added into (MAML's `losses_q = [0 for _ in
        # range(self.update_step + 1)]`)
        return constant_start(value.elt)
    if isinstance(value, (cst.List, cst.Tuple)) and value.elements:
        return all(constant_start(e.value) for e in value.elements)
    if not isinstance(value, cst.Call):
        return False
    if (
        isinstance(value.func, cst.Attribute)
        and callee_name(value) in ("to", "cuda", "float", "double", "type")
        and constant_start(value.func.value)
    ):
        return True  # a constant moved or cast (Social GAN's `loss = torch.zeros(1).to(pred_traj_gt)`)
    if callee_name(value) in ("tensor", "zeros", "scalar_tensor", "new_zeros", "new_tensor"):
        return all(isinstance(a.value, (cst.Integer, cst.Float, cst.List, cst.Tuple)) or a.keyword for a in value.args)
    # a constant handed to a move (composer's `self.state.device.tensor_to_device(torch.zeros(size=(1,)))`)
    positional = [a for a in value.args if a.keyword is None]
    return len(positional) == 1 and isinstance(positional[0].value, cst.Call) and constant_start(positional[0].value)


def assigned_element(assign: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value `assign` gives `name`: its whole value, or the matching element of a tuple
    assigned to a tuple (`tor_loss, tor_base_loss = tor_loss.mean() * w, tor_base.mean() * w`)."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if isinstance(target, cst.Name):
        return assign.value if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(assign.value, (cst.Tuple, cst.List)):
        names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
        values = assign.value.elements
        if name in names and len(values) == len(names) and not any(isinstance(v, cst.StarredElement) for v in values):
            return values[names.index(name)].value
    return None


def trained_term(source, training, assign: cst.CSTNode, name: str) -> bool:
    """False for an assignment of the loss term `name` that training never runs through, or that
    carries no graph: a constant (`tor_loss, tor_base_loss = torch.zeros(1), torch.zeros(1)` where
    the torsion term is off), or a branch that only another setting of a parameter the function
    defaults takes (DiffDock's `if apply_mean: ... else: <per-complex sums>`, with `apply_mean=True`
    by default and the training call passing none: the `else` is validation's)."""
    value = assigned_element(assign, name)
    if value is not None and constant_start(value):
        return False
    function = source.function_of(assign)
    if function is None:
        return True
    defaults = {
        p.name.value: p.default.value
        for p in function.params.params + function.params.kwonly_params
        if isinstance(p.default, cst.Name) and p.default.value in ("True", "False")
    }
    if not defaults:
        return True
    child: cst.CSTNode = assign
    for ancestor in source.ancestors(assign):
        if ancestor is function:
            break
        if isinstance(ancestor, cst.If) and child in (ancestor.body, ancestor.orelse):
            test, negated = ancestor.test, False
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, True
            if isinstance(test, cst.Name) and test.value in defaults:
                taken = (defaults[test.value] == "True") != negated
                branch_taken = taken if child is ancestor.body else not taken
                calls = [c for c in training.callers(function) if not _evaluation_call(source, c)]
                passed = any(
                    any(a.star for a in call.args) or test.value in (bound_arguments(function, call) or {})
                    for call in calls
                )
                if calls and not branch_taken and not passed:
                    return False
        child = ancestor
    return True


def _evaluation_call(source, call: cst.Call) -> bool:
    """True for a call under no_grad, or in a function named for evaluation (DiffDock's
    `test_epoch`, whose loss call follows a forward under no_grad)."""
    function = source.function_of(call)
    return under_no_grad(source, call) or (function is not None and names_evaluation(function.name.value))


def empty_start(source, training, backward) -> cst.Assign | None:
    """The assignment of a loss that starts empty (`gen_loss = 0.0`, `loss = torch.zeros(1).to(x)`)
    for its terms to be added into, or None."""
    assign = training.loss_assignment(backward)
    value = assign.value if isinstance(assign, cst.Assign) else None
    return assign if constant_start(value) else None


def forwards_after_empty_start(source, training, backward) -> list[cst.CSTNode]:
    """A loss that starts empty and is added up from terms computed after it (ParallelWaveGAN's
    generator step): the forward those terms read, in each branch of the if/elif chain that
    picks the generator. Searched from the first statement after the start that a forward
    precedes."""
    assign = empty_start(source, training, backward)
    if assign is None:
        return []
    line, siblings = source.block_of(assign)
    if line not in siblings:
        return []
    for later in siblings[siblings.index(line) + 1 :]:
        forwards, stopped = feeding_forwards_in_block(source, training, later)
        if stopped:
            return forwards
    return []


def forwards_of_branch_terms(source, training, backward) -> list[cst.CSTNode]:
    """A loss that starts empty, of its terms those computed in a block of their own from a forward
    run there (ParallelWaveGAN's adversarial loss, added once the discriminator trains, from the
    discriminator's score of the generated audio): that forward, nearest before the term."""
    start = empty_start(source, training, backward)
    function = source.function_of(start) if start is not None else None
    if start is None or function is None or len(start.targets) != 1:
        return []
    name = dotted(start.targets[0].target)
    _, start_block = source.block_of(start)
    after, before = source.span(start)[1], source.span(backward.call)[0]
    found: list[cst.CSTNode] = []
    for added in source.within(function, cst.AugAssign):
        if not after < source.span(added)[0] < before or dotted(added.target) != name:
            continue
        for read in source.within(added.value, cst.Name):
            term = training.last_assignment(read.value, added)
            if not isinstance(term, cst.Assign) or under_no_grad(source, term):
                continue
            line, siblings = source.block_of(term)
            if line not in siblings or siblings is start_block or source.span(term)[0] < after:
                continue
            reads = {n.value for n in source.within(term.value, cst.Name)}
            forwards, _ = feeding_forwards_in_block(source, training, line)
            for forward in forwards:
                assigned = {
                    n.value
                    for a in source.within(forward, cst.Assign)
                    for t in a.targets
                    for n in source.within(t.target, cst.Name)
                }
                if assigned & reads and forward not in found:
                    found.append(forward)
    return found


def _detached_read(source, name: cst.Name) -> bool:
    """True for a name read through `.detach()` (`netD(x_pred_t.cuda().detach())`): no gradient
    flows back into what computed it."""
    node: cst.CSTNode = name
    while True:
        parent = source.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in ("detach", "detach_", "item", "tolist", "numpy"):
                return True
            node = source.parent(parent)  # the call of the method, if it is one
            if not isinstance(node, cst.Call) or node.func is not parent:
                return False
            continue
        return False


def trained_after(source, training, forward: cst.CSTNode) -> set[str] | None:
    """The models whose parameters the first optimizer stepped after `forward` in its function (or
    script) is built over (`optimizer_D = Adam(discriminator.parameters())`: {"discriminator"}), by
    their last names; None where the step or its optimizer's construction cannot be read."""
    function = source.function_of(forward)
    after = source.span(forward)[1]
    steps = [
        call
        for call in source.within(function.body if function is not None else source.module, cst.Call)
        if source.span(call)[0] > after
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "step"
        and training.role(call.func.value) == "optimizer"
    ]
    if not steps:
        return None
    # the steps of one backward: the first, and those right after it with no backward between
    # (pretrain-gnns' `optimizer_substruct.step()`, then `optimizer_context.step()`)
    backwards = [
        source.span(call)[0]
        for call in source.within(function.body if function is not None else source.module, cst.Call)
        if callee_name(call) == "backward"
    ]
    group = [steps[0]]
    for step in steps[1:]:
        if any(source.span(group[-1])[1] < at < source.span(step)[0] for at in backwards):
            break
        group.append(step)
    found: set[str] = set()
    for step in group:
        held = _held_by(source, training, function, dotted(step.func.value))
        if held is None:
            return None
        found |= held
    return found


def _held_by(source, training, function, name: str | None) -> set[str] | None:
    """The models the optimizer `name` is built over, by their last names (or, for one handed
    in, the parameters its callers hand those models as); None where that cannot be read."""
    built = [
        a
        for a in training.assigned_names.get(name or "", ())
        if isinstance(a.value, cst.Call) and training.role_of_constructor(a.value) == "optimizer"
    ]
    if len(built) > 1 and function is not None:
        # one per training function (NIID-Bench's local trainers each build their own, in a branch
        # per `--optimizer`): the step's function's, all over the same model
        built = [a for a in built if source.function_of(a) is function]
    if not built:
        return None
    held = [
        {
            last_name(call.func.value) or ""
            for call in source.within(a.value, cst.Call)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("parameters", "named_parameters")
        }
        for a in built
    ]
    if not held[0] or any(h != held[0] for h in held):
        return None
    if (
        function is not None
        and name in {p.name.value for p in function.params.params}
        and all(source.function_of(a) is not function for a in built)
    ):
        # an optimizer handed in, built over the caller's names: the parameters those models are
        # handed as (TorchBeast's `learn(flags, model, learner_model, ..., optimizer, ...)` binds
        # `learner_model`, which the optimizer holds, to `model`)
        return _as_parameters(training, function, held[0]) or held[0]
    return held[0]


def _as_parameters(training, function: cst.FunctionDef, names: set[str]) -> set[str] | None:
    """The parameters of `function` that every call of it in the file hands the models `names`."""
    params = [p.name.value for p in function.params.params]
    found: set[str] | None = None
    for call in training.callers(function):
        if isinstance(call.func, cst.Attribute) and params[:1] == ["self"]:
            continue  # a method: its positions are shifted by `self`
        bound = bound_arguments(function, call) or {}
        mapped = {param for param, value in bound.items() if last_name(value) in names}
        if not mapped or (found is not None and mapped != found):
            return None
        found = mapped
    return found


def model_run(assign: cst.Assign) -> set[str]:
    """The names in what a forward assignment calls (`netG` for `netG(s_t.cuda())`; `self`, `_net`
    and `user_representation` for `self._net.user_representation(seq)`): the model is one of them.
    A part of the output taken at once counts as the forward (pretrain-gnns' `model_substruct(x,
    edge_index, edge_attr)[batch.center_substruct_idx]`, `model(x).logits`)."""
    value = assign.value
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    text = dotted(value.func) if isinstance(value, cst.Call) else None
    return set(text.split(".")) if text else set()


def upstream_forwards(source, training, forward: cst.CSTNode) -> list[cst.CSTNode]:
    """The forwards whose outputs a found forward reads, not through `.detach()` (a GAN's
    generator, run before the discriminator's update whose forward on the generated audio feeds
    the generator's loss several statements later): one-assignment lines of the same loop that run
    the model, nearest first, followed back as far as they go. Where the optimizer stepped next
    after `forward` is known, only forwards of the models it trains (the discriminator's step
    after a forward on the generator's output leaves the generator untouched: no gradient of it
    is wanted there)."""
    trained = trained_after(source, training, forward)
    seen: list[cst.CSTNode] = []
    found: list[cst.CSTNode] = []
    frontier = [forward]
    while frontier:
        line = frontier.pop()
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            continue
        assign = line.body[0]
        if not isinstance(assign, cst.Assign):
            continue
        loop = next((a for a in source.ancestors(line) if isinstance(a, (cst.For, cst.While))), None)
        if loop is None:
            continue
        for read in source.within(assign.value, cst.Name):
            parent = source.parent(read)
            if isinstance(parent, cst.Attribute) and parent.attr is read or _detached_read(source, read):
                continue
            earlier = training.last_assignment(read.value, assign)
            earlier_line = source.parent(earlier) if earlier is not None else None
            if (
                earlier_line is None
                or earlier_line in seen
                or earlier_line is forward
                or loop not in source.ancestors(earlier_line)
                or not _forward_assignment(source, training, earlier_line)
                or under_no_grad(source, earlier_line)
                or source.has_multiline_string(earlier_line)
            ):
                continue
            seen.append(earlier_line)
            frontier.append(earlier_line)
            if trained is None or model_run(earlier_line.body[0]) & trained:
                found.append(earlier_line)
    return found


def read_forwards(source, training, statement: cst.CSTNode) -> list[cst.CSTNode]:
    """The forward lines whose outputs `statement` reads: a name it reads, or the iterable of the
    loop whose target it reads (`for scale in D_fake: loss_G += -scale[-1].mean()`), last assigned
    in the same function by a one-assignment line that runs the model."""
    loops = [a for a in source.ancestors(statement) if isinstance(a, cst.For)]
    found: list[cst.CSTNode] = []
    names = [n for n in source.within(statement, cst.Name) if not _detached_read(source, n)]
    while names:
        read = names.pop(0)
        parent = source.parent(read)
        if isinstance(parent, cst.Attribute) and parent.attr is read:
            continue
        loop = next((lp for lp in loops if read.value in {n.value for n in source.within(lp.target, cst.Name)}), None)
        if loop is not None:
            loops.remove(loop)
            names.extend(n for n in source.within(loop.iter, cst.Name) if not _detached_read(source, n))
            continue
        earlier = training.last_assignment(read.value, statement)
        line = source.parent(earlier) if earlier is not None else None
        if line is not None and line not in found and _forward_assignment(source, training, line):
            found.append(line)
    return found


def added_terms(source, start: cst.CSTNode, use: cst.CSTNode) -> list[cst.AugAssign]:
    """The `+=` additions into the name a loss's empty `start` assigns, after it and before `use`
    (its backward), in the same function or script."""
    name = dotted(start.targets[0].target) if isinstance(start, cst.Assign) and len(start.targets) == 1 else None
    if name is None:
        return []
    after, before = source.span(start)[1], source.span(use)[0]
    return [
        a
        for a in source.within(source.function_of(start) or source.module, cst.AugAssign)
        if after < source.span(a)[0] < before and isinstance(a.operator, cst.AddAssign) and dotted(a.target) == name
    ]


def terms_added_in_place(source, training, backward) -> list[cst.AugAssign]:
    """The terms added into a computed loss in place before its backward, each on a line of its
    own outside no_grad, that carry a graph of their own (ENAS' `loss += _apply_penalties(
    extra_out, self.args)` on the shared model's loss, `loss -= self.args.entropy_coeff *
    entropies` on the controller's): not what a loss that starts empty adds up (see
    `added_terms`), nor a number."""
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or constant_start(assign.value):
        return []
    name = loss_name(backward.loss)
    function = source.function_of(assign)
    if name is None or function is not source.function_of(backward.call):
        return []
    after, before = source.span(assign)[1], source.span(backward.call)[0]
    main = loss_chain(source, training, backward)
    found = []
    for aug in source.within(function.body if function is not None else source.module, cst.AugAssign):
        if not (
            after < source.span(aug)[0] < before
            and isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign))
            and dotted(aug.target) == name
            and isinstance(source.parent(aug), cst.SimpleStatementLine)
            and not under_no_grad(source, aug)
            and not _graphless(aug.value)
            # a term computed on a line of its own (`loss += loss3`) is cut or run without
            # autograd there
            and not isinstance(aug.value, (cst.Name, cst.Attribute, cst.Subscript))
            and not _times_zero(aug.value)
        ):
            continue
        chain = loss_chain(source, training, _Returned(aug, aug.value))
        if chain and not any(line in main for line in chain):
            continue  # its graph comes from forwards only it reads: their own mutants cut it
        if chain or helper_runs_model(source, training, aug.value):
            found.append(aug)
    return found


def _times_zero(value: cst.BaseExpression) -> bool:
    """`0 * fake_img[0, 0, 0, 0]` (stylegan2's term that keeps the whole graph in use for DDP):
    no gradient flows from it either way."""
    return (
        isinstance(value, cst.BinaryOperation)
        and isinstance(value.operator, cst.Multiply)
        and any(
            isinstance(side, (cst.Integer, cst.Float)) and float(side.evaluated_value) == 0
            for side in (value.left, value.right)
        )
    )


def forwards_read_by_terms(source, training, backward) -> list[cst.CSTNode]:
    """A loss that starts empty: the forwards its added terms read, through the loops they are
    added in (MelGAN's discriminator step: `for scale in D_fake_det: loss_D += ...`, then the same
    over `D_real`): every one of them, not only the nearest."""
    start = empty_start(source, training, backward)
    if start is None:
        return []
    found: list[cst.CSTNode] = []
    for added in added_terms(source, start, backward.call):
        for forward in read_forwards(source, training, added):
            if forward not in found and not under_no_grad(source, forward):
                found.append(forward)
    return found


def loss_helper_forwards(source, training, backward) -> list[cst.SimpleStatementLine]:
    """Where the backward's loss is what a function of the file returns (Occupancy Networks'
    `loss = self.compute_loss(data)`, then `loss.backward()`) and that function's own straight-line
    body runs the model in two or more one-assignment lines (its encoder, then its decoder): each
    of those lines. One of them alone without autograd, or cut off, leaves the others to train;
    with a single forward on the helper's path (or one per branch), the call's own mutant is
    already that fault."""
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
        return []
    found: list[cst.SimpleStatementLine] = []
    for helper in training.called_functions(assign.value):
        if helper is source.function_of(assign) or under_no_grad(source, helper.body):
            continue
        body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
        lines = [
            line
            for line in body
            if isinstance(line, cst.SimpleStatementLine) and _model_call_line(source, training, line)
        ]
        if len(lines) >= 2:
            found.extend(line for line in lines if line not in found)
    return found


def handed_forwards(source, training, backward) -> list[cst.SimpleStatementLine]:
    """The forwards of a caller whose output is handed to the backward's function for a parameter
    that a forward of its loss chain reads (DrQ-v2's `update()`: `obs = self.encoder(obs)`, then
    `self.update_critic(obs, ...)`, where `Q1, Q2 = self.critic(obs, action)` feeds the critic's
    loss and its backward trains the encoder too): a line of the caller that the loss learns
    through, one per caller. A forward under no_grad there, or a call in another function's
    branch for evaluation, is none."""
    function = source.function_of(backward.call)
    if function is None:
        return []
    params = [p.name.value for p in function.params.params]
    offset = 1 if params[:1] == ["self"] else 0
    chain = loss_chain(source, training, backward)
    read = {  # the parameters a forward of the chain takes as an input (not the model it calls)
        arg.value.value
        for line in chain
        if _forward_line(source, training, line) and isinstance(_assigned_value(line), cst.Call)
        for arg in _assigned_value(line).args  # type: ignore[union-attr]
        if isinstance(arg.value, cst.Name) and arg.value.value in params
    }
    found: list[cst.SimpleStatementLine] = []
    for call in source.nodes(cst.Call):
        if function not in training.called_functions(call) or under_no_grad(source, call):
            continue
        handed = [a for a in call.args if not a.star]
        for position, arg in enumerate(handed):
            name = (
                arg.keyword.value
                if arg.keyword is not None
                else (params[position + offset] if position + offset < len(params) else None)
            )
            if name not in read or not isinstance(arg.value, cst.Name):
                continue
            assign = training.last_assignment(arg.value.value, call)
            line = source.parent(assign) if assign is not None else None
            if (
                isinstance(assign, cst.Assign)
                and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
                and isinstance(line, cst.SimpleStatementLine)
                and len(line.body) == 1
                and source.function_of(assign) is source.function_of(call)
                and _model_called(assign.value)
                and not under_no_grad(source, line)
                and line not in found
            ):
                found.append(line)
    return found


def branch_helper_forwards(source, training, backward) -> list[cst.Assign | cst.Return]:
    """Where the backward's loss is what a function of the file returns from each side of one
    `if`/`else` (a music separator's `forward_step`: the model's own loss on one side, its output
    and a criterion on the other): each side's model-call lines, and a loss a side returns as a
    call of what such a line bound (`return multi_loss(y_, y, x)`). The call's own cut detaches
    every side's loss at once; a guard that runs the helper alone meets only these."""
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
        return []
    found: list[cst.Assign | cst.Return] = []
    for helper in training.called_functions(assign.value):
        if helper is source.function_of(assign) or under_no_grad(source, helper.body):
            continue
        body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
        branches = [line for line in body if isinstance(line, cst.If)]
        if len(branches) != 1 or not isinstance(branches[0].orelse, cst.Else):
            continue
        for side in (branches[0].body, branches[0].orelse.body):
            lines = [line for line in side.body if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1]
            if not any(isinstance(line.body[0], cst.Return) for line in lines):
                continue  # a side that falls through is not one of the step's losses
            outputs: set[str] = set()
            for line in _lines_and_nested(side):
                statement = line.body[0]
                target = (
                    statement.targets[0].target
                    if isinstance(statement, cst.Assign) and len(statement.targets) == 1
                    else None
                )
                if isinstance(target, cst.Name) and _model_call_line(source, training, line):
                    outputs.add(target.value)
                    found.append(statement)
                elif (
                    isinstance(target, cst.Name)
                    and target.value in outputs
                    and isinstance(statement.value, cst.Call)
                    and isinstance(statement.value.func, cst.Attribute)
                    and dotted(statement.value.func.value) == target.value
                ):
                    found.append(statement)  # the output reduced in place under a condition: `loss = loss.mean()`
                elif (
                    isinstance(statement, cst.Return)
                    and isinstance(statement.value, cst.Call)
                    and any(isinstance(a.value, cst.Name) and a.value.value in outputs for a in statement.value.args)
                ):
                    found.append(statement)
    return found


def _lines_and_nested(block: cst.BaseSuite):
    """The one-statement lines of a block, and those of the `if` blocks within it, in order."""
    for line in block.body if isinstance(block, cst.IndentedBlock) else ():
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            yield line
        elif isinstance(line, cst.If) and line.orelse is None:
            yield from _lines_and_nested(line.body)


def _model_call_line(source, training, line: cst.SimpleStatementLine) -> bool:
    """A one-assignment line whose value is a model's forward or a model's own method (`h =
    self(x)`, `z = self.projection(h)`, `c = self.model.encode_inputs(inputs)`, `logits =
    self.model.decode(p, z, c).logits`): not a loss, not a helper of the file, not a function of
    an imported module, not one of nn.Module's methods or a reader or setter of its state."""
    if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return False
    value = line.body[0].value
    while isinstance(value, (cst.Attribute, cst.Subscript)):
        value = value.value  # `.logits` of what the method returns
    if not isinstance(value, cst.Call) or training.called_functions(value) or training.role(value.func) is not None:
        return False
    if _loss_called(value):
        return False
    func = value.func
    if isinstance(func, cst.Name):
        return func.value == "self" or (names_a_model(func) and not imported_name(source, func.value))
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, (cst.Name, cst.Attribute)):
        return False
    method = func.attr.value
    if method in MODULE_METHODS or method.lower().startswith((*STATE_INITIALISERS, "get_", "set_", "load", "save")):
        return False
    receiver = dotted(func.value)
    if receiver == "self":
        return runs_model(source, training, value, depth=0)  # a submodule: `self.projection(h)`
    root = (receiver or "").split(".")[0]
    return names_a_model(func.value) and not imported_name(source, root)


# what only a torch Distribution answers: a value read this way is no tensor to detach
_DISTRIBUTION_METHODS = frozenset({"rsample", "sample", "log_prob", "entropy", "cdf", "icdf"})


def distribution(source, function: cst.FunctionDef, name: str) -> bool:
    """True where `function` reads `name` as a torch Distribution (`q_z.rsample()`, or handed to
    `kl_divergence`): a value with no `.detach()`."""
    for call in source.within(function.body, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and dotted(func.value) == name and func.attr.value in _DISTRIBUTION_METHODS:
            return True
        if callee_name(call) == "kl_divergence" and any(dotted(a.value) == name for a in call.args):
            return True
    return False


def drawn(source, training, assign: cst.Assign | cst.AnnAssign) -> bool:
    """True for a draw that carries the graph of the distribution a model returned, in the
    function that ran it: `action = dist.rsample()`, or `dist.sample(clip=...)` where the model's
    class returns a distribution of the project's whose `sample` is its own (DrQ-v2's
    TruncatedNormal: mean plus clipped noise, a straight-through clamp). torch's own `sample`
    draws without autograd."""
    value = assign.value
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return False
    method, name = value.func.attr.value, value.func.value
    if method not in ("sample", "rsample") or not isinstance(name, cst.Name):
        return False
    made = training.last_assignment(name.value, assign)
    if (
        not isinstance(made, cst.Assign)
        or source.function_of(made) is not source.function_of(assign)
        or not isinstance(made.value, cst.Call)
        or not _model_called(made.value)
    ):
        return False
    return method == "rsample" or any(
        _own_sample(source, training, returned) for returned in _returned_calls(source, training, made.value)
    )


def _returned_calls(source, training, forward: cst.Call) -> list[cst.Call]:
    """The calls the forward of the model `forward` calls returns, where the file defines its
    class: `return utils.TruncatedNormal(mu, std)`, or `dist = utils.TruncatedNormal(mu, std)`
    then `return dist`."""
    found: list[cst.Call] = []
    for name in training.classes_at(forward.func, forward):
        definition = top_level(source, name)
        if not isinstance(definition, cst.ClassDef):
            continue
        for method in definition.body.body:
            if not (isinstance(method, cst.FunctionDef) and method.name.value == "forward"):
                continue
            nodes = list(source.walk(method.body))
            returned = {r.value.value for r in nodes if isinstance(r, cst.Return) and isinstance(r.value, cst.Name)}
            found += [r.value for r in nodes if isinstance(r, cst.Return) and isinstance(r.value, cst.Call)]
            found += [
                a.value
                for a in nodes
                if isinstance(a, cst.Assign)
                and isinstance(a.value, cst.Call)
                and any(isinstance(t.target, cst.Name) and t.target.value in returned for t in a.targets)
            ]
    return found


def _own_sample(source, training, call: cst.Call) -> bool:
    """True where `call` builds an object of a class of the project that defines `sample` itself,
    with no no_grad around it."""
    found = training.resolver.definition(source, call.func)
    if found is None or not isinstance(found[1], cst.ClassDef):
        return False
    module, definition = found
    for method in definition.body.body:
        if isinstance(method, cst.FunctionDef) and method.name.value == "sample":
            return not any(grad_switch(d.decorator) for d in method.decorators) and not any(
                isinstance(n, cst.With) and switches_grad(n) for n in module.walk(method.body)
            )
    return False


# Methods and attributes after which a value carries no graph (`logits.argmax(-1)`, `loss.item()`).
_GRAPHLESS = frozenset(
    {"detach", "item", "tolist", "numpy", "argmax", "argmin", "long", "int", "bool", "size", "dim", "shape", "sign"}
)


# Reads of a tensor for where or how it is kept, and calls that make a new tensor with no graph.
_GRAPHLESS_READS = frozenset({"device", "dtype", "shape", "size", "dim", "ndim", "is_cuda"})
_NEW_TENSORS = frozenset(
    {
        "len",
        "int",
        "float",
        "range",
        "str",
        "tensor",
        "zeros",
        "ones",
        "zeros_like",
        "ones_like",
        "full",
        "full_like",
        "empty",
        "arange",
        "rand",
        "randn",
        "randint",
        "randn_like",
        "rand_like",
        "eye",
        "linspace",
    }
)


def _graphless(value: cst.BaseExpression) -> bool:
    """True for a value that cannot carry a graph: a constant, a comparison, an index of the
    maximum, a number read out (`out.argmax(1)`, `loss.item()`, `x.size(0)`, `len(batch)`)."""
    if constant_start(value) or isinstance(value, (cst.Comparison, cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in _GRAPHLESS:
            return True
        return callee_name(value) in _NEW_TENSORS
    return isinstance(value, cst.Attribute) and value.attr.value in _GRAPHLESS


def _counted(source, name: cst.Name) -> bool:
    """True for a name handed straight to a call that reads a number or makes a new tensor off it
    (`len(loss)`, `torch.zeros_like(pred)`): no gradient flows from it through that call."""
    arg = source.parent(name)
    call = source.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and callee_name(call) in _NEW_TENSORS


def loss_chain(source, training, backward) -> dict[cst.SimpleStatementLine, list[cst.SimpleStatementLine]]:
    """The one-assignment lines of the backward's function through which a model forward's
    output reaches the loss it differentiates, in source order: the forward itself, each value
    computed from it on the way (`y_hat, _ = model(x)`, `samples_loss = F.bce(y_hat, y,
    reduction="none")`, `label_loss = samples_loss.mean()`), and the loss. A line under no_grad,
    or whose value carries no graph, is not part of it; nor is what only feeds the targets or the
    forward's inputs. Each line maps to the lines of the chain it reads."""
    function = source.function_of(backward.call)
    lines: dict[cst.SimpleStatementLine, cst.Assign | cst.AnnAssign] = {}
    reads: dict[cst.SimpleStatementLine, list[cst.SimpleStatementLine]] = {}
    pending: list[tuple[cst.SimpleStatementLine | None, cst.CSTNode, cst.BaseExpression, bool]] = [
        (None, backward.call, backward.loss, False)
    ]
    roots: list[cst.SimpleStatementLine] = []
    while pending:
        reader, use, expr, inputs = pending.pop()
        for name in source.within(expr, cst.Name):
            parent = source.parent(name)
            if isinstance(parent, cst.Attribute) and (parent.attr is name or parent.attr.value in _GRAPHLESS_READS):
                continue  # `x.device`, `y.dtype`: read for where or how, not for its values
            if _detached_read(source, name) or (isinstance(parent, cst.Call) and parent.func is name):
                continue  # what is called (`compute_loss(pred, targets)`) is not a value of the chain
            if _counted(source, name):
                continue  # `len(loss)`: a number read off it
            found = training.alternatives(name.value, use)
            last = training.last_assignment(name.value, use)
            for assign in [*found, *([last] if last is not None and last not in found else [])]:
                line = source.parent(assign)
                if (
                    assign.value is None
                    or source.function_of(assign) is not function
                    or not isinstance(line, cst.SimpleStatementLine)
                    or len(line.body) != 1
                ):
                    continue
                forward = runs_model(source, training, assign.value, depth=0)
                if inputs and not forward and not drawn(source, training, assign):
                    continue  # a model's input counts only where another forward made it (a GAN's fake)
                if reader is not None:
                    reads.setdefault(reader, []).append(line)
                else:
                    roots.append(line)
                if line not in lines:
                    lines[line] = assign
                    pending.append((line, assign, assign.value, forward and _model_called(assign.value)))
    carries: dict[cst.SimpleStatementLine, bool] = {}

    def carried(line: cst.SimpleStatementLine) -> bool:
        if line not in carries:
            carries[line] = False  # a cycle (`loss = loss + term` in a loop) adds nothing
            value = lines[line].value
            assert value is not None  # kept above
            carries[line] = (
                not _graphless(value)
                and not under_no_grad(source, line)
                and not _batch_rebound(source, line)
                and (
                    runs_model(source, training, value, depth=0)
                    or helper_runs_model(source, training, value)
                    or any(carried(earlier) for earlier in reads.get(line, ()) if earlier is not line)
                )
            )
        return carries[line]

    # only what reaches the loss through lines that carry a graph (not a forward whose output only
    # a loss computed under no_grad reads)
    reached: set[cst.SimpleStatementLine] = set()
    stack = [line for line in roots if carried(line)]
    while stack:
        line = stack.pop()
        if line not in reached:
            reached.add(line)
            stack.extend(e for e in reads.get(line, ()) if carried(e))
    kept = sorted(reached, key=source.span)
    return {line: [e for e in dict.fromkeys(reads.get(line, ())) if e is not line and carries.get(e)] for line in kept}


@dataclass(frozen=True)
class _Returned:
    """A helper's return, standing where a backward does for loss_chain: `call` is where its value
    is read, `loss` the value."""

    call: cst.CSTNode
    loss: cst.BaseExpression


def loss_chains(source, training, backward) -> list[tuple[object, dict, set]]:
    """The backward's loss chain (see loss_chain), and where its loss is what a function of the
    file returns (TextBrewer's `total_loss, losses_dict = self.train_on_batch(batch, args)`), the
    chain inside that function from each value it returns: each with its use and the lines a cut
    of the loss already covers (a helper's returned line is the caller's loss cut off)."""
    found: list[tuple[object, dict, set]] = [(backward, loss_chain(source, training, backward), set())]
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
        return found
    helpers = training.called_functions(assign.value)
    # a base class's call of a method each subclass overrides (UER-py's `loss =
    # self.forward_propagation(batch, model)` in Trainer.train): the caller's cut is every
    # override's at once, so each override's own loss is a mutant of its own
    overridden = len({h.name.value for h in helpers}) == 1 and len(helpers) > 1
    for helper in helpers:
        if helper is source.function_of(assign) or under_no_grad(source, helper.body):
            continue
        for ret in source.walk(helper.body):
            if isinstance(ret, cst.Return) and ret.value is not None and source.function_of(ret) is helper:
                use = _Returned(ret, ret.value)
                chain = loss_chain(source, training, use)
                if overridden:
                    found.append((use, chain, set()))
                    continue
                if _forwards_in_one_run(source, training, chain) < 2 and not any(
                    split_readers(source, chain, line) for line in chain
                ):
                    # one forward on each path, taken whole: cutting it is cutting what the helper
                    # returns (where its output is split into parts, each part is a path of its own)
                    continue
                roots = {line for line in chain if not any(line in inputs for inputs in chain.values())}
                found.append((use, chain, roots))
    return found


_SPLITTING_METHODS = frozenset({"chunk", "split", "narrow", "unbind", "tensor_split"})


def split_readers(source, chain, line: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine]:
    """The lines of a loss's chain that each take a part of what `line` assigns, where two or
    more do and nothing else of the chain reads it whole: a prototypical network's `support =
    embeddings[support_indices]` and `query = embeddings[query_indices]`, a contrastive step's
    halves. Each part reaches the loss by a path of its own, so a cut of one part is a fault of
    its own (a silently wrong gradient); the whole output's cut is the loss's. Empty otherwise."""
    assign = line.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return []
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return []
    readers = [later for later, inputs in chain.items() if line in inputs]
    if len(readers) < 2:
        return []
    for reader in readers:
        value = _assigned_value(reader)
        if value is None:
            return []
        reads = [n for n in source.within(value, cst.Name) if n.value == target.value]
        for name in reads:
            parent = source.parent(name)
            whole = parent if not isinstance(parent, cst.Attribute) else source.parent(parent)
            if whole is not value:
                return []  # the part is what the line assigns, not what a loss reads off it
            # rows or a slice of a tensor, not an entry of a mapping of outputs (`out["logits"]`)
            taken = (
                isinstance(parent, cst.Subscript)
                and parent.value is name
                and not any(
                    isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.SimpleString, cst.Integer))
                    for e in parent.slice
                )
            )
            method = (
                isinstance(parent, cst.Attribute)
                and parent.value is name
                and parent.attr.value in _SPLITTING_METHODS
                and isinstance(source.parent(parent), cst.Call)
            )
            if not (taken or method):
                return []
    return readers


def _forwards_in_one_run(source, training, chain) -> int:
    """The most forward lines of a chain that one run goes through: lines under the same
    branches of their function (TextBrewer's two `get_outputs_from_batch` calls, one per branch
    of an if/else, count once)."""
    runs: dict[tuple, int] = {}
    for line in chain:
        if not _forward_line(source, training, line):
            continue
        branches = []
        child: cst.CSTNode = line
        for ancestor in source.ancestors(line):
            if isinstance(ancestor, cst.FunctionDef):
                break
            if isinstance(ancestor, (cst.If, cst.Else, cst.Try, cst.ExceptHandler)):
                branches.append((id(ancestor), id(child)))
            child = ancestor
        key = tuple(branches)
        runs[key] = runs.get(key, 0) + 1
    return max(runs.values(), default=0)


def chain_forwards(source, training, backward, chain, taken: set) -> list[cst.SimpleStatementLine]:
    """The forward lines of a loss's chain (see loss_chain) to cut or to run without autograd,
    where the lines in `taken` are already another mutant's. A line that only hands its output
    on to the next (`logits = model(x)`, then `loss = criterion(logits, y)` and nothing else
    reading either) makes the same mutant as the last of them, so a run counts once. The forward
    of a model the step does not train, and a value the loss reads only as a clamp bound, have
    no graph this loss learns through; nor has what is set up before the backward's loop
    (nerf-pytorch's `render_kwargs_train, ... = create_nerf(args)`, handed to each step's render)."""
    loop = None
    for ancestor in source.ancestors(backward.call):
        if isinstance(ancestor, (cst.FunctionDef, cst.For, cst.While)):
            loop = ancestor if not isinstance(ancestor, cst.FunctionDef) else None
            break
    readers: dict[cst.SimpleStatementLine, list[cst.SimpleStatementLine]] = {}
    for line, inputs in chain.items():
        for earlier in inputs:
            readers.setdefault(earlier, []).append(line)
    # a value also added into the loss in place (ENAS' `loss -= coeff * entropies`) reaches it by
    # a second path: its run ends where it is made
    added = augmented_reads(source, chain)
    for line in chain:
        if _bound_by(line) & added:
            readers.setdefault(line, []).append(line)
    ends = {_run_end(source, training, chain, readers, t) for t in taken}
    found = []
    for line in chain:
        if not _forward_line(source, training, line):
            continue  # the model's output, as the catalog has it; the lines computing on it are the loss's
        if _untrained_forward(source, training, line) or _bounds_only(source, line, readers.get(line, [])):
            continue
        if (loop is not None and loop not in source.ancestors(line)) or _evaluation_branch(source, line):
            continue
        end = _run_end(source, training, chain, readers, line)
        if end in ends:
            continue  # the same cut as one already made further on
        ends.add(end)
        found.append(line)
    return found


def augmented_reads(source, chain) -> set[str]:
    """The names read by the in-place additions to a value of a loss's chain in its function
    (`loss -= self.args.entropy_coeff * entropies` between `loss = -log_probs * adv` and `loss =
    loss.sum()`): values that reach the loss besides the chain's own lines."""
    if not chain:
        return set()
    first = next(iter(chain))
    function = source.function_of(first)
    bound = set().union(*(_bound_by(line) for line in chain))
    return {
        n.value
        for node in source.within(function.body if function is not None else source.module, cst.AugAssign)
        if isinstance(node.target, cst.Name) and node.target.value in bound
        for n in source.within(node.value, cst.Name)
    }


def _forward_line(source, training, line: cst.SimpleStatementLine) -> bool:
    """True for a line of a chain whose value runs a model, itself or through a function of the file."""
    value = _assigned_value(line)
    return value is not None and (
        runs_model(source, training, value, depth=0) or helper_runs_model(source, training, value)
    )


def _model_called(value: cst.BaseExpression) -> bool:
    """True for a value that calls a model by its name (`discriminator(fake)`,
    `self.model(src, tgt)`), not a helper handed one (`compute_loss(outputs, targets, model)`)."""
    return isinstance(value, cst.Call) and names_a_model(value.func) and not _loss_called(value)


def _loss_called(value: cst.BaseExpression) -> bool:
    """True for a call of a loss held under a model-like name (mvts' `self.loss_module(predictions,
    targets)`, DeepFilterNet's `losses.forward(clean, noisy, enh, ...)`): the loss's own line, not
    a forward."""
    name = (dotted(value.func) or last_name(value.func) or "").lower() if isinstance(value, cst.Call) else ""
    return "loss" in name or "criterion" in name


def _evaluation_branch(source, line: cst.CSTNode) -> bool:
    """True for a line in a branch only evaluation takes (demucs' `if not train and
    self.args.valid_apply:`, the `else` of `if train:`)."""
    child = line
    for ancestor in source.ancestors(line):
        if isinstance(ancestor, cst.FunctionDef):
            return False
        if isinstance(ancestor, cst.If):
            if child is ancestor.body and _evaluation_test(ancestor.test):
                return True
            if child is ancestor.orelse and _training_flag(ancestor.test):
                return True
        child = ancestor
    return False


def _assigned_value(line: cst.SimpleStatementLine) -> cst.BaseExpression | None:
    """The value the one assignment of a chain's line assigns."""
    assign = line.body[0]
    return assign.value if isinstance(assign, (cst.Assign, cst.AnnAssign)) else None


def _run_end(source, training, chain, readers, line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """The last line of the run `line` starts: each next line the only one of the chain that reads
    the one before, reading no other line of it and running no model of its own. A cut anywhere
    on such a run is the same mutant."""
    while True:
        after = readers.get(line, [])
        if len(after) != 1 or chain[after[0]] != [line]:
            return line
        value = _assigned_value(after[0])
        if value is None or (runs_model(source, training, value, depth=0) and not _loss_called(value)):
            return line
        line = after[0]


def _untrained_forward(source, training, line: cst.SimpleStatementLine) -> bool:
    """True for the forward of a model the step's optimizer does not train, on inputs no trained
    forward computed (MOON's `_, pro2, _ = global_net(x)`, the global model a client's loss pulls
    towards): its output has no graph this step learns from."""
    trained = trained_after(source, training, line)
    assign = line.body[0]
    return (
        trained is not None
        and isinstance(assign, cst.Assign)
        and not (model_run(assign) & trained)
        and not read_forwards(source, training, assign.value)
    )


def _bounds_only(source, line: cst.SimpleStatementLine, readers: list) -> bool:
    """True where the lines of the chain that read what `line` binds read it only as the bounds of
    a clamp (stable-baselines3's `clip_range = self.clip_range(progress)`, a schedule's number,
    then `th.clamp(ratio, 1 - clip_range, 1 + clip_range)`): a setting, not the model's output."""
    assign = line.body[0]
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    name = assign.targets[0].target.value
    reads = [n for reader in readers for n in source.within(reader.body[0].value, cst.Name) if n.value == name]
    return bool(reads) and all(
        any(
            isinstance(a, cst.Arg)
            and isinstance(c := source.parent(a), cst.Call)
            and callee_name(c) in ("clamp", "clip", "clamp_", "clip_")
            and a is not c.args[0]
            for a in source.ancestors(n)
        )
        for n in reads
    )


def branch_added_terms(source, training, backward) -> list[cst.Assign]:
    """Terms computed in an `if` after the loss and added into it there (cellpose's `if
    y.shape[1] > 3: loss3 = _loss_fn_class(lbl, y, ...)`, then `loss += loss3`): each term's
    assignment, a call, in that branch."""
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or constant_start(assign.value):
        return []  # (a loss that starts empty has its terms cut where they are added: forwards_after_empty_start)
    name = dotted(assign.targets[0].target)
    line, siblings = source.block_of(assign)
    if name is None or line not in siblings:
        return []
    found: list[cst.Assign] = []
    start = siblings.index(line) + 1
    for index, later in enumerate(siblings[start:], start):
        if backward.call in source.within(later, cst.Call):
            break
        if isinstance(later, cst.If):
            region: list[cst.CSTNode] = [later]
        elif isinstance(later, cst.SimpleStatementLine):
            # added unconditionally, the term computed on the lines between (`reg = ...`, then
            # `loss = loss + reg`)
            region = list(siblings[start : index + 1])
        else:
            continue
        for added in [*source.within(later, cst.AugAssign), *source.within(later, cst.Assign)]:
            if isinstance(added, cst.AugAssign):
                if not isinstance(added.operator, cst.AddAssign) or dotted(added.target) != name:
                    continue
                value = added.value
            else:
                # written out: `loss = loss + regularization` (KnowledgeGraphEmbedding's L3 term)
                total = added.value
                if (
                    len(added.targets) != 1
                    or dotted(added.targets[0].target) != name
                    or not isinstance(total, cst.BinaryOperation)
                    or not isinstance(total.operator, cst.Add)
                    or name not in (dotted(total.left), dotted(total.right))
                ):
                    continue
                # either side (once-for-all's `loss = args.kd_ratio * kd_loss + loss`)
                value = total.right if dotted(total.left) == name else total.left
            # the term itself, maybe weighted (`loss += loss3`, `loss += 0.4 * aux_loss`), not what a
            # loss computed in place reads (`loss += criterion(ff, labels, hard_pairs)`)
            if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
                value = value.right if isinstance(value.right, cst.Name) else value.left
            for read in [value] if isinstance(value, cst.Name) else []:
                # each branch's assignment (`kd_loss` by cross-entropy or by MSE, by `kd_type`)
                terms = [a for a in training.alternatives(read.value, added) if isinstance(a, cst.Assign)]
                last = training.last_assignment(read.value, added)
                for term in terms or ([last] if last is not None else []):
                    if (
                        isinstance(term, cst.Assign)
                        and (isinstance(term.value, cst.Call) or _computed_from_parameters(source, term.value))
                        and len(term.targets) == 1
                        and isinstance(term.targets[0].target, cst.Name)
                        and any(term in source.within(part, cst.Assign) for part in region)
                        and term not in found
                    ):
                        found.append(term)
    return found


def _computed_from_parameters(source, value: cst.BaseExpression) -> bool:
    """True for arithmetic over calls on a model's weights (`args.regularization *
    (model.entity_embedding.norm(p=3) ** 3 + ...)`): a regulariser, which has a graph."""
    return isinstance(value, cst.BinaryOperation) and any(
        isinstance(call.func, cst.Attribute)
        and (root := root_name(call.func.value, through_subscripts=True)) is not None
        and names_a_model(cst.Name(root))
        for call in source.within(value, cst.Call)
    )


# what reading `self.x` for these is not reading its values (`self.fake.shape`, `self.out.detach()`)
_GRAPHLESS_ATTRIBUTES = frozenset(
    {"detach", "detach_", "item", "tolist", "numpy", "cpu", "shape", "device", "dtype", "size", "requires_grad"}
)


@dataclass(frozen=True)
class StoredRun:
    """What a trainer class keeps on `self` between its methods for one backward: `forwards`, the
    assignments in other methods that store a model's output the loss reads (pix2pix's
    `self.fake_B = self.netG(self.real_A)` in `forward()`, read by `backward_G()`'s loss), and
    `loss`, the loss's own assignment where another method computes it (text-to-motion's
    `backward()` sets `self.loss`, `update()` calls `self.loss.backward()`), else None."""

    forwards: tuple[cst.Assign, ...]
    loss: cst.Assign | None


def _class_of(source, function: cst.FunctionDef | None) -> cst.ClassDef | None:
    if function is None:
        return None
    parent = source.parent(source.parent(function))  # FunctionDef -> IndentedBlock -> ClassDef
    return parent if isinstance(parent, cst.ClassDef) else None


def _self_reads(source, expr: cst.CSTNode) -> list[cst.Attribute]:
    """The `self.x` values `expr` reads (not `self.net(...)` called, not `self.opt.lr`, not
    `self.out.detach()` or `self.out.shape`)."""
    found = []
    for node in source.within(expr, cst.Attribute):
        if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            continue
        parent = source.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            called = source.parent(parent)
            if parent.attr.value in _GRAPHLESS_ATTRIBUTES or not (
                isinstance(called, cst.Call) and called.func is parent
            ):
                continue  # `self.fake.detach()`, `self.opt.lambda_l1`: no graph read
        found.append(node)
    return found


def stored_run(source, training, backward) -> StoredRun:
    """The forwards (and the loss) another method of the backward's class stores on `self` for
    its loss (see StoredRun): the loss's reads are followed back through the assignments of their
    own method and, for a `self.x` no earlier line of that method assigns, through the class's
    other methods that assign it (not `__init__`); a stored value that runs a model, with autograd
    and not cut off already, is a forward."""
    function = source.function_of(backward.call)
    owner = _class_of(source, function)
    if owner is None:
        return StoredRun((), None)
    methods = {f for f in source.within(owner.body, cst.FunctionDef) if _class_of(source, f) is owner}
    forwards: list[cst.Assign] = []
    loss: cst.Assign | None = None
    seen: set[int] = set()
    pending: list[tuple[cst.BaseExpression, cst.CSTNode, bool]] = [(backward.loss, backward.call, True)]
    while pending:
        expr, use, top = pending.pop()
        reads: list[tuple[str, cst.CSTNode]] = [(dotted(a) or "", a) for a in _self_reads(source, expr)]
        reads += [
            (n.value, n)
            for n in source.within(expr, cst.Name)
            if n.value != "self"
            and not (isinstance(source.parent(n), cst.Attribute) and source.parent(n).attr is n)
            and not (isinstance(source.parent(n), cst.Call) and source.parent(n).func is n)
            and not _detached_read(source, n)
        ]
        for key, node in reads:
            local = training.last_assignment(key, use)
            if local is not None:
                assigns = [local]
            elif key.startswith("self."):
                assigns = [
                    a
                    for a in training.assigned_names.get(key, ())
                    if source.function_of(a) in methods
                    and source.function_of(a) is not source.function_of(use)
                    and source.function_of(a).name.value != "__init__"
                ]
            else:
                continue
            for assign in assigns:
                if id(assign) in seen or not isinstance(assign, cst.Assign):
                    continue
                seen.add(id(assign))
                own = source.function_of(assign)
                if top and node is expr and own is not function:
                    loss = assign  # the loss itself (`self.loss`), computed by another method
                line = source.parent(assign)
                if (
                    own is not function
                    and isinstance(line, cst.SimpleStatementLine)
                    and len(line.body) == 1
                    and isinstance(assign.value, cst.Call)
                    and runs_model(source, training, assign.value, depth=0)
                    and not _loss_called(assign.value)
                    and not _cut_off(assign.value)
                    and not under_no_grad(source, assign)
                ):
                    forwards.append(assign)
                pending.append((assign.value, assign, top and node is expr))
    return StoredRun(tuple(sorted(forwards, key=source.span)), loss)


def _cut_off(value: cst.Call) -> bool:
    """True for a value already cut off (`self.mov_enc(x).squeeze(1).detach()`)."""
    return isinstance(value.func, cst.Attribute) and value.func.attr.value in ("detach", "detach_")


def method_calls(source, method: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    """The lines of `method`'s class that call it as `self.<name>(...)` with autograd on (a
    validation loop's call under no_grad is not one), each a line of its own."""
    owner = _class_of(source, method)
    if owner is None:
        return []
    found = []
    for call in source.within(owner.body, cst.Call):
        if dotted(call.func) != f"self.{method.name.value}" or under_no_grad(source, call):
            continue
        line = source.parent(source.parent(call))
        statement = source.parent(call)
        if (
            isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(statement, (cst.Expr, cst.Assign))
            and statement.value is call
            and source.function_of(call) is not method
        ):
            found.append(line)
    return found


# methods of a loss object that hand it no model output
_LOSS_OBJECT_BOOKKEEPING = frozenset(
    {"backward", "reset", "zero_grad", "get_loss", "item", "detach", "to", "cuda", "cpu", "train", "eval"}
)


def loss_object_calls(source, training, backward) -> list[cst.Call]:
    """For a loss that is an object accumulating terms, not a tensor (pytorch-seq2seq's `loss =
    self.loss`, then `loss.eval_batch(step_output, target)` per decoding step and `loss.backward()`
    on the wrapper): the calls before the backward that hand it the model's outputs. Cutting the
    object itself is the wrong target (it has no `detach`); these calls are where its graph comes in."""
    loss = backward.loss
    assign = training.loss_assignment(backward)
    if not isinstance(loss, cst.Name) or not isinstance(assign, cst.Assign):
        return []
    if not isinstance(assign.value, (cst.Name, cst.Attribute)) or len(assign.targets) != 1:
        return []
    function = source.function_of(backward.call)
    if function is None or source.function_of(assign) is not function:
        return []
    start, end = source.span(assign)[1], source.span(backward.call)[0]
    return [
        call
        for call in source.within(function.body, cst.Call)
        if isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == loss.value
        and call.func.attr.value not in _LOSS_OBJECT_BOOKKEEPING
        and start < source.span(call)[0] < end
        and any(a.keyword is None and not a.star for a in call.args)
    ]


def forward_returned_terms(source, training, backward) -> list[cst.Assign]:
    """The loss terms a module of the file computes in its `forward` and returns in a tuple that
    the step unpacks and adds up (torchsde's latent SDE: `log_pxs, log_ratio = latent_sde(xs, ...)`
    then `loss = -log_pxs + log_ratio * kl_scheduler.val`, where `forward` computes `log_pxs`,
    `logqp0` and `logqp_path` and returns `log_pxs, logqp0 + logqp_path`): each term's assignment
    in `forward`, through a returned sum of terms and a term that adds up others. Cut, run without
    autograd or summed one by one, the other terms still train: each is its own fault."""
    assign = training.loss_assignment(backward)
    if not isinstance(assign, cst.Assign) or not isinstance(assign.value, (cst.BinaryOperation, cst.UnaryOperation)):
        return []
    found: list[cst.Assign] = []
    for name in _arithmetic_names(assign.value):
        unpack = training.last_assignment(name, assign)
        if (
            not isinstance(unpack, cst.Assign)
            or len(unpack.targets) != 1
            or not isinstance(unpack.targets[0].target, (cst.Tuple, cst.List))
            or not isinstance(unpack.value, cst.Call)
        ):
            continue
        names = [e.value.value if isinstance(e.value, cst.Name) else None for e in unpack.targets[0].target.elements]
        index = names.index(name)
        for forward in _module_forwards(source, training, unpack.value, unpack):
            for ret in source.within(forward.body, cst.Return):
                value = ret.value
                if (
                    source.function_of(ret) is not forward
                    or not isinstance(value, (cst.Tuple, cst.List))
                    or len(value.elements) != len(names)
                    or any(isinstance(e, cst.StarredElement) for e in value.elements)
                ):
                    continue
                for returned in _arithmetic_names(value.elements[index].value):
                    for term in _computed_terms(source, training, returned, ret, depth=2):
                        if term not in found:
                            found.append(term)
    return found


def _arithmetic_names(expr: cst.BaseExpression) -> list[str]:
    """The plain names an expression combines by arithmetic alone, in order, not those inside a
    call or an attribute: `log_pxs` and `log_ratio` of `-log_pxs + log_ratio * kl_scheduler.val`."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _arithmetic_names(expr.expression)
    if isinstance(expr, cst.BinaryOperation) and isinstance(
        expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
    ):
        return list(dict.fromkeys(_arithmetic_names(expr.left) + _arithmetic_names(expr.right)))
    return []


def _module_forwards(source, training, call: cst.Call, use: cst.CSTNode) -> list[cst.FunctionDef]:
    """The `forward` a call of a module runs where the module is an instance of a class of the file
    (`latent_sde = LatentSDE(...).to(device)`, then `latent_sde(xs, ts)`), also one it inherits
    from another class of the file."""
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return []
    classes = {c.name.value: c for c in source.nodes(cst.ClassDef)}
    found: list[cst.FunctionDef] = []
    for name in training.classes_at(call.func, use):
        owner = classes.get(name)
        for _ in range(3):  # up the file's own base classes to the one that defines forward
            if owner is None:
                break
            own = [f for f in owner.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "forward"]
            if own:
                found += own
                break
            bases = [classes.get(last_name(b.value) or "") for b in owner.bases]
            owner = next((b for b in bases if b is not None), None)
    return found


def _computed_terms(source, training, name: str, use: cst.CSTNode, depth: int) -> list[cst.Assign]:
    """Where `name`, returned at `use`, is computed in its function: its last assignment before
    `use` (past a plain alias), or the terms of a sum it is assigned (`kl = kl0 + kl_path`)."""
    assign = training.last_assignment(name, use)
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
        or source.function_of(assign) is not source.function_of(use)
        or constant_start(assign.value)
        or under_no_grad(source, assign)
    ):
        return []
    value = assign.value
    inner = _arithmetic_names(value)
    if isinstance(value, cst.Name) or (inner and not source.within(value, cst.Call)):
        # an alias, or a sum of terms computed before it
        if depth == 0:
            return []
        return [t for n in inner for t in _computed_terms(source, training, n, assign, depth - 1)]
    if not source.within(value, cst.Call):
        return []
    return [assign]
