"""Self-calibration: how well triage diagnoses the failures of this project's own mutants.

Under `injector run --calibrate` every mutant the guards did not let through leaves the output
of the guard run that decided it: a failing run whose true cause is known (the injected fault).
This module writes those runs as a labelled corpus (one log per mutant and a manifest), asks
triage about every log in one batch, and tallies the answers into a confusion table per fault
id for the reports.

Triage runs as a subprocess (`python -m triage.cli calibrate DIR`): `injector` never imports
`triage` (triage may import injector, and its `calibrate` command reads this module's records).

A log *shows a training symptom* when it holds an exception other than the guard's own
assertion (a `...Error:` line, pytest's `E   ` ones included, that is not an `AssertionError`),
or a metric series of at least `SERIES_POINTS` values, or the guard's verdict shows how a
training quantity behaved (see `shows_behaviour`: `assert 5.0 < 5.0` under `>   assert
losses[-1] < losses[0]`, "parameter fc1.weight did not change", "loss 1.57 -> 1.51"), or triage
finds a symptom in it beyond "the run stopped with an exception" (that one alone is the guard's
assertion failing) and beyond the training probe's word that the run backpropagated and stepped
as it should (a fact of every healthy run). The first three do not depend on what triage makes of the log, so a log
triage reads nothing in still counts against it. A guard that only says `assert True is False`
about a project's own object, or `assert 2.21 < 0.05` about the last loss (training fell short
of a bar: every training fault does that), gives a reader nothing to diagnose; the headline
rate is over the logs that do show something.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from trainwreck.errors import UsageError

if TYPE_CHECKING:
    from injector.outcomes import Report

SCHEMA = "trainwreck.calibration/1"
FOLDER = "calibration"  # beside the JSON report, or in ./trainwreck-report/
MANIFEST = "manifest.json"
LOGS = "logs"
KEPT = ("killed", "timeout", "error")  # the statuses whose guard output is kept
CAUGHT = ("killed", "timeout")  # the ones the table counts (an error is no training failure)
SERIES_POINTS = 3  # a metric series this long shows how training went
TRIAGE_TIMEOUT = 600.0  # seconds for triage to read every log of one campaign
# the symptom every exception gives: alone, it says no more than that the guard failed
CRASHED = "crashed"
# what triage may find in a log that is no symptom of a failing run: the crash alone, and the
# training probe saying that the backward pass and every optimizer's steps ran as they should
NOT_SYMPTOMS = frozenset({CRASHED, "probe-trained"})
DEFINITION = (
    "a log shows a training symptom when it holds an exception other than an AssertionError, or "
    f"a metric series of at least {SERIES_POINTS} values, or the guard's failing line or verdict "
    "names a training quantity (the loss, gradients, parameters, probabilities, the learning rate, "
    "the training mode) with more than a last value against a fixed bar (two values compared, a "
    "NaN or inf, a printed series), or triage finds a symptom in it other than the crash itself "
    "(and other than the training probe's word that the backward pass and the steps ran)"
)
# What a guard's verdict names when it is about training (see the module docstring).
TRAINING_WORDS = re.compile(
    r"loss|\bgrads?\b|\.grad\b|gradient|\bparam|\bweights?\b|\bprob|softmax|\blr\b|learning.rate|"
    r"\.training\b|\bnan\b|\binf\b|isfinite|converge",
    re.IGNORECASE,
)
VERDICT_TAIL = 3  # a command guard's verdict: its last lines
# `>   assert x[-1] < 0.05`: one value against a number written in the test
_AGAINST_A_BAR = re.compile(r"^>\s+assert\s+[^<>=!]+?\s*(?:<|<=|>|>=)\s*[-+]?\d[\d.eE+-]*\s*(?:,.*)?$")
_NON_FINITE = re.compile(r"\b(?:nan|inf)\b")
_NUMBER_LIST = re.compile(r"\[\s*-?\d[\d.eE+-]*(?:\s*,\s*-?\d[\d.eE+-]*){2,}")

# What triage did with one caught mutant's log (exclusive, in this order).
FIRST = "first"  # named the injected fault first
TIED = "tied"  # the fault is among causes triage said the log cannot tell apart at the top
TOP3 = "top3"  # named it second or third
OTHER = "other"  # named causes, not it among the first three
NOTHING = "nothing"  # named no cause
NO_LOG = "no_log"  # the guard left no output to read (a timed-out pytest guard), or triage failed
VERDICTS = (FIRST, TIED, TOP3, OTHER, NOTHING, NO_LOG)
VERDICT_LABELS = {
    FIRST: "named first",
    TIED: "tied first",
    TOP3: "in top 3",
    OTHER: "another cause",
    NOTHING: "nothing found",
    NO_LOG: "no log",
}

# An exception a training step raised, as a traceback's last line or pytest's `E   ` line
# shows it; the guard's own assertion is a verdict, not a symptom.
_EXCEPTION = re.compile(r"^(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?(\w*(?:Error|Exception)):", re.MULTILINE)


@dataclass(frozen=True)
class Entry:
    """One non-surviving mutant in the corpus: its label, its log and triage's answer."""

    mutant_id: str
    fault: str  # the injected fault id: the label
    status: str
    file: str
    line: int
    log: str | None  # the log's path within the corpus folder; None: no output was kept
    triaged: bool = False  # triage read the log (False: no log, or triage failed)
    named: tuple[str, ...] = ()  # the causes triage reported, best first
    tied: tuple[str, ...] = ()  # the causes triage said tie first (none named the answer); () if none
    symptoms: tuple[str, ...] = ()  # the symptoms triage found
    shows_symptom: bool = False  # see the module docstring

    @property
    def verdict(self) -> str:
        if not self.triaged:
            return NO_LOG
        if self.fault in self.tied:  # a tie is said as a tie: not counted as named first
            return TIED
        if self.named[:1] == (self.fault,) and not self.tied:
            return FIRST
        if self.fault in self.named[:3]:
            return TOP3
        return OTHER if self.named else NOTHING

    def to_json(self) -> dict[str, object]:
        return {
            "mutant_id": self.mutant_id,
            "fault": self.fault,
            "status": self.status,
            "file": self.file,
            "line": self.line,
            "log": self.log,
            "triaged": self.triaged,
            "named": list(self.named),
            "tied": list(self.tied),
            "symptoms": list(self.symptoms),
            "shows_symptom": self.shows_symptom,
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, data: dict) -> Entry:
        return cls(
            mutant_id=data["mutant_id"],
            fault=data["fault"],
            status=data["status"],
            file=data["file"],
            line=int(data["line"]),
            log=data.get("log"),
            triaged=bool(data.get("triaged", False)),
            named=tuple(data.get("named", ())),
            tied=tuple(data.get("tied", ())),
            symptoms=tuple(data.get("symptoms", ())),
            shows_symptom=bool(data.get("shows_symptom", False)),
        )


