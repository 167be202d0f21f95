from __future__ import annotations

import re

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    DATA_PARALLEL_UNLESS_WRAPPED,
    DEFAULT_CRITERION_METHOD,
    ENTROPY_HELPER,
    HANDED_CRITERION_FINDER,
)
from injector.patterns import (
    argument,
    callee_name,
    dotted,
    is_functional,
    last_name,
    method_on,
    read_as_a_number,
    runs_model,
    under_no_grad,
    value_uses,
)


def _cross_entropy_choice(classes: set[str]) -> bool:
    """True where the criterion is a cross-entropy, or one of the losses a setting chooses
    between with a cross-entropy among them (`FocalLoss` or `CrossEntropyLoss` by `opts.loss_type`):
    the runs that choose the cross-entropy give it probabilities."""
    return "CrossEntropyLoss" in classes and all(name.endswith("Loss") for name in classes)


# What is written out in the source is never a model's output.
_LITERALS = (
    cst.Dict,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
)


def _named_ce(call: cst.Call) -> bool:
    """True for a criterion named a cross-entropy where its class is not in the file
    (`self.ce_loss(logits, y)`, `loss_ce(...)`, `ce_criterion(...)`: USB's `CELoss`, built in its
    base class's file), or a loss helper handed the cross-entropy's name."""
    callee = callee_name(call) or ""
    words = callee.lower().split("_")
    if callee[:1].islower() and "crossentropy" in "".join(words) and not {"binary", "bce", "sigmoid"} & set(words):
        # a function of the project named for a cross-entropy (`smooth_crossentropy(pred, gold)`,
        # `soft_cross_entropy(logits, targets)`): it takes logits; a class of that name is built here
        return True
    if not {"loss", "criterion"} & set(words):
        return False
    # or a loss helper told by name to compute one (`consistency_loss(logits, targets, 'ce')`)
    told = any(
        isinstance(a.value, cst.SimpleString) and str(a.value.evaluated_value).lower() in _CE_NAMES for a in call.args
    )
    return "ce" in words or told


_CE_NAMES = frozenset({"ce", "cross_entropy", "crossentropy", "xent"})


def _built_as_another(training, call: cst.Call) -> bool:
    """True for a criterion named a cross-entropy that the file builds as another loss class
    (MedSAM's `ce_loss = nn.BCEWithLogitsLoss(...)`, called on a one-channel mask): its name says
    nothing where its class is known."""
    classes = training.classes_at(call.func, call)
    return bool(classes) and "CrossEntropyLoss" not in classes and all(name.endswith("Loss") for name in classes)


def _checked_cross_entropy(source, call: cst.Call) -> bool:
    """True for a criterion called in the branch of `if isinstance(self.criterion, X):` where X is
    a cross-entropy class (kospeech's `LabelSmoothedCrossEntropyLoss`, `nn.CrossEntropyLoss`):
    the file says which loss it is there, though it is built elsewhere."""
    criterion = dotted(call.func)
    child: cst.CSTNode = call
    for ancestor in source.ancestors(call):
        if isinstance(ancestor, cst.If) and child is ancestor.body:
            test = ancestor.test
            if (
                isinstance(test, cst.Call)
                and isinstance(test.func, cst.Name)
                and test.func.value == "isinstance"
                and len(test.args) == 2
                and dotted(test.args[0].value) == criterion
            ):
                kind = (last_name(test.args[1].value) or "").lower()
                return "crossentropy" in kind and not {"binary", "bce"} & set(kind.split("_"))
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = ancestor
    return False


