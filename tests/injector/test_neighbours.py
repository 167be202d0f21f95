"""Operators read the project's other modules the way Python would import them, and nothing else."""

from __future__ import annotations

import json
import os

import pytest

from injector.cli import main
from injector.neighbours import Neighbours, folder_reader, mapping_reader

ALGO = (
    "import torch.optim as optim\n"
    "\n"
    "\n"
    "class PPO:\n"
    "    def __init__(self, policy, clip, lr=None, eps=None):\n"
    "        self.policy = policy\n"
    "        self.clip = clip\n"
    "        self.optimizer = optim.Adam(policy.parameters(), lr=lr, eps=eps)\n"
    "\n"
    "\n"
    "class Recorder:\n"
    "    def __init__(self, lr=None):\n"
    "        self.lr = lr\n"
)
SCRIPT = (
    "from algo import PPO, Recorder\n"
    "agent = PPO(policy, 0.2, lr=args.lr, eps=1e-5)\n"
    "recorder = Recorder(lr=args.lr)\n"
    "for batch in loader:\n"
    "    agent.update(batch)\n"
)


def lr_mutants(capsys, path, operator: str = "lr-too-high") -> list[tuple[str, int, str]]:
    assert main(["mutants", str(path), "--format", "json", "--operators", operator]) == 0
    data = json.loads(capsys.readouterr().out)
    return [(m["file"], m["line"], m["diff"]) for m in data["mutants"]]


def test_a_rate_handed_to_a_project_class_that_builds_the_optimizer_is_raised_where_it_is_handed(tmp_path, capsys):
    (tmp_path / "algo.py").write_text(ALGO)
    (tmp_path / "train.py").write_text(SCRIPT)
    found = lr_mutants(capsys, tmp_path)
    assert [(file, line) for file, line, _ in found] == [("algo.py", 8), ("train.py", 2)]
    assert "+agent = PPO(policy, 0.2, lr=args.lr * 100, eps=1e-5)" in found[1][2]
    # a class that only keeps the rate is not handed an optimizer's rate: no mutant on line 3


def test_without_the_class_definition_the_script_alone_gets_no_such_mutant(tmp_path, capsys):
    (tmp_path / "train.py").write_text(SCRIPT)
    assert lr_mutants(capsys, tmp_path / "train.py") == []


STEP_LR = (
    "class StepLR:\n"
    "    def __init__(self, optimizer, learning_rate, total_epochs):\n"
    "        self.optimizer = optimizer\n"
    "        self.base = learning_rate\n"
    "        self.total = total_epochs\n"
    "\n"
    "    def __call__(self, epoch):\n"
    "        lr = self.base if epoch < self.total // 2 else self.base * 0.1\n"
    "        for group in self.optimizer.param_groups:\n"
    '            group["lr"] = lr\n'
)
SAM_SCRIPT = (
    "import torch\n"
    "from utility.step_lr import StepLR\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)\n"
    "scheduler = StepLR(optimizer, args.learning_rate, args.epochs)\n"
    "for epoch in range(args.epochs):\n"
    "    for x, y in loader:\n"
    "        criterion(model(x), y).backward()\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
    "        scheduler(epoch)\n"
)


def test_a_rate_handed_to_a_project_scheduler_that_writes_the_groups_rates_is_the_one_raised(tmp_path, capsys):
    """The project's scheduler writes every group's rate from the rate it is handed, after each
    step: the rate the run trains at is that one, not the optimizer's own."""
    (tmp_path / "utility").mkdir()
    (tmp_path / "utility" / "step_lr.py").write_text(STEP_LR)
    (tmp_path / "train.py").write_text(SAM_SCRIPT)
    found = lr_mutants(capsys, tmp_path / "train.py")
    assert [(file, line) for file, line, _ in found] == [("train.py", 4)]
    assert "+scheduler = StepLR(optimizer, args.learning_rate * 100, args.epochs)" in found[0][2]
    # without the scheduler's module, nothing says it writes rates: the optimizer's is raised
    (tmp_path / "utility" / "step_lr.py").unlink()
    assert [(file, line) for file, line, _ in lr_mutants(capsys, tmp_path / "train.py")] == [("train.py", 3)]


NOAM = (
    "class ScheduledOptim:\n"
    "    def __init__(self, optimizer, d_model, n_warmup_steps):\n"
    "        self._optimizer = optimizer\n"
    "        self.n_warmup_steps = n_warmup_steps\n"
    "        self.n_current_steps = 0\n"
    "        self.init_lr = d_model**-0.5\n"
    "\n"
    "    def step_and_update_lr(self):\n"
    "        self.n_current_steps += 1\n"
    "        scale = min(self.n_current_steps**-0.5, self.n_current_steps * self.n_warmup_steps**-1.5)\n"
    "        for param_group in self._optimizer.param_groups:\n"
    "            param_group['lr'] = self.init_lr * scale\n"
    "        self._optimizer.step()\n"
)
FASTSPEECH = (
    "import torch\n"
    "from optimizer import ScheduledOptim\n"
    "optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)\n"
    "scheduled_optim = ScheduledOptim(optimizer, 256, 4000)\n"
    "for batch in loader:\n"
    "    scheduled_optim.zero_grad()\n"
    "    criterion(model(batch), batch).backward()\n"
    "    scheduled_optim.step_and_update_lr()\n"
)


def test_an_optimizer_built_without_a_rate_for_a_project_wrapper_that_writes_the_rate_keeps_its_default(
    tmp_path, capsys
):
    """FastSpeech's Adam takes torch's default rate and is handed to ScheduledOptim, which writes
    a Noam rate into the groups before every step: the rate raised is the wrapper's, never the
    default it overwrites. Without the wrapper's module nothing says so: the default is raised."""
    (tmp_path / "optimizer.py").write_text(NOAM)
    (tmp_path / "train.py").write_text(FASTSPEECH)
    found = lr_mutants(capsys, tmp_path)
    assert [(file, line) for file, line, _ in found] == [("optimizer.py", 12)]
    assert "+            param_group['lr'] = (self.init_lr * scale) * 100" in found[0][2]
    (tmp_path / "optimizer.py").unlink()
    [(file, line, diff)] = lr_mutants(capsys, tmp_path)
    assert (file, line) == ("train.py", 3) and "lr=0.1" in diff


SAMPLERS = (
    "def generalized_steps(x, seq, model, b):\n"
    "    for i in reversed(seq):\n"
    "        x = x - b[i] * model(x, i)\n"
    "    return x\n"
    "\n"
    "\n"
    "def count(model):\n"
    "    return sum(p.numel() for p in model.parameters())\n"
)
RUNNER = (
    "import torch\n"
    "from functions.denoising import count, generalized_steps\n"
    "\n"
    "\n"
    "class Runner:\n"
    "    def sample_fid(self, model, x):\n"
    "        with torch.no_grad():\n"
    "            x = generalized_steps(x, self.seq, model, self.betas)\n"
    "        return x\n"
    "\n"
    "    def report(self, model):\n"
    "        with torch.no_grad():\n"
    "            n = count(model)\n"
    "        return n\n"
)


def no_grad_mutants(capsys, path) -> list[tuple[str, int]]:
    return [(file, line) for file, line, _ in lr_mutants(capsys, path, "missing-no-grad-eval")]


