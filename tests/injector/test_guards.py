"""Each guard check fails on training code with its fault and passes on the same code without it.

The faulty code is made by trainwreck's own operator: every mutant an operator makes of a small
real training setup (`guard_snippet.py`) must fail the check that targets its fault, and the
unmutated setup must pass it. CPU only, a fraction of a second each.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from injector import guards
from injector.generate import mutants_for_source
from injector.guards import GuardFailure, watch
from injector.mutants import apply_edits
from injector.operators import select

SNIPPET = (Path(__file__).parent / "guard_snippet.py").read_text()


def load(text: str) -> types.ModuleType:
    module = types.ModuleType("guard_snippet_under_test")
    exec(compile(text, "guard_snippet.py", "exec"), module.__dict__)
    return module


def train(m, epochs: int = 1, amp: bool = False, accum_steps: int = 2) -> Callable[[], None]:
    model, optimizer, scheduler, scaler = m.make_training(amp=amp)
    loader = m.make_loader()

    def run() -> None:
        for _ in range(epochs):
            m.train_epoch(model, loader, optimizer, scheduler, scaler, accum_steps=accum_steps)

    run.model = model  # type: ignore[attr-defined]
    return run


def params_change(m) -> None:
    run = train(m)
    guards.assert_params_change(run.model, run)


def eval_then_train(m) -> None:
    run = train(m)
    with watch("missing-train-mode"):
        run()
        m.evaluate(run.model, m.make_loader())
        run()


def evaluation(m) -> None:
    model = m.Net()
    guards.assert_eval_deterministic(model, lambda: m.evaluate(model, m.make_loader()))


# fault id -> what a test of the user's would run, with the check that targets the fault
SCENARIOS: dict[str, Callable[[types.ModuleType], None]] = {
    "missing-zero-grad": lambda m: guards.assert_grads_cleared(train(m)),
    "missing-optimizer-step": params_change,
    "missing-backward": params_change,
    "missing-eval-mode": evaluation,
    "missing-train-mode": eval_then_train,
    "missing-no-grad-eval": lambda m: guards.assert_no_graph_in_eval(lambda: m.evaluate(m.Net(), m.make_loader())),
    "wrong-softmax-dim": lambda m: guards.assert_probabilities(m.Net().predict_proba(torch.randn(5, 4))),
    "double-softmax": lambda m: guards.assert_loss_gets_logits(train(m)),
    "wrong-loss-reduction": lambda m: _watched("wrong-loss-reduction", train(m)),
    "missing-grad-clipping": lambda m: guards.assert_grad_norm_bounded(train(m)),
    "scheduler-step-misaligned": lambda m: guards.assert_scheduler_paced(train(m)),
    "no-shuffle": lambda m: [
        guards.assert_loader_shuffles(m.make_loader()),
        guards.assert_loader_shuffles(m.make_sharded_loader()[0]),
    ],
    "missing-set-epoch": lambda m: guards.assert_epochs_differ(m.sampler_epochs),
    "loss-tensor-leak": lambda m: guards.assert_no_graph_kept(train(m, epochs=2)),
    "missing-grad-scaler": lambda m: guards.assert_scaler_used(train(m, amp=True)),
    "detached-graph": params_change,
    "no-grad-training": params_change,
}
# The training itself raises on these faults (backward on a loss without a graph): failing is
# enough, it need not be the check's own failure.
CRASHING = {"detached-graph", "no-grad-training"}


def _watched(fault: str, run: Callable[[], object]) -> None:
    with watch(fault):
        run()


def mutants_of(fault: str):
    made = mutants_for_source(SNIPPET, "guard_snippet.py", select([fault]))
    assert made, f"the {fault} operator makes no mutant of the snippet"
    return made


@pytest.mark.parametrize("fault", sorted(SCENARIOS))
def test_check_passes_on_correct_code(fault):
    SCENARIOS[fault](load(SNIPPET))


@pytest.mark.parametrize("fault", sorted(SCENARIOS))
def test_check_fails_on_every_mutant_of_its_fault(fault):
    for mutant in mutants_of(fault):
        module = load(apply_edits(SNIPPET, mutant.edits))
        expected = Exception if fault in CRASHING else GuardFailure
        with pytest.raises(expected):
            SCENARIOS[fault](module)


def test_every_watched_fault_has_a_watcher_and_a_scenario():
    from test_guards_model import SCENARIOS as MODEL_SCENARIOS

    from injector.guards.faults import WATCHED

    assert set(guards.WATCHERS) == WATCHED
    # rank-skip: test_guards_processes.py; faults in model code: test_guards_model.py
    assert WATCHED - {"rank-skip"} == set(SCENARIOS) | set(MODEL_SCENARIOS)
