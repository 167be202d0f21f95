from __future__ import annotations

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.patterns import argument, bound_here, callee_name, dotted, is_functional, with_keyword

# Functional activations with an in-place twin, by the module that provides the twin.
FUNCTIONAL_TWINS = {
    "functional": {"relu", "elu", "leaky_relu", "hardtanh", "rrelu", "celu", "selu", "threshold"},
    "torch": {"relu", "sigmoid", "tanh"},
}
METHOD_TWINS = {"relu", "sigmoid", "tanh"}
# Activation modules with an `inplace` flag, and where it sits among positional arguments.
MODULES = {
    "ReLU": 0,
    "ReLU6": 0,
    "SELU": 0,
    "SiLU": 0,
    "Mish": 0,
    "Hardswish": 0,
    "Hardsigmoid": 0,
    "LeakyReLU": 1,
    "ELU": 1,
    "CELU": 1,
    "Hardtanh": 2,
    "RReLU": 2,
    "Threshold": 2,
}
RESIDUAL_OPERATORS = (cst.Add, cst.Multiply, cst.Subtract)
# Layers whose backward reads their input and weights, never their output: an in-place
# activation right after one changes nothing autograd needs (the mutant would be equivalent).
OUTPUT_FREE = {
    "Linear",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "Dropout",
    "Dropout2d",
    "Embedding",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool2d",
    "AdaptiveAvgPool2d",
    "Flatten",
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "batch_norm",
    "layer_norm",
    "dropout",
    "max_pool2d",
    "avg_pool2d",
    "flatten",
}


def _output_free(layer: str | None) -> bool:
    """True for a layer whose backward does not read its output: the catalogue above, and by
    name any library's convolution or linear layer (`GCNConv`, `SAGEConv`, `LoRALinear`), whose
    last operation is a product or a bias add."""
    if not layer:
        return False
    return layer in OUTPUT_FREE or (layer[:1].isupper() and ("Conv" in layer or layer.endswith("Linear")))


