"""What the training probe counted while the run went (`trainwreck.probe`): which of the
backward pass and the optimizer step ran, and whether gradients were cleared between steps.

The probe writes one line per run, or per test under pytest, when a run goes under
`injector run --calibrate` or `triage watch`; a log without it says nothing here. Where a
log holds several (a test sequence), the last is the failing run's.
"""

from __future__ import annotations

from trainwreck.probe import PREFIX, Counts
from triage.detectors import Context
from triage.records import Evidence, Symptom

# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {
        "probe-steps-without-gradient",
        "probe-optimizer-never-stepped",
        "probe-gradients-kept",
        "probe-no-grad-forward",
        "probe-graph-cut",
        "probe-no-grad-in-training-mode",
        "probe-uneven-steps",
        "probe-trained",
    }
)


def detect(ctx: Context) -> list[Symptom]:
    found = _last_probe_line(ctx)
    if found is None:
        return []
    line, text, counts = found
    evidence = (Evidence(line, text[:300]),)
    out = []
    if counts.gradless:
        out.append(
            Symptom(
                "probe-steps-without-gradient",
                f"{_optimizers(counts.gradless)} stepped with no gradient on any parameter, every time: "
                f"no backward pass reached {'its' if counts.gradless == 1 else 'their'} parameters "
                f"({_times(counts.backward, 'backward pass', 'backward passes')} in all)",
                evidence,
                value=counts.gradless,
            )
        )
    if counts.unstepped:
        out.append(
            Symptom(
                "probe-optimizer-never-stepped",
                f"backward passes gave gradients to the parameters of {_optimizers(counts.unstepped)} "
                f"that never stepped ({_times(counts.backward, 'backward pass', 'backward passes')} in all)",
                evidence,
                value=counts.unstepped,
            )
        )
    if counts.kept:
        out.append(
            Symptom(
                "probe-gradients-kept",
                f"{_times(counts.kept, 'step', 'steps')} applied gradients that a backward pass added onto those "
                "of the step before: nothing cleared them in between (no zero_grad)",
                evidence,
                value=counts.kept,
            )
        )
    if counts.failed_backward and counts.no_grad_forwards:
        out.append(
            Symptom(
                "probe-no-grad-forward",
                f"{_times(counts.failed_backward, 'backward pass', 'backward passes')} raised, and "
                f"{_times(counts.no_grad_forwards, 'forward pass', 'forward passes')} of trainable layers in "
                "training mode ran with gradients off (under no_grad or inference_mode)",
                evidence,
                value=counts.no_grad_forwards,
            )
        )
    elif counts.failed_backward:
        out.append(
            Symptom(
                "probe-graph-cut",
                f"{_times(counts.failed_backward, 'backward pass', 'backward passes')} raised although every "
                "training-mode forward pass ran with gradients on: the graph was cut after the forward",
                evidence,
                value=counts.failed_backward,
            )
        )
    elif counts.no_grad_forwards:
        out.append(
            Symptom(
                "probe-no-grad-in-training-mode",
                f"{_times(counts.no_grad_forwards, 'forward pass', 'forward passes')} of trainable layers ran "
                "with gradients off while in training mode, and no backward pass failed: an evaluation that "
                "left the model in training mode",
                evidence,
                value=counts.no_grad_forwards,
            )
        )
    if counts.uneven and counts.stepping > 1:
        out.append(
            Symptom(
                "probe-uneven-steps",
                f"the {counts.stepping} processes that stepped an optimizer took different numbers of steps "
                "or backward passes",
                evidence,
            )
        )
    if not out and counts.backward and counts.steps:
        out.append(
            Symptom(
                "probe-trained",
                f"the backward pass ran ({_times(counts.backward, 'time', 'times')}) and every optimizer built "
                f"stepped on gradients ({_times(counts.steps, 'step', 'steps')}), cleared between steps",
                evidence,
                value=counts.steps,
            )
        )
    return out


def _last_probe_line(ctx: Context) -> tuple[int | None, str, Counts] | None:
    for event in reversed(ctx.events):
        if PREFIX in event.text:
            counts = Counts.parse(event.text)
            if counts is not None:
                return event.line, event.text.strip(), counts
    return None


def _optimizers(count: int) -> str:
    return "an optimizer" if count == 1 else f"{count} optimizers"


def _times(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