def test_a_model_handed_to_a_project_sampler_that_calls_it_is_run_there(tmp_path, capsys):
    """Sampling through the project's sampler is evaluation: without no_grad it records graphs.
    A helper of the same module that only counts parameters runs nothing."""
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "denoising.py").write_text(SAMPLERS)
    (tmp_path / "runner.py").write_text(RUNNER)
    assert no_grad_mutants(capsys, tmp_path / "runner.py") == [("runner.py", 7)]
    # without the sampler's module, nothing says the call runs the model
    (tmp_path / "functions" / "denoising.py").unlink()
    assert no_grad_mutants(capsys, tmp_path / "runner.py") == []


def test_modules_are_found_as_python_imports_them(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/models/__init__.py": "",
        "pkg/models/nets.py": "class Net: pass\n",
        "pkg/train/loop.py": "from ..models import nets\n",
        "src/lib/layers.py": "X = 1\n",
        "model.py": "Y = 2\n",
    }
    read = mapping_reader(files)
    loop = Neighbours("pkg/train/loop.py", read)
    assert loop.module("models.nets", level=2).path == "pkg/models/nets.py"
    assert loop.module("pkg.models.nets").path == "pkg/models/nets.py"  # from the root
    assert loop.module("pkg.models").path == "pkg/models/__init__.py"
    assert loop.module("lib.layers").path == "src/lib/layers.py"  # a src layout
    assert loop.module("model").path == "model.py"
    assert loop.module("torch.nn") is None  # an installed package
    assert Neighbours("train.py", read).module("x", level=3) is None  # above the root


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_nothing_outside_the_project_root_is_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "link.py").symlink_to(outside)
    (root / "broken.py").write_text("def (\n")
    (root / "latin.py").write_bytes(b"x = '\xe9'\n")
    read = folder_reader(root)
    assert read("../outside.py") is None and read("link.py") is None
    neighbours = Neighbours("train.py", read)
    assert neighbours.module("broken") is None  # does not parse: unknown
    assert neighbours.module("latin") is None  # not UTF-8: unknown
    assert neighbours.module("missing") is None


INFERENCE = (
    "import torch\n"
    "\n"
    "\n"
    "def predict(args, model, loader):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        return [model(x) for x in loader]\n"
)
TEST_PHASE = (
    "import torch\n"
    "from inference import predict\n"
    "\n"
    "\n"
    "def main(args, model, loader):\n"
    "    model.load_state_dict(torch.load(args.checkpoint))\n"
    "    model.cuda().eval()\n"
    "    outputs = predict(args, model, loader)\n"
    "    return outputs\n"
)


def test_a_switch_to_eval_mode_that_the_next_callee_makes_again_gets_no_mutant(tmp_path, capsys):
    """DeepLearningExamples' TFT switches its model, then hands it to another module's predict(),
    whose first line switches it again: dropping the first switch changes nothing."""
    (tmp_path / "inference.py").write_text(INFERENCE)
    (tmp_path / "train.py").write_text(TEST_PHASE)
    found = lr_mutants(capsys, tmp_path / "train.py", "missing-eval-mode")
    assert found == []
    # a predict() that runs the model before it switches: the caller's switch counts
    (tmp_path / "inference.py").write_text(
        INFERENCE.replace("    model.eval()\n", "    model(None)\n    model.eval()\n")
    )
    assert [line for _, line, _ in lr_mutants(capsys, tmp_path / "train.py", "missing-eval-mode")] == [7]


CLIPPING = (
    "import torch\n"
    "\n"
    "\n"
    "def check_update(model, grad_clip, ignore_stopnet=False):\n"
    "    params = [p for n, p in model.named_parameters() if not ignore_stopnet or 'stopnet' not in n]\n"
    "    grad_norm = torch.nn.utils.clip_grad_norm_(params, grad_clip)\n"
    "    return grad_norm, bool(torch.isinf(grad_norm))\n"
)
CLIPPED_STEP = (
    "from utils.training import check_update\n"
    "for batch in loader:\n"
    "    loss = criterion(model(batch), batch)\n"
    "    loss.backward()\n"
    "    grad_norm, _ = check_update(model, c.grad_clip, ignore_stopnet=True)\n"
    "    grad_norm_st, _ = check_update(model.decoder.stopnet, 1.0)\n"
    "    optimizer.step()\n"
)


def test_a_limit_handed_to_a_project_clipping_helper_is_raised_to_infinity_where_it_is_handed(tmp_path, capsys):
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "training.py").write_text(CLIPPING)
    (tmp_path / "train.py").write_text(CLIPPED_STEP)
    found = lr_mutants(capsys, tmp_path / "train.py", "missing-grad-clipping")
    assert [(file, line) for file, line, _ in found] == [("train.py", 5), ("train.py", 6)]
    assert '+    grad_norm, _ = check_update(model, float("inf"), ignore_stopnet=True)' in found[0][2]
    assert '+    grad_norm_st, _ = check_update(model.decoder.stopnet, float("inf"))' in found[1][2]


WRAPPER = (
    "import torch\n"
    "\n"
    "\n"
    "class Optimizer:\n"
    "    def __init__(self, optim, max_grad_norm=0):\n"
    "        self.optimizer = optim\n"
    "        self.max_grad_norm = max_grad_norm\n"
    "\n"
    "    def step(self):\n"
    "        if self.max_grad_norm > 0:\n"
    "            params = [p for group in self.optimizer.param_groups for p in group['params']]\n"
    "            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)\n"
    "        self.optimizer.step()\n"
)
WRAPPED_STEP = (
    "import torch\n"
    "from seq2seq.optim import Optimizer\n"
    "optimizer = Optimizer(torch.optim.Adam(model.parameters()), max_grad_norm=5)\n"
    "for batch in loader:\n"
    "    loss = criterion(model(batch), batch)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


def test_a_limit_a_project_class_keeps_and_clips_at_is_raised_to_infinity_where_it_is_built(tmp_path, capsys):
    # pytorch-seq2seq's Optimizer wrapper: built with max_grad_norm=5, clipping at it in step()
    (tmp_path / "seq2seq").mkdir()
    (tmp_path / "seq2seq" / "optim.py").write_text(WRAPPER)
    (tmp_path / "train.py").write_text(WRAPPED_STEP)
    found = [m for m in lr_mutants(capsys, tmp_path / "train.py", "missing-grad-clipping") if m[0] == "train.py"]
    assert [(file, line) for file, line, _ in found] == [("train.py", 3)]
    assert 'max_grad_norm=float("inf"))' in found[0][2]


def test_without_the_helper_module_the_call_is_no_clipping_site(tmp_path, capsys):
    (tmp_path / "train.py").write_text(CLIPPED_STEP)
    assert lr_mutants(capsys, tmp_path / "train.py", "missing-grad-clipping") == []


BUILDER = (
    "import copy\n"
    "\n"
    "\n"
    "def get_optimizer(model_params, total_steps, optimizer_config):\n"
    "    optimizer_config = copy.deepcopy(optimizer_config)\n"
    "    name = optimizer_config.pop('name')\n"
    "    return eval(f'get_{name}')(model_params, total_steps=total_steps, **optimizer_config)\n"
)
CONFIGURED_RUNNER = (
    "from project.optimizers import get_optimizer\n"
    "\n"
    "\n"
    "class Runner:\n"
    "    def _get_optimizer(self, params):\n"
    "        return get_optimizer(params, self.config['total_steps'], self.config['optimizer'])\n"
)


def test_a_configuration_a_project_optimizer_builder_splats_gets_its_rate_raised_where_it_is_handed(tmp_path, capsys):
    # s3prl's runner: the rate is an entry of the YAML's optimizer section, which the project's
    # builder splats into the optimizer it picks by name
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "__init__.py").write_text("")
    (tmp_path / "project" / "optimizers.py").write_text(BUILDER)
    (tmp_path / "project" / "runner.py").write_text(CONFIGURED_RUNNER)
    found = lr_mutants(capsys, tmp_path)
    assert [(file, line) for file, line, _ in found] == [("project/runner.py", 6)]
    assert "{k: v * 100 if k == \"lr\" else v for k, v in (self.config['optimizer']).items()}" in found[0][2]


