"""The operators on real public training code (tests/injector/corpus): reviewed sites, and every
mutant loads.

Each corpus file has a reviewed list of the sites a mutant must reach and of the sites where a
mutant would be equivalent or aimed at the wrong thing. The held-out files (other repositories)
were never tuned on; their reviewed shortfalls are marked in the manifest (`known_miss`,
`known_equivalent`, `known_broken`), and the unlisted places where a measured mutant was reviewed
as a real fault (`real`), so this test holds the operators to exactly what was measured.
"""

from __future__ import annotations

import ast
import warnings

import pytest
from operator_corpus import broken_mutants, corpus_files, cut_origins, judge, load_module, same_cuts

from injector.mutants import Edit, LineIndex, Mutant

FILES = [pytest.param(f, id=f"{f.split}:{f.name}") for f in corpus_files()]


@pytest.mark.parametrize("file", FILES)
def test_mutants_reach_the_reviewed_sites_and_nothing_else_and_all_load(file):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = judge(file)
    assert [s.label for s in verdict.missed] == [s.label for s in file.expected if s.known]
    assert [s.label for s in verdict.mutated_untouched] == [s.label for s in file.untouched if s.known]
    unreviewed = [m for m in verdict.unreviewed if f"{m.operator} @ {m.line}" not in file.known_broken]
    assert [f"{m.operator} @ {m.line}: {m.description}" for m in unreviewed] == []
    assert [s.label for s in verdict.real_unreached] == []
    assert [f"{m.operator} @ {m.line}" for m, _ in verdict.broken] == list(file.known_broken), verdict.broken


@pytest.mark.parametrize("file", FILES)
def test_the_original_file_loads_with_stubs_and_builds_what_it_builds(file):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_module(file.text, file) is None


def test_a_mutant_that_breaks_construction_is_found_broken():
    [file] = [f for f in corpus_files() if f.name == "lightning_dcgan_torch.py"]
    broken = file.text.replace("nn.ReLU(True),", "nn.ReLU(True, inplace=True),", 1)
    problem = load_module(broken, file)
    assert problem is not None and problem.startswith("TypeError")


def test_a_mutant_that_calls_a_method_on_a_number_is_broken_though_it_loads():
    """Batch 23's `loss = 0` became `loss = (0).detach()`: the module loads, the first step fails."""
    [file] = [f for f in corpus_files() if f.name == "torchreid_triplet.py"]
    mutated = file.text.replace("        loss = 0\n", "        loss = (0).detach()\n", 1)
    assert mutated != file.text and load_module(mutated, file) is None
    [(_, problem)] = broken_mutants(file, [_Applied(mutated)])
    assert problem == "AttributeError: a method a literal lacks: (0).detach"


def test_a_mutant_that_detaches_a_dict_literal_is_broken_though_it_loads():
    """Batch 30's `metrics: Dict[str, float] = {}.detach()` (OLMo's train_step taken for a step
    returning its loss): the module loads, the first step fails; a dict's own method is fine."""
    [file] = [f for f in corpus_files() if f.name == "olmo_train.py"]
    line = "        metrics: Dict[str, float] = {}\n"
    mutated = file.text.replace(line, line.replace("{}", "{}.detach()"), 1)
    assert mutated != file.text and load_module(mutated, file) is None
    [(_, problem)] = broken_mutants(file, [_Applied(mutated)])
    assert problem == "AttributeError: a method a literal lacks: dict literal.detach"
    kept = file.text.replace(line, line.replace("{}", "{}.copy()"), 1)
    assert broken_mutants(file, [_Applied(kept)]) == []


def test_a_class_with_its_own_metaclass_over_stubbed_bases_loads_without_it():
    """torchtnt's AutoUnit: `metaclass=_ConfigureOptimizersCaller` (an ABCMeta) over TrainUnit and
    EvalUnit, which stand as stubs here, cannot be built; the file's entry builds it without."""
    from dataclasses import replace

    [file] = [f for f in corpus_files() if f.name == "torchtnt_auto_unit.py"]
    assert file.without_metaclass and load_module(file.text, file) is None
    problem = load_module(file.text, replace(file, without_metaclass=False))
    assert problem is not None and "metaclass conflict" in problem


