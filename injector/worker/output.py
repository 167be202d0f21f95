"""Reading a guard's output: the failing test and its first failure line, or a crash."""

from __future__ import annotations

import os
import signal

MESSAGE_LIMIT = 500
LOG_HEAD = 64 << 10  # a kept guard log: its first bytes (the start of the run) ...
LOG_TAIL = 192 << 10  # ... and its last (where it failed); what lies between is left out


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


def bounded_log(output: str) -> str:
    """A guard's output cut to its first `LOG_HEAD` and last `LOG_TAIL` characters, with one line
    saying how much was left out between them (the end holds the failure, the start the setup)."""
    if len(output) <= LOG_HEAD + LOG_TAIL:
        return output
    head = output[:LOG_HEAD].rsplit("\n", 1)[0]
    tail = output[-LOG_TAIL:].split("\n", 1)[-1]
    left_out = len(output) - len(head) - len(tail)
    return f"{head}\n[trainwreck: {left_out} characters of guard output left out here]\n{tail}"


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


def collection_problem(errors: list[str], collected: int) -> str | None:
    """Why a campaign cannot use the guard's collection (None: it can)."""
    if errors:
        return "the guard's tests do not import: " + errors[0]
    return None if collected else "the guard collected no tests"