@dataclass(frozen=True)
class Row:
    """One fault id's line of the confusion table (caught mutants only)."""

    fault: str
    verdicts: Counter[str]
    symptomatic: int  # caught mutants whose log shows a training symptom
    first_symptomatic: int  # of which triage named the fault first
    instead: Counter[str] = field(default_factory=Counter)  # what triage named first instead
    tied_symptomatic: int = 0  # of which triage said the fault tied first (not counted as named first)

    @property
    def caught(self) -> int:
        return sum(self.verdicts.values())

    @property
    def rate(self) -> int | None:
        """Named first, as a whole percentage of the caught mutants showing a symptom."""
        return self.first_symptomatic * 100 // self.symptomatic if self.symptomatic else None


@dataclass(frozen=True)
class Calibration:
    """Triage's answers on one campaign's failing runs, and where the corpus was written."""

    entries: tuple[Entry, ...]
    folder: str
    note: str | None = None  # why the table is empty, or why triage gave no answers
    seconds: float = 0.0  # what triage took to read every log

    def rows(self) -> list[Row]:
        """The confusion table: one row per injected fault id, caught mutants only."""
        by_fault: dict[str, list[Entry]] = {}
        for entry in self.entries:
            if entry.status in CAUGHT:
                by_fault.setdefault(entry.fault, []).append(entry)
        return [_row(fault, entries) for fault, entries in sorted(by_fault.items())]

    def total(self) -> Row:
        return _row("total", [e for e in self.entries if e.status in CAUGHT])

    def to_json(self) -> dict[str, object]:
        total = self.total()
        return {
            "folder": self.folder,
            "note": self.note,
            "seconds": round(self.seconds, 3),
            "definition": DEFINITION,
            "table": [_row_json(row) for row in self.rows()],
            "total": _row_json(total),
            "entries": [e.to_json() for e in self.entries],
        }

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        return cls(
            entries=tuple(Entry.from_json(e) for e in data.get("entries", ())),
            folder=data.get("folder", ""),
            note=data.get("note"),
            seconds=float(data.get("seconds", 0.0)),
        )


