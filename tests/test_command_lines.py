"""What both commands, `injector` and `triage`, promise every user: `--version` answers from the
installed package, and a bad command line is one `error:` line and exit 2, never a usage block."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def console(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run an installed console script (`injector`, `triage`) as a user's shell would."""
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60, cwd=cwd)


@pytest.mark.parametrize("command", ["injector", "triage"])
def test_version_prints_the_installed_version_and_exits_0(command):
    result = console(command, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{command} {metadata.version('trainwreck')}\n"
    assert result.stderr == ""


@pytest.mark.parametrize(
    "argv, message, help_of",
    [
        (["injector"], "the following arguments are required: COMMAND", "injector"),
        (["injector", "bogus"], "invalid choice: 'bogus'", "injector"),
        (["injector", "run", "--jobs", "0"], "argument --jobs: must be at least 1", "injector run"),
        (["injector", "run", "--shard", "5/4"], "shard 5/4 does not exist", "injector run"),
        (["injector", "run", "--no-such-option"], "unrecognized arguments: --no-such-option", "injector run"),
        (["injector", "mutants", "--format", "xml"], "argument --format: invalid choice: 'xml'", "injector mutants"),
        (["injector", "list", "surplus"], "unrecognized arguments: surplus", "injector list"),
        (["injector", "merge"], "the following arguments are required: REPORT", "injector merge"),
        (["injector", "init", "--shards", "x"], "argument --shards: not a whole number: 'x'", "injector init"),
        (["triage"], "the following arguments are required: COMMAND", "triage"),
        (["triage", "explain"], "the following arguments are required: LOG", "triage explain"),
        (["triage", "explain", "run.log", "--format", "html"], "argument --format: invalid choice", "triage explain"),
        (["triage", "watch", "--interval", "soon", "--", "true"], "not a number of seconds: 'soon'", "triage watch"),
        (["triage", "comment", "run.log", "--repo", "acme", "--pr", "1"], "argument --repo", "triage comment"),
        (["triage", "comment", "run.log", "--repo", "acme/trainer"], "required: --pr", "triage comment"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_bad_command_line_is_one_error_line_and_exit_2(tmp_path, argv, message, help_of):
    result = console(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{argv[0]}: error: ") and message in lines[0]
    assert lines[0].endswith(f"(see {help_of} --help)")
    assert "usage:" not in result.stderr
