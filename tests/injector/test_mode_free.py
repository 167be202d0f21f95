"""Mode switches of models whose two modes compute the same get no mutant, across the project's modules.

A user's script mostly builds its model from a class of another module (`from model import
QNetwork`). Deleting `policy.eval()` on a network of linear layers is an equivalent mutant: no
guard can kill it. The injector reads that module; a class it cannot read keeps its mutants.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
import torch

from injector.cli import main

MODELS = (
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "from torch.distributions import Normal\n"
    "\n"
    "\n"
    "def init_weights(m):\n"
    "    if isinstance(m, nn.Linear):\n"
    "        nn.init.xavier_uniform_(m.weight, gain=1)\n"
    "\n"
    "\n"
    "class Policy(nn.Module):\n"
    "    def __init__(self, inputs, actions, hidden=32):\n"
    "        super(Policy, self).__init__()\n"
    "        self.body = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden))\n"
    "        self.mean = nn.Linear(hidden, actions)\n"
    "        self.log_std = nn.Linear(hidden, actions)\n"
    "        self.scale = torch.tensor(1.0)\n"
    "        self.apply(init_weights)\n"
    "\n"
    "    def forward(self, state):\n"
    "        x = F.relu(self.body(state))\n"
    "        return self.mean(x), self.log_std(x).clamp(-20, 2)\n"
    "\n"
    "    def sample(self, state):\n"
    "        mean, log_std = self.forward(state)\n"
    "        return Normal(mean, log_std.exp()).rsample() * self.scale\n"
    "\n"
    "    def to(self, device):\n"
    "        self.scale = self.scale.to(device)\n"
    "        return super().to(device)\n"
    "\n"
    "\n"
    "class Encoder(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.conv = nn.Conv2d(1, 4, 3)\n"
    "        self.norm = nn.BatchNorm2d(4)\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.norm(self.conv(x)).mean((2, 3))\n"
)

TRAIN = (
    "import torch\n"
    "from model import Encoder, Policy\n"
    "\n"
    "policy = Policy(8, 2).to('cpu')\n"
    "encoder = Encoder()\n"
    "optimizer = torch.optim.Adam(list(policy.parameters()) + list(encoder.parameters()))\n"
    "\n"
    "\n"
    "def evaluate(states, images):\n"
    "    policy.eval()\n"
    "    encoder.eval()\n"
    "    with torch.no_grad():\n"
    "        return policy(states)[0].sum() + encoder(images).sum()\n"
    "\n"
    "\n"
    "def fit(batches):\n"
    "    for states, images in batches:\n"
    "        policy.train()\n"
    "        encoder.train()\n"
    "        optimizer.zero_grad()\n"
    "        loss = policy(states)[0].pow(2).mean() + encoder(images).pow(2).mean()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


def mode_mutants(capsys, path) -> list[tuple[str, int]]:
    assert main(["mutants", str(path), "--format", "json", "--operators", "missing-train-mode,missing-eval-mode"]) == 0
    data = json.loads(capsys.readouterr().out)
    return sorted((m["operator"], m["line"]) for m in data["mutants"])


def write_project(tmp_path, models=MODELS, train=TRAIN):
    (tmp_path / "model.py").write_text(models)
    (tmp_path / "train.py").write_text(train)
    return tmp_path


SWITCHED_ENCODER = [("missing-eval-mode", 11), ("missing-train-mode", 19)]


def test_a_model_of_linear_layers_from_a_sibling_module_gets_no_mode_mutant(tmp_path, capsys):
    project = write_project(tmp_path)
    assert mode_mutants(capsys, project / "train.py") == SWITCHED_ENCODER
    assert mode_mutants(capsys, project) == SWITCHED_ENCODER  # the folder, model.py mutated too


@pytest.mark.parametrize(
    "edit",
    [
        ("nn.Tanh(), ", "nn.Tanh(), nn.Dropout(0.1), "),  # a dropout layer
        ("x = F.relu(self.body(state))", "x = F.dropout(F.relu(self.body(state)), 0.1, self.training)"),
        ("nn.Tanh(), ", "nn.Tanh(), nn.BatchNorm1d(32), "),
        ("nn.Tanh(), ", "nn.Tanh(), nn.LSTM(32, 32, num_layers=2, dropout=0.2), "),
        ("nn.Tanh(), ", "nn.Tanh(), Encoder(), "),  # a class of the module that holds batch norm
        ("nn.Tanh(), ", "nn.Tanh(), timm.layers.Mlp(32), "),  # from an installed package: unknown
    ],
)
def test_a_layer_that_reads_the_mode_brings_the_mutants_back(tmp_path, capsys, edit):
    project = write_project(tmp_path, MODELS.replace(*edit))
    assert [op for op, line in mode_mutants(capsys, project / "train.py") if line in (10, 18)] == [
        "missing-eval-mode",
        "missing-train-mode",
    ]


@pytest.mark.parametrize(
    "models, train",
    [
        (MODELS, TRAIN.replace("from model import", "from elsewhere import")),  # not in the project
        ("this is not python(\n", TRAIN),  # a module that does not parse
        (MODELS, TRAIN.replace("policy = Policy(8, 2).to('cpu')", "policy = make_policy()")),  # built elsewhere
        (MODELS, TRAIN + "policy.head = torch.nn.Dropout()\n"),  # a submodule attached afterwards
    ],
)
def test_a_model_the_injector_cannot_read_whole_keeps_its_mutants(tmp_path, capsys, models, train):
    project = write_project(tmp_path, models, train)
    assert ("missing-eval-mode", 10) in mode_mutants(capsys, project / "train.py")


ALTERNATE = (
    "import math\n"
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(4, 4)\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.fc(x) / math.sqrt(4)\n"
    "\n"
    "    @classmethod\n"
    "    def from_file(cls, path):\n"
    "        model = cls()\n"
    "        model.load_state_dict(torch.load(path))\n"
    "        return model\n"
    "\n"
    "if fresh:\n"
    "    model = Net()\n"
    "else:\n"
    "    model = Net.from_file(path)\n"
    "model.eval()\n"
)


@pytest.mark.parametrize(
    "edit, kept",
    [
        (("", ""), False),  # the alternate constructor returns a new Net: mode-free
        (("        return model\n", "        model.head = nn.Dropout(0.5)\n        return model\n"), True),
        (("        return model\n", "        return torch.load(path)\n"), True),  # what a load returns
        (("    @classmethod\n", ""), True),  # an instance's method: what it returns is unknown
    ],
)
def test_an_alternate_constructor_is_read_as_building_its_class(tmp_path, capsys, edit, kept):
    (tmp_path / "train.py").write_text(ALTERNATE.replace(*edit) if edit[0] else ALTERNATE)
    assert [op for op, _ in mode_mutants(capsys, tmp_path)] == (["missing-eval-mode"] if kept else [])


def test_a_package_module_is_read_through_its_relative_import(tmp_path, capsys):
    package = tmp_path / "agent"
    package.mkdir()
    (package / "__init__.py").write_text("from .networks import Policy\n")
    (package / "networks.py").write_text(MODELS)
    (package / "train.py").write_text(TRAIN.replace("from model import", "from .networks import"))
    (tmp_path / "run.py").write_text(
        TRAIN.replace("from model import Encoder, Policy", "from agent import Policy, Encoder")
    )
    assert mode_mutants(capsys, package / "train.py") == SWITCHED_ENCODER
    assert mode_mutants(capsys, tmp_path / "run.py") == SWITCHED_ENCODER  # re-exported by __init__


def test_the_models_judged_mode_free_compute_the_same_in_both_modes(tmp_path):
    """The claim behind the rule, run: the policy's outputs do not depend on the mode, the
    encoder's (batch norm) do."""
    write_project(tmp_path)
    spec = importlib.util.spec_from_file_location("mode_free_model", tmp_path / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mode_free_model"] = module
    try:
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        policy, encoder = module.Policy(8, 2), module.Encoder()
        states, images = torch.randn(5, 8), torch.randn(5, 1, 6, 6)
        with torch.no_grad():
            trained = policy(states)[0], encoder(images)
            policy.eval(), encoder.eval()
            evaluated = policy(states)[0], encoder(images)
    finally:
        del sys.modules["mode_free_model"]
    assert torch.equal(trained[0], evaluated[0])
    assert not torch.allclose(trained[1], evaluated[1])


ENVIRONMENT = (
    "class Env:\n"
    "    def __init__(self, args):\n"
    "        self.training = True\n"
    "    def train(self):\n"
    "        self.training = True\n"
    "    def eval(self):\n"
    "        self.training = False\n"
)
AGENT = (
    "from model import Encoder\n"
    "class Agent:\n"
    "    def __init__(self):\n"
    "        self.net = Encoder()\n"
    "    def train(self):\n"
    "        self.net.train()\n"
    "    def eval(self):\n"
    "        self.net.eval()\n"
)
LOOP = (
    "from env import Env\n"
    "from agent import Agent\n"
    "env = Env(None)\n"
    "agent = Agent()\n"
    "for step in range(10):\n"
    "    env.eval()\n"
    "    agent.eval()\n"
    "    score = evaluate(agent, env)\n"
    "    env.train()\n"
    "    agent.train()\n"
    "    learn(agent, env)\n"
)


def test_a_switch_of_a_project_object_that_switches_no_module_gets_no_mutant(tmp_path, capsys):
    """An environment's train()/eval() set a flag of its own: deleting them is no model-mode
    fault. An agent's train()/eval() switch its network: they keep their mutants."""
    write_project(tmp_path, MODELS, LOOP)
    (tmp_path / "env.py").write_text(ENVIRONMENT)
    (tmp_path / "agent.py").write_text(AGENT)
    assert mode_mutants(capsys, tmp_path / "train.py") == [("missing-eval-mode", 7), ("missing-train-mode", 10)]


BASE = (
    "import abc\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "class Model(nn.Module, abc.ABC):\n"
    "    def __init__(self, device):\n"
    "        super().__init__()\n"
    "        self.device = device\n"
    "\n"
    "    def _process_batch(self, batch):\n"
    "        def _convert(x):\n"
    "            return x.to(self.device)\n"
    "\n"
    "        return _convert(batch.obs), _convert(batch.act)\n"
)
WORLD_MODEL = (
    "import torch\n"
    "from torch import nn\n"
    "from base import Model\n"
    "\n"
    "\n"
    "class WorldModel(Model):\n"
    "    def __init__(self, device):\n"
    "        super().__init__(device)\n"
    "        self.rnn = nn.GRUCell(4, 8)\n"
    "        self.head = nn.Linear(8, 4)\n"
    "\n"
    "    def update(self, batch, optimizer):\n"
    "        self.train()\n"
    "        optimizer.zero_grad()\n"
    "        obs, act = self._process_batch(batch)\n"
    "        loss = (self.head(self.rnn(obs)) - act).pow(2).mean()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "        return loss.item()\n"
)


@pytest.mark.parametrize(
    "edit, kept",
    [
        (("", ""), False),  # a GRU cell and a linear head under an abstract base: mode-free
        (("self.head = nn.Linear(8, 4)", "self.head = nn.Sequential(nn.Linear(8, 4), nn.Dropout(0.1))"), True),
        (("self.head = nn.Linear(8, 4)", "self.head = getattr(nn, name)()"), True),  # a class chosen by name
    ],
)
def test_a_module_s_switch_of_its_own_mode_is_read_from_its_class(tmp_path, capsys, edit, kept):
    """mbrl-lib's PlaNetModel.update runs `self.train()`: the class around it (and its project base
    class, a helper nested in a method of it) decides whether the switch changes anything."""
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "world.py").write_text(WORLD_MODEL.replace(*edit) if edit[0] else WORLD_MODEL)
    assert mode_mutants(capsys, tmp_path / "world.py") == ([("missing-train-mode", 13)] if kept else [])


def test_a_gru_cell_under_an_abstract_base_computes_the_same_in_both_modes(tmp_path):
    """The claim behind the first case, run."""
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "world.py").write_text(WORLD_MODEL)
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("mode_free_world", tmp_path / "world.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        model, obs = module.WorldModel("cpu"), torch.randn(3, 4)
        with torch.no_grad():
            trained = model.head(model.rnn(obs))
            model.eval()
            evaluated = model.head(model.rnn(obs))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("base", None)
    assert torch.equal(trained, evaluated)