def _row(fault: str, entries: list[Entry]) -> Row:
    symptomatic = [e for e in entries if e.shows_symptom]
    return Row(
        fault,
        Counter(e.verdict for e in entries),
        len(symptomatic),
        sum(1 for e in symptomatic if e.verdict == FIRST),
        Counter(e.named[0] for e in entries if e.verdict in (TOP3, OTHER)),
        sum(1 for e in symptomatic if e.verdict == TIED),
    )


def _row_json(row: Row) -> dict[str, object]:
    return {
        "fault": row.fault,
        "caught": row.caught,
        **{verdict: row.verdicts[verdict] for verdict in VERDICTS},
        "instead": dict(row.instead.most_common()),
        "shows_symptom": row.symptomatic,
        "first_of_symptomatic": row.first_symptomatic,
        "tied_first_of_symptomatic": row.tied_symptomatic,
        "rate": row.rate,
    }


def merge(calibrations: list[Calibration]) -> Calibration | None:
    """The shards' calibrations as one (each mutant once); None when no shard calibrated."""
    if not calibrations:
        return None
    entries: dict[str, Entry] = {}
    for calibration in calibrations:
        for entry in calibration.entries:
            entries.setdefault(entry.mutant_id, entry)
    notes = sorted({c.note for c in calibrations if c.note})
    return Calibration(
        tuple(sorted(entries.values(), key=lambda e: (e.file, e.line, e.fault, e.mutant_id))),
        ", ".join(sorted({c.folder for c in calibrations})),
        "; ".join(notes) or None,
        sum(c.seconds for c in calibrations),
    )


# ---- the corpus ----


def folder_for(json_report: Path | None) -> Path:
    """Where the corpus goes: beside the `--json` report, else in ./trainwreck-report/."""
    return (json_report.parent if json_report is not None else Path("trainwreck-report")) / FOLDER


def check_writable(folder: Path) -> None:
    """Fail before the campaign, in one line, when the corpus could not be written."""
    try:
        (folder / LOGS).mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"{folder}: cannot write the calibration corpus ({error.strerror or error})") from None


