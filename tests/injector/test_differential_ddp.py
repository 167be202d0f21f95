"""Campaign verdicts against the naive truth on DDP ranks started with fork, with `mp.spawn`,
and under torchrun from a test (see differential_truth.py)."""

from __future__ import annotations

import pytest
from differential_truth import check_case


@pytest.mark.parametrize("case", ["fork_ddp", "spawn_ddp", "torchrun_test"])
def test_every_outcome_equals_applying_the_mutant_by_hand(case, tmp_path, capsys):
    """On two workers, each running its mutants one after another (see differential_truth.py)."""
    check_case(case, 2, tmp_path, capsys)
