"""Every operator's own examples: the mutants it makes, and what it must leave alone."""

from __future__ import annotations

import pytest

from injector import catalog
from injector.generate import mutants_for_source
from injector.operators import all_operators

EXAMPLES = [
    pytest.param(op, example, id=f"{op.id}-{index}")
    for op in all_operators()
    for index, example in enumerate(op.examples)
]
UNTOUCHED = [
    pytest.param(op, snippet, id=f"{op.id}-{index}")
    for op in all_operators()
    for index, snippet in enumerate(op.untouched)
]


@pytest.mark.parametrize(("operator", "example"), EXAMPLES)
def test_operator_makes_exactly_the_documented_mutants(operator, example):
    mutants = mutants_for_source(example.before, "example.py", [operator])
    produced = tuple(m.apply(example.before) for m in mutants)
    assert produced == example.after
    for mutant, text in zip(mutants, produced, strict=False):
        compile(text, "mutant.py", "exec")
        assert mutant.operator == operator.id


@pytest.mark.parametrize(("operator", "snippet"), UNTOUCHED)
def test_operator_leaves_unrelated_code_alone(operator, snippet):
    compile(snippet, "snippet.py", "exec")
    assert mutants_for_source(snippet, "snippet.py", [operator]) == []


def test_every_injectable_fault_has_exactly_one_operator():
    assert [op.id for op in all_operators()] == list(catalog.INJECTABLE)


def test_every_operator_documents_itself():
    for op in all_operators():
        assert op.summary and op.examples and op.untouched, op.id


def test_an_operator_not_in_the_catalog_is_refused_at_discovery():
    from injector.operators import Operator, _check

    class Misspelt(Operator):
        id = "missing-zero-grads"
        examples = ()

    with pytest.raises(TypeError, match="'missing-zero-grads' is not an injectable fault"):
        _check(Misspelt, "injector.operators.misspelt")