class InplaceActivation(Operator):
    id = "inplace-activation"
    summary = (
        "Make activations in-place in model code: `F.relu(x)`→`F.relu_(x)`, "
        "`nn.ReLU()`→`nn.ReLU(inplace=True)`, `x.sigmoid()`→`x.sigmoid_()`, and "
        "`x = x + y`→`x += y` in `forward`."
    )
    examples = (
        Example(
            # Appended after a tanh, whose backward reads its own output: in place breaks it.
            "def create_mlp(sizes):\n"
            "    layers = []\n"
            "    for n, m in zip(sizes, sizes[1:]):\n"
            "        layers.append(nn.Tanh())\n"
            "        layers.append(nn.ReLU())\n"
            "    return nn.Sequential(*layers)\n",
            (
                "def create_mlp(sizes):\n"
                "    layers = []\n"
                "    for n, m in zip(sizes, sizes[1:]):\n"
                "        layers.append(nn.Tanh())\n"
                "        layers.append(nn.ReLU(inplace=True))\n"
                "    return nn.Sequential(*layers)\n",
            ),
        ),
        Example(
            "class Block(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h = F.relu(self.fc1(x))\n"
            "        x = x + self.fc2(h)\n"
            "        return torch.sigmoid(x)\n",
            (
                "class Block(nn.Module):\n"
                "    def forward(self, x):\n"
                "        h = F.relu_(self.fc1(x))\n"
                "        x = x + self.fc2(h)\n"
                "        return torch.sigmoid(x)\n",
                "class Block(nn.Module):\n"
                "    def forward(self, x):\n"
                "        h = F.relu(self.fc1(x))\n"
                "        x = x + self.fc2(h)\n"
                "        return torch.sigmoid_(x)\n",
                "class Block(nn.Module):\n"
                "    def forward(self, x):\n"
                "        h = F.relu(self.fc1(x))\n"
                "        x += self.fc2(h)\n"
                "        return torch.sigmoid(x)\n",
            ),
        ),
        Example(
            # After tanh (whose backward reads its output) and after a ReLU: in place breaks backward.
            "net = nn.Sequential(nn.Tanh(), nn.ReLU(), nn.LeakyReLU(0.2), nn.GELU())\n",
            (
                "net = nn.Sequential(nn.Tanh(), nn.ReLU(inplace=True), nn.LeakyReLU(0.2), nn.GELU())\n",
                "net = nn.Sequential(nn.Tanh(), nn.ReLU(), nn.LeakyReLU(0.2, inplace=True), nn.GELU())\n",
            ),
        ),
        Example(
            "class Gate(nn.Module):\n    def forward(self, x):\n        return x.tanh() * F.elu(x, inplace=False)\n",
            (
                "class Gate(nn.Module):\n"
                "    def forward(self, x):\n"
                "        return x.tanh_() * F.elu(x, inplace=False)\n",
                "class Gate(nn.Module):\n    def forward(self, x):\n        return x.tanh() * F.elu(x, inplace=True)\n",
            ),
        ),
        Example(
            # The method spelling after sigmoid, whose backward reads its output.
            "class G(nn.Module):\n    def forward(self, x):\n        return self.gate(x).sigmoid().relu()\n",
            (
                "class G(nn.Module):\n    def forward(self, x):\n        return self.gate(x).sigmoid().relu_()\n",
                "class G(nn.Module):\n    def forward(self, x):\n        return self.gate(x).sigmoid_().relu()\n",
            ),
        ),
    )
    untouched = (
        # An activation chosen by a setting, then placed after a batch norm bound to a name (qlib's
        # `nn.Sequential(fc, bn, activation)`): batch norm's backward does not read its output.
        "class Net(nn.Module):\n"
        "    def __init__(self, dims, act='LeakyReLU'):\n"
        "        super().__init__()\n"
        "        layers = []\n"
        "        for n_in, n_out in zip(dims[:-1], dims[1:]):\n"
        "            fc = nn.Linear(n_in, n_out)\n"
        "            if act == 'LeakyReLU':\n"
        "                activation = nn.LeakyReLU(negative_slope=0.1, inplace=False)\n"
        "            else:\n"
        "                activation = nn.SiLU()\n"
        "            bn = nn.BatchNorm1d(n_out)\n"
        "            layers.append(nn.Sequential(fc, bn, activation))\n"
        "        self.layers = nn.ModuleList(layers)\n",
        # An MLP built layer by layer: each ReLU appended after the linear layer just appended,
        # whose backward does not read its output (DLRM's create_mlp).
        "def create_mlp(sizes, last):\n"
        "    layers = nn.ModuleList()\n"
        "    for n, m in zip(sizes, sizes[1:]):\n"
        "        LL = nn.Linear(n, m)\n"
        "        layers.append(LL)\n"
        "        if m == last:\n"
        "            layers.append(nn.Sigmoid())\n"
        "        else:\n"
        "            layers.append(nn.ReLU())\n"
        "    return nn.Sequential(*layers)\n",
        # tanh of a temporary of arithmetic (GPT-2's tanh approximation of GELU): nothing else
        # reads the temporary, and arithmetic's backward reads its operands, not its result.
        "class Gelu(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return 0.5 * x * (1.0 + torch.tanh(0.8 * (x + 0.04 * torch.pow(x, 3.0))))\n",
        # After a batch norm held in a ModuleList (its backward does not need its output).
        "class GCN(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.bns = torch.nn.ModuleList()\n"
        "        self.bns.append(torch.nn.BatchNorm1d(16))\n"
        "    def forward(self, x):\n"
        "        x = self.bns[0](x)\n"
        "        x = F.relu(x)\n"
        "        return x\n",
        # The method spelling on a library convolution's fresh output (a graph convolution ends
        # with a bias add, whose backward does not read the output).
        "class GCN(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.conv1 = GCNConv(4, 8)\n"
        "    def forward(self, x, edge_index):\n"
        "        return self.conv1(x, edge_index).relu()\n",
        # Straight on a conv's or linear layer's fresh output: nothing reads it again.
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.conv1 = nn.Conv2d(3, 6, 5)\n"
        "        self.fc1 = nn.Linear(6, 4)\n"
        "    def forward(self, x):\n"
        "        x = self.pool(F.relu(self.conv1(x)))\n"
        "        return F.relu(self.fc1(x))\n",
        # After a layer whose backward does not read its output, in place changes nothing.
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.conv1 = nn.Conv2d(1, 8, 3)\n"
        "        self.head = nn.Sequential(nn.Linear(8, 4), nn.ReLU())\n"
        "    def forward(self, x):\n"
        "        x = self.conv1(x)\n"
        "        x = F.relu(x)\n"
        "        return self.head(x)\n",
        "def log_metrics(x):\n    x = x + 1\n    return torch.relu(x)\n",
        "act = nn.ReLU(inplace=True)\n",
        # Already in place, by position: `nn.ReLU(True)` gets no mutant (the keyword would clash).
        "act = nn.ReLU(True)\nleaky = nn.LeakyReLU(0.2, True)\n",
        "class Net(nn.Module):\n    def forward(self, x):\n        y = x + 1\n        return F.gelu(y)\n",
        # A ReLU module every use runs on a linear layer's fresh output.
        "class Encoder(nn.Module):\n"
        "    def __init__(self, device):\n"
        "        super().__init__()\n"
        "        self.linear = nn.Linear(8, 4).to(device)\n"
        "        self.relu = torch.nn.ReLU().to(device)\n"
        "    def forward(self, h):\n"
        "        return self.relu(self.linear(h))\n",
        # A residual added onto a dropout's fresh output, whose backward reads only its mask
        # (LLMs-from-scratch's transformer block).
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.att = nn.Linear(4, 4)\n"
        "        self.drop_shortcut = nn.Dropout(0.1)\n"
        "    def forward(self, x):\n"
        "        shortcut = x\n"
        "        x = self.att(x)\n"
        "        x = self.drop_shortcut(x)\n"
        "        x = x + shortcut\n"
        "        return x\n",
    )

    def changes(self, source, training):
        for call in source.nodes(cst.Call):
            name = callee_name(call) or ""
            if name in MODULES:
                if not (
                    self._after_output_free_layer(source, training, call)
                    or self._named_after_output_free_layer(source, training, call)
                    or self._appended_after_output_free_layer(source, training, call)
                    or self._runs_on_fresh_outputs(source, training, call)
                ):
                    yield from self._module(source, call, name)
            elif self._in_model(source, call) and not self._overwrites_dead_output(source, training, call):
                yield from self._activation(source, call, name)
        for assign in source.nodes(cst.Assign):
            function = source.function_of(assign)
            if function is None or function.name.value != "forward" or len(assign.targets) != 1:
                continue
            target, value = assign.targets[0].target, assign.value
            if (
                isinstance(target, cst.Name)
                and isinstance(value, cst.BinaryOperation)
                and isinstance(value.operator, RESIDUAL_OPERATORS)
                and not value.lpar
                and isinstance(value.left, cst.Name)
                and value.left.value == target.value
                and not self._fresh_from_output_free_layer(source, training, assign)
            ):
                symbol = source.module.code_for_node(value.operator).strip()
                right = source.module.code_for_node(value.right).strip()
                yield Change(
                    assign,
                    (source.replace(assign, f"{target.value} {symbol}= {right}"),),
                    f"`{target.value}` is updated in place",
                )

    @staticmethod
    def _module(source, call, name):
        inplace = argument(call, "inplace", MODULES[name])
        if inplace is None:
            yield Change(
                call,
                (source.replace_node(call, with_keyword(call, "inplace", cst.Name("True"))),),
                f"`{name}` works in place",
            )
        elif isinstance(inplace.value, cst.Name) and inplace.value.value == "False":
            yield Change(call, (source.replace(inplace.value, "True"),), f"`{name}` works in place")

    @staticmethod
    def _activation(source, call, name):
        inplace = argument(call, "inplace", None)
        if inplace is not None:
            if isinstance(inplace.value, cst.Name) and inplace.value.value == "False":
                yield Change(call, (source.replace(inplace.value, "True"),), f"`{name}` works in place")
            return
        if is_functional(call):
            module = "torch" if dotted(call.func) in {"torch.relu", "torch.sigmoid", "torch.tanh"} else "functional"
            if isinstance(call.func, cst.Attribute) and name in FUNCTIONAL_TWINS[module]:
                yield Change(call, (source.replace(call.func.attr, f"{name}_"),), f"`{name}` works in place")
        elif name in METHOD_TWINS and isinstance(call.func, cst.Attribute) and not call.args:
            yield Change(call, (source.replace(call.func.attr, f"{name}_"),), f"`{name}` works in place")

    @staticmethod
    def _after_output_free_layer(source, training, call) -> bool:
        """`nn.Sequential(nn.Linear(...), nn.ReLU())`: the layer before does not need its output."""
        parent = source.parent(source.parent(call))  # Arg or Element, then the list or call
        items = getattr(parent, "args", None) or getattr(parent, "elements", None)
        if not items:
            return False
        values = [item.value for item in items]
        index = next((i for i, v in enumerate(values) if v is call), None)
        if not index:
            return False
        previous = values[index - 1]
        return isinstance(previous, cst.Call) and _output_free(callee_name(previous))

    @staticmethod
    def _named_after_output_free_layer(source, training, call) -> bool:
        """`activation = nn.LeakyReLU(...)`, `bn = nn.BatchNorm1d(n)`, then `nn.Sequential(fc, bn,
        activation)` (qlib's MLP): every place the name is put into a container, the layer before
        it there does not need its output."""
        assign = source.parent(call)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not call:
            return False
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return False
        function = source.function_of(call)
        uses = [
            n
            for n in source.within(function or source.module, cst.Name)
            if n.value == target.value and not bound_here(source, n) and source.span(n)[0] > source.span(call)[0]
        ]
        if not uses:
            return False
        for use in uses:
            holder = source.parent(source.parent(use))  # Arg or Element, then the call or list
            items = getattr(holder, "args", None) or getattr(holder, "elements", None)
            values = [item.value for item in items] if items else []
            index = next((i for i, v in enumerate(values) if v is use), None)
            if not index:
                return False
            previous: cst.BaseExpression | None = values[index - 1]
            if isinstance(previous, cst.Name):
                built = training.last_assignment(previous.value, holder)
                previous = built.value if built is not None else None
            if not (isinstance(previous, cst.Call) and _output_free(callee_name(previous))):
                return False
        return True

    @staticmethod
    def _appended_after_output_free_layer(source, training, call) -> bool:
        """`layers.append(LL)`, then `layers.append(nn.ReLU())` (an MLP built layer by layer,
        `LL = nn.Linear(n, m)`): the layer appended just before, on the way to this append (not
        in another branch), does not need its output."""
        append = source.parent(source.parent(call))  # the Arg, then the call it is handed to
        if not (
            isinstance(append, cst.Call)
            and isinstance(append.func, cst.Attribute)
            and append.func.attr.value == "append"
            and append.args
            and append.args[0].value is call
        ):
            return False
        holder, function = dotted(append.func.value), source.function_of(call)
        if holder is None or function is None:
            return False
        start = source.span(append)[0]
        around = {id(a) for a in source.ancestors(call)}
        previous = None
        for other in source.within(function.body, cst.Call):
            if not (
                isinstance(other.func, cst.Attribute)
                and other.func.attr.value == "append"
                and dotted(other.func.value) == holder
                and other.args
                and source.span(other)[0] < start
            ):
                continue
            block = next((a for a in source.ancestors(other) if isinstance(a, (cst.IndentedBlock, cst.Module))), None)
            if block is not None and id(block) in around:
                previous = other  # calls come in source order: the last one kept is the nearest
        if previous is None:
            return False
        layer: cst.BaseExpression | None = previous.args[0].value
        if isinstance(layer, cst.Name):
            assign = training.last_assignment(layer.value, previous)
            layer = assign.value if assign is not None else None
        return isinstance(layer, cst.Call) and _output_free(callee_name(layer))

    @staticmethod
    def _runs_on_fresh_outputs(source, training, call) -> bool:
        """`self.relu = nn.ReLU().to(device)` where every use in the class runs it on the fresh
        output of a layer that does not keep its output for backward (`self.relu(self.linear(h))`,
        RTVC's speaker encoder): in place changes nothing."""
        assign = source.enclosing(call, cst.Assign)
        if assign is None or len(assign.targets) != 1:
            return False
        target = dotted(assign.targets[0].target)
        cls = next((a for a in source.ancestors(call) if isinstance(a, cst.ClassDef)), None)
        if target is None or not target.startswith("self.") or cls is None:
            return False
        uses = [c for c in source.within(cls, cst.Call) if dotted(c.func) == target]
        return bool(uses) and all(
            c.args
            and isinstance(c.args[0].value, cst.Call)
            and _output_free(InplaceActivation._built(training, c.args[0].value))
            for c in uses
        )

    @staticmethod
    def _overwrites_dead_output(source, training, call) -> bool:
        """`x = F.relu(x)` right after `x = self.conv1(x)`: the activation overwrites the output of
        a layer that does not keep it for backward, and nothing else reads it."""
        if (
            not call.args
            and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Call)
            and not isinstance(source.parent(call), cst.Attribute)
        ):
            # `self.conv1(x, edge_index).relu()`: the method spelling on a layer's fresh output
            return _output_free(InplaceActivation._built(training, call.func.value))
        if not call.args:
            return False
        if isinstance(call.args[0].value, (cst.BinaryOperation, cst.UnaryOperation)):
            # `torch.tanh(c * (x + 0.044715 * x ** 3))`: a temporary of arithmetic, whose backward
            # reads its operands, never its result, and which nothing else reads
            return True
        if isinstance(call.args[0].value, cst.Call):
            # `F.relu(self.fc1(x))`: the layer's fresh output, which nothing else reads
            return _output_free(InplaceActivation._built(training, call.args[0].value))
        if not isinstance(call.args[0].value, cst.Name):
            return False
        name = call.args[0].value.value
        statement = source.parent(call)
        if not (
            isinstance(statement, cst.Assign)
            and statement.value is call
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)
            and statement.targets[0].target.value == name
        ):
            return False
        line, siblings = source.block_of(statement)
        index = siblings.index(line) if line in siblings else 0
        if index == 0:
            return False
        previous = siblings[index - 1]
        if not (
            isinstance(previous, cst.SimpleStatementLine)
            and len(previous.body) == 1
            and isinstance(previous.body[0], cst.Assign)
            and isinstance(previous.body[0].value, cst.Call)
        ):
            return False
        producer = previous.body[0]
        if [dotted(t.target) for t in producer.targets] != [name]:
            return False
        layer = producer.value
        if not isinstance(layer, cst.Call):
            return False
        return _output_free(InplaceActivation._built(training, layer))

    @staticmethod
    def _fresh_from_output_free_layer(source, training, assign: cst.Assign) -> bool:
        """`x = self.drop_shortcut(x)` right before `x = x + shortcut`: the tensor added to in place
        is the fresh output of a layer whose backward does not read it (dropout keeps its mask, a
        linear layer its input), and no other name holds it yet, so `x += shortcut` computes the
        same values and the same gradients (LLMs-from-scratch's transformer block)."""
        line = source.parent(assign)
        block = source.parent(line)
        body = list(getattr(block, "body", ()))
        index = next((i for i, statement in enumerate(body) if statement is line), 0)
        if index == 0 or not isinstance(body[index - 1], cst.SimpleStatementLine):
            return False
        before = body[index - 1].body
        if len(before) != 1 or not isinstance(before[0], cst.Assign) or len(before[0].targets) != 1:
            return False
        produced, layer = before[0].targets[0].target, before[0].value
        name = assign.targets[0].target
        return (
            isinstance(produced, cst.Name)
            and isinstance(name, cst.Name)
            and produced.value == name.value
            and isinstance(layer, cst.Call)
            and _output_free(InplaceActivation._built(training, layer))
        )

    @staticmethod
    def _built(training, layer: cst.Call) -> str | None:
        """The layer class a call runs: `Conv2d` for `self.conv1(x)` after `self.conv1 = nn.Conv2d(...)`."""
        if isinstance(layer.func, cst.Attribute) and dotted(layer.func.value) == "self":
            return training.constructor(layer.func)
        if isinstance(layer.func, cst.Subscript) and (dotted(layer.func.value) or "").startswith("self."):
            return InplaceActivation._listed(training, dotted(layer.func.value))
        return callee_name(layer)

    @staticmethod
    def _listed(training, holder: str | None) -> str | None:
        """The one layer class a ModuleList holds (`self.bns[i](x)` after every
        `self.bns.append(torch.nn.BatchNorm1d(...))`), or None where it holds several."""
        built = {
            callee_name(call.args[0].value)
            for call in training.source.nodes(cst.Call)
            if callee_name(call) == "append"
            and isinstance(call.func, cst.Attribute)
            and dotted(call.func.value) == holder
            and call.args
            and isinstance(call.args[0].value, cst.Call)
        }
        return built.pop() if len(built) == 1 else None

    @staticmethod
    def _in_model(source, node) -> bool:
        """Inside a `forward` function or a method of a class that defines `forward`."""
        for ancestor in source.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value == "forward":
                return True
            if isinstance(ancestor, cst.ClassDef):
                return any(isinstance(s, cst.FunctionDef) and s.name.value == "forward" for s in ancestor.body.body)
        return False
