"""The operators on training code written the way people write it (tests/injector/fixtures)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from injector.generate import mutants_for_source

FIXTURES = Path(__file__).parent / "fixtures"
SOURCES = {path.name: path.read_text() for path in sorted(FIXTURES.glob("*.py"))}

# Every applicable site, reviewed by hand: (file, line, operator) -> number of mutants there.
EXPECTED = Counter(
    {
        ("gan_trainer.py", 35, "lr-too-high"): 1,
        ("gan_trainer.py", 36, "lr-too-high"): 1,
        ("gan_trainer.py", 38, "wrong-loss-reduction"): 1,
        ("gan_trainer.py", 39, "no-shuffle"): 1,
        # no missing-train-mode on line 43 either: the generator is built in training mode, and
        # sample(), the one method that switches it to eval, switches it back itself
        # line 44: the discriminator holds linear layers only, its two modes compute the same
        ("gan_trainer.py", 46, "device-mismatch"): 1,
        ("gan_trainer.py", 50, "missing-zero-grad"): 1,
        ("gan_trainer.py", 51, "no-grad-training"): 1,
        ("gan_trainer.py", 52, "detached-graph"): 1,
        ("gan_trainer.py", 54, "missing-backward"): 1,
        ("gan_trainer.py", 55, "missing-optimizer-step"): 1,
        ("gan_trainer.py", 58, "missing-zero-grad"): 1,
        ("gan_trainer.py", 59, "no-grad-training"): 1,
        ("gan_trainer.py", 59, "detached-graph"): 1,
        ("gan_trainer.py", 60, "missing-backward"): 1,
        ("gan_trainer.py", 61, "missing-optimizer-step"): 1,
        ("gan_trainer.py", 62, "loss-tensor-leak"): 2,
        ("gan_trainer.py", 64, "missing-no-grad-eval"): 1,
        ("gan_trainer.py", 66, "missing-eval-mode"): 1,
        # line 68: train_epoch, the one method that runs a backward pass, switches both models
        # to training mode at its top, so the mode sample() leaves behind never reaches a step
        ("gpt_train.py", 29, "missing-attention-mask"): 1,
        ("gpt_train.py", 30, "wrong-softmax-dim"): 1,
        ("gpt_train.py", 44, "missing-epsilon"): 1,
        ("gpt_train.py", 56, "inplace-activation"): 1,
        ("gpt_train.py", 57, "inplace-activation"): 1,
        ("gpt_train.py", 75, "double-softmax"): 1,
        ("gpt_train.py", 75, "wrong-loss-reduction"): 1,
        ("gpt_train.py", 90, "device-mismatch"): 2,
        # Not the optimizer's own lr on line 104: the loop sets every group's rate before each
        # step (from the same 6e-4), so only that assignment's mutant changes a run.
        ("gpt_train.py", 113, "lr-too-high"): 1,
        ("gpt_train.py", 119, "rank-skip"): 1,
        ("gpt_train.py", 115, "no-grad-training"): 1,
        ("gpt_train.py", 117, "detached-graph"): 1,
        ("gpt_train.py", 119, "missing-grad-scaler"): 1,
        ("gpt_train.py", 119, "missing-backward"): 1,
        ("gpt_train.py", 121, "missing-grad-clipping"): 1,
        ("gpt_train.py", 122, "missing-optimizer-step"): 1,
        ("gpt_train.py", 124, "missing-zero-grad"): 1,
        ("image_classifier.py", 32, "missing-eval-mode"): 1,
        ("image_classifier.py", 34, "missing-no-grad-eval"): 1,
        ("image_classifier.py", 36, "device-mismatch"): 2,
        ("image_classifier.py", 58, "no-shuffle"): 1,
        ("image_classifier.py", 59, "no-shuffle"): 1,
        ("image_classifier.py", 65, "lr-too-high"): 1,
        ("image_classifier.py", 68, "wrong-loss-reduction"): 1,
        ("image_classifier.py", 71, "missing-train-mode"): 1,
        ("image_classifier.py", 73, "missing-set-epoch"): 1,
        ("image_classifier.py", 81, "rank-skip"): 1,
        ("image_classifier.py", 76, "device-mismatch"): 1,
        ("image_classifier.py", 77, "device-mismatch"): 1,
        ("image_classifier.py", 78, "no-grad-training"): 1,
        ("image_classifier.py", 80, "double-softmax"): 1,
        ("image_classifier.py", 80, "detached-graph"): 1,
        ("image_classifier.py", 81, "missing-grad-scaler"): 1,
        ("image_classifier.py", 81, "missing-backward"): 1,
        ("image_classifier.py", 84, "missing-grad-clipping"): 1,
        ("image_classifier.py", 85, "missing-optimizer-step"): 1,
        ("image_classifier.py", 87, "missing-zero-grad"): 1,
        ("image_classifier.py", 88, "loss-tensor-leak"): 1,
        ("image_classifier.py", 89, "scheduler-step-misaligned"): 1,
    }
)


def all_mutants():
    return [(name, m) for name, text in SOURCES.items() for m in mutants_for_source(text, name)]


def test_every_applicable_site_is_found_and_nothing_else():
    found = Counter((name, m.line, m.operator) for name, m in all_mutants())
    assert found == EXPECTED


def test_every_diff_applies_with_git_and_gives_the_mutant(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name, mutant in all_mutants():
        target = tmp_path / name
        target.write_text(SOURCES[name])
        patch = tmp_path / "mutant.diff"
        patch.write_text(mutant.diff)
        applied = subprocess.run(["git", "apply", "mutant.diff"], cwd=tmp_path, capture_output=True, text=True)
        assert applied.returncode == 0, (mutant.operator, mutant.line, applied.stderr, mutant.diff)
        assert target.read_text() == mutant.apply(SOURCES[name])


def test_every_mutant_compiles_and_differs_from_the_original():
    for name, mutant in all_mutants():
        mutated = mutant.apply(SOURCES[name])
        assert mutated != SOURCES[name]
        compile(mutated, name, "exec")


def test_a_deletion_diff_shows_exactly_the_deleted_line():
    mutant = next(
        m
        for m in mutants_for_source(SOURCES["image_classifier.py"], "image_classifier.py")
        if m.operator == "missing-zero-grad"
    )
    changed = [line for line in mutant.diff.splitlines()[2:] if line[:1] in "+-"]
    assert changed == ["-                optimizer.zero_grad(set_to_none=True)"]


def test_ids_are_unique_and_the_same_on_every_run():
    first = [m.id for _, m in all_mutants()]
    assert len(set(first)) == len(first)
    assert first == [m.id for _, m in all_mutants()]


def test_ids_survive_unrelated_edits_elsewhere_in_the_file():
    text = SOURCES["gpt_train.py"]
    before = {m.id: m.line for m in mutants_for_source(text, "gpt_train.py")}
    after = {m.id: m.line for m in mutants_for_source("# a new comment\n" + text, "gpt_train.py")}
    assert before.keys() == after.keys()
    assert all(after[key] == line + 1 for key, line in before.items())


def test_ids_depend_on_the_file_path():
    text = SOURCES["gpt_train.py"]
    one = {m.id for m in mutants_for_source(text, "a/train.py")}
    other = {m.id for m in mutants_for_source(text, "b/train.py")}
    assert not one & other


@pytest.mark.parametrize(
    "text",
    [
        "x = '''\n    multi\n    line'''\nwith torch.no_grad():\n    s = '''a\nb'''\n",
        "def f():\n\tif x:\n\t\topt.zero_grad()\n\t\tpass\n",
        "x = 1  # café\ny = F.softmax(z, dim=-1)  # ünïcode\n",
        "for x in xs: optimizer.zero_grad(); loss.backward(); optimizer.step()\n",
        "loss.backward()",
        # a loop that rebinds the name it iterates (hrtr's epoch log): read once, not followed round
        "for x, y in loader:\n    train_loss = model.step(x, y)\n    for k, train_loss in train_loss.items():\n"
        "        train_loss.backward()\n",
    ],
)
def test_unusual_layouts_give_valid_mutants(text):
    for mutant in mutants_for_source(text, "odd.py"):
        compile(mutant.apply(text), "odd.py", "exec")


def test_every_demo_mutant_applies_with_git_and_compiles(tmp_path):
    demo = Path(__file__).parents[2] / "injector" / "demo"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    count = 0
    for path in sorted((demo / "demo_train").glob("*.py")):
        relative = path.relative_to(demo).as_posix()
        text = path.read_text()
        for mutant in mutants_for_source(text, relative):
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text(text)
            (tmp_path / "mutant.diff").write_text(mutant.diff)
            applied = subprocess.run(["git", "apply", "mutant.diff"], cwd=tmp_path, capture_output=True, text=True)
            assert applied.returncode == 0, (mutant.operator, applied.stderr)
            assert (tmp_path / relative).read_text() == mutant.apply(text)
            compile(mutant.apply(text), relative, "exec")
            count += 1
    assert count >= 29  # one fewer since relu straight on a linear output counts as equivalent
