"""The guard checks for faults in model code and in the learning rate: each fails on every
mutant its operator makes of a small real model (`guard_snippet_model.py`) and passes on it
unmutated. CPU only, a fraction of a second each.
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

SNIPPET = (Path(__file__).parent / "guard_snippet_model.py").read_text()


def load(text: str) -> types.ModuleType:
    module = types.ModuleType("guard_snippet_model_under_test")
    exec(compile(text, "guard_snippet_model.py", "exec"), module.__dict__)
    return module


def training(m) -> Callable[[], list[float]]:
    model, optimizer = m.make_training()
    data = m.batches()
    return lambda: m.train_steps(model, optimizer, data)


# fault id -> what a test of the user's would run, with the check that targets the fault
SCENARIOS: dict[str, Callable[[types.ModuleType], None]] = {
    "lr-too-high": lambda m: guards.assert_lr_stable(training(m), steps=2),
    "inplace-activation": lambda m: guards.assert_no_inplace_damage(training(m)),
    "missing-epsilon": lambda m: guards.assert_finite_on_zeros(training(m)),
    "missing-attention-mask": lambda m: guards.assert_attention_masked(training(m)),
    "device-mismatch": lambda m: guards.assert_batches_moved(training(m)),
}


def mutants_of(fault: str):
    made = mutants_for_source(SNIPPET, "guard_snippet_model.py", select([fault]))
    assert made, f"the {fault} operator makes no mutant of the snippet"
    return made


@pytest.mark.parametrize("fault", sorted(SCENARIOS))
def test_check_passes_on_correct_code(fault):
    SCENARIOS[fault](load(SNIPPET))


@pytest.mark.parametrize("fault", sorted(SCENARIOS))
def test_check_fails_on_every_mutant_of_its_fault(fault):
    for mutant in mutants_of(fault):
        module = load(apply_edits(SNIPPET, mutant.edits))
        with pytest.raises(GuardFailure):
            SCENARIOS[fault](module)


def test_the_mutants_train_without_error_unwatched():
    # What makes these checks needed: each mutant trains without an exception of its own.
    for fault in SCENARIOS:
        for mutant in mutants_of(fault):
            training(load(apply_edits(SNIPPET, mutant.edits)))()


def test_the_attention_check_names_the_class_and_kind_it_was_given():
    m = load(SNIPPET)
    model = m.TinyLM()
    x, pad, _ = m.batches(1)[0]
    guards.assert_attention_masked(lambda: model(x, pad), module="CausalAttention", kind="causal")
    guards.assert_attention_masked(lambda: model(x, pad), module="PaddedAttention", kind="padding")
    with pytest.raises(GuardFailure, match="a later position"):
        guards.assert_attention_masked(lambda: model(x, pad), module="PaddedAttention", kind="causal")
    with pytest.raises(GuardFailure, match="no call of Decoder"):
        guards.assert_attention_masked(lambda: model(x, pad), module="Decoder")


def test_probes_leave_the_random_stream_and_batch_norm_statistics_alone():
    # A watched test must see the numbers it sees unwatched: the checks' extra forwards restore
    # the global random state and every buffer they touch.
    def run() -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5))
        out = net(torch.randn(16, 4))
        return out, net[1].running_mean.clone()

    plain = run()
    with watch("missing-epsilon", "inplace-activation", "missing-attention-mask"):
        watched = run()
    assert torch.equal(plain[0], watched[0]) and torch.equal(plain[1], watched[1])
    assert torch.equal(torch.rand(3), torch.rand(3)) is False  # the stream still moves


def test_a_module_with_its_own_inplace_flag_may_write_its_input():
    relu = torch.nn.ReLU(inplace=True)
    guards.assert_no_inplace_damage(lambda: relu(torch.randn(3)))

    class Clobbers(torch.nn.Module):
        def forward(self, x):
            return x.relu_()

    with pytest.raises(GuardFailure, match="modified a tensor passed to it in place"):
        guards.assert_no_inplace_damage(lambda: Clobbers()(torch.randn(3)))


def test_a_dtype_only_move_does_not_count_as_a_device_move():
    model = torch.nn.Linear(3, 1)
    x = torch.randn(2, 3)

    def step() -> None:
        model(x.to(torch.float32))

    guards.assert_batches_moved(step)  # nothing moved to a device: nothing to check
    with pytest.raises(GuardFailure, match="without `.to\\(device\\)`"):
        guards.assert_batches_moved(lambda: [torch.randn(1).to("cpu"), model(x)])
