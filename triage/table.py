"""The symptom -> cause table (YAML) and the explainable ranking it drives.

The table is data (`causes.yaml` beside this module, extended by a user's file); this module
only loads, merges and applies it. A cause's score is the sum of its supporting symptoms'
weights times their strengths, minus its contradicting ones; its confidence is
`1 - exp(-score / 2)`, and every cause carries the contributions that produced it.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from injector import catalog
from trainwreck.errors import TableError
from triage.records import Cause, Contribution, Evidence, Symptom

USER_TABLE = "trainwreck-causes.yaml"
BUILTIN_TABLE = Path(__file__).with_name("causes.yaml")


@dataclass(frozen=True)
class Rule:
    """One cause's row: what supports it, what contradicts it, how it reads."""

    id: str
    supports: dict[str, float] = field(default_factory=dict)
    contradicts: dict[str, float] = field(default_factory=dict)
    title: str = ""
    explanation: str = ""
    fix: str = ""
    diff_weight: float | None = None


@dataclass(frozen=True)
class Table:
    rules: dict[str, Rule]
    threshold: float
    diff_weight: float


def _load_yaml(text: str, origin: str) -> dict:
    try:
        data = YAML(typ="safe").load(text)
    except YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid YAML"
        raise TableError(f"{origin}: not valid YAML ({first})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TableError(f"{origin}: expected a mapping at the top level")
    return data


def _weights(value: object, origin: str, cause: str, key: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TableError(f"{origin}: {cause}.{key} must map symptom names to weights")
    out = {}
    for name, w in value.items():
        if not isinstance(w, (int, float)) or isinstance(w, bool):
            raise TableError(f"{origin}: {cause}.{key}.{name} must be a number")
        _check_symptom(str(name), origin, f"{cause}.{key}")
        out[str(name)] = float(w)
    return out


def _check_symptom(name: str, origin: str, where: str) -> None:
    """A row may only name a symptom some detector emits: a misspelt one would never match."""
    from triage.detectors import symptom_names

    if name.startswith("diff:") and name[len("diff:") :] in catalog.FAULTS:
        return
    known = symptom_names()
    if name not in known:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else " (see the detectors' EMITS)"
        raise TableError(f"{origin}: {where}.{name}: no detector emits this symptom{hint}")


def _merge(base: dict[str, Rule], data: dict, origin: str) -> dict[str, Rule]:
    causes = data.get("causes") or {}
    if not isinstance(causes, dict):
        raise TableError(f"{origin}: `causes` must be a mapping of cause ids")
    out = dict(base)
    for raw_id, entry in causes.items():
        entry = entry or {}
        if not isinstance(entry, dict):
            raise TableError(f"{origin}: cause {raw_id} must be a mapping")
        try:
            cid = catalog.get(str(raw_id)).id
        except KeyError:
            cid = str(raw_id)
            if not (entry.get("title") and entry.get("fix")) and cid not in out:
                raise TableError(f"{origin}: {cid} is not a catalog id; give it a title and a fix") from None
        old = out.get(cid) if not entry.get("replace") else None
        supports = dict(old.supports) if old else {}
        contradicts = dict(old.contradicts) if old else {}
        for name, w in _weights(entry.get("supports"), origin, cid, "supports").items():
            supports[name] = w
        for name, w in _weights(entry.get("contradicts"), origin, cid, "contradicts").items():
            contradicts[name] = w
        dw = entry.get("diff_weight", old.diff_weight if old else None)
        out[cid] = Rule(
            cid,
            {k: v for k, v in supports.items() if v},
            {k: v for k, v in contradicts.items() if v},
            str(entry.get("title") or (old.title if old else "")),
            str(entry.get("explanation") or (old.explanation if old else "")),
            str(entry.get("fix") or (old.fix if old else "")),
            float(dw) if dw is not None else None,
        )
    return out


def load(user_path: str | os.PathLike[str] | None = None, *, search_cwd: bool = False) -> Table:
    """The built-in table, merged with the user's file: `user_path`, else (only with
    `search_cwd`) `trainwreck-causes.yaml` in the current directory.

    Finding a table by itself is for a person running `triage explain` in their own checkout.
    Anything that posts (`triage comment`, the workflows) passes an explicit path or none: a
    file found beside a log may have been written by the code under test.
    """
    text = BUILTIN_TABLE.read_text(encoding="utf-8")
    data = _load_yaml(text, "triage/causes.yaml")
    rules = _merge({}, data, "triage/causes.yaml")
    threshold = float(data.get("threshold", 0.4))
    diff_weight = float(data.get("diff_weight", 2.5))
    path = Path(user_path) if user_path else (Path(USER_TABLE) if search_cwd and Path(USER_TABLE).is_file() else None)
    if path is not None:
        try:
            user_text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TableError(f"{path}: no such cause table") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise TableError(f"{path}: cannot read cause table ({exc})") from None
        user = _load_yaml(user_text, str(path))
        rules = _merge(rules, user, str(path))
        threshold = float(user.get("threshold", threshold))
        diff_weight = float(user.get("diff_weight", diff_weight))
    return Table(rules, threshold, diff_weight)


def confidence(score: float) -> float:
    return 1.0 - math.exp(-max(0.0, score) / 2.0)


def rank(symptoms: list[Symptom], table: Table, *, all_causes: bool = False) -> list[Cause]:
    """Score every cause against the symptoms; return those above the threshold, best first."""
    by_name: dict[str, list[Symptom]] = {}
    for s in symptoms:
        by_name.setdefault(s.name, []).append(s)
    ranked: list[tuple[float, int, int, Cause]] = []
    for order, rule in enumerate(table.rules.values()):
        score = 0.0
        reasons: list[Contribution] = []
        evidence: list[Evidence] = []
        first_line = 1 << 62
        for name, w in rule.supports.items():
            for s in by_name.get(name, ()):
                score += w * s.strength
                if w * s.strength:
                    reasons.append(Contribution(name, w * s.strength))
                    evidence.extend(s.evidence)
                    first_line = min(first_line, s.first_line)
        diff_name = f"diff:{rule.id}"
        for s in by_name.get(diff_name, ()):
            w = rule.diff_weight if rule.diff_weight is not None else table.diff_weight
            score += w * s.strength
            reasons.append(Contribution(diff_name, w * s.strength))
            evidence.extend(s.evidence)
        if score <= 0:
            continue
        for name, w in rule.contradicts.items():
            for s in by_name.get(name, ()):
                if w * s.strength:
                    score -= w * s.strength
                    reasons.append(Contribution(name, -w * s.strength))
        conf = confidence(score)
        if conf < table.threshold and not all_causes:
            continue
        ranked.append((-conf, first_line, order, _cause(rule, conf, reasons, evidence)))
    ranked.sort(key=lambda t: t[:3])
    return [c for *_, c in ranked]


def _cause(rule: Rule, conf: float, reasons: list[Contribution], evidence: list[Evidence]) -> Cause:
    # a catalog id is always explained from the catalog: one description per fault
    try:
        fault = catalog.get(rule.id)
        title, explanation, fix = fault.title, fault.symptoms, fault.fix
    except KeyError:
        title, explanation, fix = rule.title, rule.explanation, rule.fix
    seen: set[tuple[object, str]] = set()
    unique = []
    for e in evidence:
        key = (e.line, e.text)
        if key not in seen:
            seen.add(key)
            unique.append(e)
    unique.sort(key=lambda e: e.source != "diff")  # a cited hunk is the most actionable evidence
    return Cause(rule.id, conf, title, explanation, fix, tuple(reasons), tuple(unique))