def test_without_the_builder_module_the_configuration_is_no_rate_site(tmp_path, capsys):
    (tmp_path / "runner.py").write_text(CONFIGURED_RUNNER.replace("project.optimizers", "optimizers"))
    assert lr_mutants(capsys, tmp_path / "runner.py") == []


EVALUATE = (
    "from pytorch_utils import forward\n"
    "\n"
    "\n"
    "class Evaluator:\n"
    "    def __init__(self, model):\n"
    "        self.model = model\n"
    "\n"
    "    def evaluate(self, loader):\n"
    "        return forward(self.model, loader)\n"
)
PYTORCH_UTILS = (
    "import torch\n"
    "\n"
    "\n"
    "def forward(model, loader):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        return [model(x) for x in loader]\n"
)
TAGGING = (
    "from evaluate import Evaluator\n"
    "model = Cnn14(classes_num=527)\n"
    "evaluator = Evaluator(model=model)\n"
    "for iteration, batch in enumerate(train_loader):\n"
    "    if iteration % 2000 == 0:\n"
    "        evaluator.evaluate(eval_loader)\n"
    "    model.train()\n"
    "    loss = loss_func(model(batch['waveform']), batch['target'])\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    optimizer.zero_grad()\n"
)


def test_a_model_handed_to_a_project_evaluator_that_switches_it_to_eval_needs_its_train_switch(tmp_path, capsys):
    """audioset_tagging_cnn builds its model in the script and switches it only to train mode;
    its Evaluator, handed the model, runs pytorch_utils.forward, which calls `model.eval()`: the
    script's `model.train()` is what brings it back, and dropping it is a fault."""
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    (tmp_path / "pytorch_utils.py").write_text(PYTORCH_UTILS)
    (tmp_path / "main.py").write_text(TAGGING)
    assert [line for _, line, _ in lr_mutants(capsys, tmp_path / "main.py", "missing-train-mode")] == [7]
    # an evaluator that never switches the mode: the model never leaves train mode, no mutant
    (tmp_path / "pytorch_utils.py").write_text(PYTORCH_UTILS.replace("    model.eval()\n", ""))
    assert lr_mutants(capsys, tmp_path / "main.py", "missing-train-mode") == []


SMOOTHING = (
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def smoothed_loss(pred, gold, eps=0.2):\n"
    "    one_hot = F.one_hot(gold, pred.size(1)).float() * (1 - eps) + eps / pred.size(1)\n"
    "    return -(F.log_softmax(pred, dim=1) * one_hot).sum(dim=1).mean()\n"
    "\n"
    "\n"
    "def cal_loss(pred, gold):\n"
    "    return F.cross_entropy(pred, gold)\n"
)
CLS = (
    "from util import smoothed_loss\n"
    "\n"
    "\n"
    "def train(model, opt, loader, test_loader):\n"
    "    criterion = smoothed_loss\n"
    "    for data, label in loader:\n"
    "        opt.zero_grad()\n"
    "        logits = model(data)\n"
    "        loss = criterion(logits, label)\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "    for data, label in test_loader:\n"
    "        logits = model(data)\n"
    "        loss = criterion(logits, label)\n"
    "        print(loss.item())\n"
)


def test_a_project_loss_that_normalises_its_input_itself_gets_probabilities_where_training_calls_it(tmp_path, capsys):
    (tmp_path / "util.py").write_text(SMOOTHING)
    (tmp_path / "main_cls.py").write_text(CLS)
    found = lr_mutants(capsys, tmp_path, "double-softmax")
    # the training loss only: the test pass's loss is printed, never backpropagated; and the
    # project's own cross-entropy call is its site where it is written, once for every caller
    assert [(file, line) for file, line, _ in found] == [("main_cls.py", 9), ("util.py", 10)]
    assert "+        loss = criterion(logits.softmax(dim=1), label)" in found[0][2]
    (tmp_path / "main_cls.py").write_text(CLS.replace("smoothed_loss", "cal_loss"))
    assert [(file, line) for file, line, _ in lr_mutants(capsys, tmp_path, "double-softmax")] == [("util.py", 10)]


def test_without_the_loss_module_a_criterion_bound_to_an_imported_function_is_no_site(tmp_path, capsys):
    (tmp_path / "main_cls.py").write_text(CLS)
    assert lr_mutants(capsys, tmp_path / "main_cls.py", "double-softmax") == []


FLOW = (
    "from evaluate import validate_chairs\n"
    "model = GMFlow(feature_channels=128)\n"
    "if args.distributed:\n"
    "    model = torch.nn.parallel.DistributedDataParallel(model)\n"
    "    model_without_ddp = model.module\n"
    "else:\n"
    "    model_without_ddp = model\n"
    "for step, batch in enumerate(train_loader):\n"
    "    loss = flow_loss(model(batch['img1'], batch['img2']), batch['flow'])\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    if step % 1000 == 0:\n"
    "        validate_chairs(model_without_ddp)\n"
    "        model.train()\n"
)
CHAIRS = "def validate_chairs(model):\n    model.eval()\n    return sum(model(x) for x in chairs)\n"


def test_a_model_evaluated_through_the_module_a_wrapper_holds_needs_its_train_switch(tmp_path, capsys):
    """gmflow hands `model_without_ddp` (the DDP wrapper's module, or the model itself) to its
    evaluate.py, which switches it to eval: the loop's `model.train()` brings back the same module."""
    (tmp_path / "evaluate.py").write_text(CHAIRS)
    (tmp_path / "main.py").write_text(FLOW)
    assert [line for _, line, _ in lr_mutants(capsys, tmp_path / "main.py", "missing-train-mode")] == [14]
    (tmp_path / "evaluate.py").write_text(CHAIRS.replace("    model.eval()\n", ""))
    assert lr_mutants(capsys, tmp_path / "main.py", "missing-train-mode") == []


SHARED_RUNNER = (
    "import torch\n"
    "\n"
    "\n"
    "def complex_backpropagate(loss, optimizer, model, gradient_accumulation_steps, max_grad_norm):\n"
    "    if gradient_accumulation_steps > 1:\n"
    "        loss = loss / gradient_accumulation_steps\n"
    "    loss.backward()\n"
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)\n"
    "    return loss\n"
)
JIANT_RUNNER = (
    "from shared_runner import complex_backpropagate\n"
    "\n"
    "\n"
    "class JiantRunner:\n"
    "    def run_train_step(self, loader):\n"
    "        self.jiant_model.train()\n"
    "        for batch in loader:\n"
    "            model_output = wrap_jiant_forward(jiant_model=self.jiant_model, batch=batch, compute_loss=True)\n"
    "            loss = self.complex_backpropagate(loss=model_output.loss, gradient_accumulation_steps=1)\n"
    "            self.loss_val += loss.item()\n"
    "        self.optimizer_scheduler.step()\n"
    "        self.optimizer_scheduler.optimizer.zero_grad()\n"
    "\n"
    "    def complex_backpropagate(self, loss, gradient_accumulation_steps):\n"
    "        return complex_backpropagate(\n"
    "            loss=loss,\n"
    "            optimizer=self.optimizer_scheduler.optimizer,\n"
    "            model=self.jiant_model,\n"
    "            gradient_accumulation_steps=gradient_accumulation_steps,\n"
    "            max_grad_norm=1.0,\n"
    "        )\n"
)


