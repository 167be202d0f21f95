"""Triage reads a pytest guard's failure output as it reads a plain traceback: pytest prints the
exception as `E       RuntimeError: ...`, and that line is the crash (the reader strips the
marker as it strips rank prefixes). The log is what a real pytest run of a failing training test
prints."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from triage.explain import explain

FAILING_TEST = textwrap.dedent("""\
    import torch


    def test_one_training_step():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        hidden = torch.sigmoid(model(torch.randn(8, 4)))
        hidden.mul_(2)  # in place on a tensor sigmoid saved for its backward
        hidden.sum().backward()
    """)


def test_a_pytest_failure_line_is_read_as_the_crash(tmp_path):
    (tmp_path / "test_step.py").write_text(FAILING_TEST)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_step.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert re.search(r"^E +RuntimeError: one of the variables needed for gradient", run.stdout, re.MULTILINE)
    log = tmp_path / "guard.log"
    log.write_text(run.stdout + run.stderr)

    diagnosis = explain(log)
    crashed = [s for s in diagnosis.symptoms if s.name == "crashed"]
    assert crashed and crashed[0].summary == "the run stopped with RuntimeError"
    assert diagnosis.causes[0].id == "inplace-activation"
