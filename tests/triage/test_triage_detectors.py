"""Each detector on logs from real runs: the symptom it must name, and silence on healthy runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from triage_corpus import logs_for

from triage import detectors, reader
from triage.detectors import signatures
from triage.series import SeriesBuilder


def symptoms_of(path):
    scan = reader.scan(path)
    b = SeriesBuilder()
    for r in scan.readings:
        b.add(r.text, r.line, r.rank)
    return detectors.detect(detectors.Context(scan.events, b.build(), scan.readings))


def names(path) -> set[str]:
    return {s.name for s in symptoms_of(path)}


# fault seeded in the corpus -> the symptom a detector must name on every one of its logs
EXPECTED = {
    "inplace-activation": "inplace-modified",
    "no-grad-training": "no-grad-fn",
    "detached-graph": "no-grad-fn",
    "backward-twice": "backward-twice",
    "non-scalar-backward": "non-scalar-backward",
    "cuda-oom": "out-of-memory",
    "shape-mismatch": "shape-mismatch",
    "dtype-mismatch": "dtype-mismatch",
    "label-out-of-range": "label-out-of-range",
    "ddp-unused-parameters": "ddp-unused-parameters",
    "broadcast-shape": "broadcast-warning",
    "rank-skip": "collective-timeout",
    "graph-break": "recompiling",
    "missing-zero-grad": "grad-norm-linear-growth",
    "lr-too-high": "grad-norm-exploding",
    # one blank row in 512 samples: some seeds hit it in the first batches, before a finite loss
    # was logged, so only "the loss went non-finite" holds for every run
    "missing-epsilon": "loss-non-finite",
    "wrong-loss-reduction": "loss-huge-initial",
    "missing-backward": "grad-norm-zero",
    "missing-optimizer-step": "loss-flat",
    "frozen-parameters": "few-trainable-parameters",
    "scheduler-step-misaligned": "lr-floor-early",
    "loss-tensor-leak": "memory-growing",
    "missing-no-grad-eval": "memory-grows-at-eval",
    "double-softmax": "double-softmax-floor",
    "wrong-softmax-dim": "val-loss-far-above-train",
    # no-shuffle: the repeat it leaves is faint in some runs; see test_triage_validation.py
    "missing-train-mode": "overfit-after-first-eval",
    "missing-eval-mode": "val-noisy",
    "dataloader-bottleneck": "data-wait",
}


@pytest.mark.parametrize("cause,symptom", sorted(EXPECTED.items()))
def test_detector_names_the_symptom_of_each_seeded_fault(cause, symptom):
    paths = logs_for(cause)
    assert paths
    for path in paths:
        assert symptom in names(path), path.name


def test_first_non_finite_loss_and_its_step():
    path = logs_for("lr-too-high")[0]
    s = next(s for s in symptoms_of(path) if s.name == "loss-non-finite")
    line = path.read_text(errors="replace").splitlines()[s.evidence[0].line - 1]
    assert "nan" in line.lower() and str(s.step) in line


def test_error_symptom_points_at_the_first_real_error():
    path = logs_for("ddp-unused-parameters")[0]
    s = next(s for s in symptoms_of(path) if s.name == "ddp-unused-parameters")
    text = path.read_text(errors="replace").splitlines()
    first = next(i for i, t in enumerate(text, 1) if "Expected to have finished reduction" in t)
    assert s.evidence[0].line == first


@pytest.mark.parametrize("path", logs_for(None), ids=lambda p: p.name)
def test_healthy_runs_raise_no_failure_symptom(path):
    assert not names(path) & {
        "loss-non-finite",
        "loss-diverging",
        "grad-norm-exploding",
        "grad-norm-linear-growth",
        "loss-flat",
        "lr-floor-early",
        "memory-growing",
        "memory-grows-at-eval",
        "val-noisy",
        "loss-oscillating",
        "crashed",
        "data-wait",
        "accurate-but-loss-high",
        "overfit-after-first-eval",
        "batch-order-repeats",
        "double-softmax-floor",
    }


def _match(text: str) -> set[str]:
    return {sig.symptom for sig in signatures.SIGNATURES if sig.pattern.search(text)}


# Messages only a GPU or another PyTorch version prints (this CI is CPU-only). The wording of
# each is PyTorch's own, as its C++/Python sources format it; they test that matching is
# tolerant across versions, while the corpus above holds what this torch really printed.
@pytest.mark.parametrize(
    "text,symptom",
    [
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
            "out-of-memory",
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
            "of 79.15 GiB of which 3.12 MiB is free.",
            "out-of-memory",
        ),
        ("torch.cuda.OutOfMemoryError: CUDA out of memory.", "out-of-memory"),
        ("RuntimeError: CUDA error: out of memory", "out-of-memory"),
        ("RuntimeError: Function 'SoftmaxBackward' returned nan values in its 0th output.", "anomaly-nan"),
        ("RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.", "anomaly-nan"),
        ("RuntimeError: CUDA error: device-side assert triggered", "device-side-assert"),
        (
            "/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
            "thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
            "label-out-of-range",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
            "and cpu!",
            "device-mismatch",
        ),
        (
            "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600045 milliseconds before timing out.",
            "collective-timeout",
        ),
        ("RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.", "leaf-inplace"),
        ("RuntimeError: expected scalar type Long but found Float", "dtype-mismatch"),
    ],
)
def test_signatures_match_across_versions(text, symptom):
    assert symptom in _match(text)


def test_a_device_side_assert_counts_less_than_the_label_error_it_hides():
    ctx = detectors.Context(
        [
            reader.Reading(10, 0, "Loss.cu:242: block: [0,0,0] Assertion `t >= 0 && t < n_classes` failed."),
            reader.Reading(40, 0, "RuntimeError: CUDA error: device-side assert triggered"),
        ],
        {},
    )
    found = {s.name: s for s in signatures.detect(ctx)}
    assert found["label-out-of-range"].strength == 1.0
    assert found["device-side-assert"].strength < 1.0


def test_a_run_that_stops_logging_is_a_hang(tmp_path):
    # a real logging-module run, then the job sat silent for ten minutes before being killed
    src = next(p for p in logs_for(None) if "__logging__" in p.name).read_text()
    last = src.rstrip().splitlines()[-1]
    stamp = last[:19]
    import datetime as dt

    later = (dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") + dt.timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M:%S")
    p = tmp_path / "hang.log"
    p.write_text(src + f"{later},000 - train - ERROR - job killed: no output for 600 s\n")
    assert "log-stopped" in names(p)
    assert "log-stopped" not in names(next(p for p in logs_for(None) if "__logging__" in p.name))


def test_loss_scale_collapse_from_a_series():
    # no fp16 GradScaler run in the CPU corpus: the series is built here
    from triage.detectors import numeric
    from triage.series import Point, Series

    s = Series("loss_scale", [Point(i, 65536.0 / 2**i, i + 1) for i in range(20)])
    assert [x.name for x in numeric.scale_collapse(s)] == ["loss-scale-collapse"]
    steady = Series("loss_scale", [Point(i, 65536.0, i + 1) for i in range(20)])
    assert numeric.scale_collapse(steady) == []


def _real_errors() -> dict[str, str]:
    """The messages torch itself raises for three faults, keyed by the symptom they must give."""
    import torch

    out = {}
    try:
        torch.zeros(2, 3) @ torch.zeros(4, 5)
    except RuntimeError as e:
        out["shape-mismatch"] = f"RuntimeError: {e}"
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as e:
        out["backward-twice"] = f"RuntimeError: {e}"
    with torch.no_grad():
        flat = (w * 2).sum()
    try:
        flat.backward()
    except RuntimeError as e:
        out["no-grad-fn"] = f"RuntimeError: {e}"
    return out


@pytest.mark.parametrize("symptom", ["shape-mismatch", "backward-twice", "no-grad-fn"])
def test_error_wrapped_by_a_narrow_console_is_still_named(tmp_path, symptom):
    """rich (Lightning's console) wraps a long error at the terminal width, splitting the words
    a signature needs across two lines: the exception line is matched joined to the next."""
    from rich.console import Console

    message = _real_errors()[symptom]
    log = tmp_path / "run.log"
    with log.open("w") as f:
        Console(file=f, width=34, color_system=None, soft_wrap=False).print(message, markup=False, highlight=False)
    lines = log.read_text().splitlines()
    assert len(lines) > 1 and not signatures._ANY.search(lines[0])  # the wrap did split the words
    assert symptom in names(log)


@pytest.mark.parametrize("prefix", ["E   ", "> ", "[rank1]: "])
def test_exception_after_a_pytest_quote_or_rank_prefix_is_a_crash(tmp_path, prefix):
    message = _real_errors()["shape-mismatch"]
    log = tmp_path / "run.log"
    log.write_text(f"step 1 loss 2.30\n{prefix}{message}\n")
    found = names(log)
    assert {"crashed", "shape-mismatch"} <= found


PROGRAM_LOGS = Path(__file__).resolve().parent / "programs" / "logs"


def test_loss_sinking_and_jumping_back_again_is_named_on_an_unshuffled_run():
    """Lightning GRU on class-sorted batches (tests/triage/programs/rnn_lightning.py): each block
    is learnt, the next jumps; healthy runs of every program never swing ten times their floor."""
    assert "loss-swings-back-to-low" in names(PROGRAM_LOGS / "rnn_lightning__no-shuffle__s2.log")
    for log in sorted(PROGRAM_LOGS.glob("*__healthy__*.log")):
        assert "loss-swings-back-to-low" not in names(log), log.name
    for log in sorted(PROGRAM_LOGS.glob("*__lr-too-high__*.log")):
        assert "loss-swings-back-to-low" not in names(log), log.name


def test_every_signature_match_on_every_corpus_line_holds_one_of_its_words():
    """The one-search prefilter (signatures.ANCHORS) may never hide a line a pattern matches:
    checked on every event line of the real-world excerpts, the programs' logs and the corpus."""
    root = Path(__file__).resolve().parent
    paths = [*(root / "world" / "excerpts").iterdir(), *(root / "programs" / "logs").iterdir()]
    paths += [p for p in (root / "corpus").rglob("*.log")]
    checked = 0
    for path in sorted(paths):
        for rd in reader.scan(path).events:
            allowed = {sig.symptom for sig in signatures._candidates(rd.text)}
            for sig in signatures.SIGNATURES:
                if sig.pattern.search(rd.text):
                    checked += 1
                    assert sig.symptom in allowed, (path.name, sig.symptom, rd.text[:200])
    assert checked > 300


QUOTED = Path(__file__).resolve().parent / "programs" / "quoted"


@pytest.mark.parametrize(
    ("fault", "first"),
    [("detached-graph", "detached-graph"), ("no-grad-training", "no-grad-training")],
)
def test_code_a_pytest_traceback_quotes_tells_apart_causes_of_one_error(fault, first):
    # the same "element 0 of tensors does not require grad" from all three faults; pytest's long
    # traceback quotes the step's body, `.detach()` or `with torch.no_grad():` (programs/guard_step.py)
    from triage.explain import explain

    causes = [c.id for c in explain(QUOTED / f"{fault}.log").causes]
    assert causes[0] == first
    assert {"detached-graph", "no-grad-training", "frozen-parameters"} == set(causes[:3])


def test_every_cause_of_a_missing_grad_fn_is_ranked_where_the_code_does_not_tell():
    from triage.explain import explain

    causes = [c.id for c in explain(QUOTED / "frozen-parameters.log").causes]
    assert set(causes[:3]) == {"detached-graph", "no-grad-training", "frozen-parameters"}
    assert explain(QUOTED / "healthy.log").causes == ()


def test_a_docstring_quoted_by_pytest_reports_nothing():
    # torch's backward() docstring, quoted in the traceback, mentions "a memory leak"
    assert "memory-growth-reported" not in names(QUOTED / "detached-graph.log")


def test_a_schedule_decayed_a_thousandfold_early_has_reached_its_floor():
    # programs/unet_table.py's StepLR stepped every batch instead of every epoch: the rate
    # halves every two batches and never settles, 1e-3 to 1e-25 within the run
    log = Path(__file__).resolve().parent / "programs" / "logs" / "unet_table__scheduler-step-misaligned__s3.log"
    assert "lr-floor-early" in names(log)
    healthy = Path(__file__).resolve().parent / "programs" / "logs" / "unet_table__healthy__s0.log"
    assert "lr-floor-early" not in names(healthy)


def _gather_errors() -> dict[str, str]:
    """What torch raises when a label-smoothing loss gathers a label equal to the class count or a
    negative one, and when an index is past a dimension by more than one (no label fault)."""
    import torch

    logprobs = torch.log_softmax(torch.zeros(4, 8), dim=-1)
    out = {}
    for name, target in (("class-count", torch.tensor([1, 8, 2, 3])), ("negative", torch.tensor([1, -1, 2, 3]))):
        try:
            logprobs.gather(dim=-1, index=target.unsqueeze(1))
        except RuntimeError as e:
            out[name] = f"RuntimeError: {e}"
    try:
        torch.zeros(3)[torch.tensor(7)]
    except IndexError as e:
        out["past-a-dimension"] = f"IndexError: {e}"
    return out


@pytest.mark.parametrize(("case", "named"), [("class-count", True), ("negative", True), ("past-a-dimension", False)])
def test_a_gathered_label_past_the_classes_is_a_label_out_of_range(tmp_path, case, named):
    """timm's label smoothing gathers the log-probabilities at each label: a label equal to the
    number of classes fails as `index 8 is out of bounds for dimension 1 with size 8`."""
    log = tmp_path / "run.log"
    log.write_text(f"Train: 0 [   0/40 (  0%)]  Loss: 2.09 (2.09)\n{_gather_errors()[case]}\n")
    assert ("label-out-of-range" in names(log)) is named