def _project_log_softmax_loss(source, training, call: cst.Call) -> bool:
    """True for a loss the project defines itself, in the file or a module it imports, that
    normalises its first argument with a log-softmax of its own and calls no cross-entropy on it
    (a label-smoothing loss: `-(F.log_softmax(pred, dim=1) * one_hot).sum(dim=1).mean()`, bound
    as `criterion = smoothed_loss` or built as `criterion = LabelSmoothingLoss(0.1)`): it takes
    logits, and the call is the only place to hand it probabilities. A project loss that calls
    `F.cross_entropy` on its argument has its site there, where a project's campaign mutates it."""
    func: cst.BaseExpression = call.func
    instance = False
    if isinstance(func, cst.Name):
        assign = training.last_assignment(func.value, call)
        if assign is not None and isinstance(assign.value, (cst.Name, cst.Attribute)):
            func = assign.value  # `criterion = smoothed_loss`
        elif assign is not None and isinstance(assign.value, cst.Call):
            func, instance = assign.value.func, True  # `criterion = LabelSmoothingLoss(0.1)`
    found = training.resolver.definition(source, func)
    if found is None:
        return False
    module, definition = found
    if isinstance(definition, cst.ClassDef) != instance:
        return False  # building the loss, or calling what builds it
    if isinstance(definition, cst.ClassDef):
        forward = [s for s in definition.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"]
        if not forward:
            return False
        definition, params = forward[0], list(forward[0].params.params)[1:]
    else:
        params = list(definition.params.params)
    if not params:
        return False
    normalised = {callee_name(inner) for inner in module.within(definition, cst.Call) if _takes(inner, params[0])}
    return "log_softmax" in normalised and "cross_entropy" not in normalised


def _own_softmax_dim(training, call: cst.Call) -> str:
    """The axis the loss `call` runs normalises its logits over, as the mutant's softmax should:
    a project loss's own (TorchBeast's `compute_entropy_loss(logits)` takes [T, B, A] logits and
    normalises them with `dim=-1`), else the class axis of `cross_entropy` (`dim=1`)."""
    found = training.resolver.definition(training.source, call.func)
    if found is not None and isinstance(found[1], cst.FunctionDef) and found[1].params.params:
        module, definition = found
        param = definition.params.params[0]
        dims = {
            module.code(dim.value)
            for inner in module.within(definition, cst.Call)
            if callee_name(inner) in ("softmax", "log_softmax") and _takes(inner, param)
            for dim in [argument(inner, "dim", 1 if is_functional(inner) else 0)]
            if dim is not None
        }
        if len(dims) == 1:
            return f"dim={dims.pop()}"
    return "dim=1"


def _takes(call: cst.Call, param: cst.Param) -> bool:
    """True where `call` normalises the parameter: `F.log_softmax(pred, 1)`, `pred.log_softmax(1)`."""
    if is_functional(call):
        value = call.args[0].value if call.args else None
    else:
        value = call.func.value if isinstance(call.func, cst.Attribute) else None
    return isinstance(value, cst.Name) and value.value == param.name.value


# Words of a loss's name that say it is no cross-entropy over classes (a regression, a divergence
# between two distributions, a binary or a sequence loss): what it takes as logits is its own.
_NOT_CE_WORDS = frozenset(
    {"mse", "l1", "l2", "mae", "huber", "smooth", "kl", "kld", "kldiv", "bce", "binary", "sigmoid", "ctc", "nll"}
    | {"distill"}
    | {"distillation", "cosine", "triplet", "contrastive", "regression", "reg", "recon", "reconstruction"}
)


_OUTPUT_NAMES = frozenset({"output", "outputs", "out", "pred", "preds", "prediction", "predictions", "scores"})


def _handed_logits(source, training, call: cst.Call) -> bool:
    """True for a loss the file cannot see, called on a value named for logits (pytorch-3dunet's
    `self.loss_criterion(logits, target)`, the criterion handed to the trainer and chosen by the
    configuration's name): a loss handed logits normalises them itself, so a softmax before it
    normalises twice. A loss the file defines or binds itself is judged by what it is."""
    if not _unseen(source, training, call.func, call):
        return False
    words = set(re.split(r"[^a-z0-9]+", (callee_name(call) or "").lower()))
    if not {"loss", "criterion"} & words or words & _NOT_CE_WORDS:
        return False
    first = argument(call, "input", 0)
    value = first.value if first is not None else None
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value  # `logits.view(-1, vocab)`, `logits.float()`
    name = (last_name(value) or "").lower() if value is not None else ""
    if name in {"logits", "logit"} or name.endswith("_logits"):
        return True
    # a model's outputs scored against class labels (torch-lr-finder's `self.criterion(outputs,
    # labels)`, the criterion the caller hands in): a classifier's logits
    second = argument(call, "target", 1)
    label = (last_name(second.value) or "").lower() if second is not None else ""
    return name in _OUTPUT_NAMES and label == "labels" and _handed_in(source, training, call.func)


def _unseen(source, training, func: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True where the file neither defines what `func` names nor binds it to anything but a
    parameter (`self.loss_criterion = loss_criterion`): what it is is decided elsewhere."""
    text = dotted(func)
    if text is None or training.classes_at(func, use) or training.resolver.definition(source, func) is not None:
        return False
    if isinstance(func, cst.Attribute) and func.attr.value in training.functions:
        return False  # a method of the file's classes (`self.loss(logits, y)`)
    for assign in training.assigned_names.get(text, ()):
        value = assign.value
        function = source.function_of(assign)
        params = {p.name.value for p in function.params.params} if function is not None else set()
        if not (isinstance(value, cst.Name) and value.value in params):
            return False  # bound here: `self.loss_func = F.binary_cross_entropy_with_logits`
    return True


def _handed_in(source, training, func: cst.BaseExpression) -> bool:
    """True for a callee that is a parameter of its function or bound from one
    (`self.criterion = criterion`): the caller chooses it."""

    def a_parameter(name: cst.BaseExpression) -> bool:
        function = source.function_of(name)
        return (
            isinstance(name, cst.Name)
            and function is not None
            and name.value in {p.name.value for p in function.params.params}
        )

    return a_parameter(func) or any(
        a_parameter(assign.value) for assign in training.assigned_names.get(dotted(func) or "", ())
    )


def _only_reported(source, call: cst.Call) -> bool:
    """True for a loss a function assigns to a name and then only reads as a number until the
    name is assigned again (dgcnn's test pass: `loss = criterion(logits, label)`, then
    `test_loss += loss.item() * batch_size`, with no no_grad around it): no backward reads it, so
    a softmax before it changes a reported figure only."""
    statement = source.parent(call)
    if (
        not isinstance(statement, cst.Assign)
        or len(statement.targets) != 1
        or not isinstance(statement.targets[0].target, cst.Name)
    ):
        return False
    uses = value_uses(source, statement, statement.targets[0].target.value)
    return uses is not None and bool(uses) and all(read_as_a_number(source, n) for n in uses)


def _handed_with_criterion(source, training, call: cst.Call) -> cst.Arg | None:
    """The argument after a cross-entropy criterion handed to a helper, where a model made it
    (`self.compute_loss(self.criterion, outputs, pids)`, `DeepSupervision(criterion, outputs,
    targets)` after `outputs = self.model(imgs)`): the helper calls the criterion on it."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for index, arg in enumerate(positional[:-2]):
        if _cross_entropy_choice(training.classes_at(arg.value, call)):
            logits = positional[index + 1]
            made: cst.BaseExpression | None
            if isinstance(logits.value, cst.Call):
                made = logits.value
            elif isinstance(logits.value, cst.Name):
                assign = training.last_assignment(logits.value.value, call)
                made = assign.value if assign is not None else None
            else:
                made = None
            return logits if made is not None and runs_model(source, training, made) else None
    return None


class DoubleSoftmax(Operator):
    id = "double-softmax"
    summary = "Pass `logits.softmax(dim=1)` instead of logits to `cross_entropy` / `nn.CrossEntropyLoss`."
    examples = (
        Example(
            # A helper handed the criterion and the model's output (torchreid's compute_loss).
            "criterion = nn.CrossEntropyLoss()\nout = model(x)\nloss = compute_loss(criterion, out, y)\n",
            (
                "criterion = nn.CrossEntropyLoss()\nout = model(x)\nloss = compute_loss(criterion, out.softmax(dim=1), y)\n",
            ),
        ),
        Example(
            # A criterion tested with isinstance (AST): only the cross-entropy branch; the else branch runs the BCE.
            DATA_PARALLEL_UNLESS_WRAPPED,
            (
                DATA_PARALLEL_UNLESS_WRAPPED.replace(
                    "            loss = loss_fn(audio_output, torch.argmax(labels.long(), axis=1))\n",
                    "            loss = loss_fn(audio_output.softmax(dim=1), torch.argmax(labels.long(), axis=1))\n",
                ),
            ),
        ),
        Example(
            # A criterion defaulting to what a method of the file builds (OpenPrompt: CrossEntropyLoss or NLLLoss by a setting).
            DEFAULT_CRITERION_METHOD,
            (
                DEFAULT_CRITERION_METHOD.replace(
                    '        return self.loss_function(logits, batch["label"])\n',
                    '        return self.loss_function(logits.softmax(dim=1), batch["label"])\n',
                ),
            ),
        ),
        Example(
            # A loss of the file that normalises its logits itself, over the last axis (TorchBeast's entropy bonus): the
            # softmax the mutant adds is over the same axis.
            ENTROPY_HELPER,
            (
                ENTROPY_HELPER.replace(
                    '    loss = entropy_loss(out["policy_logits"])\n',
                    '    loss = entropy_loss(out["policy_logits"].softmax(dim=-1))\n',
                ),
            ),
        ),
        Example(
            "loss = F.cross_entropy(model(x), y, label_smoothing=0.1)\n",
            ("loss = F.cross_entropy(model(x).softmax(dim=1), y, label_smoothing=0.1)\n",),
        ),
        Example(
            "criterion = nn.CrossEntropyLoss()\nloss = criterion(logits.view(-1, vocab), targets.view(-1))\n",
            (
                "criterion = nn.CrossEntropyLoss()\n"
                "loss = criterion(logits.view(-1, vocab).softmax(dim=1), targets.view(-1))\n",
            ),
        ),
        Example(
            "self.loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)\n"
            "def step(self, a, b, y):\n"
            "    return self.loss_fn(a + b, y)\n",
            (
                "self.loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)\n"
                "def step(self, a, b, y):\n"
                "    return self.loss_fn((a + b).softmax(dim=1), y)\n",
            ),
        ),
        Example(
            # A criterion moved to the device is still a cross-entropy.
            "criterion = nn.CrossEntropyLoss().to(device)\nloss = criterion(output, target)\n",
            ("criterion = nn.CrossEntropyLoss().to(device)\nloss = criterion(output.softmax(dim=1), target)\n",),
        ),
        Example(
            # Where the training function is handed the criterion built elsewhere as a cross-entropy.
            "def train(model, criterion, x, y):\n"
            "    return criterion(model(x), y)\n"
            "criterion = nn.CrossEntropyLoss()\n",
            (
                "def train(model, criterion, x, y):\n"
                "    return criterion(model(x).softmax(dim=1), y)\n"
                "criterion = nn.CrossEntropyLoss()\n",
            ),
        ),
        Example(
            # A criterion a setting chooses, a cross-entropy among the choices.
            "if opts.loss_type == 'focal_loss':\n"
            "    criterion = utils.FocalLoss(ignore_index=255)\n"
            "elif opts.loss_type == 'cross_entropy':\n"
            "    criterion = nn.CrossEntropyLoss(ignore_index=255)\n"
            "loss = criterion(outputs, labels)\n",
            (
                "if opts.loss_type == 'focal_loss':\n"
                "    criterion = utils.FocalLoss(ignore_index=255)\n"
                "elif opts.loss_type == 'cross_entropy':\n"
                "    criterion = nn.CrossEntropyLoss(ignore_index=255)\n"
                "loss = criterion(outputs.softmax(dim=1), labels)\n",
            ),
        ),
        Example(
            # Built in the branch of a test the use is under too: the other branch's loss is not it.
            "def train(opt, x, y):\n"
            "    if opt.ctc:\n"
            "        criterion = nn.CTCLoss()\n"
            "    else:\n"
            "        criterion = nn.CrossEntropyLoss()\n"
            "    if opt.ctc:\n"
            "        cost = criterion(x.log_softmax(2), y, n, m)\n"
            "    else:\n"
            "        cost = criterion(x.view(-1, x.shape[-1]), y)\n",
            (
                "def train(opt, x, y):\n"
                "    if opt.ctc:\n"
                "        criterion = nn.CTCLoss()\n"
                "    else:\n"
                "        criterion = nn.CrossEntropyLoss()\n"
                "    if opt.ctc:\n"
                "        cost = criterion(x.log_softmax(2), y, n, m)\n"
                "    else:\n"
                "        cost = criterion(x.view(-1, x.shape[-1]).softmax(dim=1), y)\n",
            ),
        ),
        Example(
            # A function of the project named for a cross-entropy: it takes logits.
            "loss = smooth_crossentropy(model(x), y, smoothing=0.1)\n",
            ("loss = smooth_crossentropy(model(x).softmax(dim=1), y, smoothing=0.1)\n",),
        ),
        Example(
            # A criterion named a cross-entropy, and a loss helper told to compute one ('ce'); an L1 loss, or 'mse', is none.
            "sup = self.ce_loss(logits, y, reduction='mean')\n"
            "unsup = self.consistency_loss(logits_s, pseudo, 'ce', mask=mask)\n",
            (
                "sup = self.ce_loss(logits.softmax(dim=1), y, reduction='mean')\n"
                "unsup = self.consistency_loss(logits_s, pseudo, 'ce', mask=mask)\n",
                "sup = self.ce_loss(logits, y, reduction='mean')\n"
                "unsup = self.consistency_loss(logits_s.softmax(dim=1), pseudo, 'ce', mask=mask)\n",
            ),
        ),
        Example(
            # A criterion built elsewhere, called in the branch of an isinstance test that names a
            # cross-entropy class (kospeech's trainer); the CTC branch's call is none.
            "import torch.nn as nn\n"
            "def step(self, model, x, y):\n"
            "    outputs = model(x)\n"
            "    if isinstance(self.criterion, LabelSmoothedCrossEntropyLoss):\n"
            "        loss = self.criterion(outputs.view(-1, outputs.size(-1)), y.view(-1))\n"
            "    elif isinstance(self.criterion, nn.CTCLoss):\n"
            "        loss = self.criterion(outputs.transpose(0, 1), y, lengths, target_lengths)\n"
            "    return loss\n",
            (
                "import torch.nn as nn\n"
                "def step(self, model, x, y):\n"
                "    outputs = model(x)\n"
                "    if isinstance(self.criterion, LabelSmoothedCrossEntropyLoss):\n"
                "        loss = self.criterion(outputs.view(-1, outputs.size(-1)).softmax(dim=1), y.view(-1))\n"
                "    elif isinstance(self.criterion, nn.CTCLoss):\n"
                "        loss = self.criterion(outputs.transpose(0, 1), y, lengths, target_lengths)\n"
                "    return loss\n",
            ),
        ),
        Example(
            # A loss handed to the trainer, chosen elsewhere by the configuration, called on what
            # the code names logits (pytorch-3dunet's UNetTrainer): it normalises them itself.
            "class Trainer:\n"
            "    def __init__(self, model, loss_criterion):\n"
            "        self.loss_criterion = loss_criterion\n"
            "    def _forward_pass(self, inp, target):\n"
            "        output, logits = self.model(inp, return_logits=True)\n"
            "        return output, self.loss_criterion(logits, target)\n",
            (
                "class Trainer:\n"
                "    def __init__(self, model, loss_criterion):\n"
                "        self.loss_criterion = loss_criterion\n"
                "    def _forward_pass(self, inp, target):\n"
                "        output, logits = self.model(inp, return_logits=True)\n"
                "        return output, self.loss_criterion(logits.softmax(dim=1), target)\n",
            ),
        ),
        Example(
            # A library's trainer scoring a model's outputs against class labels with the
            # criterion its caller hands in (torch-lr-finder's LRFinder): a classifier's logits.
            HANDED_CRITERION_FINDER,
            (
                HANDED_CRITERION_FINDER.replace(
                    "self.criterion(outputs, labels)", "self.criterion(outputs.softmax(dim=1), labels)"
                ),
            ),
        ),
    )
    untouched = (
        # A loss class built from its settings, its first argument a dict (nnU-Net's `_build_loss`).
        "loss = DC_and_CE_loss({'batch_dice': True, 'smooth': 1e-5}, {}, weight_ce=1, weight_dice=1)\n",
        # A binary cross-entropy takes probabilities; building a cross-entropy class is no loss call.
        "loss = binary_cross_entropy(torch.sigmoid(out), y)\ncriterion = CrossEntropyLabelSmooth(num_classes)\n",
        # A criterion named a cross-entropy, and a loss helper told to compute one ('ce'); an L1 loss, or 'mse', is none.
        "sup = self.l1_loss(logits, y)\nunsup = self.consistency_loss(logits_s, pseudo, 'mse', mask=mask)\n",
        # A criterion handed on with what is no model output.
        "criterion = nn.CrossEntropyLoss()\ntrain(model, criterion, optimizer, loader)\n",
        # Lightning runs validation_step under no_grad: its loss is a reported figure.
        "class M(LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        x, y = batch\n"
        "        loss = F.cross_entropy(self.encoder(x), y)\n"
        "        self.log('val_loss', loss)\n",
        "loss = F.nll_loss(F.log_softmax(x, dim=1), y)\n",
        # The function's own criterion: annotated as another loss, or rebound to one there; the
        # cross-entropy of the same name is evaluation's.
        "def train(model, criterion: DistillationLoss, x, y, cosub):\n"
        "    if cosub:\n"
        "        criterion = torch.nn.BCEWithLogitsLoss()\n"
        "    return criterion(x, model(x), y)\n"
        "def evaluate(model, x, y):\n"
        "    criterion = torch.nn.CrossEntropyLoss()\n"
        "    with torch.no_grad():\n"
        "        return criterion(model(x), y)\n",
        "criterion = nn.NLLLoss().to(device)\nloss = criterion(output, target)\n",
        # A choice between a cross-entropy and something that is no loss class.
        "criterion = nn.CrossEntropyLoss() if cls else make_criterion(cfg)\nloss = criterion(output, target)\n",
        "loss = criterion(out, y)  # criterion built elsewhere: unknown loss\n",
        # A sigmoid cross-entropy (pytorch-GAT's multi-label `sigmoid_cross_entropy_loss`, a BCEWithLogitsLoss).
        "loss = sigmoid_cross_entropy_loss(nodes_unnormalized_scores, gt_node_labels)\n",
        # A handed-in criterion scoring outputs against a target that may be a regression's.
        "def step(model, criterion, x, label):\n    output = model(x)\n    return criterion(output, label)\n",
        # Called on logits, but bound here to a binary loss, or named for a regression.
        "class M:\n"
        "    def __init__(self):\n"
        "        self.loss_func = F.binary_cross_entropy_with_logits\n"
        "    def loss(self, logits, labels):\n"
        "        return self.loss_func(input=logits, target=labels)\n"
        "    def distill(self, logits, teacher_logits):\n"
        "        return self.mse_loss(logits, teacher_logits)\n",
        # A test pass without no_grad whose loss is only read as a number: a reported figure.
        "criterion = nn.CrossEntropyLoss()\n"
        "for data, label in test_loader:\n"
        "    logits = model(data)\n"
        "    loss = criterion(logits, label)\n"
        "    test_loss += loss.item() * len(label)\n",
        "loss = F.mse_loss(pred, y)\n",
        "with torch.no_grad():\n    val_loss = F.cross_entropy(model(x), y)\n",
        # A loss helper that only evaluation calls, under no_grad.
        "def generative_loss(logits, labels):\n"
        "    return F.cross_entropy(logits, labels)\n"
        "def evaluate(model, x, y):\n"
        "    with torch.inference_mode():\n"
        "        return generative_loss(model(x), y)\n",
        # Named a cross-entropy, built as a binary loss on a one-channel mask (MedSAM).
        "ce_loss = nn.BCEWithLogitsLoss(reduction='mean')\n"
        "for image, gt in loader:\n"
        "    pred = model(image)\n"
        "    loss = seg_loss(pred, gt) + ce_loss(pred, gt.float())\n"
        "    loss.backward()\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            functional = callee_name(call) == "cross_entropy" and is_functional(call)
            if (
                functional
                or _cross_entropy_choice(training.classes_at(call.func, call))
                or (_named_ce(call) and not _built_as_another(training, call))
                or _checked_cross_entropy(source, call)
                or _project_log_softmax_loss(source, training, call)
                or _handed_logits(source, training, call)
            ):
                logits = argument(call, "input", 0)
            else:
                # another loss, a criterion that is one only in another function, or a helper
                # handed the criterion with its input (`self.compute_loss(self.criterion, outputs, pids)`)
                logits = _handed_with_criterion(source, training, call)
            if logits is None or under_no_grad(source, call) or _only_reported(source, call):
                continue  # under no_grad, or only read as a number, the loss is only reported: no training effect
            if isinstance(logits.value, _LITERALS):
                continue  # a loss class built from its settings (nnU-Net's `DC_and_CE_loss({...}, {})`): no logits
            yield Change(
                call,
                (
                    source.replace(
                        logits.value, method_on(source, logits.value, "softmax", _own_softmax_dim(training, call))
                    ),
                ),
                "cross-entropy receives probabilities instead of logits",
            )
