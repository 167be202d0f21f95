"""The PR comment's mermaid charts: numbers GitHub's mermaid can read, non-finite points marked."""

from __future__ import annotations

import math
import re
from pathlib import Path

from triage import render
from triage.explain import explain
from triage.series import Point, Series

WORLD = Path(__file__).resolve().parent / "world" / "excerpts"
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def arrays(block: str) -> list[list[str]]:
    return [m.group(1).split(", ") for m in re.finditer(r"^\s+(?:bar|line) \[(.*)\]$", block, re.M)]


def assert_mermaid_numbers(block: str) -> None:
    for values in arrays(block):
        for v in values:
            assert NUMBER.match(v), f"{v!r} is not a plain decimal"


def test_huge_values_are_scaled_and_the_axis_says_so():
    # a summed loss of a large batch (as in issue 9: 5.337e+08 broke the comment)
    s = Series("loss", [Point(i, 5.337e8 * (1 - i / 40), i + 1) for i in range(20)])
    block = render.chart(s, None)
    assert "e+" not in block and "e-" not in block.replace("x-axis", "").replace("y-axis", "")
    assert_mermaid_numbers(block)
    assert 'y-axis "loss (x 10^8)"' in block


def test_tiny_values_are_scaled_too():
    s = Series("lr", [Point(i, 3e-6 * (1 + math.cos(i / 10)), i + 1) for i in range(30)])
    block = render.chart(s, None)
    assert_mermaid_numbers(block)
    assert "(x 10^-6)" in block


def test_non_finite_points_are_marked_not_drawn_at_a_clip_value():
    # a real HF-style log whose loss is NaN between finite values
    report = explain(WORLD / "gemma-pytorch-24.log")
    block = render.chart(report.series["loss"], report.failure_step)
    assert_mermaid_numbers(block)
    assert "(NaN)" in block and "non-finite point" in block
    bars = arrays(block)[:-1]
    marked = bars[-1]
    labels = re.search(r"x-axis \[(.*)\]", block).group(1).split(", ")
    assert [v != "0" for v in marked] == ["NaN" in label for label in labels]


def test_comment_of_a_diverging_run_renders_valid_charts():
    report = explain(WORLD / "sequence-tagging-47.log")
    md = render.markdown(report)
    for block in re.findall(r"```mermaid\n(.*?)```", md, re.S):
        assert_mermaid_numbers(block)
