from __future__ import annotations

import libcst as cst

from injector.mutants import Edit
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import CALLBACK_RUNNER, FLAG_CHOSEN_EVAL, PHASE_CONTEXT_STEP, TRIAL_LIBRARY
from injector.patterns import (
    argument,
    becomes_number,
    callee_name,
    disables_grad,
    dotted,
    grad_switched_loops,
    is_evaluation,
    last_name,
    runs_model,
    statement_call,
    under_no_grad,
)


def _enables_by_value(expr: cst.BaseExpression) -> cst.Arg | None:
    """The argument of `torch.set_grad_enabled(is_training)`: grad on or off by a value."""
    if not isinstance(expr, cst.Call) or last_name(expr.func) != "set_grad_enabled":
        return None
    mode = argument(expr, "mode", 0)
    if mode is None or (isinstance(mode.value, cst.Name) and mode.value.value in {"True", "False"}):
        return None
    return mode


def _own_no_grad(source, node: cst.CSTNode, function: cst.FunctionDef) -> cst.With | None:
    """The `no_grad` block of `function` itself that `node` sits in (only `no_grad` items), if any."""
    for ancestor in source.ancestors(node):
        if ancestor is function:
            return None
        if isinstance(ancestor, cst.With) and any(disables_grad(i.item, source) for i in ancestor.items):
            return ancestor if all(disables_grad(i.item, source) for i in ancestor.items) else None
    return None


def _guards_of(source, training, function: cst.FunctionDef, depth: int) -> list[cst.CSTNode] | None:
    """The switches that keep every forward pass `function` runs (itself, or down `depth` calls
    of this file's functions) under no_grad: its decorator, or its `with` blocks, and those below;
    None where one forward pass runs with autograd on; [] where it runs none."""
    decorators = [d for d in function.decorators if disables_grad(d.decorator)]
    found: list[cst.CSTNode] = []
    for call in source.within(function.body, cst.Call):
        if source.function_of(call) is not function:
            continue
        helpers = training.called_functions(call)
        if helpers and depth > 0:
            for helper in helpers:
                if helper is function:
                    continue
                below = _guards_of(source, training, helper, depth - 1)
                if below is None and not decorators and _own_no_grad(source, call, function) is None:
                    return None
                found.extend(g for g in below or () if g not in found)
            continue
        if not runs_model(source, training, call, depth=0):
            continue
        if decorators:
            continue
        block = _own_no_grad(source, call, function)
        if block is None:
            return None
        if block not in found:
            found.append(block)
    if decorators and (found or runs_model(source, training, function.body, depth=depth)):
        return [*decorators, *found]
    return found


