"""Reading a guard's output: the failing test and its first failure line, or a crash."""

from __future__ import annotations

import os
import signal

MESSAGE_LIMIT = 500


def first_failure(output: str) -> tuple[str | None, str]:
    """The first `FAILED test - message` line of a pytest run, else the likeliest error line."""
    for line in output.splitlines():
        if line.startswith("FAILED "):
            test, _, message = line[len("FAILED ") :].partition(" - ")
            return test.strip(), (message.strip() or "failed")[:MESSAGE_LIMIT]
    return None, failure_line(output)


def failure_line(output: str) -> str:
    """The last line that looks like an error (a traceback's last line, an assertion)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line or "assert" in line or "FAILED" in line:
            return line[:MESSAGE_LIMIT]
    return (lines[-1] if lines else "the guard failed")[:MESSAGE_LIMIT]


def last_lines(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(lines[-2:])[:MESSAGE_LIMIT]


def report_message(report) -> str:
    """The first line of a pytest report's failure (its crash message where it has one)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None and crash.message else str(report.longrepr)
    first = next((line for line in text.splitlines() if line.strip()), "failed")
    return first.strip()[:MESSAGE_LIMIT]


def describe_status(status: int | None) -> str:
    """'killed by SIGABRT', 'exit code 3'."""
    if status is None:
        return "unknown status"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"