def calibrate(report: Report, logs: dict[str, str], folder: Path, *, python: str = sys.executable) -> Calibration:
    """Write the corpus of `report`'s non-surviving mutants (`logs`: mutant id -> guard output)
    to `folder`, have triage read every log, record its answers in the manifest, and return the
    calibration for the reports."""
    kept = [o for o in report.outcomes if o.status in KEPT]
    entries = []
    written: set[str] = set()
    try:
        (folder / LOGS).mkdir(parents=True, exist_ok=True)
        _remove_previous(folder)
        for outcome in kept:
            text = logs.get(outcome.mutant_id)
            relative = None
            if text:
                relative = f"{LOGS}/{outcome.mutant_id}.log"
                (folder / relative).write_text(text, encoding="utf-8", errors="replace")
                written.add(outcome.mutant_id)
            entries.append(
                Entry(outcome.mutant_id, outcome.operator, outcome.status, outcome.file, outcome.line, relative)
            )
        _write_manifest(folder, report, entries)
    except OSError as error:
        raise UsageError(f"{folder}: cannot write the calibration corpus ({error.strerror or error})") from None
    if not any(e.status in CAUGHT for e in entries):
        note = "no mutant was killed or timed out, so there is no failing run to calibrate triage on"
        return Calibration(tuple(entries), str(folder), note)
    if not written:
        note = "the guards left no output on any caught mutant, so triage had nothing to read"
        return Calibration(tuple(entries), str(folder), note)
    started = time.monotonic()
    answers, problem = ask_triage(folder, python)
    seconds = time.monotonic() - started
    entries = [answered(e, answers.get(e.mutant_id), folder) for e in entries]
    try:
        _write_manifest(folder, report, entries)
    except OSError as error:
        raise UsageError(f"{folder}: cannot write the calibration corpus ({error.strerror or error})") from None
    return Calibration(tuple(entries), str(folder), problem, seconds)


def _remove_previous(folder: Path) -> None:
    """Remove the logs a previous campaign's manifest lists (only those: the folder may hold
    other files), so the corpus is this campaign's."""
    try:
        entries = read_manifest(folder)["entries"]
    except UsageError:
        return
    root = (folder / LOGS).resolve()
    for entry in entries:
        log = entry.get("log") if isinstance(entry, dict) else None
        if isinstance(log, str):
            path = (folder / log).resolve()
            if path.parent == root and path.suffix == ".log":
                path.unlink(missing_ok=True)


