"""The outcome cache: what earlier campaigns found, reused where nothing a verdict depends on
has changed (`injector.fingerprint` says what that is).

It lives in `.trainwreck-cache/` in the project (or `--cache PATH`) as one JSON file, written
by the campaign process alone (never inside a scratch slot), always whole, by renaming a new
file over the old one: a run killed at any moment leaves either the previous cache or the new
one. While a campaign runs, the outcomes found so far are saved every second, so an
interrupted campaign's work is not lost. A cache that cannot be read is ignored with one
warning line (and replaced); one that cannot be written costs one warning, never the campaign.

Two kinds of record:

- entries: a mutant's cache key -> its result (reused one mutant at a time, after a baseline);
- runs: per settings digest, the last campaign's whole-tree digest, its baseline summary and
  every outcome, so that a re-run on a tree where not one byte changed needs no worker at all.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from injector import protocol
from injector.fingerprint import SCHEMA
from injector.outcomes import STATUSES

FOLDER = ".trainwreck-cache"
FILE = "outcomes.json"
ENTRIES_KEPT = 20000  # the most recently used; older ones are dropped on save
RUNS_KEPT = 8  # settings combinations remembered for the no-change shortcut
SAVE_EVERY = 1.0  # seconds between saves while a campaign runs (a save takes milliseconds)
# A guard's log (`--calibrate`) is not an outcome: the cache keeps verdicts only.
_RESULT_FIELDS = {f.name for f in fields(protocol.Result)} - {"clean_prefix", "clean_failing", "log"}


@dataclass(frozen=True)
class LastRun:
    """The last complete campaign under one settings digest."""

    tree: str
    baseline: dict
    outcomes: dict[str, protocol.Result]
    covering: dict[str, tuple[str, ...]]  # mutant id -> the guard tests that reach it


def result_to_json(result: protocol.Result) -> dict:
    data = asdict(result)
    return {name: data[name] for name in sorted(_RESULT_FIELDS)}


def result_from_json(data: object) -> protocol.Result | None:
    """The result a cache record holds, or None where it is not one."""
    if not isinstance(data, dict) or set(data) - _RESULT_FIELDS or data.get("status") not in STATUSES:
        return None
    try:
        return protocol.Result(**data)
    except TypeError:
        return None


class Cache:
    """The cache of one project (or one `--cache` folder)."""

    def __init__(self, folder: Path, warn: Callable[[str], None]) -> None:
        self.folder = folder
        self.path = folder / FILE
        self.warn = warn
        self.entries: dict[str, dict] = {}
        self.runs: dict[str, dict] = {}
        self.generation = 1
        self._changed = False
        self._unwritable = False
        self._saved = time.monotonic()

    @classmethod
    def open(cls, folder: Path, warn: Callable[[str], None]) -> Cache:
        """The cache in `folder` (empty if there is none, or if it cannot be read)."""
        cache = cls(folder, warn)
        data = cache._read(warn_about=True)
        if data is not None:
            cache.entries, cache.runs = data["entries"], data["runs"]
            cache.generation = data["generation"] + 1
        return cache

    def _read(self, warn_about: bool) -> dict | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            if warn_about:
                self.warn(f"ignoring the cache at {self.path}: cannot read it ({_reason(error)})")
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("schema") != SCHEMA:
                raise ValueError("not a trainwreck cache of this version")
            entries, runs, generation = data["entries"], data["runs"], data["generation"]
            if not (
                isinstance(entries, dict)
                and isinstance(runs, dict)
                and isinstance(generation, int)
                and all(isinstance(v, dict) for v in entries.values())
                and all(isinstance(v, dict) for v in runs.values())
            ):
                raise ValueError("malformed records")
        except (ValueError, KeyError, TypeError) as error:
            if warn_about:
                self.warn(f"ignoring the cache at {self.path}: {_reason(error)}; it will be replaced")
            return None
        return {"entries": entries, "runs": runs, "generation": generation}

    # ---- one mutant at a time ----

    def get(self, key: str) -> protocol.Result | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        result = result_from_json(entry.get("result"))
        if result is not None:
            entry["used"] = self.generation
            self._changed = True
        return result

    def put(self, key: str, result: protocol.Result) -> None:
        """Remember a fresh result (saved within a second, and at the end)."""
        self.entries[key] = {"result": result_to_json(result), "used": self.generation}
        self._changed = True
        if time.monotonic() - self._saved > SAVE_EVERY:
            self.save()

    # ---- whole runs ----

    def last_run(self, settings: str) -> LastRun | None:
        record = self.runs.get(settings)
        if not isinstance(record, dict):
            return None
        try:
            outcomes = {mutant_id: result_from_json(data) for mutant_id, data in record["outcomes"].items()}
            baseline = record["baseline"]
            if (
                None in outcomes.values()
                or not isinstance(baseline, dict)
                or not {"tests", "duration", "flaky"} <= set(baseline)
            ):
                return None
            covering = {
                mutant_id: tuple(str(name) for name in names) for mutant_id, names in record.get("covering", {}).items()
            }
            return LastRun(str(record["tree"]), baseline, outcomes, covering)  # type: ignore[arg-type]
        except (KeyError, TypeError, AttributeError):
            return None

    def record_run(
        self,
        settings: str,
        tree: str,
        baseline: dict,
        outcomes: dict[str, protocol.Result],
        covering: dict[str, tuple[str, ...]],
    ) -> None:
        """Remember a complete campaign: on the same tree, its outcomes (and the tests that reach
        each mutant) join the earlier ones (another shard, other operators); on a changed tree
        they replace them."""
        earlier = self.last_run(settings)
        same = earlier is not None and earlier.tree == tree
        known = dict(earlier.outcomes) if same and earlier is not None else {}
        known.update(outcomes)
        reach = dict(earlier.covering) if same and earlier is not None else {}
        reach.update(covering)
        self.runs[settings] = {
            "tree": tree,
            "baseline": baseline,
            "used": self.generation,
            "outcomes": {i: result_to_json(r) for i, r in sorted(known.items())},
            "covering": {i: list(names) for i, names in sorted(reach.items())},
        }
        self._changed = True

    # ---- on disk ----

    def save(self) -> None:
        """Write the cache whole, atomically; what another run saved meanwhile is kept."""
        self._saved = time.monotonic()
        if not self._changed or self._unwritable:
            return
        on_disk = self._read(warn_about=False) or {"entries": {}, "runs": {}}
        entries = {**on_disk["entries"], **self.entries}
        runs = {**on_disk["runs"], **self.runs}
        if len(entries) > ENTRIES_KEPT:
            newest = sorted(entries, key=lambda k: _used(entries[k]), reverse=True)[:ENTRIES_KEPT]
            entries = {k: entries[k] for k in newest}
        if len(runs) > RUNS_KEPT:
            runs = {k: runs[k] for k in sorted(runs, key=lambda k: _used(runs[k]), reverse=True)[:RUNS_KEPT]}
        data = {"schema": SCHEMA, "generation": self.generation, "entries": entries, "runs": runs}
        try:
            self._prepare_folder()
            fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=f".{FILE}.")
            try:
                os.fchmod(fd, 0o644)  # as a plain new file would be (mkstemp makes it private)
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(data, handle, separators=(",", ":"))
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as error:
            self._unwritable = True
            self.warn(f"cannot write the cache at {self.path} ({_reason(error)}); outcomes are not kept")
            return
        self._changed = False

    def _prepare_folder(self) -> None:
        if self.folder.is_dir():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        # Like pytest's cache: never committed, and skipped by backup tools.
        (self.folder / ".gitignore").write_text("# created by trainwreck\n*\n")
        (self.folder / "CACHEDIR.TAG").write_text(
            "Signature: 8a477f597d28d172789f06886806bc55\n"
            "# This folder is the outcome cache of trainwreck's `injector run`.\n"
        )


def _used(record: object) -> int:
    used = record.get("used", 0) if isinstance(record, dict) else 0
    return used if isinstance(used, int) else 0


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:120]
