"""Guard checks for PyTorch training code, each verified against the fault it targets.

Two ways to use them from a test:

- `watch(*fault_ids)` around code that trains or evaluates (your own test's body): the run is
  observed through torch's global hooks and the fault is reported where it shows;
- the `assert_*` functions, given your model and a step or an evaluation to run.

`injector suggest` writes tests that use these for the mutants a campaign's guards let through.
"""

from __future__ import annotations

from injector.guards.checks import (
    assert_attention_masked,
    assert_batches_moved,
    assert_epochs_differ,
    assert_eval_deterministic,
    assert_eval_restores_mode,
    assert_finite_on_zeros,
    assert_grad_norm_bounded,
    assert_grads_cleared,
    assert_loader_shuffles,
    assert_loss_gets_logits,
    assert_lr_stable,
    assert_no_graph_in_eval,
    assert_no_graph_kept,
    assert_no_inplace_damage,
    assert_overfits_one_batch,
    assert_params_change,
    assert_probabilities,
    assert_replicas_in_sync,
    assert_scaler_used,
    assert_scheduler_paced,
)
from injector.guards.errors import GuardFailure
from injector.guards.inprocess import run_python
from injector.guards.watchers import WATCHERS, watch

__all__ = [
    "GuardFailure",
    "WATCHERS",
    "assert_attention_masked",
    "assert_batches_moved",
    "assert_epochs_differ",
    "assert_eval_deterministic",
    "assert_eval_restores_mode",
    "assert_finite_on_zeros",
    "assert_grad_norm_bounded",
    "assert_grads_cleared",
    "assert_loader_shuffles",
    "assert_loss_gets_logits",
    "assert_lr_stable",
    "assert_no_graph_in_eval",
    "assert_no_graph_kept",
    "assert_no_inplace_damage",
    "assert_overfits_one_batch",
    "assert_params_change",
    "assert_probabilities",
    "assert_replicas_in_sync",
    "assert_scaler_used",
    "assert_scheduler_paced",
    "run_python",
    "watch",
]