def _write_manifest(folder: Path, report: Report, entries: list[Entry]) -> None:
    """The manifest: one record per non-surviving mutant, its label (`cause`), where it came
    from (diff, file, line, the guard) and, once asked, triage's answer."""
    by_id = {o.mutant_id: o for o in report.outcomes}
    records = []
    for entry in entries:
        outcome = by_id[entry.mutant_id]
        records.append(
            {
                **entry.to_json(),
                "cause": entry.fault,  # the label, under the key the other triage corpora use
                "description": outcome.description,
                "diff": outcome.diff,
                "guard": report.guard,
                "test": outcome.test,
                "message": outcome.message,
            }
        )
    manifest = {
        "schema": SCHEMA,
        "project": report.project,
        "guard": report.guard,
        "device": report.device,
        "created": report.created,
        "entries": records,
    }
    path = folder / MANIFEST
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def ask_triage(folder: Path, python: str = sys.executable) -> tuple[dict[str, dict], str | None]:
    """Triage's answer for every log of the corpus in `folder`, by mutant id, from one
    `triage calibrate` run; and a one-line problem where it gave none."""
    command = [python, "-m", "triage.cli", "calibrate", str(folder), "--format", "json"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL, timeout=TRIAGE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return {}, f"triage did not answer within {TRIAGE_TIMEOUT:.0f} s"
    except OSError as error:
        return {}, f"triage could not be started ({error.strerror or error})"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {}, f"triage failed on the corpus ({lines[-1] if lines else f'exit code {done.returncode}'})"
    try:
        data = json.loads(done.stdout)
        return {answer["mutant_id"]: answer for answer in data["logs"]}, None
    except (json.JSONDecodeError, KeyError, TypeError):
        return {}, "triage's answer was not the JSON `triage calibrate` writes"


def answered(entry: Entry, answer: dict | None, folder: Path) -> Entry:
    """`entry` with triage's `answer` (one log of `triage calibrate --format json`) recorded."""
    if answer is None or answer.get("error") or entry.log is None:
        return entry
    try:
        text = (folder / entry.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    symptoms = tuple(answer.get("symptoms", ()))
    longest = max((int(s.get("points", 0)) for s in answer.get("series", {}).values()), default=0)
    return replace(
        entry,
        triaged=True,
        named=tuple(answer.get("named", ())),
        tied=tuple(answer.get("tied", ())),
        symptoms=symptoms,
        shows_symptom=bool(set(symptoms) - NOT_SYMPTOMS)
        or longest >= SERIES_POINTS
        or raises(text)
        or shows_behaviour(text),
    )


def raises(log: str) -> bool:
    """Whether a log holds an exception other than an assertion (the guard's own verdict)."""
    return any(name != "AssertionError" for name in _EXCEPTION.findall(log))


def shows_behaviour(log: str) -> bool:
    """Whether the guard's verdict in a log shows how a training quantity behaved: it names one
    (`TRAINING_WORDS`, in the line pytest marks as failing, its `E   ` lines, the `FAILED`
    summary, or a command guard's last lines) and holds more than its last value against a
    number the test wrote (`assert losses[-1] < 0.05` fails the same way for every fault): two
    values compared, a NaN or inf, a printed series, or words ("did not change")."""
    lines = [line for line in log.splitlines() if line.strip()]
    verdict = [line for line in lines if line.startswith((">", "E ", "FAILED ", "AssertionError"))]
    if not any(line.startswith("FAILED ") for line in lines):
        verdict += lines[-VERDICT_TAIL:]
    if not any(TRAINING_WORDS.search(line) for line in verdict):
        return False
    details = [line for line in verdict if not line.startswith(">")]
    if any(_NON_FINITE.search(line) or _NUMBER_LIST.search(line) for line in details):
        return True
    failing = [line for line in verdict if line.startswith(">")]
    return not failing or not all(_AGAINST_A_BAR.match(line) for line in failing)


def read_manifest(folder: Path) -> dict:
    """A corpus's manifest; a missing or foreign one is a UsageError (one line)."""
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{folder}: no calibration corpus here (no {MANIFEST}; write one with `injector run --calibrate`)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: not a calibration manifest ({error})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("entries"), list):
        raise UsageError(f"{path}: not a calibration manifest (expected schema {SCHEMA})")
    return data


# ---- the table, as text ----


def table_lines(calibration: Calibration) -> list[str]:
    """The confusion table as plain text lines (the terminal and `triage calibrate`)."""
    rows = calibration.rows()
    if not rows:
        return [f"calibration: {calibration.note or 'no caught mutant'}"]
    header = f"{'fault id':28s} {'caught':>6s} " + " ".join(f"{VERDICT_LABELS[v]:>13s}" for v in VERDICTS)
    lines = [header + f" {'symptom':>7s} {'first/symptom':>13s}  named instead"]
    for row in [*rows, calibration.total()]:
        counts = " ".join(f"{row.verdicts[v]:13d}" for v in VERDICTS)
        rate = f"{row.first_symptomatic}/{row.symptomatic} " + (f"{row.rate}%" if row.rate is not None else "-")
        instead = ", ".join(f"{cause} {n}" for cause, n in row.instead.most_common())
        lines.append(f"{row.fault:28s} {row.caught:6d} {counts} {row.symptomatic:7d} {rate:>13s}  {instead}".rstrip())
    if calibration.note:
        lines.append(f"note: {calibration.note}")
    return lines


def headline(calibration: Calibration) -> str:
    """One sentence: how often triage named the injected fault first."""
    total = calibration.total()
    if not total.caught:
        return f"Triage calibration: {calibration.note or 'no caught mutant'}."
    shown = (
        f"{total.first_symptomatic} of the {total.symptomatic} whose log shows a training symptom ({total.rate}%)"
        if total.symptomatic
        else "none of them showed a training symptom in its log"
    )
    return (
        f"Triage read the guard output of {total.caught} caught mutants and named the injected fault "
        f"first for {total.verdicts[FIRST]} ({total.verdicts[FIRST] * 100 // total.caught}%); {shown}."
    )
