"""`triage calibrate`: explain every log of a labelled corpus that `injector run --calibrate` wrote.

The corpus is a folder with `manifest.json` (one entry per mutant the guards did not let
through: its injected fault, its status, and its log's path in the folder) and the logs. Each log
is explained as `triage explain` would (the built-in cause table, no cwd lookup), and the answer
per log is what the injector needs to score triage: the causes named, best first, with their
confidences, the symptoms found, and the metric series read.
"""

from __future__ import annotations

from pathlib import Path

from injector import calibrate
from trainwreck.errors import TrainwreckError
from triage.explain import explain


def answer_corpus(folder: Path) -> list[dict[str, object]]:
    """Triage's answer for every log the manifest in `folder` lists, in manifest order."""
    entries = calibrate.read_manifest(folder)["entries"]
    answers: list[dict[str, object]] = []
    root = folder.resolve()
    for data in entries:
        try:
            entry = calibrate.Entry.from_json(data)
        except (KeyError, TypeError, ValueError):
            continue  # not an entry this version writes
        if entry.log is None:
            continue
        path = (folder / entry.log).resolve()
        if not path.is_relative_to(root):  # the manifest names only the corpus's own logs
            answers.append({"mutant_id": entry.mutant_id, "error": f"{entry.log}: outside the corpus folder"})
            continue
        try:
            diagnosis = explain(path)
        except TrainwreckError as error:
            answers.append({"mutant_id": entry.mutant_id, "error": str(error)})
            continue
        answers.append(
            {
                "mutant_id": entry.mutant_id,
                "log": entry.log,
                "cause": entry.fault,
                "status": diagnosis.status,
                "named": [cause.id for cause in diagnosis.causes],
                "tied": [cause.id for cause in diagnosis.tied],
                "confidences": {cause.id: cause.confidence for cause in diagnosis.causes},
                "symptoms": sorted({symptom.name for symptom in diagnosis.symptoms}),
                "series": {name: series.summary() for name, series in diagnosis.series.items()},
            }
        )
    return answers
