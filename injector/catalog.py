"""The fault catalog: one description per fault id, shared by operators, reports and triage.

Every id here is public vocabulary. An injector operator and a triage cause that mean the same
fault use the same id, and every surface that explains a fault (`injector list`, the mutation
report, the PR comment) renders it from the entry below, so a fix is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["injectable", "observed"]


@dataclass(frozen=True)
class Fault:
    """One catalogued fault: what it is, how it shows, what catches it, how to fix it."""

    id: str
    kind: Kind
    title: str
    symptoms: str
    guard: str
    fix: str


_FAULTS: tuple[Fault, ...] = (
    # ---- injectable: the injector has an operator for each of these ----
    Fault(
        "missing-zero-grad",
        "injectable",
        "The gradients are never cleared between optimizer steps.",
        "Gradients add up across steps, so the gradient norm climbs roughly linearly; the loss "
        "wobbles, then diverges and can turn NaN.",
        "a bound on the gradient norm, or a test that the loss goes down over a few steps",
        "Call `optimizer.zero_grad(set_to_none=True)` once per optimizer step, before the backward "
        "pass (or right after `optimizer.step()`).",
    ),
    Fault(
        "wrong-softmax-dim",
        "injectable",
        "A softmax or log-softmax normalises over the wrong axis.",
        "Nothing crashes: probabilities no longer sum to one over the classes, samples or tokens "
        "compete with each other, and the loss plateaus.",
        "a test that probabilities sum to 1 over the class axis, or an overfit-one-batch test",
        "Normalise over the class axis, almost always `dim=-1` for `(..., classes)` tensors.",
    ),
    Fault(
        "double-softmax",
        "injectable",
        "Probabilities, not logits, are passed to a loss that applies softmax itself.",
        "`cross_entropy` normalises a second time: the loss stays high, gradients are tiny and "
        "accuracy stalls below what the model can reach.",
        "an overfit-one-batch test, or a test that the loss decreases",
        "Pass raw logits to `F.cross_entropy` / `nn.CrossEntropyLoss`; apply softmax only for reporting or inference.",
    ),
    Fault(
        "missing-grad-scaler",
        "injectable",
        "Mixed-precision training runs without its gradient scaler.",
        "Under fp16 autocast small gradients underflow to zero and large ones overflow past "
        "65504: the loss goes inf, then NaN, often only after some hundreds of steps.",
        "a NaN/inf check on the loss, or a short fp16 smoke run on a GPU",
        "With fp16 autocast use `scaler.scale(loss).backward()`, `scaler.step(optimizer)` and "
        "`scaler.update()` (and `scaler.unscale_(optimizer)` before clipping); or train in bf16.",
    ),
    Fault(
        "rank-skip",
        "injectable",
        "One distributed rank skips a training step that the others take.",
        "That rank misses a collective: every rank blocks, GPUs drop to 0% and the job ends in a "
        "NCCL/gloo watchdog or collective timeout.",
        "a collective timeout, `dist.monitored_barrier`, or a job-level timeout",
        "Make every rank run the same collectives in the same order: no rank-dependent "
        "`continue`/`break` around `backward()` or `optimizer.step()`.",
    ),
    Fault(
        "inplace-activation",
        "injectable",
        "An activation or residual update overwrites a tensor that autograd still needs.",
        'Backward fails with "one of the variables needed for gradient computation has been '
        'modified by an inplace operation", or the gradients are silently wrong.',
        "any test that runs backward, or `torch.autograd.gradcheck`",
        "Use the out-of-place form (`F.relu(x)`, `x = x + y`) where the input is saved for "
        "backward; keep `inplace=True` only where nothing reads the input again.",
    ),
    Fault(
        "missing-eval-mode",
        "injectable",
        "Evaluation runs with the model still in training mode.",
        "Dropout stays active and batch-norm uses batch statistics at evaluation: validation "
        "metrics are noisy and lower than they should be.",
        "a test that evaluation is deterministic for a fixed input",
        "Call `model.eval()` before evaluating (and `model.train()` again after).",
    ),
    Fault(
        "missing-train-mode",
        "injectable",
        "Training resumes in eval mode after the first evaluation.",
        "After the first validation pass dropout is off and batch-norm statistics are frozen, so "
        "the model overfits or stops adapting.",
        "an assertion that `model.training` is true inside the training step",
        "Call `model.train()` at the start of every training epoch.",
    ),
    Fault(
        "no-grad-training",
        "injectable",
        "The training forward pass runs under `torch.no_grad()`.",
        'No graph is recorded: `backward()` fails with "element 0 of tensors does not require '
        'grad and does not have a grad_fn", or nothing learns.',
        "any test that takes a training step",
        "Keep `torch.no_grad()` / `inference_mode()` for evaluation only.",
    ),
    Fault(
        "detached-graph",
        "injectable",
        "The model output is detached before the loss is computed.",
        'The loss has no path back to the parameters: the same "does not require grad" error, '
        "or a loss that never moves.",
        "any test that takes a training step and checks that parameters change",
        "Compute the loss from the live model output; detach only values you log or store.",
    ),
    Fault(
        "missing-backward",
        "injectable",
        "The backward pass is never run.",
        "Gradients stay `None` or zero, the optimizer step does nothing and the loss is flat.",
        "a test that the loss decreases, or that parameters change after a step",
        "Call `loss.backward()` (or `scaler.scale(loss).backward()`) before `optimizer.step()`.",
    ),
    Fault(
        "missing-optimizer-step",
        "injectable",
        "The optimizer never updates the parameters.",
        "Gradients are computed and thrown away: the loss is flat and the weights never change.",
        "a test that parameters change after a training step",
        "Call `optimizer.step()` (or `scaler.step(optimizer)`) after every backward pass that "
        "should update the weights.",
    ),
    Fault(
        "missing-grad-clipping",
        "injectable",
        "Gradient clipping is gone.",
        "Usually nothing in a short run; on real runs a rare large gradient makes the loss spike or explode.",
        "a gradient-norm monitor or a test that feeds an outlier batch",
        "Clip after backward and before the optimizer step, e.g. "
        "`torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)` (unscale first under AMP).",
    ),
    Fault(
        "lr-too-high",
        "injectable",
        "The learning rate is far too high.",
        "The loss spikes, oscillates and diverges to inf or NaN within a few steps.",
        "a test that the loss decreases over a few steps",
        "Lower the learning rate (a 10x drop fixes most divergence) or add warm-up.",
    ),
    Fault(
        "missing-epsilon",
        "injectable",
        "A `log`, `sqrt` or division lost the epsilon that keeps it finite.",
        "The first exact zero produces -inf or NaN, which then spreads through every parameter.",
        "an edge-case test that feeds zeros",
        "Guard the operation: `torch.log(x + eps)`, `x.clamp(min=eps)`, `a / (b + eps)`.",
    ),
    Fault(
        "scheduler-step-misaligned",
        "injectable",
        "The learning-rate scheduler steps at the wrong frequency.",
        "The schedule runs many times too fast and sits at its floor long before training ends; progress stalls early.",
        "a test of the learning rate after N optimizer steps",
        "Step the scheduler exactly as often as it was configured for: once per optimizer step "
        "(inside the accumulation branch) or once per epoch.",
    ),
    Fault(
        "loss-tensor-leak",
        "injectable",
        "A loss tensor, not its number, is kept for logging.",
        "Each stored loss keeps its whole autograd graph alive: memory grows every step until "
        "the run is out of memory.",
        "a test that memory does not grow over steps",
        "Store `loss.item()` (or `loss.detach()`) when accumulating or logging losses.",
    ),
    Fault(
        "no-shuffle",
        "injectable",
        "The training data is not shuffled.",
        "On ordered data the model sees one class at a time: the loss oscillates in blocks and accuracy is poor.",
        "a test of the data order the training loader yields",
        "Use `shuffle=True` (or a `DistributedSampler` with `shuffle=True`) for training data.",
    ),
    Fault(
        "missing-attention-mask",
        "injectable",
        "Attention ignores its padding or causal mask.",
        "Padding or future positions leak into attention: no crash, but worse accuracy and "
        "models that cheat by looking ahead.",
        "a causality test: changing a future token must not change earlier outputs",
        "Apply the mask before the softmax (`scores.masked_fill(~mask, float('-inf'))`) or pass "
        "`attn_mask` / `is_causal=True`.",
    ),
    Fault(
        "wrong-loss-reduction",
        "injectable",
        "The loss is summed where it should be averaged.",
        "The effective learning rate scales with the batch size: training turns unstable or "
        "diverges when the batch grows.",
        "a test that the loss scale does not depend on the batch size",
        'Use `reduction="mean"` (the default) or divide the sum by the number of elements.',
    ),
    Fault(
        "missing-set-epoch",
        "injectable",
        "A distributed sampler is never told the epoch.",
        "Every epoch sees the data in the same order on every rank, which weakens shuffling and generalisation.",
        "a test that the sample order differs between epochs",
        "Call `sampler.set_epoch(epoch)` at the start of each epoch.",
    ),
    Fault(
        "missing-no-grad-eval",
        "injectable",
        "Evaluation records an autograd graph it never uses.",
        "Evaluation holds graphs and activations alive: memory grows and large validation sets run out of memory.",
        "a memory test around evaluation",
        "Wrap evaluation in `torch.no_grad()` or `torch.inference_mode()`.",
    ),
    Fault(
        "device-mismatch",
        "injectable",
        "A batch is not moved to the model's device.",
        '"Expected all tensors to be on the same device" as soon as the model is on a GPU; nothing on a CPU-only run.',
        "any smoke run on a GPU",
        "Move every input and target with `.to(device)` (or use a collate function that does).",
    ),
    # ---- observed: triage names these from logs; they are not injected ----
    Fault(
        "cuda-oom",
        "observed",
        "The GPU ran out of memory.",
        '"CUDA out of memory": on the first step the batch or model is too big; later in the '
        "run, something is leaking memory.",
        "a memory test, or a smoke run at the production batch size",
        "Lower the batch size, use gradient accumulation, checkpointing or bf16; if memory grows "
        "over steps, look for stored tensors that keep graphs alive.",
    ),
    Fault(
        "backward-twice",
        "observed",
        "The backward pass runs twice through the same graph.",
        '"Trying to backward through the graph a second time".',
        "any test that takes two training steps",
        "Recompute the forward pass each step; use `retain_graph=True` only where a second "
        "backward through the same graph is intended.",
    ),
    Fault(
        "non-scalar-backward",
        "observed",
        "`backward()` is called on a tensor that is not a scalar.",
        '"grad can be implicitly created only for scalar outputs".',
        "any test that takes a training step",
        "Reduce the loss to a scalar (`.mean()` / `.sum()`) or pass `gradient=` to backward.",
    ),
    Fault(
        "shape-mismatch",
        "observed",
        "Tensor shapes do not fit the operation.",
        '"mat1 and mat2 shapes cannot be multiplied" or another size-mismatch error.',
        "a forward test with the real input shape",
        "Check the layer's input size against the data (flatten, feature count, sequence length).",
    ),
    Fault(
        "broadcast-shape",
        "observed",
        "A loss silently broadcasts a target of a different shape.",
        "A warning that the target size differs from the input size; the loss is computed over "
        "a broadcast grid and the model learns the mean.",
        "a test that prediction and target shapes match",
        "Make target and prediction the same shape (`squeeze`/`unsqueeze` the right axis).",
    ),
    Fault(
        "label-out-of-range",
        "observed",
        "A class label is outside the model's number of classes.",
        '"Target N is out of bounds", or a device-side assert that blames a later kernel.',
        "a data test that labels lie in [0, num_classes)",
        "Fix the label mapping or the classifier's output size; rerun with "
        "`CUDA_LAUNCH_BLOCKING=1` to see the real failing op.",
    ),
    Fault(
        "dtype-mismatch",
        "observed",
        "Tensors of different dtypes meet in one operation.",
        '"expected scalar type Float but found Double", or a loss that wants Long targets.',
        "a forward-and-loss test on real batches",
        "Cast inputs to the model's dtype (`.float()`) and class targets to `.long()`.",
    ),
    Fault(
        "ddp-unused-parameters",
        "observed",
        "DDP waits for gradients of parameters that took no part in the loss.",
        '"Expected to have finished reduction in the prior iteration before starting a new one".',
        "a two-process DDP smoke run",
        "Make every parameter contribute to the loss, or construct DDP with `find_unused_parameters=True`.",
    ),
    Fault(
        "dataloader-bottleneck",
        "observed",
        "The GPU waits for data.",
        "Low GPU utilisation (around 30%) while data-loading time dominates each step.",
        "a throughput check in the smoke run",
        "Raise `num_workers`, use `pin_memory=True` and `persistent_workers=True`, and move "
        "heavy preprocessing off the training loop.",
    ),
    Fault(
        "bad-init",
        "observed",
        "The weights start in a bad place.",
        "The loss is stuck from step 0 or is NaN at step 1; activations are saturated.",
        "a test of the initial loss (about log(num_classes) for a classifier)",
        "Use the standard initialisation for the layer type and check the input scale.",
    ),
    Fault(
        "frozen-parameters",
        "observed",
        "Parameters that should train are frozen or missing from the optimizer.",
        "The loss plateaus high and the trainable-parameter count is tiny.",
        "a test that every parameter meant to train changes after a step",
        "Set `requires_grad=True` where intended and build the optimizer from "
        "`model.parameters()` after any freezing logic.",
    ),
    Fault(
        "nondeterminism",
        "observed",
        "The same seed gives different numbers between runs.",
        "Two runs with one seed diverge: flaky tests and unreproducible results.",
        "a test that runs twice with one seed and compares",
        "Seed every generator, set `torch.use_deterministic_algorithms(True)` and seed data loader workers.",
    ),
    Fault(
        "graph-break",
        "observed",
        "`torch.compile` keeps recompiling or falls back to eager in the hot loop.",
        "Recompilation and graph-break messages repeat and steps are slower than eager.",
        "a compile smoke run with `TORCH_LOGS=recompiles`",
        "Remove data-dependent Python control flow and changing shapes from the compiled region.",
    ),
)

FAULTS: dict[str, Fault] = {fault.id: fault for fault in _FAULTS}
INJECTABLE: tuple[str, ...] = tuple(f.id for f in _FAULTS if f.kind == "injectable")
OBSERVED: tuple[str, ...] = tuple(f.id for f in _FAULTS if f.kind == "observed")

# Renamed ids keep working through an alias (none renamed yet).
ALIASES: dict[str, str] = {}


def get(fault_id: str) -> Fault:
    """Return the catalog entry for an id or alias; raise KeyError for an unknown one."""
    return FAULTS[ALIASES.get(fault_id, fault_id)]