def test_a_backward_run_by_another_module_through_a_method_of_the_class_is_the_training_step(tmp_path, capsys):
    """jiant's runner: its method hands the loss on to the shared `complex_backpropagate`, which
    runs the backward. The forward under it is the training forward, the output's loss entry is
    the loss, and the wrapper that holds the optimizer steps it."""
    (tmp_path / "shared_runner.py").write_text(SHARED_RUNNER)
    (tmp_path / "runner.py").write_text(JIANT_RUNNER)
    found = {
        op: lr_mutants(capsys, tmp_path / "runner.py", op)
        for op in ("detached-graph", "no-grad-training", "missing-optimizer-step", "missing-backward")
    }
    assert [
        d
        for _, _, d in found["detached-graph"]
        if "+            loss = self.complex_backpropagate(loss=model_output.loss.detach()" in d
    ]
    assert [line for _, line, _ in found["no-grad-training"]] == [8]
    assert "-        self.optimizer_scheduler.step()" in found["missing-optimizer-step"][0][2]
    # the backward dropped keeps the loss the next line reads
    assert "+            loss = model_output.loss\n" in found["missing-backward"][0][2]


def test_without_the_shared_module_the_method_runs_no_known_backward(tmp_path, capsys):
    (tmp_path / "runner.py").write_text(JIANT_RUNNER)
    assert lr_mutants(capsys, tmp_path / "runner.py", "detached-graph") == []


CLIPPING_UTILS = (
    "import torch\n"
    "\n"
    "\n"
    "def gradient_clipping(flow, gradnorm_queue):\n"
    "    max_grad_norm = 1.5 * gradnorm_queue.mean() + 2 * gradnorm_queue.std()\n"
    "    grad_norm = torch.nn.utils.clip_grad_norm_(flow.parameters(), max_norm=max_grad_norm, norm_type=2.0)\n"
    "    gradnorm_queue.add(float(grad_norm))\n"
    "    return grad_norm\n"
)
CLIPPING_STEP = (
    "import utils\n"
    "\n"
    "\n"
    "def train_epoch(model, loader, optim, gradnorm_queue, clip_grad):\n"
    "    for x in loader:\n"
    "        optim.zero_grad()\n"
    "        loss = model(x)\n"
    "        loss.backward()\n"
    "        if clip_grad:\n"
    "            grad_norm = utils.gradient_clipping(model, gradnorm_queue)\n"
    "        else:\n"
    "            grad_norm = 0.0\n"
    "        optim.step()\n"
    "        print(grad_norm)\n"
)


def test_a_project_helper_that_clips_the_model_it_is_handed_at_its_own_limit_is_removed_where_called(tmp_path, capsys):
    """e3_diffusion's `utils.gradient_clipping(model, gradnorm_queue)` computes its limit from a
    queue of recent norms: nothing to raise to infinity, so the call becomes the norm it returns."""
    (tmp_path / "utils.py").write_text(CLIPPING_UTILS)
    (tmp_path / "train.py").write_text(CLIPPING_STEP)
    found = lr_mutants(capsys, tmp_path / "train.py", "missing-grad-clipping")
    assert [(file, line) for file, line, _ in found] == [("train.py", 10)]
    assert "for p in model.parameters() if p.grad is not None" in found[0][2]
    (tmp_path / "utils.py").unlink()
    assert lr_mutants(capsys, tmp_path / "train.py", "missing-grad-clipping") == []


