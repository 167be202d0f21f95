"""The one-pass node index of `injector.source` against libcst's own position metadata."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from injector.source import Source

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


def test_a_byte_order_mark_shifts_no_span():
    """libcst drops a leading byte-order mark; the spans still index the text as read."""
    text = "\ufeffimport torch\n\n\ndef step(model, x):\n    return torch.relu(model(x))\n"
    source = Source(text, "bom.py")
    call = next(c for c in source.nodes(cst.Call) if source.code(c).startswith("torch.relu"))
    assert source.code(call) == "torch.relu(model(x))"
