"""The one-pass node index of `injector.source` against libcst's own position metadata."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from injector.source import Source, walk_children

CORPUS = Path(__file__).parent / "corpus"


@pytest.mark.parametrize("name", ["nanogpt_train.py", "examples_mnist.py", "accelerate_complete_nlp.py"])
def test_every_span_is_where_libcst_puts_the_node(name):
    text = (CORPUS / name).read_text()
    source = Source(text, name)
    wrapper = MetadataWrapper(source.module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    checked = 0
    for node, where in positions.items():
        if isinstance(node, cst.Module):
            continue
        start = starts[where.start.line - 1] + where.start.column
        end = starts[where.end.line - 1] + where.end.column
        assert source.span(node) == (start, end), (name, type(node).__name__, where)
        checked += 1
    assert checked > 1000


_WHITESPACE = (cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.Newline, cst.EmptyLine, cst.Comment)


@pytest.mark.parametrize("name", ["timm_train.py", "composer_trainer.py", "accelerate_complete_nlp.py"])
def test_walking_a_subtree_off_the_index_gives_what_libcst_gives(name):
    """Source.walk reads a subtree off the parse's index: the same nodes as walking libcst's
    `children`, in the same order apart from whitespace, and a skipped subtree left out whole."""
    source = Source((CORPUS / name).read_text(), name)
    roots = [source.module, *source.nodes(cst.FunctionDef), *source.nodes(cst.ClassDef), *source.nodes(cst.For)]

    def semantic(nodes):
        return [n for n in nodes if not isinstance(n, _WHITESPACE)]

    for root in roots:
        indexed, walked = list(source.walk(root)), list(walk_children(root))
        assert {id(n) for n in indexed} == {id(n) for n in walked} and len(indexed) == len(walked)
        assert semantic(indexed) == semantic(walked), (name, source.line(root))
    function = source.nodes(cst.FunctionDef)[0]
    skip = frozenset({function.body})
    assert semantic(source.walk(source.module, skip)) == semantic(walk_children(source.module, skip))
    assert function in set(source.walk(source.module, skip)) and function.body not in set(
        source.walk(source.module, skip)
    )
    # a node of another tree is walked all the same
    other = cst.parse_expression("f(x, y)")
    assert list(source.walk(other)) == list(walk_children(other))


def test_function_of_is_the_innermost_function_asked_in_any_order():
    source = Source("def outer():\n    def inner():\n        return x\n    return y\nz = 1\n")
    outer, inner = source.nodes(cst.FunctionDef)
    names = {n.value: n for n in source.nodes(cst.Name)}
    assert source.function_of(names["x"]) is inner  # first asked deep inside: the way up is kept
    assert source.function_of(names["y"]) is outer
    assert source.function_of(inner) is outer and source.function_of(outer) is None
    assert source.function_of(names["z"]) is None and source.function_of(names["x"]) is inner


def test_a_byte_order_mark_shifts_no_span():
    """libcst drops a leading byte-order mark; the spans still index the text as read."""
    text = "\ufeffimport torch\n\n\ndef step(model, x):\n    return torch.relu(model(x))\n"
    source = Source(text, "bom.py")
    call = next(c for c in source.nodes(cst.Call) if source.code(c).startswith("torch.relu"))
    assert source.code(call) == "torch.relu(model(x))"
