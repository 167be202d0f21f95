"""One mutant of a campaign's report, for a person debugging it: find it by id, and write it into
(or take it back out of) the project's own files.

This is the one place trainwreck writes a user's source file, and only on `injector apply`: it
refuses unless the file is exactly what the campaign mutated, so an edit made since is never lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from injector.outcomes import Outcome, Report
from injector.report.diffs import apply_diff
from injector.report.json import from_file
from trainwreck.errors import UsageError

DEFAULT_REPORT = Path("trainwreck-report") / "report.json"  # where `injector run` writes it


def load(path: Path | None) -> tuple[Path, Report]:
    """The report at `path` (a report.json or the folder holding one; default: the last run's)."""
    path = path or DEFAULT_REPORT
    if path.is_dir():
        path = path / "report.json"
    if not path.exists() and path == DEFAULT_REPORT:
        raise UsageError(f"no report at {path}: run `injector run` first, or name one with --report")
    return path, from_file(path)


def find(report: Report, wanted: str, name: str) -> Outcome:
    """The outcome whose mutant id is `wanted`, or the one it is a unique prefix of."""
    wanted = wanted.strip().lower()
    exact = [o for o in report.outcomes if o.mutant_id == wanted]
    found = exact or [o for o in report.outcomes if wanted and o.mutant_id.startswith(wanted)]
    if not found:
        raise UsageError(f"no mutant {wanted!r} in {name} ({len(report.outcomes)} mutants)")
    if len(found) > 1:
        shown = ", ".join(o.mutant_id for o in found[:5])
        raise UsageError(
            f"{wanted!r} is the start of {len(found)} mutant ids in {name} ({shown}"
            f"{', ...' if len(found) > 5 else ''}): give more of it"
        )
    return found[0]


@dataclass(frozen=True)
class Written:
    """A file `apply` changed: where, and the text it had and has now."""

    path: Path
    before: str
    after: str


def apply(report: Report, outcome: Outcome, root: Path, *, revert: bool = False) -> Written:
    """Write the mutant into `root/outcome.file` (or, with `revert`, put the original back).

    Refused, with one line, unless the file is exactly as the campaign found it (as the mutant
    left it, for `revert`)."""
    path = root / outcome.file
    try:
        current = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (is {root} the project the report is about?)") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read it ({error.strerror or error})") from None
    original = report.sources.get(outcome.file)
    if original is None:
        raise UsageError(
            f"the report does not hold {outcome.file} as the campaign found it, so "
            f"it cannot tell whether the file changed since"
        )
    mutated = apply_diff(original, outcome.diff)
    if mutated is None or mutated == original:
        raise UsageError(f"mutant {outcome.mutant_id}'s diff does not apply to the report's copy of {outcome.file}")
    before, after = (mutated, original) if revert else (original, mutated)
    if current != before:
        if revert and current == original:
            raise UsageError(f"{outcome.file} is already as the campaign found it")
        if not revert and current == mutated:
            raise UsageError(f"{outcome.file} already has mutant {outcome.mutant_id} in it")
        if revert:
            raise UsageError(
                f"{outcome.file} is not as mutant {outcome.mutant_id} left it: refusing to write over your edits"
            )
        raise UsageError(
            f"{outcome.file} changed since the report (it is not the text the campaign "
            f"mutated): refusing to write over your edits"
        )
    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:  # newline="": bytes as they were
            handle.write(after)
    except OSError as error:
        raise UsageError(f"{path}: cannot write it ({error.strerror or error})") from None
    return Written(path, before, after)