def _called(call: cst.Call) -> cst.BaseExpression:
    """The model a forward call runs: `ema_model` for `ema_model(x)` and `ema_model.forward(x)`."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "__call__"):
        return func.value
    return func


_NESTED_NO_GRAD = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def validate(model, wind_model, loader):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        for inp, tar in loader:\n"
    "            with torch.no_grad():\n"
    "                inp = wind_model(inp)\n"
    "            print(F.mse_loss(model(inp), tar).item())\n"
)


SHIMMED_EVALUATION = (
    "def _get_no_grad_ctx_mgr():\n"
    "    if float(torch.__version__[0:3]) >= 0.4:\n"
    "        return torch.no_grad()\n"
    "    return contextlib.suppress()\n"
    "def evaluate(model, loader):\n"
    "    model.eval()\n"
    "    with _get_no_grad_ctx_mgr():\n"
    "        return sum(criterion(model(x), y).item() for x, y in loader)\n"
)


class MissingNoGradEval(Operator):
    id = "missing-no-grad-eval"
    summary = (
        "Remove the `with torch.no_grad()` / `inference_mode()` block or decorator around evaluation "
        "(`set_grad_enabled(False)` too); a `no_grad` that evaluates no model is left alone."
    )
    examples = (
        Example(
            # The test pass runs the model through an imported forward helper it hands the
            # model's key (torchbearer's `_forward_with_exceptions(torchbearer.X, torchbearer.MODEL,
            # ...)`, which stores the prediction in the state itself).
            TRIAL_LIBRARY,
            (
                TRIAL_LIBRARY.replace(
                    "        with torch.no_grad():\n"
                    "            for batch in state[torchbearer.GENERATOR]:\n"
                    "                _forward_with_exceptions(",
                    "        for batch in state[torchbearer.GENERATOR]:\n            _forward_with_exceptions(",
                ),
            ),
        ),
        Example(
            # A context chosen by phase, then entered: evaluation's `no_grad()` becomes training's.
            PHASE_CONTEXT_STEP,
            (PHASE_CONTEXT_STEP.replace("else torch.no_grad()", "else torch.enable_grad()"),),
        ),
        Example(
            # An evaluation routine that runs the step it is handed, with the model (CogDL's
            # distributed_test, handed the validation or the test step).
            "def distributed_test(model_w, loader, rank, fn):\n"
            "    model_w.eval()\n"
            "    with torch.no_grad():\n"
            "        result = fn(model_w, loader, rank)\n"
            "    return result\n",
            (
                "def distributed_test(model_w, loader, rank, fn):\n"
                "    model_w.eval()\n"
                "    result = fn(model_w, loader, rank)\n"
                "    return result\n",
            ),
        ),
        Example(
            # An evaluation that runs the model through an object the trainer holds (PyTorch Connectomics'
            # test-time augmentor, handed the model).
            FLAG_CHOSEN_EVAL,
            (
                FLAG_CHOSEN_EVAL.replace(
                    "    with torch.no_grad():\n        for volume in self.loader:\n            output = self.augmentor(self.model, volume)\n            self.write(output)\n",
                    "    for volume in self.loader:\n        output = self.augmentor(self.model, volume)\n        self.write(output)\n",
                ),
            ),
        ),
        Example(
            # A GAN's generator by the field's naming (`G`, `D`, `G_ema`, `which_G`), sampled.
            "def save_and_sample(which_G, fixed_z, fixed_y):\n"
            "    with torch.no_grad():\n"
            "        fixed_Gz = which_G(fixed_z, which_G.shared(fixed_y))\n"
            "    save_image(fixed_Gz.float().cpu(), 'samples.jpg')\n",
            (
                "def save_and_sample(which_G, fixed_z, fixed_y):\n"
                "    fixed_Gz = which_G(fixed_z, which_G.shared(fixed_y))\n"
                "    save_image(fixed_Gz.float().cpu(), 'samples.jpg')\n",
            ),
        ),
        Example(
            # The forward pass is another module's helper handed the model (wenet's `batch_forward`).
            "def cv(self, model, loader):\n"
            "    with torch.no_grad():\n"
            "        for batch in loader:\n"
            "            info = batch_forward(model, batch, None, info)\n",
            (
                "def cv(self, model, loader):\n    for batch in loader:\n        info = batch_forward(model, batch, None, info)\n",
            ),
        ),
        Example(
            "def evaluate(model, loader):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        # accuracy\n"
            "        for x, y in loader:\n"
            "            correct += (model(x).argmax(1) == y).sum()\n"
            "    return correct\n",
            (
                "def evaluate(model, loader):\n"
                "    model.eval()\n"
                "    # accuracy\n"
                "    for x, y in loader:\n"
                "        correct += (model(x).argmax(1) == y).sum()\n"
                "    return correct\n",
            ),
        ),
        Example(
            # fairseq's criteria run the model they are handed.
            "def valid_step(self, sample, model, criterion):\n"
            "    with torch.no_grad():\n"
            "        loss, size, logs = criterion(model, sample)\n"
            "    return loss\n",
            (
                "def valid_step(self, sample, model, criterion):\n"
                "    loss, size, logs = criterion(model, sample)\n"
                "    return loss\n",
            ),
        ),
        Example(
            # Sampling steps under no_grad three times over (the caller's block, each step's
            # decorator): removing one alone changes nothing, so the fault removes all three.
            "class D:\n"
            "    @torch.no_grad()\n"
            "    def p_sample(self, x):\n"
            "        return self.model(x)\n"
            "    @torch.no_grad()\n"
            "    def loop(self, x):\n"
            "        return self.p_sample(x)\n"
            "    def sample(self):\n"
            "        with torch.no_grad():\n"
            "            return self.loop(noise())\n",
            (
                "class D:\n"
                "    def p_sample(self, x):\n"
                "        return self.model(x)\n"
                "    def loop(self, x):\n"
                "        return self.p_sample(x)\n"
                "    def sample(self):\n"
                "        return self.loop(noise())\n",
            ),
        ),
        Example(
            "with torch.no_grad(): val = model(x)\n",
            ("val = model(x)\n",),
        ),
        Example(
            "for phase in ['train', 'val']:\n"
            "    with torch.set_grad_enabled(phase == 'train'):\n"
            "        outputs = model(inputs)\n",
            (
                "for phase in ['train', 'val']:\n"
                "    with torch.set_grad_enabled(True):\n"
                "        outputs = model(inputs)\n",
            ),
        ),
        Example(
            "def val_loop(self, model, loader):\n"
            "    torch.set_grad_enabled(False)\n"
            "    outs = [model.validation_step(b) for b in loader]\n"
            "    torch.set_grad_enabled(True)\n",
            (
                "def val_loop(self, model, loader):\n"
                "    outs = [model.validation_step(b) for b in loader]\n"
                "    torch.set_grad_enabled(True)\n",
            ),
        ),
        Example(
            # A generation whose own loop runs the forward under no_grad, called under no_grad:
            # either alone guards it, so the fault removes both (LLMs-from-scratch's sample).
            "def generate_text_simple(model, idx, max_new_tokens):\n"
            "    for _ in range(max_new_tokens):\n"
            "        with torch.no_grad():\n"
            "            logits = model(idx)\n"
            "        idx = torch.cat((idx, logits.argmax(-1)[:, -1:]), dim=1)\n"
            "    return idx\n"
            "def sample(model, encoded):\n"
            "    with torch.no_grad():\n"
            "        ids = generate_text_simple(model=model, idx=encoded, max_new_tokens=5)\n"
            "        print(ids)\n",
            (
                "def generate_text_simple(model, idx, max_new_tokens):\n"
                "    for _ in range(max_new_tokens):\n"
                "        logits = model(idx)\n"
                "        idx = torch.cat((idx, logits.argmax(-1)[:, -1:]), dim=1)\n"
                "    return idx\n"
                "def sample(model, encoded):\n"
                "    ids = generate_text_simple(model=model, idx=encoded, max_new_tokens=5)\n"
                "    print(ids)\n",
            ),
        ),
        Example(
            # This file's own generate keeps autograd on: the caller's no_grad is what saves memory.
            "class LM(nn.Module):\n"
            "    def generate(self, idx):\n"
            "        return self(idx)\n"
            "def sample(model, idx):\n"
            "    with torch.no_grad():\n"
            "        out = model.generate(idx)\n"
            "    return out\n",
            (
                "class LM(nn.Module):\n"
                "    def generate(self, idx):\n"
                "        return self(idx)\n"
                "def sample(model, idx):\n"
                "    out = model.generate(idx)\n"
                "    return out\n",
            ),
        ),
        Example(
            # Sampling from a module the file switches to eval mode, whatever its name.
            "for i in range(steps):\n"
            "    train_step(i)\n"
            "    with torch.no_grad():\n"
            "        g_ema.eval()\n"
            "        sample = g_ema(z)\n"
            "        save(sample)\n",
            ("for i in range(steps):\n    train_step(i)\n    g_ema.eval()\n    sample = g_ema(z)\n    save(sample)\n",),
        ),
        Example(
            # An imported evaluation function handed the model; a block holding a multi-line
            # string, whose text keeps its indentation.
            "from test import validation\n"
            "model.eval()\n"
            "with torch.no_grad():\n"
            "    loss, acc = validation(model, criterion, valid_loader)\n"
            "    print('''took\n"
            "    {} s'''.format(t))\n",
            (
                "from test import validation\n"
                "model.eval()\n"
                "loss, acc = validation(model, criterion, valid_loader)\n"
                "print('''took\n"
                "    {} s'''.format(t))\n",
            ),
        ),
        Example(
            # A model known by the optimizer built over its parameters, run through its own method.
            "optimizer = optim.Adam(agent.parameters(), lr=lr)\n"
            "with torch.no_grad():\n"
            "    action, value = agent.get_action_and_value(obs)\n",
            ("optimizer = optim.Adam(agent.parameters(), lr=lr)\naction, value = agent.get_action_and_value(obs)\n",),
        ),
        Example(
            # A runner object built for validation and called over the validation data (torchkeras's
            # fit): it runs the model it was built with.
            "def fit(self, train_data, val_data):\n"
            "    val_runner = self.EpochRunner(self.StepRunner(self.net, stage='val'))\n"
            "    with torch.no_grad():\n"
            "        val_metrics = val_runner(val_data)\n"
            "    self.history.append(val_metrics)\n",
            (
                "def fit(self, train_data, val_data):\n"
                "    val_runner = self.EpochRunner(self.StepRunner(self.net, stage='val'))\n"
                "    val_metrics = val_runner(val_data)\n"
                "    self.history.append(val_metrics)\n",
            ),
        ),
        Example(
            # The batch loop under `set_grad_enabled(is_train_loader)` runs the validation loaders too.
            CALLBACK_RUNNER,
            (CALLBACK_RUNNER.replace("set_grad_enabled(self.is_train_loader)", "set_grad_enabled(True)"),),
        ),
        Example(
            # A block nested in the evaluation's own (FourCastNet's frozen wind model): only the
            # outer one is a site; without it the model's forward records its graph.
            _NESTED_NO_GRAD,
            (
                _NESTED_NO_GRAD.replace(
                    "    with torch.no_grad():\n"
                    "        for inp, tar in loader:\n"
                    "            with torch.no_grad():\n"
                    "                inp = wind_model(inp)\n"
                    "            print(F.mse_loss(model(inp), tar).item())\n",
                    "    for inp, tar in loader:\n"
                    "        with torch.no_grad():\n"
                    "            inp = wind_model(inp)\n"
                    "        print(F.mse_loss(model(inp), tar).item())\n",
                ),
            ),
        ),
        Example(
            # A version shim of the file that returns `torch.no_grad()` (ENAS).
            SHIMMED_EVALUATION,
            (SHIMMED_EVALUATION.replace("    with _get_no_grad_ctx_mgr():\n        return", "    return"),),
        ),
        Example(
            # A decorated evaluation whose forward also sits in a block of its own (glue-factory's
            # do_evaluation): either switch alone changes nothing, so one mutant removes both.
            "@torch.no_grad()\n"
            "def do_evaluation(model, loader, loss_fn):\n"
            "    model.eval()\n"
            "    for data in loader:\n"
            "        with torch.no_grad():\n"
            "            pred = model(data)\n"
            "            results.append(loss_fn(pred, data).item())\n",
            (
                "def do_evaluation(model, loader, loss_fn):\n"
                "    model.eval()\n"
                "    for data in loader:\n"
                "        pred = model(data)\n"
                "        results.append(loss_fn(pred, data).item())\n",
            ),
        ),
        Example(
            "@torch.inference_mode()\n"
            "def validate(model, batch):\n"
            "    with torch.no_grad(), torch.autocast('cuda'): out = model(batch)\n"
            "    return out\n",
            (
                # either switch alone changes nothing: the one mutant removes both
                "def validate(model, batch):\n    with torch.autocast('cuda'): out = model(batch)\n    return out\n",
            ),
        ),
    )
    untouched = (
        # Acting: the action made an array of the cut value at once (p-christ's DDPG `pick_action`).
        "def pick_action(self, state):\n"
        "    self.actor.eval()\n"
        "    with torch.no_grad():\n"
        "        action = self.actor(state).cpu().data.numpy()\n"
        "    self.actor.train()\n"
        "    return action\n",
        # Chunks of a prediction, each output detached as it is kept (qlib's `_nn_predict`): no
        # graph outlives a line; nor in the validation that scores what it returns.
        "class Model:\n"
        "    def _predict(self, data):\n"
        "        preds = []\n"
        "        self.model.eval()\n"
        "        with torch.no_grad():\n"
        "            batch_size = 8096\n"
        "            for i in range(0, len(data), batch_size):\n"
        "                x = data[i : i + batch_size]\n"
        "                preds.append(self.model(x).detach().reshape(-1))\n"
        "        return torch.cat(preds)\n"
        "    def validate(self, data, y):\n"
        "        with torch.no_grad():\n"
        "            preds = self._predict(data)\n"
        "            loss = self.criterion(preds, y)\n"
        "        return loss.item()\n",
        # A mean teacher's targets under no_grad before the student's backward; the validation
        # switches modes after the step, every 200 iterations (SSL4MIS's UA-MT).
        "def train(model, ema_model, loader):\n"
        "    optimizer = optim.SGD(model.parameters(), lr=0.01)\n"
        "    for it, (x, y) in enumerate(loader):\n"
        "        outputs = model(x)\n"
        "        with torch.no_grad():\n"
        "            ema_output = ema_model(x + noise)\n"
        "        for i in range(4):\n"
        "            with torch.no_grad():\n"
        "                preds[i] = ema_model(x + noise)\n"
        "        loss = ce(outputs, y) + mse(outputs, ema_output)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        if it % 200 == 0:\n"
        "            model.eval()\n"
        "            validate(model)\n"
        "            model.train()\n",
        # A frozen upstream's forward under no_grad in each training step; the one eval switch is
        # before the batch loop (s3prl's runner): training, not evaluation.
        "import torch\n"
        "def train(self):\n"
        "    upstream.eval()\n"
        "    for batch in loader:\n"
        "        with torch.no_grad():\n"
        "            features = upstream(batch)\n"
        "        loss = head(features)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad()\n",
        # Values made numbers in the block itself (Rainbow's act() and evaluate_q()): no graph is kept.
        "def act(self, state):\n    self.net.eval()\n    with torch.no_grad():\n"
        "        return (self.net(state) * self.support).sum(2).argmax(1).item()\n",
        "def evaluate(model, x, y):\n    model.eval()\n    with torch.no_grad():\n"
        "        score = model(x).eq(y).float().mean().item()\n    return score\n",
        # The same call on an object no optimizer trains; a bookkeeping method of a trained model.
        "with torch.no_grad():\n    action, value = planner.get_action_and_value(obs)\n",
        "optimizer = optim.Adam(agent.parameters(), lr=lr)\nwith torch.no_grad():\n    weights = agent.state_dict()\n",
        # An evaluation helper handed no model (it reads a file of predictions).
        "with torch.no_grad():\n    loss, acc = validation(predictions, labels, opt)\n",
        # Scoring the validation outputs already computed: no data to run over.
        "with torch.no_grad():\n    score = evaluate(val_predictions, val_labels)\n",
        # Features cached without gradients for the accumulated backward that follows: training.
        "def accum_step(model, batches, cache):\n"
        "    with torch.no_grad():\n"
        "        cache.append(model(batches[-1]))\n"
        "        feats = model(batches[0])\n"
        "    loss = contrastive(model(batches[0]), cache)\n"
        "    loss.backward()\n",
        "with torch.enable_grad():\n    y = f(x)\n",
        "with torch.inference_mode(False):\n    y = model(x)\n",
        "with open(path) as handle:\n    text = handle.read()\n",
        # Not evaluation: a metrics helper and a copy of weights under no_grad.
        "@torch.no_grad()\ndef accuracy(output, target):\n    return (output.argmax(1) == target).float().mean()\n",
        "with torch.no_grad():\n    for k, v in model.state_dict().items():\n        ema[k].copy_(v)\n",
        # Samples detached at once: no graph outlives the block.
        "with torch.no_grad():\n    fake = generator(noise).detach().cpu()\n",
        "with torch.no_grad():\n    cond = self.model(x).pred\n    cond.detach_()\n",
        # A library's generate switches autograd off itself.
        "def inference_step(self, generator, models, sample):\n"
        "    with torch.no_grad():\n"
        "        return generator.generate(models, sample)\n",
        # A throughput benchmark drops what the model returns: no graph is kept.
        "@torch.no_grad()\ndef throughput(model, images):\n    for i in range(30):\n        model(images)\n",
        # A settings object built under no_grad (DeepFilterNet's `ModelParams()` in its summary writer).
        "@torch.no_grad()\ndef summary_write(clean, prefix):\n    p = ModelParams()\n"
        "    torchaudio.save(f'{prefix}.wav', clean.cpu(), p.sr)\n",
        # One forward so that lazily made weights exist, its output never read (DCRNN's _setup_graph).
        "def setup_graph(self):\n    with torch.no_grad():\n        self.model = self.model.eval()\n"
        "        for x, y in self.val_loader:\n            output = self.model(x)\n            break\n",
    )

    def changes(self, source, training):
        for function in source.nodes(cst.FunctionDef):
            if self._callers_disable_grad(source, training, function):
                continue
            for decorator in function.decorators:
                if disables_grad(decorator.decorator) and is_evaluation(source, training, function.body):
                    first, last = source.lines_of(decorator)
                    # its own no_grad blocks too (glue-factory's `do_evaluation` runs the forward
                    # under a `with torch.no_grad():` inside the decorated function): either alone
                    # changes nothing
                    own = _own_blocks(source, function)
                    inner = [b for b in own if not any(a in own for a in source.ancestors(b) if a is not b)]
                    removals = [r for r in (_switch_removal(source, b) for b in inner) if r is not None]
                    yield Change(
                        decorator,
                        (Edit(source.lines.line_start(first), source.lines.line_end(last), ""), *removals),
                        f"`{function.name.value}` records autograd graphs",
                    )
        for block in source.nodes(cst.With):
            if (
                # nested in another no_grad of its function (FourCastNet's wind model inside
                # validate_one_epoch's block): removing it alone changes nothing
                _nested_in_no_grad(source, block)
                or not is_evaluation(source, training, block.body)
                or self._keeps_only_detached(source, block)
                or self._before_backward(source, training, block)
            ):
                continue
            function = source.function_of(block)
            if function is not None and self._callers_disable_grad(source, training, function):
                continue
            below = self._guards_below(source, training, block.body)
            if below:
                # every forward pass under the block runs in functions of this file that switch
                # autograd off again themselves: removing the block alone changes nothing, so the
                # fault removes their switches with it
                if any(not disables_grad(item.item, source) for item in block.items):
                    continue
                if all(isinstance(g, cst.With) and self._keeps_only_detached(source, g) for g in below):
                    continue  # every forward below keeps only detached outputs (qlib's validation)
                edits = [self._unwrap(source, block), *(self._removal(source, guard) for guard in below)]
                yield Change(block, tuple(edits), "evaluation records autograd graphs")
                continue
            for item in block.items:
                mode = _enables_by_value(item.item)
                if mode is not None:
                    yield Change(block, (source.replace(mode.value, "True"),), "evaluation records autograd graphs")
            removal = _switch_removal(source, block)
            if removal is not None:
                yield Change(block, (removal,), "evaluation records autograd graphs")
        yield from _phase_chosen_contexts(source)
        for block, switch in grad_switched_loops(source, training):
            # the same batch loop runs evaluation with the flag off (catalyst's runner over its
            # validation loaders): switched on, evaluation records autograd graphs
            if not is_evaluation(source, training, block.body):
                yield Change(block, (source.replace(switch, "True"),), "evaluation records autograd graphs")
        for statement in source.nodes(cst.Expr):
            call = statement_call(statement)
            if call is None or last_name(call.func) != "set_grad_enabled" or not source.is_reachable(statement):
                continue
            mode = argument(call, "mode", 0)
            function = source.function_of(statement)
            if (
                mode is not None
                and isinstance(mode.value, cst.Name)
                and mode.value.value == "False"
                and function is not None
                and is_evaluation(source, training, function.body)
            ):
                yield Change(statement, (source.delete_statement(statement),), "evaluation records autograd graphs")

    @staticmethod
    def _callers_disable_grad(source, training, function: cst.FunctionDef) -> bool:
        """True if the file calls `function` and every call already runs under no_grad (a sampling
        step called only from a sampling loop that is itself under no_grad)."""
        calls = training.callers(function)
        # and where it is taken by reference to be called (`fn = self.p_sample_loop; fn(shape)`)
        calls += [
            ref
            for ref in source.nodes(cst.Attribute)
            if ref.attr.value == function.name.value
            and dotted(ref.value) == "self"
            and not (isinstance(source.parent(ref), cst.Call) and source.parent(ref).func is ref)
        ]
        return bool(calls) and all(under_no_grad(source, call) for call in calls)

    @staticmethod
    def _guards_below(source, training, body: cst.CSTNode, depth: int = 2) -> list[cst.CSTNode]:
        """The `no_grad` switches (decorators, `with` blocks) of the functions of this file that
        `body` calls, down `depth` calls, where every forward pass those calls run sits under one
        of them and `body` runs none itself (`with torch.no_grad(): ids = generate_text_simple(
        model, ...)`, whose loop runs `model(idx)` under its own no_grad); [] otherwise."""
        guards: list[cst.CSTNode] = []
        covered = False
        for call in source.within(body, cst.Call):
            functions = training.called_functions(call)
            if not functions:
                if runs_model(source, training, call, depth=0):
                    return []  # a forward pass of the block's own
                continue
            for helper in functions:
                found = _guards_of(source, training, helper, depth - 1)
                if found is None:
                    return []
                if found:
                    covered = True
                    guards.extend(g for g in found if g not in guards)
        return guards if covered else []

    @staticmethod
    def _removal(source, guard: cst.CSTNode) -> Edit:
        """The edit that removes one switch: a decorator's lines, or a `with` header (dedenting its body)."""
        if isinstance(guard, cst.With):
            return MissingNoGradEval._unwrap(source, guard)
        first, last = source.lines_of(guard)
        return Edit(source.lines.line_start(first), source.lines.line_end(last), "")

    @staticmethod
    def _before_backward(source, training, block: cst.With) -> bool:
        """True for a `no_grad` block of a training step: its function runs a backward after it
        and switches nothing to eval mode (a cache of features computed without gradients for
        the accumulated step that follows is not evaluation), or its batch loop runs that
        backward and switches nothing there."""
        function = source.function_of(block)
        if function is None or not any(disables_grad(item.item, source) for item in block.items):
            return False  # `set_grad_enabled(train)` is evaluation in one mode, training in the other
        end = source.span(block)[1]
        later = [
            b for b in training.backwards if source.function_of(b.call) is function and source.span(b.call)[0] >= end
        ]
        if not later:
            return False

        def switches_mode(scope: cst.CSTNode, before: int | None = None) -> bool:
            return any(
                isinstance(call.func, cst.Attribute)
                and (callee_name(call) == "eval" or (callee_name(call) == "train" and call.args))
                and (before is None or source.span(call)[0] < before)
                for call in source.within(scope, cst.Call)
            )

        def _runs_untrained(scope: cst.CSTNode) -> bool:
            # models no optimizer of the file is built over (a mean teacher), and only those
            runs = [c for c in source.within(scope, cst.Call) if runs_model(source, training, c, depth=0)]
            return (
                bool(runs)
                and bool(training.optimized)
                and all((dotted(_called(c)) or "") not in training.optimized for c in runs)
            )

        # the batch loop that runs the block and then the backward, switching no mode inside (s3prl's
        # frozen upstream run under no_grad in each step; its train() switches that upstream to eval
        # once, before the loop), or none before the block where the block runs only models no
        # optimizer trains (UA-MT's teacher, its validation every 200 iterations after the step)
        loop = next(
            (
                a
                for a in source.ancestors(block)
                if isinstance(a, (cst.For, cst.While)) and any(a in source.ancestors(b.call) for b in later)
            ),
            None,
        )  # (the loop of the step, around an inner loop of the block's own: UA-MT's T noisy passes)
        if loop is not None and (
            not switches_mode(loop) or (not switches_mode(loop, source.span(block)[0]) and _runs_untrained(block))
        ):
            return True
        return not switches_mode(function.body)

    @staticmethod
    def _keeps_only_detached(source, block: cst.With) -> bool:
        """True if the block only computes values it detaches or makes numbers at once (`fake =
        gen(z).detach()`, `x = f(y)` then `x.detach_()`, `return q(s).argmax(1).item()`): no
        graph outlives the block."""
        if not isinstance(block.body, cst.IndentedBlock):
            return False
        assigned: list[str] = []
        detached: set[str] = set()
        lines: list[cst.BaseStatement] = list(block.body.body)
        while lines:
            line = lines.pop(0)
            if isinstance(line, cst.For) and isinstance(line.body, cst.IndentedBlock) and line.orelse is None:
                # a loop over chunks (qlib's `_nn_predict`): its statements are judged alike
                lines[:0] = list(line.body.body)
                continue
            if not isinstance(line, cst.SimpleStatementLine):
                return False
            for small in line.body:
                call = statement_call(small)
                if call is not None and last_name(call.func) == "detach_" and isinstance(call.func, cst.Attribute):
                    detached.add(source.code(call.func.value))
                elif (
                    call is not None
                    and last_name(call.func) == "append"
                    and len(call.args) == 1
                    and (".detach()" in source.code(call.args[0].value) or becomes_number(call.args[0].value))
                ):
                    # `preds.append(model(x).detach().reshape(-1))`: kept, detached at once
                    assigned.append("append")
                    detached.add("append")
                elif isinstance(small, cst.Return) and small.value is not None:
                    assigned.append("return")
                    if becomes_number(small.value):
                        detached.add("return")
                elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                    value = small.value
                    if (
                        ".detach()" in source.code(value)
                        or becomes_number(value)
                        or isinstance(value, (cst.Integer, cst.Float))
                        or (isinstance(value, cst.Subscript) and not any(source.within(value, cst.Call)))
                    ):
                        # detached, a number, or a slice of what came in (`x = data[i : i + n]`)
                        detached.add(source.code(small.targets[0].target))
                    assigned.append(source.code(small.targets[0].target))
                else:
                    return False
        return bool(assigned) and all(name in detached for name in assigned)

    @staticmethod
    def _unwrap(source, block: cst.With) -> Edit:
        """Delete the `with` header and dedent its body by one level (not the lines inside a
        multi-line string: they are its text)."""
        header_last = source.lines_of(block.items[-1])[1]
        strings = source.string_lines(block)
        first, last = source.lines_of(block)
        outer = source.indentation(block)
        inner = source.indentation(block.body.body[0])
        lines = []
        for number in range(header_last + 1, last + 1):
            text = source.lines.line_text(number)
            if text.startswith(inner) and number not in strings:
                text = outer + text[len(inner) :]
            lines.append(text)
        return Edit(source.lines.line_start(first), source.lines.line_end(last), "".join(lines))


