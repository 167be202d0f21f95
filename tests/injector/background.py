"""A campaign started as a user starts one from a shell, for the tests that stop it midway."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def ctrl_c_default() -> None:
    """Give the campaign under test Ctrl-C's default action: a runner started in the background
    (`nohup`, `cmd &`) ignores SIGINT, a child inherits that, and these tests are about a
    campaign that does receive one."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_campaign(project: Path, folder: Path, *args: str) -> subprocess.Popen[str]:
    """`injector run PROJECT` in a process of its own, returned once its baseline has passed
    (the mutants are under way from then on); the JSON report goes to FOLDER/r.json."""
    process = subprocess.Popen(
        [sys.executable, "-m", "injector.cli", "run", str(project), *args, "--json", str(folder / "r.json")],
        stderr=subprocess.PIPE,
        text=True,
        cwd=folder,
        preexec_fn=ctrl_c_default,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("baseline:"):
            break
    return process
