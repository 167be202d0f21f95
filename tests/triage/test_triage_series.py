"""Metric series from every logging style in the corpus, and tolerance of unknown formats."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from triage_corpus import LOGS

from triage import reader
from triage.series import SeriesBuilder, parse_reading

STYLES = ("kv", "colon", "epoch", "json", "hf", "logging", "lightning", "tqdm")


def build(path):
    b = SeriesBuilder()
    for r in reader.scan(path).readings:
        b.add(r.text, r.line, r.rank)
    return b.build()


@pytest.mark.parametrize("style", STYLES)
def test_every_logging_style_yields_loss_lr_and_grad_norm(style):
    path = next(p for p in sorted(LOGS.iterdir()) if p.name.startswith(f"healthy__{style}__"))
    s = build(path)
    for name in ("loss", "lr", "grad_norm"):
        assert len(s[name].points) >= 90, name
    assert "val_loss" in s and len(s["val_loss"].points) >= 20
    loss = s["loss"].finite()
    # the run learned (its training loss stays well above zero: a fifth of its labels are wrong
    # and half its units are dropped)
    assert loss[0].value > 1.5 and loss[-1].value < 0.4 * loss[0].value
    steps = [p.step for p in s["loss"].points]
    assert steps == sorted(steps)


def test_known_formats_parse():
    assert parse_reading("epoch 3/10 | batch 40/50 | loss=0.25 | lr 1e-3") == (140, {"loss": 0.25, "lr": 0.001})
    assert parse_reading("{'loss': 0.5, 'grad_norm': 1.5, 'learning_rate': 3e-05, 'epoch': 0.1}")[1] == {
        "loss": 0.5,
        "grad_norm": 1.5,
        "lr": 3e-05,
    }
    step, m = parse_reading('{"step": 7, "train/loss": 1.25, "val_loss": NaN}')
    assert step == 7 and m["loss"] == 1.25 and math.isnan(m["val_loss"])
    assert parse_reading("Validation loss: 0.8")[1] == {"val_loss": 0.8}
    assert parse_reading("step 12 loss tensor(2.5000, grad_fn=<NllLossBackward0>)")[1] == {}  # no '=' or ':'
    assert parse_reading("loss=tensor(2.5000, grad_fn=<NllLossBackward0>)")[1] == {"loss": 2.5}


def test_unknown_formats_degrade_to_nothing_not_a_crash():
    for text in ("", "\x00\x01", "hello world", "12:34:56 ::: === :::", "loss=", "loss: abc", "a" * 10000):
        assert parse_reading(text) == (None, {})


# ---- other programs' logging (tests/triage/programs/, real runs) ----------------------------

PROGRAM_LOGS = LOGS.parent.parent / "programs" / "logs"


def test_hf_trainer_quoted_values_are_numbers():
    # transformers 5 prints {'loss': '0.1986', 'grad_norm': '0.5762', ...}: strings, not floats
    s = build(PROGRAM_LOGS / "mlp_hf__healthy__s1.log")
    text = (PROGRAM_LOGS / "mlp_hf__healthy__s1.log").read_text()
    assert "'loss': '" in text
    assert len(s["loss"].points) == text.count("{'loss': '")  # the closing summary's mean is not a step
    assert len(s["grad_norm"].points) >= 20 and len(s["val_loss"].points) == 4
    assert s["loss"].points[-1].value < 0.5 * s["loss"].points[0].value


def test_epoch_restarting_batch_counter_gives_one_increasing_series():
    # `Epoch[3] Batch [12/24]`: the counter starts over every epoch
    pts = build(PROGRAM_LOGS / "cnn_sgd__healthy__s0.log")["loss"].points
    steps = [p.step for p in pts]
    assert steps == sorted(steps) and len(set(steps)) == len(steps) == 48
    # the healthy run ends far below where it started (issue 9: a restart read as one epoch)
    assert pts[-1].value < 0.5 * pts[0].value


def test_values_with_units_and_losses_under_their_own_names():
    s = build(PROGRAM_LOGS / "cnn_sgd__loss-tensor-leak__s2.log")  # mem=322.6MB
    mem = s["memory"].values()
    assert len(mem) == 48 and mem[-1] > mem[0] * 1.1
    # a GAN logs two losses (d_loss, g_loss): neither is "the" loss
    assert "loss" not in build(PROGRAM_LOGS / "gan_ddp__healthy__s0.log")


def test_progress_bar_repeats_of_one_evaluation_count_once():
    # Lightning's tqdm bar shows the last val_loss on every update until the next evaluation
    s = build(PROGRAM_LOGS / "rnn_lightning__healthy__s0.log")
    assert 3 <= len(s["val_loss"].points) <= 6
    # while printed evaluations that really repeat are kept (a run whose weights never move)
    s = build(PROGRAM_LOGS / "cnn_sgd__missing-optimizer-step__s3.log")
    assert len(s["val_loss"].points) == 8 and len(set(s["val_loss"].values())) == 1


def test_a_record_printed_by_two_log_handlers_counts_once(tmp_path):
    """A training script with a file-style and a console-style handler on one logger prints
    every record twice, under two prefixes, on neighbouring lines; a loss that really repeats
    (the same text again) still counts every time."""
    import logging

    log = tmp_path / "train.log"
    logger = logging.getLogger(f"echo-{id(tmp_path)}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    with log.open("w") as f:
        for fmt in (
            "[%(asctime)s %(levelname)s train.py line %(lineno)d] %(message)s",
            "%(levelname)s:%(name)s:%(message)s",
        ):
            h = logging.StreamHandler(f)
            h.setFormatter(logging.Formatter(fmt))
            logger.addHandler(h)
        losses = [2.31, 2.05, 1.87, 1.62, 1.40, 1.21]
        for i, loss in enumerate(losses):
            logger.info(f"Epoch: [1/10][{10 * (i + 1)}/300] Data 0.002 Batch 0.818 Loss {loss:.4f} Accuracy 0.3469")
        for _ in range(3):
            logger.info("Loss 1.2100")
        for h in list(logger.handlers):
            logger.removeHandler(h)
    assert len(log.read_text().splitlines()) == 2 * (len(losses) + 3)
    values = [p.value for p in build(log)["loss"].points]
    assert values == [*losses, 1.21, 1.21, 1.21]


PROGRAM_LOGS = Path(__file__).resolve().parent / "programs" / "logs"


def test_a_table_header_names_the_columns_of_the_rows_after_it():
    """programs/unet_table.py logs through `logging` a fixed-width table (`epoch step loss dice
    lr mem_MB`, the header again every epoch) behind a `time | INFO | seg |` prefix whose words
    are not columns; its validation line is in another layout."""
    s = build(PROGRAM_LOGS / "unet_table__healthy__s1.log")
    loss, lr, mem = s["loss"], s["lr"], s["memory"]
    assert [p.step for p in loss.points] == list(range(4, 145, 4))  # the step column, not the row order
    assert loss.points[0].value == pytest.approx(1.45131) and lr.points[0].value == pytest.approx(1e-3)
    assert lr.points[-1].value == pytest.approx(2.5e-4) and 200 < mem.points[0].value < 2000
    assert len(s["val_loss"].points) == 6 and "dice" not in s


def test_a_header_needs_a_step_column_and_a_known_metric():
    b = SeriesBuilder()
    for i, text in enumerate(["Class Images Targets P R mAP", "all 3590 101000 0.322 0.453 0.365"]):
        b.add(text, i + 1)
    b.add("name    value    unit", 3)
    b.add("x 1 2", 4)
    assert b.build() == {}


WORLD_EXCERPTS = Path(__file__).resolve().parent / "world" / "excerpts"


def test_a_phase_word_apart_from_the_name_decides_the_metric_and_a_sentence_may_end_a_number():
    # https://github.com/LingxiaoShawn/PairNorm/issues/1: `train loss 0.158 train acc: 0.979,
    # val loss: 1.063 val acc 0.718.` The validation loss was read as the training loss (and,
    # flat beside a 98% training accuracy, named an optimizer that never stepped).
    line = (WORLD_EXCERPTS / "pairnorm-1-healthy.log").read_text().splitlines()[0]
    _, metrics = parse_reading(line)
    assert metrics == {"loss": 0.158, "accuracy": 0.979, "val_loss": 1.063, "val_accuracy": 0.718}
    # without a phase word of its own, a metric keeps the phase the line opened with
    assert parse_reading("Validation: loss=0.5 acc=0.9")[1] == {"val_loss": 0.5, "val_accuracy": 0.9}
    assert parse_reading("Train Epoch 3: loss=0.4 acc=0.8, Val: loss=0.6 acc=0.7")[1] == {
        "loss": 0.4,
        "accuracy": 0.8,
        "val_loss": 0.6,
        "val_accuracy": 0.7,
    }
    assert parse_reading("loss: 0.5.3")[1] == {}  # a version-like token is no number


def test_a_table_whose_last_column_is_a_clock_is_read():
    # fastai prints one row per epoch, its `time` column a clock (`00:03`): every row is read
    text = (Path(__file__).parent / "programs" / "logs" / "finetune_fastai__healthy__s0.log").read_text()
    builder = SeriesBuilder()
    for number, line in enumerate(text.splitlines(), 1):
        builder.add(line, number)
    rows = [line for line in text.splitlines() if line[:1].isdigit() and line.rstrip().endswith(("0", "1", "2", "3"))]
    assert len(builder.series["loss"].points) == len(builder.series["val_loss"].points) == len(rows) == 8


def test_a_table_row_printed_as_a_progress_bars_description_is_read():
    # Ultralytics/YOLO print each epoch's row under an `Epoch GPU_mem loss Instances Size` header
    # as a bar's description (`1/12  0G  1.792  16  24: 100%|###| 38/38 [...]`): the row's
    # columns are the reading, not just the bar's rate (programs/cls_ultralog.py, fresh program 26)
    s = build(PROGRAM_LOGS / "cls_ultralog__healthy__s0.log")
    loss = s["loss"].values()
    assert len(loss) == 12 and loss[0] == pytest.approx(1.792) and loss[-1] < loss[0] / 4


def test_a_rate_named_in_words_apart_is_read_as_the_rate():
    # MONAI's LrScheduleHandler prints `Current learning rate: ...` once per epoch, a logging line
    # with no bars (programs/seg_monai.py, fresh program 29): the words before `rate` name it
    log = PROGRAM_LOGS / "seg_monai__healthy__s0.log"
    printed = [
        float(line.rsplit(" ", 1)[1]) for line in log.read_text().splitlines() if "Current learning rate:" in line
    ]
    assert build(log)["lr"].values() == pytest.approx(printed) and len(printed) == 12
    assert parse_reading("drop rate: 0.1")[1] == {}  # a dropout rate is no learning rate


def test_a_table_with_a_column_of_marks_or_blanks_is_read_by_place():
    # skorch prints one coloured row per epoch under `epoch train_loss valid_acc valid_loss cp lr
    # dur`, its `cp` column `+` on a new best validation loss and blank otherwise: each number is
    # read under the name it stands beneath (programs/tab_skorch.py, fresh program 28)
    log = PROGRAM_LOGS / "tab_skorch__healthy__s0.log"
    rows = [line for line in log.read_text().splitlines() if line[:8].strip().isdigit()]
    s = build(log)
    assert len(s["loss"].points) == len(s["val_loss"].points) == len(s["val_accuracy"].points) == len(rows) > 8
    assert s["loss"].values()[0] == pytest.approx(1.047) and s["lr"].values()[0] == pytest.approx(0.05)
    assert any("+" not in row for row in rows) and any("+" in row for row in rows)


def test_a_stable_baselines3_box_is_one_reading_at_its_own_step_counter():
    """programs/ppo_sb3.py prints one box of `| name | value |` lines per rollout, sections as
    `| train/ |  |`, between lines of dashes, as Stable-Baselines3's logger does; its
    `learning_rate` is read at the box's `total_timesteps` (an update's values go into whichever
    box prints next, an evaluation's at 2496 too). A reinforcement learner's `loss`
    (policy gradient + value regression towards growing returns + entropy) is no error that
    training drives down: the box beside `ep_rew_mean`/`value_loss` gives no loss series."""
    s = build(PROGRAM_LOGS / "ppo_sb3__healthy__s0.log")
    lr = s["lr"]
    steps = [p.step for p in lr.points]
    assert steps[:3] == [2048, 2496, 4096]  # the first box has no train/ section
    assert steps == sorted(set(steps)) and len(steps) == 29 and lr.points[0].value == pytest.approx(0.00029)
    assert "loss" not in s and "val_loss" not in s


def test_a_supervised_loss_in_a_box_is_read_and_the_boxes_need_no_edge_between_them():
    b = SeriesBuilder()
    rows = ["| train/        |        |", "|    loss       | 0.91   |", "|    n_updates  | 10     |"]
    rows += ["| train/        |        |", "|    loss       | 0.52   |", "|    n_updates  | 20     |", "done"]
    for number, row in enumerate(rows, 1):
        b.add(row, number)
    loss = b.build()["loss"]
    assert [(p.step, p.value) for p in loss.points] == [(10, 0.91), (20, 0.52)]


def test_a_loss_below_zero_is_an_objective_whose_shape_names_nothing():
    """A policy-gradient or generator objective has no floor at zero: a climb from -0.01 to 0.2
    is no divergence. Only a NaN in it still counts."""
    from triage.detectors import Context, numeric, shape
    from triage.series import Point, Series

    values = [-0.01, 0.02, -0.005, 0.05, 0.1, 0.2, 0.15, 0.3, 0.25, 0.4]
    objective = Series("loss", [Point(i, v, i + 1) for i, v in enumerate(values)])
    assert objective.signed
    ctx = Context([], {"loss": objective})
    assert shape.detect(ctx) == [] and numeric.detect(ctx) == []
    positive = Series("loss", [Point(i, v + 0.02, i + 1) for i, v in enumerate(values)])
    assert not positive.signed and shape.detect(Context([], {"loss": positive}))


def _series_of(lines: list[str]):
    b = SeriesBuilder()
    for number, text in enumerate(lines, 1):
        b.add(text, number)
    return b.build()


def test_a_multi_line_json_summary_or_config_dump_is_no_reading():
    """timm prints a `--result` block (per-epoch train and validation losses, indented JSON)
    after training; HF prints `GPT2Config {` dumps. Read as readings, the summary's alternating
    train and validation losses looked like an unshuffled run on two healthy logs."""
    import json

    steps = [f"Train: {e} [  10/40 ( 26%)]  Loss: {2.0 - 0.1 * e:.2f} ({2.0 - 0.1 * e:.2f})" for e in range(10)]
    summary = json.dumps(
        {
            "all": [
                {"epoch": e, "train": {"loss": 2.0 - 0.1 * e}, "validation": {"loss": 0.4, "top1": 90.0}}
                for e in range(10)
            ]
        },
        indent=4,
    ).splitlines()
    config = ["GPT2Config {", '  "attn_pdrop": 0.1,', '  "n_embd": 768,', '  "loss_scale": 128', "}"]
    series = _series_of([*config, *steps, "--result", *summary])
    assert [round(p.value, 2) for p in series["loss"].points] == [round(2.0 - 0.1 * e, 2) for e in range(10)]
    assert "val_loss" not in series


def test_a_block_cut_short_gives_the_lines_after_it_back():
    """A JSON block cut in the middle (a log truncated and restarted) ends at the first line that
    is neither indented nor a bracket: the readings after it count."""
    series = _series_of(["{", '    "loss": 9.0,', "epoch 1 loss 2.0", "epoch 2 loss 1.5"])
    assert [p.value for p in series["loss"].points] == [2.0, 1.5]


def test_a_dict_wrapped_over_lines_is_one_reading():
    """detectron2's message on a NaN prints the loss terms as a dict of tensors; pasted from a
    terminal it wraps over lines. Its terms are values of one moment: read a line at a time they
    made a series (NaN, -0., -0., NaN) that looked like a run NaN from its first step."""
    import textwrap

    import torch

    w = torch.ones(1, requires_grad=True)
    terms = {"loss_cls": (w * float("nan")).sum(), "loss_box_reg": (w * float("inf")).sum()}
    terms |= {f"loss_term{i}": (w * -0.0).sum() for i in range(4)}
    message = f"FloatingPointError: Loss became infinite or NaN at iteration=756!\nloss_dict = {terms}"
    lines = [part for line in message.splitlines() for part in textwrap.wrap(line, 90)]
    assert len(lines) > 4
    wrapped = _series_of([*lines, "Process finished with exit code 1"])
    whole = _series_of([*message.splitlines(), "Process finished with exit code 1"])
    assert len(wrapped["loss"].points) == 1
    assert [(p.value, p.line) for p in wrapped["loss"].points] == [(p.value, p.line) for p in whole["loss"].points]
    # a record of its own after a line left open is read as before (a code line echoed in a traceback)
    series = _series_of(
        ['  rec = {"step": step, "loss": f"{x}",', '{"step": 1, "loss": 2.0}', '{"step": 2, "loss": 1.5}']
    )
    assert [p.value for p in series["loss"].points] == [2.0, 1.5]


# pytorch/examples' MNIST print, which many projects copy
MNIST_PRINT = "Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}"


def test_the_mnist_examples_print_counts_samples_across_epochs():
    line = MNIST_PRINT.format(2, 640, 60000, 100.0 * 640 / 60000, 0.25)
    assert parse_reading(line) == (60000 + 640, {"loss": 0.25})


def _mnist_series(tmp_path, batches):
    log = tmp_path / "run.log"
    log.write_text(
        "".join(MNIST_PRINT.format(1, 32 * b, 6000, 100.0 * 32 * b / 6000, 2.3 - 0.01 * b) + "\n" for b in batches)
    )
    return build(log)["loss"]


def test_an_excerpt_cut_mid_run_is_known_to_show_no_start(tmp_path):
    # a report pasting lines from 72% into the first epoch; the run's own log starts at sample 0
    assert _mnist_series(tmp_path, range(135, 150)).starts_mid_run
    assert not _mnist_series(tmp_path, range(0, 15)).starts_mid_run
    assert not _mnist_series(tmp_path, range(1, 16)).starts_mid_run


def test_a_cost_is_a_loss_and_a_time_cost_is_not():
    assert parse_reading("Epoch: 0010 cost = 15.205759") == (None, {"loss": 15.205759})
    assert parse_reading("epoch 1 time cost: 12.3s loss: 0.5") == (None, {"loss": 0.5})
    assert parse_reading("iter 10 time cost: 0.52")[1] == {}


def test_a_header_that_lost_its_underscores_names_its_columns(tmp_path):
    # fastai's epoch table as a report pasted it: `train loss` and `valid loss` are one column each
    log = tmp_path / "run.log"
    log.write_text("epoch train loss valid loss accuracy_thresh f2_opt\n0 nan nan 0.997788 0.000000\n")
    s = build(log)
    assert math.isnan(s["loss"].points[0].value)
    assert "val_loss" in s and s["loss"].per_epoch


def test_a_camel_case_key_is_read_by_its_words():
    # insightface's arcface_torch prints `LearningRate 0.032258` after its `Loss`, and DeepSpeed's
    # timer `MemAllocated=0.32GB` (the lines as fresh programs 30 and 25 printed them)
    line = (
        "Training: 2026-11-30 23:54:20,203-Speed 3779.31 samples/sec   Loss 46.5198   "
        "LearningRate 0.032258   Epoch: 0   Global Step: 20   Required: 0 hours"
    )
    assert parse_reading(line)[1] == {"loss": 46.5198, "lr": 0.032258}
    deepspeed = (
        "[INFO] [timer.py:260:stop] epoch=0/micro_step=200/global_step=100, MemAllocated=0.32GB, MaxMemAllocated=0.32GB"
    )
    assert parse_reading(deepspeed)[1].get("memory") == 0.32


def test_the_rate_of_an_arcface_run_is_a_series_over_its_steps():
    s = build(Path(__file__).parent / "programs" / "logs" / "face_arcface__healthy__s0.log")
    assert len(s["lr"].points) == len(s["loss"].points) > 30


def test_a_loss_printed_as_its_terms_then_their_total_is_the_total():
    # pytorch-yolo2's region loss prints each term after `loss:` and their sum last, named `total`
    # (its own format string, filled as it fills it)
    form = "%d: nGT %d, recall %d, proposals %d, loss: x %f, y %f, w %f, h %f, conf %f, cls %f, total %f"
    finite = form % (9856, 39, 0, 0, 1.69, 1.52, 0.21, 0.18, 3.05, 2.2, 8.85)
    assert parse_reading(finite)[1] == {"loss": 8.85}
    blown = form % (9872, 42, 0, 0, 1690.99, 1692.31, math.nan, math.nan, math.nan, math.nan, math.nan)
    assert math.isnan(parse_reading(blown)[1]["loss"])
    # a term alone is no total
    assert parse_reading("loss: x 0.5, y 0.25")[1] == {}
