"""Campaign verdicts against the naive truth on a CUDA mixed-precision project (see
differential_truth.py). The project puts a tensor on the GPU when it is imported, so importing
its tests starts CUDA in the campaign's worker, and a child forked from it would fail with
"Cannot re-initialize CUDA in forked subprocess" (a whole campaign refused as "the unmutated
guard fails", before the worker learnt to start over cold: each child then collects the tests
itself). Needs a GPU; skipped elsewhere."""

from __future__ import annotations

import pytest
import torch
from differential_truth import campaign, check_case

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="the fixture trains on a CUDA GPU")


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_outcome_equals_applying_the_mutant_by_hand(jobs, tmp_path, capsys):
    report = check_case("cuda_amp", jobs, tmp_path, capsys)
    assert "starts CUDA" in report["baseline"]["cold"]


def test_gpu_only_faults_are_killed_and_the_report_names_the_gpu(tmp_path):
    _, report, markdown = campaign("cuda_amp", tmp_path)
    status = {}
    for outcome in report["outcomes"]:
        status.setdefault(outcome["operator"], set()).add(outcome["status"])
    # a batch left on the CPU is only observable with the model on a GPU
    assert status["device-mismatch"] == {"killed"}
    assert "killed" in status["missing-grad-scaler"]
    assert report["device"].startswith("cuda (")