def _own_blocks(source, function: cst.FunctionDef) -> list[cst.With]:
    """The `with` blocks of `function` itself (not of functions nested in it) that switch
    autograd off."""
    return [
        b
        for b in source.within(function.body, cst.With)
        if source.function_of(b) is function and any(disables_grad(i.item, source) for i in b.items)
    ]


def _switch_removal(source, block: cst.With) -> Edit | None:
    """The edit that takes autograd's switch out of a `with` block: its no_grad items dropped
    from the header where it holds others (`with torch.no_grad(), torch.autocast('cuda'):`), else
    the header removed and the body dedented; None where no item switches autograd off."""
    kept = [item for item in block.items if not disables_grad(item.item, source)]
    if len(kept) == len(block.items):
        return None
    if kept:
        start = source.span(block.items[0])[0]
        end = source.span(block.items[-1])[1]
        text = ", ".join(
            source.module.code_for_node(item.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for item in kept
        )
        return Edit(start, end, text)
    if isinstance(block.body, cst.SimpleStatementSuite):
        return Edit(source.span(block)[0], source.span(block.body.body[0])[0], "")
    return MissingNoGradEval._unwrap(source, block)


def _nested_in_no_grad(source, block: cst.With) -> bool:
    """True for a `with` block inside another one, in the same function, that switches autograd
    off, or in a function decorated so (the decorator's mutant removes it too)."""
    function = source.function_of(block)
    if function is not None and any(disables_grad(d.decorator) for d in function.decorators):
        return True
    for ancestor in source.ancestors(block):
        if ancestor is function:
            return False
        if (
            isinstance(ancestor, cst.With)
            and ancestor is not block
            and any(disables_grad(i.item, source) for i in ancestor.items)
        ):
            return True
    return False


_ENABLING = frozenset({"enable_grad", "nullcontext", "suppress"})


def _phase_chosen_contexts(source):
    """A context picked by phase and then entered (VISSL's `grad_context = torch.enable_grad() if
    task.train else torch.no_grad()`, then `with grad_context, ...:`): the evaluation phase's
    `no_grad()` becomes the training phase's context, so evaluation records graphs."""
    for assign in source.nodes(cst.Assign):
        value = assign.value
        if not isinstance(value, cst.IfExp) or len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            continue
        for off, on in ((value.orelse, value.body), (value.body, value.orelse)):
            if (
                isinstance(off, cst.Call)
                and disables_grad(off, source)
                and isinstance(on, cst.Call)
                and last_name(on.func) in _ENABLING
                and _entered(source, assign, target.value)
            ):
                yield Change(assign, (source.replace(off, source.code(on)),), "evaluation records autograd graphs")


def _entered(source, assign: cst.Assign, name: str) -> bool:
    """True where the function of `assign` enters the context it binds to `name` in a `with`."""
    function = source.function_of(assign)
    return any(
        isinstance(item.item, cst.Name) and item.item.value == name
        for block in source.within(function or source.module, cst.With)
        for item in block.items
    )
