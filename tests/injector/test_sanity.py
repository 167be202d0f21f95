"""A mutant that breaks every run whatever it is fed injects no fault: it is never made."""

from __future__ import annotations

import pytest

from injector.generate import mutants_for_source
from injector.operators.base import Change, Operator
from injector.sanity import broken_edit


@pytest.mark.parametrize(
    ("original", "replacement"),
    [
        # EfficientAT's criterion module taken for a loss value
        ('nn.BCEWithLogitsLoss(reduction="none")', 'nn.BCEWithLogitsLoss(reduction="none").detach()'),
        ("torch.optim.Adam(model.parameters())", "torch.optim.Adam(model.parameters()).detach()"),
        ("{'loss': loss, 'acc': acc}", "{'loss': loss, 'acc': acc}.detach()"),
        ("[o for o in outputs]", "([o for o in outputs]).detach()"),
        # ZoeDepth's peak rates read as a list: repeated, not raised
        ("[g['lr'] for g in optimizer.param_groups]", "[g['lr'] for g in optimizer.param_groups] * 100"),
    ],
)
def test_edits_that_break_every_run_are_named(original, replacement):
    assert broken_edit(original, replacement) is not None


@pytest.mark.parametrize(
    ("original", "replacement"),
    [
        ("criterion(model(x), y)", "criterion(model(x), y).detach()"),
        ("torch.nn.functional.softplus(gen_logits)", "torch.nn.functional.softplus(gen_logits).detach()"),
        ("Variable(x)", "Variable(x).detach()"),
        # Lightning 0.9's TrainResult detaches the tensors it holds: a project's class may
        ("pl.TrainResult(minimize=loss)", "pl.TrainResult(minimize=loss).detach()"),
        ("args.lr", "args.lr * 100"),
        ("lrs", "[_rate * 100 for _rate in lrs]"),
        ("optimizer.zero_grad()", "pass"),
    ],
)
def test_edits_that_inject_a_fault_are_kept(original, replacement):
    assert broken_edit(original, replacement) is None


class _DetachesTheCriterion(Operator):
    id = "detached-graph"
    summary = "detaches whatever `criterion =` is bound to"
    examples = ()

    def changes(self, source, training):
        import libcst as cst

        for assign in source.nodes(cst.Assign):
            yield Change(assign, (source.replace(assign.value, f"{source.code(assign.value)}.detach()"),), "cut")


def test_a_mutant_with_a_broken_edit_is_not_made():
    text = "criterion = nn.CrossEntropyLoss()\nloss = criterion(model(x), y)\nloss.backward()\n"
    mutants = mutants_for_source(text, "train.py", [_DetachesTheCriterion()])
    assert [m.line for m in mutants] == [2]