DDP_BASE_TRAINER = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel\n"
    "\n"
    "\n"
    "class BaseTrainer:\n"
    "    def __init__(self, rank, model, optimizer):\n"
    "        self.rank = rank\n"
    "        self.model = DistributedDataParallel(model.to(rank), device_ids=[rank])\n"
    "        self.optimizer = optimizer\n"
    "\n"
    "    def train(self, epochs):\n"
    "        for epoch in range(epochs):\n"
    "            self.model.train()\n"
    "            self._train_epoch(epoch)\n"
)
DDP_SUBCLASS_STEP = (
    "from base_trainer import BaseTrainer\n"
    "\n"
    "\n"
    "class Trainer(BaseTrainer):\n"
    "    def __init__(self, rank, model, optimizer, loss_function, loader):\n"
    "        super().__init__(rank, model, optimizer)\n"
    "        self.loss_function = loss_function\n"
    "        self.loader = loader\n"
    "\n"
    "    def _train_epoch(self, epoch):\n"
    "        for noisy, clean in self.loader:\n"
    "            self.optimizer.zero_grad()\n"
    "            enhanced = self.model(noisy.to(self.rank))\n"
    "            loss = self.loss_function(clean.to(self.rank), enhanced)\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)


def test_a_step_of_a_subclass_whose_base_class_wraps_the_model_in_ddp_can_skip_on_one_rank(tmp_path, capsys):
    """FullSubNet's `Trainer(BaseTrainer)` runs its step on every rank of the base class's DDP
    model, though the file itself names nothing distributed: a rank-skip there is a site."""
    (tmp_path / "base_trainer.py").write_text(DDP_BASE_TRAINER)
    (tmp_path / "trainer.py").write_text(DDP_SUBCLASS_STEP)
    found = lr_mutants(capsys, tmp_path / "trainer.py", "rank-skip")
    assert [line for _, line, _ in found] == [11]
    (tmp_path / "base_trainer.py").unlink()
    assert lr_mutants(capsys, tmp_path / "trainer.py", "rank-skip") == []


OPTIM_UTILS = (
    "from torch.optim import SGD, Adam\n"
    "from torch.optim.optimizer import Optimizer\n"
    "\n"
    "\n"
    "def make_optimizer(params, name, lr, weight_decay=None):\n"
    "    if name == 'sgd':\n"
    "        return SGD(params, lr, momentum=0.9, weight_decay=weight_decay or 0.0)\n"
    "    return Adam(params, lr, weight_decay=weight_decay or 0.0)\n"
    "\n"
    "\n"
    "class TwoMomentumTrainer(Optimizer):\n"
    "    def __init__(self, params, lr=0.1, momentum=0.0, momentum_kd=0.0):\n"
    "        super().__init__(params, dict(lr=lr, momentum=momentum, momentum_kd=momentum_kd))\n"
)
OPTIM_SCRIPT = (
    "import utils\n"
    "\n"
    "\n"
    "def main(config, model):\n"
    "    optimizer = utils.make_optimizer(model.parameters(), config['optimizer'], **config['optimizer_args'])\n"
    "    other = utils.TwoMomentumTrainer(model.get_learnable_parameters(), lr=config['lr'])\n"
    "    return optimizer, other\n"
)


def test_a_rate_reaching_a_project_optimizer_through_splatted_arguments_or_its_own_class_is_raised(tmp_path, capsys):
    """Meta-Baseline hands its rate to `utils.make_optimizer` inside `**config['optimizer_args']`;
    mdistiller builds its own `Optimizer` subclass with `lr=`: both rates reach the optimizer."""
    (tmp_path / "utils.py").write_text(OPTIM_UTILS)
    (tmp_path / "train.py").write_text(OPTIM_SCRIPT)
    found = [m for m in lr_mutants(capsys, tmp_path / "train.py") if m[0] == "train.py"]
    assert [line for _, line, _ in found] == [5, 6]
    assert "**{k: v * 100 if k == \"lr\" else v for k, v in (config['optimizer_args']).items()}" in found[0][2]
    assert "lr=config['lr'] * 100" in found[1][2]
    (tmp_path / "utils.py").unlink()
    assert lr_mutants(capsys, tmp_path / "train.py") == []


WARMUP_SCHEDULER = (
    "import torch.optim as optim\n"
    "\n"
    "\n"
    "class WarmupScheduler(optim.lr_scheduler._LRScheduler):\n"
    "    def __init__(self, optimizer, warmup_epochs, initial_lr, max_lr, last_epoch=-1):\n"
    "        self.warmup_epochs = warmup_epochs\n"
    "        for group in optimizer.param_groups:\n"
    "            group['initial_lr'] = initial_lr\n"
    "            group['max_lr'] = max_lr\n"
    "        super().__init__(optimizer, last_epoch)\n"
    "\n"
    "    def get_lr(self):\n"
    "        pct = min(self.last_epoch / self.warmup_epochs, 1.0)\n"
    "        return [(g['max_lr'] - g['initial_lr']) * pct + g['initial_lr'] for g in self.optimizer.param_groups]\n"
)
WARMUP_SCRIPT = (
    "import torch.optim as optim\n"
    "from scheduler import WarmupScheduler\n"
    "\n"
    "\n"
    "def train_model(cfg, model):\n"
    "    optimizer = optim.Adam(model.parameters(), lr=cfg.initial_lr)\n"
    "    scheduler = WarmupScheduler(\n"
    "        optimizer,\n"
    "        warmup_epochs=cfg.warmup_epochs,\n"
    "        initial_lr=cfg.initial_lr,\n"
    "        max_lr=cfg.max_lr,\n"
    "    )\n"
    "    return optimizer, scheduler\n"
)


def test_rates_a_project_scheduler_writes_into_the_groups_are_raised_not_the_optimizers_it_overwrites(tmp_path, capsys):
    """VQ-CPC's WarmupScheduler writes `group['initial_lr']` and `group['max_lr']` and computes every
    rate from them: those are the rates the run trains at; the optimizer's own is overwritten."""
    (tmp_path / "scheduler.py").write_text(WARMUP_SCHEDULER)
    (tmp_path / "train.py").write_text(WARMUP_SCRIPT)
    found = lr_mutants(capsys, tmp_path / "train.py")
    assert [line for _, line, _ in found] == [10]  # the scheduler's call, from its first raised rate
    assert "initial_lr=cfg.initial_lr * 100," in found[0][2]
    assert "max_lr=cfg.max_lr * 100," in found[0][2]


DETECTOR_UTILS = (
    "import torch\n"
    "\n"
    "\n"
    "def get_optimizer_by_name(model, name, lr=1e-3):\n"
    "    return torch.optim.Adam(model.parameters(), lr=lr)\n"
    "\n"
    "\n"
    "def get_criterion_by_name(name, reduction='mean'):\n"
    "    return torch.nn.MSELoss(reduction=reduction)\n"
)
DETECTOR_BASE = (
    "from utils import get_optimizer_by_name\n"
    "\n"
    "\n"
    "class BaseDetector:\n"
    "    def __init__(self, lr=1e-3, epoch_num=10, loss_func=None):\n"
    "        self.lr = lr\n"
    "        self.epoch_num = epoch_num\n"
    "        self.criterion = loss_func\n"
    "\n"
    "    def fit(self, loader):\n"
    "        self.optimizer = get_optimizer_by_name(self.model, 'adam', lr=self.lr)\n"
    "        for epoch in range(self.epoch_num):\n"
    "            losses = []\n"
    "            for batch in loader:\n"
    "                loss = self.training_forward(batch)\n"
    "                losses.append(loss)\n"
)
DETECTOR = (
    "from base import BaseDetector\n"
    "from utils import get_criterion_by_name\n"
    "\n"
    "\n"
    "def ae_loss(x, x_recon):\n"
    "    recon_loss = get_criterion_by_name('mse')(x_recon, x)\n"
    "    return recon_loss\n"
    "\n"
    "\n"
    "class AutoEncoder(BaseDetector):\n"
    "    def __init__(self, lr=1e-3, epoch_num=30):\n"
    "        super().__init__(lr=lr, epoch_num=epoch_num, loss_func=ae_loss)\n"
    "\n"
    "    def training_forward(self, batch):\n"
    "        self.optimizer.zero_grad()\n"
    "        loss = self.criterion(batch, self.model(batch))\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
    "        return loss.item()\n"
)


def test_a_detector_subclass_gets_the_faults_its_base_class_and_the_project_helpers_carry(tmp_path, capsys):
    """pyod's VAE hands its rate on to the base class that builds the optimizer with it, returns
    each step's `loss.item()` to the base class's list of losses, and computes its loss with a
    criterion a project helper builds at `reduction='mean'`: each is a site only where those
    modules are read."""
    (tmp_path / "utils.py").write_text(DETECTOR_UTILS)
    (tmp_path / "base.py").write_text(DETECTOR_BASE)
    (tmp_path / "detector.py").write_text(DETECTOR)
    rates = {line: diff for file, line, diff in lr_mutants(capsys, tmp_path / "detector.py") if file == "detector.py"}
    assert sorted(rates) == [11, 12]
    assert "def __init__(self, lr=0.1, epoch_num=30):" in rates[11]
    assert "super().__init__(lr=lr * 100, epoch_num=epoch_num, loss_func=ae_loss)" in rates[12]
    sums = lr_mutants(capsys, tmp_path / "detector.py", "wrong-loss-reduction")
    assert [line for _, line, _ in sums] == [6]
    assert "get_criterion_by_name('mse', reduction=\"sum\")(x_recon, x)" in sums[0][2]
    leaks = lr_mutants(capsys, tmp_path / "detector.py", "loss-tensor-leak")
    assert [(line, "+        return loss\n" in diff) for _, line, diff in leaks] == [(19, True)]
    (tmp_path / "base.py").unlink()
    (tmp_path / "utils.py").unlink()
    for operator in ("lr-too-high", "wrong-loss-reduction", "loss-tensor-leak"):
        assert lr_mutants(capsys, tmp_path / "detector.py", operator) == []


MODEL_UTILS = (
    "import torch\n"
    "from torch.optim import Adam, AdamW\n"
    "\n"
    "\n"
    "def get_optimizer(config, model):\n"
    "    if config.training.optimizer == 'adam':\n"
    "        return Adam(model.parameters(), lr=config.training.lr)\n"
    "    return AdamW(model.parameters(), lr=config.training.lr)\n"
    "\n"
    "\n"
    "def get_scheduler(config, optimizer):\n"
    "    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, config.training.num_epochs)\n"
)
SEPARATION_SCRIPT = (
    "from utils.model_utils import get_optimizer, get_scheduler\n"
    "\n"
    "\n"
    "def train_model(config, model):\n"
    "    optimizer = get_optimizer(config, model)\n"
    "    scheduler = get_scheduler(config, optimizer)\n"
    "    return optimizer, scheduler\n"
)


def test_a_settings_field_a_project_builder_reads_as_the_rate_is_raised_before_the_call(tmp_path, capsys):
    """A music separator's `get_optimizer(config, model)` builds Adam at `config.training.lr`:
    the field is raised just before the call; its scheduler's epoch count is no rate."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "model_utils.py").write_text(MODEL_UTILS)
    (tmp_path / "train.py").write_text(SEPARATION_SCRIPT)
    found = [m for m in lr_mutants(capsys, tmp_path / "train.py") if m[0] == "train.py"]
    assert [line for _, line, _ in found] == [5]
    assert (
        "+    config.training.lr = config.training.lr * 100\n     optimizer = get_optimizer(config, model)"
        in found[0][2]
    )
    (tmp_path / "utils" / "model_utils.py").unlink()
    assert lr_mutants(capsys, tmp_path / "train.py") == []


YACS_SOLVER = (
    "import torch\n\n\ndef build_optimizer(cfg, model):\n"
    "    return torch.optim.SGD(model.parameters(), cfg.SOLVER.BASE_LR, momentum=0.9)\n"
)
YACS_TRAINER = (
    "from yacs.config import CfgNode\n"
    "\n"
    "from .solver import build_optimizer\n"
    "\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, cfg: CfgNode, model, loader):\n"
    "        self.cfg, self.model, self.loader = cfg, model, loader\n"
    "        self.optimizer = build_optimizer(self.cfg, self.model)\n"
    "\n"
    "    def train(self):\n"
    "        for x, y in self.loader:\n"
    "            loss = self.model(x, y)\n"
    "            self.optimizer.zero_grad()\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)


def test_a_frozen_yacs_config_gets_its_rate_raised_past_its_lock(tmp_path, capsys):
    """PyTorch Connectomics loads its yacs config frozen (`cfg.freeze()`), so `cfg.SOLVER.BASE_LR =
    ...` would stop the run at start-up with an AttributeError instead of training too fast: the
    field is set as the dict item a CfgNode holds it in."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "solver.py").write_text(YACS_SOLVER)
    (tmp_path / "pkg" / "trainer.py").write_text(YACS_TRAINER)
    found = lr_mutants(capsys, tmp_path / "pkg" / "trainer.py")
    assert [(file, line) for file, line, _ in found] == [("trainer.py", 9)]
    assert '+        dict.__setitem__(self.cfg.SOLVER, "BASE_LR", self.cfg.SOLVER.BASE_LR * 100)' in found[0][2]


STAR_UTILS = (
    "import torch\n\n\ndef get_optimizer(cfg, model):\n    return torch.optim.Adam(model.parameters(), lr=cfg.lr)\n"
)
STAR_TRAIN = (
    "from .utils import *\n"
    "\n"
    "\n"
    "def main(config, model, loader):\n"
    "    optimizer = get_optimizer(config.optimizer, model)\n"
    "    for x, y in loader:\n"
    "        loss = model(x, y)\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


def test_a_builder_taken_with_a_star_import_is_read_where_the_project_defines_it(tmp_path, capsys):
    # diffab's `from diffab.utils.train import *`: the rate is the config's, read inside the builder
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils.py").write_text(STAR_UTILS)
    (tmp_path / "pkg" / "train.py").write_text(STAR_TRAIN)
    found = lr_mutants(capsys, tmp_path / "pkg" / "train.py")
    assert [(file, line) for file, line, _ in found] == [("train.py", 5)]
    assert "+    config.optimizer.lr = config.optimizer.lr * 100" in found[0][2]
    (tmp_path / "pkg" / "utils.py").unlink()
    assert lr_mutants(capsys, tmp_path / "pkg" / "train.py") == []


BASE_TRAINER = (
    "import torch\n"
    "class BaseTrainer:\n"
    "    def set_train_mode(self):\n"
    "        self.training = True\n"
    "        self.model.train()\n"
    "        torch.set_grad_enabled(True)\n"
    "\n"
    "    def set_eval_mode(self):\n"
    "        self.training = False\n"
    "        self.model.eval()\n"
    "        torch.set_grad_enabled(False)"
)
EPOCH_TRAINER = (
    "from engine.base_trainer import BaseTrainer\n"
    "\n"
    "class EpochBasedTrainer(BaseTrainer):\n"
    "    def run(self):\n"
    "        self.set_train_mode()\n"
    "        for epoch in range(self.max_epoch):\n"
    "            self.train_epoch()\n"
    "            self.inference_epoch()\n"
    "\n"
    "    def train_epoch(self):\n"
    "        for data_dict in self.train_loader:\n"
    '            loss = self.model(data_dict)["loss"]\n'
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
    "            self.optimizer.zero_grad()\n"
    "\n"
    "    def inference_epoch(self):\n"
    "        self.set_eval_mode()\n"
    "        for data_dict in self.val_loader:\n"
    "            self.model(data_dict)\n"
    "        self.set_train_mode()\n"
)


def test_a_base_class_mode_helper_of_another_module_is_a_mode_switch(tmp_path, capsys):
    """GeoTransformer's trainer switches modes through its base class's `set_eval_mode()` and
    `set_train_mode()`, defined in another module: the validation's switch to eval and its switch
    back are mutants; `run()`'s first `set_train_mode()`, before any eval, is not."""
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "base_trainer.py").write_text(BASE_TRAINER)
    (tmp_path / "engine" / "epoch_trainer.py").write_text(EPOCH_TRAINER)
    found = lr_mutants(capsys, tmp_path, "missing-eval-mode")
    assert [(file, line) for file, line, _ in found if file.endswith("epoch_trainer.py")] == [
        ("engine/epoch_trainer.py", 18)
    ]
    found = lr_mutants(capsys, tmp_path, "missing-train-mode")
    assert [(file, line) for file, line, _ in found if file.endswith("epoch_trainer.py")] == [
        ("engine/epoch_trainer.py", 21)
    ]
    (tmp_path / "engine" / "base_trainer.py").unlink()
    assert lr_mutants(capsys, tmp_path, "missing-eval-mode") == []


DATA_UTILS = (
    "import torch\n"
    "\n"
    "\n"
    "def batchify(data, bsz, use_cuda):\n"
    "    nbatch = data.size(0) // bsz\n"
    "    data = data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()\n"
    "    if use_cuda:\n"
    "        data = data.cuda()\n"
    "    return data\n"
    "\n"
    "\n"
    "def init_distributed(rank, use_gpu):\n"
    "    if use_gpu:\n"
    "        torch.cuda.set_device(rank)\n"
)
FLAGGED_TRAINER = (
    "import utils\n"
    "\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, args, corpus):\n"
    "        self.cuda = args.cuda\n"
    "        utils.init_distributed(args.rank, self.cuda)\n"
    "        self.train_data = utils.batchify(corpus.train, args.batch_size, self.cuda)\n"
    "        self.test_data = utils.batchify(corpus.test, 1, self.cuda)\n"
    "\n"
    "    def train(self):\n"
    "        for i in range(0, self.train_data.size(0) - 1, 35):\n"
    "            loss = self.model(self.train_data[i : i + 35]).mean()\n"
    "            loss.backward()\n"
)


def test_a_project_helper_that_moves_its_data_when_a_cuda_flag_says_so_is_handed_false(tmp_path, capsys):
    (tmp_path / "utils.py").write_text(DATA_UTILS)
    (tmp_path / "trainer.py").write_text(FLAGGED_TRAINER)
    found = lr_mutants(capsys, tmp_path / "trainer.py", "device-mismatch")
    # the training data only: the test data is read nowhere, and the distributed set-up moves no data
    assert [(file, line) for file, line, _ in found] == [("trainer.py", 8)]
    assert "+        self.train_data = utils.batchify(corpus.train, args.batch_size, False)" in found[0][2]


def test_without_the_helper_module_the_flag_is_no_move(tmp_path, capsys):
    (tmp_path / "trainer.py").write_text(FLAGGED_TRAINER)
    assert lr_mutants(capsys, tmp_path / "trainer.py", "device-mismatch") == []


PARALLEL_BUILDER = (
    "import torch.nn as nn\n"
    "\n"
    "\n"
    "def build_model(cfg, device, rank=None):\n"
    "    model = UNet(cfg).to(device)\n"
    "    return make_parallel(model, cfg, device, rank)\n"
    "\n"
    "\n"
    "def make_parallel(model, cfg, device, rank=None):\n"
    "    if cfg.distributed:\n"
    "        return nn.parallel.DistributedDataParallel(model, device_ids=[rank])\n"
    "    return nn.DataParallel(model)\n"
)
RANKED_TRAINER = (
    "from model import *\n"
    "\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, cfg, device, rank=None):\n"
    "        self.model = build_model(cfg, device, rank)\n"
    "\n"
    "    def train(self):\n"
    "        for i in range(self.total_iters):\n"
    "            sample = next(self.loader)\n"
    "            loss = self.criterion(self.model(sample.input), sample.target)\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)


def test_a_model_a_project_builder_wraps_in_ddp_makes_the_step_one_rank_can_skip(tmp_path, capsys):
    # the builder is re-exported by the package's `__init__` the trainer star-imports
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("from .build import build_model\n")
    (tmp_path / "model" / "build.py").write_text(PARALLEL_BUILDER)
    (tmp_path / "trainer.py").write_text(RANKED_TRAINER)
    found = lr_mutants(capsys, tmp_path / "trainer.py", "rank-skip")
    assert [(file, line) for file, line, _ in found] == [("trainer.py", 12)]
    assert "distributed.get_rank() == 1 and i == 1:" in found[0][2]


def test_without_the_builder_module_the_single_process_step_gets_no_rank_skip(tmp_path, capsys):
    (tmp_path / "trainer.py").write_text(RANKED_TRAINER)
    assert lr_mutants(capsys, tmp_path / "trainer.py", "rank-skip") == []


TRAINER_BASE = (
    "class Trainer:\n"
    "    def after_step(self):\n"
    "        self.scaler.unscale_(self.optimizer)\n"
    "        self.scaler.step(self.optimizer)\n"
    "        self.scaler.update()\n"
    "\n"
    "    def log(self, metrics):\n"
    "        print(metrics)\n"
)
SUBCLASS_TRAINER = (
    "from apps.trainer import Trainer\n"
    "\n"
    "\n"
    "class ClsTrainer(Trainer):\n"
    "    def _train_one_epoch(self, epoch):\n"
    "        for images, labels in self.loader:\n"
    "            self.optimizer.zero_grad()\n"
    "            loss = self.criterion(self.model(images), labels)\n"
    "            self.scaler.scale(loss).backward()\n"
    "            self.after_step()\n"
    "            self.log({'loss': loss.item()})\n"
)


def test_a_step_a_base_class_of_another_module_takes_is_removed_where_the_subclass_calls_it(tmp_path, capsys):
    # the base class reaches the trainer through its package's `from .base import *`
    (tmp_path / "apps" / "trainer").mkdir(parents=True)
    (tmp_path / "apps" / "__init__.py").write_text("")
    (tmp_path / "apps" / "trainer" / "__init__.py").write_text("from .base import *\n")
    (tmp_path / "apps" / "trainer" / "base.py").write_text(TRAINER_BASE)
    (tmp_path / "cls_trainer.py").write_text(SUBCLASS_TRAINER)
    found = lr_mutants(capsys, tmp_path / "cls_trainer.py", "missing-optimizer-step")
    assert [(file, line) for file, line, _ in found] == [("cls_trainer.py", 10)]
    assert "-            self.after_step()" in found[0][2]


def test_without_the_base_module_the_inherited_call_is_no_step(tmp_path, capsys):
    (tmp_path / "cls_trainer.py").write_text(SUBCLASS_TRAINER)
    assert lr_mutants(capsys, tmp_path / "cls_trainer.py", "missing-optimizer-step") == []


BACKWARD_BASE = (
    "class BaseTrainer:\n"
    "    def _backward(self, loss):\n"
    "        self.optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        if self.scaler:\n"
    "            self.scaler.unscale_(self.optimizer)\n"
    "            self.scaler.step(self.optimizer)\n"
    "            self.scaler.update()\n"
    "        else:\n"
    "            self.optimizer.step()\n"
)
OCP_TRAINER = (
    "from trainers.base import BaseTrainer\n"
    "\n"
    "\n"
    "class OCPTrainer(BaseTrainer):\n"
    "    def train(self):\n"
    "        for batch in self.loader:\n"
    "            out = self.model(batch)\n"
    "            loss = self.criterion(out, batch.y)\n"
    "            loss = self.scaler.scale(loss) if self.scaler else loss\n"
    "            self._backward(loss)\n"
)


def test_a_backward_a_base_class_of_another_module_runs_is_the_step_of_the_subclass(tmp_path, capsys):
    """FAIR-Chem's OCPTrainer hands its loss to `self._backward(loss)`, which BaseTrainer (another
    module) defines: the call is the backward (deleted whole), the loss it is handed is what the
    other operators cut, and the GradScaler's scale the line before is a scaler's."""
    (tmp_path / "trainers").mkdir()
    (tmp_path / "trainers" / "__init__.py").write_text("")
    (tmp_path / "trainers" / "base.py").write_text(BACKWARD_BASE)
    (tmp_path / "ocp_trainer.py").write_text(OCP_TRAINER)
    path = tmp_path / "ocp_trainer.py"
    backward = lr_mutants(capsys, path, "missing-backward")
    assert [(file, line) for file, line, _ in backward] == [("ocp_trainer.py", 10)]
    assert "-            self._backward(loss)" in backward[0][2]
    scaler = lr_mutants(capsys, path, "missing-grad-scaler")
    assert "+            loss = loss if self.scaler else loss" in scaler[0][2]
    assert [line for _, line, _ in lr_mutants(capsys, path, "detached-graph")] == [8]


def test_a_backward_inherited_through_a_base_class_of_the_file_is_the_step_of_its_subclass(tmp_path, capsys):
    """ElegantRL's AgentA2C(AgentPPO): AgentPPO, in the same file, inherits optimizer_backward from
    AgentBase (another module); AgentA2C's own update hands its loss to it."""
    (tmp_path / "trainers").mkdir()
    (tmp_path / "trainers" / "__init__.py").write_text("")
    (tmp_path / "trainers" / "base.py").write_text(BACKWARD_BASE)
    (tmp_path / "a2c.py").write_text(
        OCP_TRAINER + "\n\nclass A2CTrainer(OCPTrainer):\n"
        "    def update(self, batch):\n"
        "        loss = self.criterion(self.model(batch), batch.y)\n"
        "        self._backward(loss)\n"
    )
    backward = lr_mutants(capsys, tmp_path / "a2c.py", "missing-backward")
    assert [(file, line) for file, line, _ in backward] == [("a2c.py", 10), ("a2c.py", 16)]


def test_without_the_base_module_the_inherited_call_is_no_backward(tmp_path, capsys):
    (tmp_path / "ocp_trainer.py").write_text(OCP_TRAINER)
    assert lr_mutants(capsys, tmp_path / "ocp_trainer.py", "missing-backward") == []


SOLVER_BASE = (
    "class StandardSolver:\n"
    "    def common_train_valid(self, dataset_split):\n"
    "        self.model.train(self.is_training)\n"
    "        for batch in self.dataloaders[dataset_split]:\n"
    "            self.run_step(batch)\n"
)
MUSICGEN_SOLVER = (
    "from solvers.base import StandardSolver\n"
    "\n"
    "\n"
    "class MusicGenSolver(StandardSolver):\n"
    "    def run_step(self, batch):\n"
    "        loss = self.model(batch).mean()\n"
    "        if self.is_training:\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
    "            self.optimizer.zero_grad()\n"
    "        return loss\n"
    "\n"
    "    def generate(self):\n"
    "        self.model.eval()\n"
    "        with torch.no_grad():\n"
    "            return self.model.generate(self.prompt)\n"
    "\n"
    "    def evaluate(self):\n"
    "        self.model.eval()\n"
    "        with torch.no_grad():\n"
    "            return self.model(self.eval_batch)\n"
)


def test_an_eval_switch_of_a_module_a_base_class_of_another_module_trains_is_a_switch(tmp_path, capsys):
    """AudioCraft's MusicGenSolver switches `self.model` to eval twice and never to training
    mode itself: its base solver (another module) does, at each epoch's start. Each eval switch
    is then one that matters, not a repeat on a module kept in eval mode."""
    (tmp_path / "solvers").mkdir()
    (tmp_path / "solvers" / "__init__.py").write_text("")
    (tmp_path / "solvers" / "base.py").write_text(SOLVER_BASE)
    (tmp_path / "musicgen.py").write_text(MUSICGEN_SOLVER)
    found = lr_mutants(capsys, tmp_path / "musicgen.py", "missing-eval-mode")
    assert [(file, line) for file, line, _ in found] == [("musicgen.py", 14), ("musicgen.py", 19)]
    (tmp_path / "solvers" / "base.py").unlink()
    assert lr_mutants(capsys, tmp_path / "musicgen.py", "missing-eval-mode") == []


LOADERS = (
    "import random\n"
    "\n"
    "\n"
    "class Dataloader:\n"
    "    def __init__(self, args, dataset_path, batch_size, rank, world_size, shuffle=False):\n"
    "        self.buffer = list(range(batch_size))\n"
    "        self.shuffle = shuffle\n"
    "\n"
    "    def __iter__(self):\n"
    "        if self.shuffle:\n"
    "            random.shuffle(self.buffer)\n"
    "        yield from self.buffer\n"
    "\n"
    "\n"
    "class MlmDataloader(Dataloader):\n"
    "    pass\n"
    "\n"
    "\n"
    "class BertDataloader(Dataloader):\n"
    "    def __init__(self, args, dataset_path, batch_size, rank, world_size, shuffle=False):\n"
    "        super().__init__(args, dataset_path, batch_size, rank, world_size, shuffle)\n"
)
REGISTRY = 'from uer.utils.dataloader import *\n\nstr2dataloader = {"mlm": MlmDataloader, "bert": BertDataloader}\n'
WORKER = (
    "from uer.utils import *\n"
    "\n"
    "\n"
    "def worker(args, model, optimizer):\n"
    "    train_loader = str2dataloader[args.data_processor](args, args.dataset_path, args.batch_size, 0, 1, True)\n"
    "    for batch in train_loader:\n"
    "        loss = model(batch)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


def test_a_loader_class_chosen_from_a_registry_of_another_module_shuffles_by_position(tmp_path, capsys):
    """UER-py's worker picks its loader class from `str2dataloader` (a package `__init__` that
    star-imports the loader module) and hands `True` as the sixth argument: every class in the
    registry binds it to `shuffle`, the one through its own `__init__`, the other through its
    base class's. Without the modules the argument means nothing to the operators."""
    (tmp_path / "uer" / "utils").mkdir(parents=True)
    (tmp_path / "uer" / "__init__.py").write_text("")
    (tmp_path / "uer" / "utils" / "__init__.py").write_text(REGISTRY)
    (tmp_path / "uer" / "utils" / "dataloader.py").write_text(LOADERS)
    (tmp_path / "trainer.py").write_text(WORKER)
    found = lr_mutants(capsys, tmp_path / "trainer.py", "no-shuffle")
    assert [(file, line) for file, line, _ in found] == [("trainer.py", 5)]
    assert "args.batch_size, 0, 1, False)" in found[0][2]
    # a registry holding a class whose fifth parameter is not the shuffle: no mutant
    (tmp_path / "uer" / "utils" / "__init__.py").write_text(REGISTRY.replace('"bert": BertDataloader', '"bert": dict'))
    assert lr_mutants(capsys, tmp_path / "trainer.py", "no-shuffle") == []
    (tmp_path / "uer" / "utils" / "dataloader.py").unlink()
    assert lr_mutants(capsys, tmp_path / "trainer.py", "no-shuffle") == []


AGENT_BASE = (
    "import torch\n"
    "\n"
    "\n"
    "class AgentBase:\n"
    "    def __init__(self, args):\n"
    "        self.gamma = args.gamma\n"
    "        self.learning_rate = args.learning_rate\n"
    "        self.act_optimizer = None\n"
    "        self.cri_optimizer = None\n"
    "\n"
    "    def optimizer_backward(self, optimizer, objective):\n"
    "        optimizer.zero_grad()\n"
    "        objective.backward()\n"
    "        optimizer.step()\n"
)
TL_SCRIPT = (
    "import torch\n"
    "from torch.optim.lr_scheduler import LambdaLR\n"
    "\n"
    "\n"
    "def main(args, classifier):\n"
    "    optimizer = torch.optim.SGD(classifier.get_parameters(), args.lr, momentum=0.9)\n"
    "    lr_scheduler = LambdaLR(optimizer, lambda x: args.lr * (1.0 + args.lr_gamma * float(x)) ** (-args.lr_decay))\n"
    "    warmup = LambdaLR(optimizer, lambda x: min(1.0, x / args.warmup))\n"
    "    return lr_scheduler, warmup\n"
)


def test_a_rate_kept_for_subclasses_and_a_rate_inside_a_schedule_factor_are_raised(tmp_path, capsys):
    """ElegantRL's AgentBase keeps the rate its subclasses (other modules) build their Adams
    with, beside the optimizers it leaves empty; Transfer-Learning-Library's LambdaLR multiplies
    each group's own rate by a factor that starts at args.lr. A factor without a rate is only a
    schedule's shape."""
    (tmp_path / "agent.py").write_text(AGENT_BASE)
    (tmp_path / "dann.py").write_text(TL_SCRIPT)
    found = lr_mutants(capsys, tmp_path)
    assert [(file, line) for file, line, _ in found] == [("agent.py", 7), ("dann.py", 6), ("dann.py", 7)]
    assert "+        self.learning_rate = args.learning_rate * 100" in found[0][2]
    assert "lambda x: args.lr * 100 * (1.0" in found[2][2]
    # a class that builds its optimizers itself gets the mutant where it builds them
    built = AGENT_BASE.replace(
        "self.act_optimizer = None", "self.act_optimizer = torch.optim.Adam(self.act.parameters(), self.learning_rate)"
    )
    (tmp_path / "agent.py").write_text(built)
    assert [line for file, line, _ in lr_mutants(capsys, tmp_path / "agent.py")] == [8]
