"""Diff awareness: which catalogued fault sites a patch removes or changes.

For every hunk of a unified diff (Python files only), the old side and the new side are each
handed to the injector's own site matchers (`injector.sites.fault_sites`), so a fault is defined
once, by the operator that injects it. A fault id with fewer sites on the new side was removed
(a `zero_grad()` call deleted, a GradScaler dropped); one whose site sits on a removed line but
keeps its count was changed (a softmax `dim` edited). Each raises the cause with the hunk cited.
"""

from __future__ import annotations

import os
from collections import Counter

from trainwreck.diffs import DiffError, Hunk, parse
from trainwreck.errors import BadInputError
from triage.records import Evidence, Symptom

CHANGED_STRENGTH = 0.6


def read(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such diff") from None
    except IsADirectoryError:
        raise BadInputError(f"{path}: is a directory, not a diff") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read diff ({exc.strerror or exc})") from None
    if b"\x00" in data[:8192]:
        raise BadInputError(f"{path}: binary data, not a unified diff")
    return data.decode("utf-8", "replace")


def symptoms(path: str | os.PathLike[str]) -> list[Symptom]:
    """`diff:<id>` symptoms for every fault site the diff at `path` removes or changes."""
    text = read(path)
    try:
        hunks = parse(text)
    except DiffError as exc:
        raise BadInputError(f"{path}: {exc}") from None
    if not hunks and text.strip():
        raise BadInputError(f"{path}: not a unified diff (no @@ hunks)")
    return hunk_symptoms(hunks)


def hunk_symptoms(hunks: list[Hunk]) -> list[Symptom]:
    from injector.sites import fault_sites  # the operators' own matchers: one definition per fault

    out: list[Symptom] = []
    for h in hunks:
        if not h.path.endswith(".py") or not h.removed:
            continue
        before: Counter[str] = fault_sites("\n".join(h.old))
        after: Counter[str] = fault_sites("\n".join(h.new))
        on_removed: Counter[str] = fault_sites("\n".join(h.removed))
        for fault_id in sorted(set(before) | set(on_removed)):
            lost = before[fault_id] - after[fault_id]
            if lost > 0:
                verb, strength = f"removes {lost} {fault_id} site{'s' if lost > 1 else ''}", 1.0
            elif on_removed[fault_id]:
                verb, strength = f"changes a {fault_id} site", CHANGED_STRENGTH
            else:
                continue
            out.append(Symptom(f"diff:{fault_id}", f"the diff {verb} in {h.path}", (_evidence(h),), strength=strength))
    return out


def _evidence(h: Hunk) -> Evidence:
    shown = [f"-{line}" for line in h.removed[:6]] + [f"+{line}" for line in h.added[:6]]
    return Evidence(h.new_start, f"{h.path} {h.header}\n" + "\n".join(shown), source="diff")
