"""The report's own versioned JSON (`trainwreck.report/1`): written, and read back."""

from __future__ import annotations

import json
from pathlib import Path

from injector.outcomes import STATUSES, Report
from trainwreck.errors import UsageError


def to_json(report: Report) -> str:
    """The report's versioned JSON (`trainwreck.report/1`), indented for people and diffs."""
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"


def from_file(path: str | Path) -> Report:
    """Read a report written by `to_json`; a missing, unreadable or foreign file is a UsageError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a trainwreck report (not UTF-8 text)") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read the report ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{path}: not a trainwreck report (invalid JSON at line {error.lineno}: {error.msg})"
        ) from None
    try:
        report = Report.from_json(data, name=str(path))
    except UsageError as error:
        raise UsageError(" ".join(str(error).split())) from None
    except (ValueError, AttributeError) as error:
        raise UsageError(" ".join(f"{path}: malformed trainwreck report ({error})".split())) from None
    for outcome in report.outcomes:
        if outcome.status not in STATUSES:
            raise UsageError(
                f"{path}: malformed trainwreck report (mutant {outcome.mutant_id} has "
                f"unknown status {outcome.status!r})"
            )
    return report