class _Applied:
    """A stand-in mutant whose change gives a fixed text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def apply(self, _original: str) -> str:
        return self.text


def test_held_out_files_come_from_other_repositories_than_tuned_ones():
    import tomllib

    from operator_corpus import MANIFESTS

    repos = {
        split: {entry["repo"] for entry in tomllib.loads(path.read_text()).get("file", [])}
        for split, path in MANIFESTS.items()
    }
    # The held-out split is empty between rounds (a measured batch moves to tuned, the next one
    # is listed first in the next round).
    assert repos["tuned"] and not repos["tuned"] & repos["held-out"]


def test_a_fetched_file_counts_only_where_it_was_put_and_is_listed_where_absent(tmp_path, monkeypatch):
    """Code fetched from a public repository is not committed: a manifest entry marked `fetched`
    names a file under corpus/fetched/, read where present, listed as absent where not (CI)."""
    import operator_corpus

    manifest = tmp_path / "heldout.toml"
    manifest.write_text(
        '[[file]]\nname = "here.py"\nfetched = true\nrepo = "o/r"\npath = "a/here.py"\n'
        'commit = "0123456789abcdef0123"\nexpected = [{ op = "missing-zero-grad", at = "opt.zero_grad()" }]\n\n'
        '[[file]]\nname = "gone.py"\nfetched = true\nrepo = "o/r"\npath = "b/gone.py"\n'
        'commit = "fedcba9876543210fedc"\n'
    )
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    (fetched / "here.py").write_text("for x in loader:\n    opt.zero_grad()\n    loss(x).backward()\n    opt.step()\n")
    monkeypatch.setattr(operator_corpus, "MANIFESTS", {"held-out": manifest})
    monkeypatch.setattr(operator_corpus, "FETCHED", fetched)
    assert [f.name for f in operator_corpus.corpus_files()] == ["here.py"]
    assert operator_corpus.absent_files() == ["o/r:b/gone.py@fedcba987654 as fetched/gone.py"]
    [file] = operator_corpus.corpus_files()
    assert [s.label for s in judge(file, load=False).found] == ["missing-zero-grad @ 2: opt.zero_grad()"]


def test_a_files_neighbour_modules_are_read_where_fetched_and_listed_where_absent(tmp_path, monkeypatch):
    """A corpus file's model lives in another module of its repository (`neighbours`): with that
    module fetched, a switch of a model of linear layers gets no mutant; without it, the site is
    a shortfall (`without_neighbours`) and the module is listed as absent."""
    import operator_corpus

    manifest = tmp_path / "tuned.toml"
    manifest.write_text(
        '[[file]]\nname = "agent.py"\nrepo = "o/r"\npath = "rl/agent.py"\ncommit = "0123456789abcdef0123"\n'
        'neighbours = ["rl/nets.py"]\n'
        'untouched = [{ op = "missing-eval-mode", at = "net.eval()", why = "linear layers", without_neighbours = true }]\n'
    )
    (tmp_path / "agent.py").write_text("from nets import Net\nnet = Net()\nnet.eval()\nscore = net(data)\n")
    folder = tmp_path / "fetched" / "neighbours" / "agent" / "rl"
    monkeypatch.setattr(operator_corpus, "MANIFESTS", {"tuned": manifest})
    monkeypatch.setattr(operator_corpus, "CORPUS", tmp_path)
    monkeypatch.setattr(operator_corpus, "NEIGHBOURS", tmp_path / "fetched" / "neighbours")
    [file] = operator_corpus.corpus_files()
    assert [s.known for s in file.untouched] == [True]
    assert [s.label for s in judge(file, load=False).mutated_untouched] == ["missing-eval-mode @ 3: net.eval()"]
    assert operator_corpus.absent_files() == ["o/r:rl/nets.py@0123456789ab as fetched/neighbours/agent/rl/nets.py"]
    folder.mkdir(parents=True)
    (folder / "nets.py").write_text(
        "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(2, 2)\n    def forward(self, x):\n        return self.fc(x)\n"
    )
    [file] = operator_corpus.corpus_files()
    assert [s.known for s in file.untouched] == [False]
    assert judge(file, load=False).mutated_untouched == [] and operator_corpus.absent_files() == []


def test_a_cut_reaches_the_lines_whose_output_only_it_reads_and_stops_where_another_reads_it():
    text = (
        "def step(model, data, l, optimizer):\n"
        "    for d in data:\n"
        "        ae, ats = model(d)\n"
        "        l1 = l(ae, d)\n"
        "        l1s.append(torch.mean(l1).item())\n"
        "        loss = torch.mean(l1)\n"
        "        loss.backward()\n"
        "        z = model(d)\n"
        "        l2 = l(z, d)\n"
        "        log(z)\n"
        "        loss = torch.mean(l2)\n"
        "        loss.backward()\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)

    def whole_cut(line: int) -> Mutant:
        return _value_cut(text, lines, line, "        loss = ")

    # the read-out through .item() takes no graph: the forward and l1 are this cut's own lines, and so is
    # the backward that runs on the cut value alone
    assert same_cuts(whole_cut(6), tree, lines) == {3, 4, 7}
    # `log(z)` reads the forward's output too: cutting it there is another mutant
    assert same_cuts(whole_cut(11), tree, lines) == {9, 12}


def test_a_cut_reaches_the_later_lines_that_only_rework_its_output_or_rescale_it_and_stops_at_an_added_term():
    text = (
        "def step(model, pos, neg, args, optimizer):\n"
        "    negative_score = model(neg)\n"
        "    if args.adversarial:\n"
        "        negative_score = (F.softmax(negative_score, dim=1).detach() * F.logsigmoid(-negative_score)).sum(dim=1)\n"
        "    else:\n"
        "        negative_score = F.logsigmoid(-negative_score).mean(dim=1)\n"
        "    positive_score = model(pos)\n"
        "    positive_score = F.logsigmoid(positive_score)\n"
        "    loss = -(positive_score.mean() + negative_score.mean()) / 2\n"
        "    loss.backward()\n"
        "    policy = -log_probs * adv\n"
        "    policy -= args.c * entropies\n"
        "    policy = policy.sum()\n"
        "    policy.backward()\n"
        "    loss = criterion(model(pos), neg)\n"
        "    loss /= args.accumulation_steps\n"
        "    loss.backward()\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)

    def whole_cut(line: int, prefix: str) -> Mutant:
        return _value_cut(text, lines, line, prefix)

    # either branch reworks the forward's output alone: cutting the forward is cutting them
    assert same_cuts(whole_cut(2, "    negative_score = "), tree, lines) == {4, 6}
    # two outputs meet in the loss: the walk stops before it
    assert same_cuts(whole_cut(7, "    positive_score = "), tree, lines) == {8}
    # the entropy term added in place gives the later sum a graph the first cut leaves
    assert same_cuts(whole_cut(11, "    policy = "), tree, lines) == set()
    # a rescale in place by a setting: cut before or after it, the loss is the same (and its backward's)
    assert same_cuts(whole_cut(15, "    loss = "), tree, lines) == {16, 17}


def _value_cut(text: str, lines: LineIndex, line: int, prefix: str) -> Mutant:
    """A detached-graph mutant that cuts the value `line` assigns after `prefix`."""
    start = lines.line_start(line) + len(prefix)
    end = lines.line_start(line + 1) - 1
    return Mutant(
        "m", "detached-graph", "train.py", line, "cut", "", (Edit(start, end, text[start:end] + ".detach()"),)
    )


def test_a_cut_reaches_into_the_methods_and_functions_that_compute_what_it_cuts():
    text = (
        "class Diffusion:\n"
        "    def forward(self, x):\n"
        "        logits = self.backbone(x)\n"
        "        return logits - torch.logsumexp(logits, dim=-1, keepdim=True)\n"
        "    def _loss(self, x0, mask):\n"
        "        out = self.forward(x0)\n"
        "        nlls = -out.gather(-1, x0[..., None]) * mask\n"
        "        return Loss(loss=nlls.sum() / mask.sum(), nlls=nlls)\n"
        "    def training_step(self, batch):\n"
        "        losses = self._loss(batch['ids'], batch['mask'])\n"
        "        loss = losses.loss\n"
        "        return loss\n"
        "def episode(model, batch):\n"
        "    emb = model(batch)\n"
        "    loss = emb.pow(2).mean()\n"
        "    return loss, emb.size(0)\n"
        "def train(model, loader):\n"
        "    for batch in loader:\n"
        "        loss, n = episode(model, batch)\n"
        "        loss.backward()\n"
        "def meta(self, xs):\n"
        "    losses_q = [0 for _ in range(3)]\n"
        "    for x in xs:\n"
        "        loss_q = self.net(x).mean()\n"
        "        losses_q[-1] += loss_q\n"
        "    loss_q = losses_q[-1] / len(xs)\n"
        "    loss_q.backward()\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)

    def cut(line: int, prefix: str) -> Mutant:
        return _value_cut(text, lines, line, prefix)

    # `losses.loss` is the record's `loss=` field: its lines in _loss, and the forward two calls down
    assert {3, 4, 6, 7, 8, 10} <= same_cuts(cut(11, "        loss = "), tree, lines)
    # a function of the module returning the loss first: its forward and loss are the caller's cut
    assert {14, 15} <= same_cuts(cut(19, "        loss, n = "), tree, lines)
    # a step's loss added into its entry of a list of zeros: the meta loss's cut reaches it
    assert {24, 25, 27} <= same_cuts(cut(26, "    loss_q = "), tree, lines)


def test_a_cut_of_one_unpacked_name_or_a_no_grad_block_reaches_what_only_they_compute():
    text = (
        "def forward_propagation(self, batch, model):\n"
        "    src, tgt, seg = batch\n"
        "    loss_info = model(src, tgt, seg)\n"
        "    loss, correct, denominator = loss_info\n"
        "    self.total_loss += loss.item()\n"
        "    loss = loss / self.accumulation_steps\n"
        "    acc = correct.item() / denominator.item()\n"
        "    return loss\n"
        "def update(self, buffer):\n"
        "    states, rewards, unmasks = buffer\n"
        "    unmask = unmasks[self.ids]\n"
        "    value = self.cri(states[self.ids])\n"
        "    td_error = self.criterion(value, self.q_label) * unmask\n"
        "    if self.per:\n"
        "        obj = (td_error * self.weight).mean()\n"
        "    else:\n"
        "        obj = td_error.mean()\n"
        "    self.optimizer_backward(obj)\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)
    # `loss = loss.detach()` put after the unpacking: the rescale computes from the cut name alone
    after_unpack = lines.line_start(5)
    edit = Edit(after_unpack, after_unpack, "    loss = loss.detach()\n")
    found = same_cuts(Mutant("m", "detached-graph", "t.py", 5, "cut", "", (edit,)), tree, lines)
    assert 6 in found and 7 not in found  # the counts read out beside it are not the loss
    # the forward run without autograd: its unpacked names and what is computed from them alone
    start, end = lines.line_start(3), lines.line_start(4) - 1
    wrapped = Edit(start, end, "    with torch.no_grad():\n    " + text[start:end])
    assert same_cuts(Mutant("m", "no-grad-training", "t.py", 3, "wrap", "", (wrapped,)), tree, lines) >= {4, 6}
    # the loss cut in one branch of the PER test is the critic's output cut (rows of the handed
    # batch carry no graph; the other branch never runs with it)
    start = lines.line_start(17) + len("        obj = ")
    end = lines.line_start(18) - 1
    cut = Edit(start, end, text[start:end] + ".detach()")
    assert same_cuts(Mutant("m", "detached-graph", "t.py", 17, "cut", "", (cut,)), tree, lines) == {12, 13}


def test_a_cut_put_after_an_unpacking_is_the_cut_of_the_statements_that_read_all_it_cuts():
    text = (
        "def training_step(self, batch):\n"
        "    outputs = self(batch)\n"
        "    loss, breakdown = self.loss(outputs, batch)\n"
        "    self.log_dict(breakdown)\n"
        "    return loss\n"
        "def update(self, obs, action, target):\n"
        "    q1, q2 = self.critic(obs, action)\n"
        "    loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)\n"
        "    value = q1.mean()\n"
        "    loss /= 2\n"
        "    return loss\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)

    def inserted(line: int, cut: str) -> set[int]:
        edit = Edit(lines.line_start(line), lines.line_start(line), cut)
        return cut_origins(Mutant("m", "detached-graph", "t.py", line, "cut", "", (edit,)), text, tree, lines)

    # OpenFold's loss cut right after the tuple it comes from: the returned loss is what it cuts
    assert inserted(4, "    loss = loss.detach()\n") == {5}
    # both Q heads cut: the loss reads both, the logged mean only one
    assert inserted(8, "    q1 = q1.detach()\n    q2 = q2.detach()\n") == {8}
    # an in-place rescale after the cut is a statement of its own: the return after it is not reached
    assert inserted(10, "    loss = loss.detach()\n") == set()


def test_a_cut_in_a_step_method_is_the_cut_of_the_lightning_step_that_returns_it():
    text = (
        "class Module:\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self._train_val_step(batch, criterion=self.criterion)\n"
        "    def _train_val_step(self, batch, criterion):\n"
        "        x, y = batch\n"
        "        output = self._produce_train_output(x)\n"
        "        loss = criterion(output, y)\n"
        "        return loss\n"
        "    def _produce_train_output(self, x):\n"
        "        return self(self._process(x))\n"
    )
    lines = LineIndex(text)
    tree = ast.parse(text)
    start = lines.line_start(7) + len("        loss = criterion(")
    end = start + len("output")
    cut = Edit(start, end, "output.detach()")
    found = cut_origins(Mutant("m", "detached-graph", "t.py", 7, "cut", "", (cut,)), text, tree, lines) | same_cuts(
        Mutant("m", "detached-graph", "t.py", 7, "cut", "", (cut,)), tree, lines
    )
    # the Lightning step hands the loss on; the forward is computed in the helper's return
    assert {3, 6, 10} <= found
