"""The records that cross triage's modules: evidence, symptoms and ranked causes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Evidence:
    """One thing a reader can check: a log line, a diff hunk or a telemetry sample.

    `line` is the 1-based line number in its source; None where it cannot be known (lines after
    a skipped middle of a huge log).
    """

    line: int | None
    text: str
    source: str = "log"  # "log", "diff" or "telemetry"
    rank: int | None = None
    step: int | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"line": self.line, "text": self.text}
        if self.source != "log":
            out["source"] = self.source
        if self.rank is not None:
            out["rank"] = self.rank
        if self.step is not None:
            out["step"] = self.step
        return out


@dataclass(frozen=True)
class Symptom:
    """A named observation a detector made, with what it saw and where.

    `strength` (0..1] scales the symptom's weight in the cause table: a detector that is only
    partly sure says so here instead of inventing a second symptom name.
    """

    name: str
    summary: str
    evidence: tuple[Evidence, ...] = ()
    step: int | None = None
    value: float | None = None
    rank: int | None = None
    strength: float = 1.0
    detail: str | None = None

    @property
    def first_line(self) -> int:
        lines = [e.line for e in self.evidence if e.line is not None and e.source == "log"]
        return min(lines) if lines else 1 << 62

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "summary": self.summary,
            "strength": round(self.strength, 3),
            "evidence": [e.to_json() for e in self.evidence],
        }
        for key in ("step", "value", "rank"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Contribution:
    """How much one symptom moved one cause: its weight in the table times its strength."""

    symptom: str
    weight: float


@dataclass(frozen=True)
class Cause:
    """A ranked explanation: a catalog id, how sure we are, why, and what to change."""

    id: str
    confidence: float
    title: str
    explanation: str
    fix: str
    reasons: tuple[Contribution, ...] = ()
    evidence: tuple[Evidence, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "confidence": round(self.confidence, 3),
            "title": self.title,
            "explanation": self.explanation,
            "evidence": [e.to_json() for e in self.evidence],
            "fix": self.fix,
            "because": [{"symptom": c.symptom, "weight": round(c.weight, 3)} for c in self.reasons],
        }
