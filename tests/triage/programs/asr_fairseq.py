"""Program 17 (written for issue 9's fresh program 17 without reading triage's rules): speech recognition.

Sequence labelling without alignments, where the programs before it classify, translate or detect:
a tiny CTC speech recogniser on synthetic "audio". Each utterance is 2 to 6 phones from a
12-phone alphabet; each phone is rendered as 2 to 5 frames of its own noisy 16-dim filterbank-like
pattern (a prototype with a slight drift across the phone), with silence frames between phones
and at both ends. The features are produced in float64, as a numpy front end leaves them, and
converted to float32 by the dataset. The training corpus is stored sorted by length, as ASR
manifests often are; batches are padded with lengths. The model: a convolutional front end
(Conv1d + GLU), two bidirectional GRU layers over packed sequences (dropout between them), a
linear output over the phones plus the CTC blank (index 0) and a log_softmax over the vocabulary.
`F.ctc_loss` summed over the batch (zero_infinity) and normalised by the number of target tokens
(fairseq's sample_size), two micro-batches per update (`--update-freq 2`), Adam with fairseq's
`inverse_sqrt` schedule (linear warm-up from 1e-7, then decay by the inverse square root of the
update), clipping by norm (`--clip-norm 10`), and a non-finite gradient norm raising
FloatingPointError as fairseq's trainer does. Ten epochs; after each a validation pass with greedy
CTC decoding (unit error rate over phones, word error rate over the two-phone "words" of the
transcript). It logs as fairseq's `fairseq-train` does (fairseq itself is not used; losses in
base 2):

    2026-11-27 10:00:01 | INFO | fairseq_cli.train | Namespace(..., lr=[0.0005], clip_norm=10.0, ...)
    2026-11-27 10:00:01 | INFO | fairseq_cli.train | num. model params: 123,456 (num. trained: 123,456)
    2026-11-27 10:00:05 | INFO | train_inner | epoch 001:     16 / 56 loss=11.5, ntokens=64.5, nsentences=16,
        wps=650.3, ups=10.1, wpb=64.5, bsz=16, num_updates=16, lr=0.0001251, gnorm=4.82, clip=0,
        loss_scale=None, train_wall=2, wall=2   (one line in the log)
    2026-11-27 10:00:09 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 3.9 | uer 84.2 | wer 100 | ...
    2026-11-27 10:00:09 | INFO | train | epoch 001 | loss 4.5 | wps 10000 | ups 12 | wpb 64.8 | ... | clip 0 | ...

(clip is the percentage of updates whose gradient norm was clipped).

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

PHONES = ["aa", "b", "d", "eh", "f", "g", "iy", "k", "m", "n", "s", "uw"]
BLANK = 0
FEAT_DIM = 16

logging.basicConfig(
    format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
    datefmt="%Y-%m-%d %H:%M:%S",
    level=logging.INFO,
    stream=sys.stdout,
)
logger = logging.getLogger("fairseq_cli.train")


# ----------------------------------------------------------------------------- data


class SyntheticSpeech:
    """Utterances of phones rendered as noisy feature frames; phone ids start at 1 (0 is blank)."""

    def __init__(self, n: int, g: torch.Generator, protos: torch.Tensor, drift: torch.Tensor, fault: str):
        self.items = []
        self.fault = fault
        for _ in range(n):
            n_ph = int(torch.randint(2, 7, (1,), generator=g))
            phones = [1 + int(p) for p in torch.randint(0, len(PHONES), (n_ph,), generator=g)]
            frames = [self.silence(int(torch.randint(1, 5, (1,), generator=g)), g)]
            for k, ph in enumerate(phones):
                dur = int(torch.randint(2, 6, (1,), generator=g))
                pos = torch.linspace(-1.0, 1.0, dur, dtype=torch.float64).unsqueeze(1)
                noise = 0.6 * torch.randn(dur, FEAT_DIM, generator=g, dtype=torch.float64)
                frames.append(protos[ph] + pos * drift[ph] + noise)
                gap = int(torch.randint(0, 3, (1,), generator=g)) if k < n_ph - 1 else 0
                if gap:
                    frames.append(self.silence(gap, g))
            frames.append(self.silence(int(torch.randint(1, 5, (1,), generator=g)), g))
            self.items.append((torch.cat(frames), phones))

    @staticmethod
    def silence(n: int, g: torch.Generator) -> torch.Tensor:
        return -1.5 + 0.3 * torch.randn(n, FEAT_DIM, generator=g, dtype=torch.float64)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        feats, phones = self.items[i]
        if self.fault != "dtype-mismatch":
            feats = feats.float()
        return {"id": i, "source": feats, "target": torch.tensor(phones, dtype=torch.long)}


def collater(samples: list[dict]) -> dict:
    """Pad the features (B, T, C) and the targets (B, S) with their lengths, as fairseq's collater."""
    lengths = torch.tensor([s["source"].size(0) for s in samples])
    t_lengths = torch.tensor([s["target"].numel() for s in samples])
    src = samples[0]["source"].new_zeros(len(samples), int(lengths.max()), FEAT_DIM)
    tgt = torch.full((len(samples), int(t_lengths.max())), -1, dtype=torch.long)
    for i, s in enumerate(samples):
        src[i, : s["source"].size(0)] = s["source"]
        tgt[i, : s["target"].numel()] = s["target"]
    return {
        "id": torch.tensor([s["id"] for s in samples]),
        "nsentences": len(samples),
        "ntokens": int(t_lengths.sum()),
        "net_input": {"src_tokens": src, "src_lengths": lengths},
        "target": tgt,
        "target_lengths": t_lengths,
    }


# ----------------------------------------------------------------------------- model


class Conv1dSubsampler(nn.Module):
    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, kernel_size: int = 5):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels * 2, kernel_size, padding=kernel_size // 2)
        self.mid_channels = mid_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C) -> (B, T, C')
        x = self.conv(x.transpose(1, 2))
        return F.glu(x, dim=1).transpose(1, 2)


class GRUCTCEncoder(nn.Module):
    def __init__(self, args: argparse.Namespace, n_out: int):
        super().__init__()
        self.subsample = Conv1dSubsampler(FEAT_DIM, args.conv_channels, args.encoder_embed_dim)
        self.dropout_module = nn.Dropout(args.dropout)
        self.rnn = nn.GRU(
            args.encoder_embed_dim,
            args.encoder_hidden_size,
            num_layers=args.encoder_layers,
            bidirectional=True,
            dropout=args.dropout,
        )
        self.ctc_proj = nn.Linear(2 * args.encoder_hidden_size, n_out)

    def forward(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor) -> dict:
        x = self.dropout_module(self.subsample(src_tokens)).transpose(0, 1)  # T x B x C
        packed = nn.utils.rnn.pack_padded_sequence(x, src_lengths, enforce_sorted=False)
        out, _ = self.rnn(packed)
        x, _ = nn.utils.rnn.pad_packed_sequence(out, total_length=src_tokens.size(1))
        x = self.ctc_proj(self.dropout_module(x))
        padding_mask = torch.arange(src_tokens.size(1))[None, :] >= src_lengths[:, None]
        return {"encoder_out": x, "padding_mask": padding_mask, "lengths": src_lengths}


class SpeechCTCModel(nn.Module):
    def __init__(self, encoder: GRUCTCEncoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, src_tokens, src_lengths) -> dict:
        return self.encoder(src_tokens, src_lengths)

    def get_normalized_probs(self, net_output: dict, log_probs: bool, fault: str) -> torch.Tensor:
        logits = net_output["encoder_out"]  # T x B x V
        dim = 0 if fault == "wrong-softmax-dim" else -1
        return F.log_softmax(logits.float(), dim=dim) if log_probs else F.softmax(logits.float(), dim=dim)


# ----------------------------------------------------------------------------- criterion


def ctc_criterion(model: SpeechCTCModel, sample: dict, fault: str, reduce_for_log: bool = True):
    """fairseq's CtcCriterion: summed CTC loss, sample_size = ntokens, and a logging output."""
    net_output = model(**sample["net_input"])
    if fault == "detached-graph":
        net_output["encoder_out"] = net_output["encoder_out"].detach()
    lprobs = model.get_normalized_probs(net_output, log_probs=True, fault=fault).contiguous()
    input_lengths = net_output["lengths"]
    pad_mask = sample["target"] >= 0
    targets_flat = sample["target"].masked_select(pad_mask)
    target_lengths = pad_mask.sum(-1)
    with torch.backends.cudnn.flags(enabled=False):
        loss = F.ctc_loss(
            lprobs,
            targets_flat,
            input_lengths,
            target_lengths,
            blank=BLANK,
            reduction="mean" if fault == "wrong-loss-reduction" else "sum",
            zero_infinity=True,
        )
    ntokens = sample["ntokens"]
    logging_output = {
        "loss": loss if fault == "loss-tensor-leak" else loss.item(),
        "ntokens": ntokens,
        "nsentences": sample["nsentences"],
        "sample_size": ntokens,
    }
    if not model.training:
        logging_output.update(greedy_errors(lprobs, input_lengths, sample["target"]))
    return loss, ntokens, logging_output


def edit_distance(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def to_words(units: list[int]) -> list[str]:
    """The transcript's words are pairs of phones ("aa-b d-eh f")."""
    return ["-".join(PHONES[u - 1] for u in units[i : i + 2]) for i in range(0, len(units), 2)]


def greedy_errors(lprobs: torch.Tensor, input_lengths: torch.Tensor, target: torch.Tensor) -> dict:
    best = lprobs.argmax(-1).transpose(0, 1)  # B x T
    c_err = c_len = w_err = w_len = 0
    for b in range(best.size(0)):
        toks = best[b, : int(input_lengths[b])].unique_consecutive().tolist()
        hyp = [t for t in toks if t != BLANK]
        ref = [t for t in target[b].tolist() if t >= 0]
        c_err += edit_distance(hyp, ref)
        c_len += len(ref)
        w_err += edit_distance(to_words(hyp), to_words(ref))
        w_len += len(to_words(ref))
    return {"c_errors": c_err, "c_total": c_len, "w_errors": w_err, "w_total": w_len}


# ----------------------------------------------------------------------------- logging helpers


def fmt(v) -> str:
    if isinstance(v, float):
        v = round(v, 3)
        return f"{v:g}" if abs(v) < 1e5 else f"{v:.4g}"
    return str(v)


class Meters:
    def __init__(self):
        self.sums: dict = {}
        self.n_updates = 0
        self.n_clipped = 0
        self.gnorm = 0.0
        self.start = time.time()

    def add(self, logging_output: dict) -> None:
        for k, v in logging_output.items():
            self.sums[k] = self.sums.get(k, 0) + v


# ----------------------------------------------------------------------------- training


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fault = a.fault
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)

    args = argparse.Namespace(
        no_progress_bar=False,
        log_interval=16,
        log_format="simple",
        seed=a.seed,
        cpu=True,
        fp16=False,
        task="speech_recognition",
        data="data/synthetic-phones",
        train_subset="train",
        valid_subset="valid",
        max_sentences=8,
        batch_size_valid=64,
        update_freq=[2],
        max_epoch=10,
        arch="gru_ctc_tiny",
        conv_channels=64,
        encoder_embed_dim=64,
        encoder_hidden_size=64,
        encoder_layers=2,
        dropout=0.1,
        criterion="ctc",
        zero_infinity=True,
        optimizer="adam",
        adam_betas="(0.9, 0.98)",
        adam_eps=1e-08,
        weight_decay=0.0,
        lr=[0.0005],
        lr_scheduler="inverse_sqrt",
        warmup_updates=64,
        warmup_init_lr=1e-07,
        clip_norm=10.0,
        best_checkpoint_metric="uer",
        save_dir="checkpoints",
    )
    logger.info(args)

    g = torch.Generator().manual_seed(4321 + a.seed)
    protos = torch.randn(len(PHONES) + 1, FEAT_DIM, generator=g, dtype=torch.float64)
    drift = 0.5 * torch.randn(len(PHONES) + 1, FEAT_DIM, generator=g, dtype=torch.float64)
    train = SyntheticSpeech(896, g, protos, drift, fault)
    valid = SyntheticSpeech(128, g, protos, drift, fault)
    # the manifest was written sorted by the number of frames
    train.items.sort(key=lambda item: item[0].size(0))
    dlog = logging.getLogger("fairseq.data.audio.speech_to_text_dataset")
    for split, ds in (("valid", valid), ("train", train)):
        dlog.info(f'SpeechToTextDataset(split="{split}", n_samples={len(ds):_}, prepend_tgt_lang_tag=False, ...)')
    logging.getLogger("fairseq.tasks.speech_recognition").info(f"dictionary: {len(PHONES) + 1} types")

    model = SpeechCTCModel(GRUCTCEncoder(args, len(PHONES) + 1))
    if fault == "frozen-parameters":
        # the acoustic front end and the recurrent layers are kept as pretrained; only the CTC head is tuned
        for q in model.encoder.subsample.parameters():
            q.requires_grad = False
        for q in model.encoder.rnn.parameters():
            q.requires_grad = False
    logger.info(model)
    logger.info("task: SpeechRecognitionTask")
    logger.info(f"model: {type(model).__name__}")
    logger.info("criterion: CtcCriterion")
    n_params = sum(q.numel() for q in model.parameters())
    n_trained = sum(q.numel() for q in model.parameters() if q.requires_grad)
    logger.info(f"num. model params: {n_params:,} (num. trained: {n_trained:,})")
    trlog = logging.getLogger("fairseq.trainer")
    trlog.info("detected shared parameter: none")
    logger.info("training on 1 devices (CPU)")
    logger.info(f"max tokens per device = None and max sentences per device = {args.max_sentences}")
    trlog.info(f"Preparing to load checkpoint {args.save_dir}/checkpoint_last.pt")
    trlog.info(f"No existing checkpoint found {args.save_dir}/checkpoint_last.pt")
    trlog.info("loading train data for epoch 1")

    params = [q for q in model.parameters() if q.requires_grad]
    lr = args.lr[0]
    if fault == "lr-too-high":
        lr = args.lr[0] * 100
    optimizer = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=args.adam_eps, weight_decay=args.weight_decay)
    warmup, init_lr = args.warmup_updates, args.warmup_init_lr

    def inverse_sqrt(num_updates: int) -> float:
        if num_updates < warmup:
            return (init_lr + num_updates * (lr - init_lr) / warmup) / lr
        return math.sqrt(warmup) / math.sqrt(num_updates)

    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, inverse_sqrt)

    train_loader = DataLoader(
        train, batch_size=args.max_sentences, shuffle=fault != "no-shuffle", collate_fn=collater, drop_last=True
    )
    valid_loader = DataLoader(valid, batch_size=args.batch_size_valid, shuffle=False, collate_fn=collater)
    update_freq = args.update_freq[0]
    n_updates_epoch = len(train_loader) // update_freq

    def validate(epoch: int, num_updates: int, best: list) -> float:
        if fault != "missing-eval-mode":
            model.eval()
        m = Meters()
        with torch.no_grad():
            for sample in valid_loader:
                _, _, log_out = ctc_criterion(model, sample, fault)
                m.add(log_out)
        if fault != "missing-train-mode":
            model.train()
        s = m.sums
        wall = time.time() - m.start
        uer = 100.0 * s["c_errors"] / s["c_total"]
        wer = 100.0 * s["w_errors"] / s["w_total"]
        best.append(uer)
        logging.getLogger("valid").info(
            f"epoch {epoch:03d} | valid on 'valid' subset | loss {fmt(float(s['loss']) / s['ntokens'] / math.log(2))}"
            f" | uer {fmt(uer)} | wer {fmt(wer)} | raw_wer {fmt(wer)} | ntokens {s['ntokens']}"
            f" | nsentences {s['nsentences']} | wps {fmt(s['ntokens'] / max(wall, 1e-6))}"
            f" | wpb {fmt(s['ntokens'] / len(valid_loader))} | bsz {fmt(s['nsentences'] / len(valid_loader))}"
            f" | num_updates {num_updates} | best_uer {fmt(min(best))}"
        )
        return uer

    def stats(m: Meters, elapsed: float) -> dict:
        s, n = m.sums, max(m.n_updates, 1)
        return {
            "loss": fmt(float(s["loss"]) / s["sample_size"] / math.log(2)),
            "ntokens": fmt(s["ntokens"] / n),
            "nsentences": fmt(s["nsentences"] / n),
            "wps": fmt(s["ntokens"] / max(elapsed, 1e-6)),
            "ups": fmt(m.n_updates / max(elapsed, 1e-6)),
            "wpb": fmt(s["ntokens"] / n),
            "bsz": fmt(s["nsentences"] / n),
        }

    model.train()
    start = time.time()
    train_wall = 0.0
    num_updates = 0
    best: list = []
    uer = 100.0
    for epoch in range(1, args.max_epoch + 1):
        logger.info(f"begin training epoch {epoch}")
        logger.info("Start iterating over samples")
        epoch_m, inner_m = Meters(), Meters()
        itr = iter(train_loader)
        for i in range(n_updates_epoch):
            t0 = time.time()
            samples = [next(itr) for _ in range(update_freq)]
            # ---- trainer.train_step
            if fault != "missing-zero-grad":
                optimizer.zero_grad()
            logging_outputs, sample_size = [], 0
            for sample in samples:
                loss, ss, log_out = ctc_criterion(model, sample, fault)
                if fault != "missing-backward":
                    loss.backward()
                logging_outputs.append(log_out)
                sample_size += ss
                if fault == "scheduler-step-misaligned":
                    lr_scheduler.step()
            for q in params:  # fairseq's optimizer.multiply_grads(1 / sample_size)
                if q.grad is not None:
                    q.grad.mul_(1.0 / sample_size)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, args.clip_norm)
            if not torch.isfinite(grad_norm).all():
                raise FloatingPointError("gradients are Nan/Inf")
            if fault != "missing-optimizer-step":
                optimizer.step()
            num_updates += 1
            if fault != "scheduler-step-misaligned":
                lr_scheduler.step()
            train_wall += time.time() - t0
            for m in (epoch_m, inner_m):
                for log_out in logging_outputs:
                    m.add(log_out)
                m.n_updates += 1
                m.gnorm += float(grad_norm)
                m.n_clipped += int(float(grad_norm) > args.clip_norm)
            if num_updates % args.log_interval == 0:
                st = stats(inner_m, time.time() - inner_m.start)
                n = inner_m.n_updates
                logging.getLogger("train_inner").info(
                    f"epoch {epoch:03d}: {i + 1:6d} / {n_updates_epoch} loss={st['loss']}, ntokens={st['ntokens']}, "
                    f"nsentences={st['nsentences']}, wps={st['wps']}, ups={st['ups']}, wpb={st['wpb']}, "
                    f"bsz={st['bsz']}, num_updates={num_updates}, lr={optimizer.param_groups[0]['lr']:.4g}, "
                    f"gnorm={fmt(inner_m.gnorm / n)}, clip={fmt(100.0 * inner_m.n_clipped / n)}, loss_scale=None, "
                    f"train_wall={train_wall:.0f}, wall={time.time() - start:.0f}"
                )
                inner_m = Meters()
        logger.info(f"end of epoch {epoch} (average epoch stats below)")
        uer = validate(epoch, num_updates, best)
        ck = logging.getLogger("fairseq.checkpoint_utils")
        ck.info(
            f"Saved checkpoint {args.save_dir}/checkpoint{epoch}.pt (epoch {epoch} @ {num_updates} updates, "
            f"score {fmt(uer)}) (writing took 0.0{epoch % 7 + 1} seconds)"
        )
        st = stats(epoch_m, time.time() - epoch_m.start)
        n = epoch_m.n_updates
        logging.getLogger("train").info(
            f"epoch {epoch:03d} | loss {st['loss']} | wps {st['wps']} | ups {st['ups']} | wpb {st['wpb']} | "
            f"bsz {st['bsz']} | num_updates {num_updates} | lr {optimizer.param_groups[0]['lr']:.4g} | "
            f"gnorm {fmt(epoch_m.gnorm / n)} | clip {fmt(100.0 * epoch_m.n_clipped / n)} | "
            f"train_wall {train_wall:.0f} | wall {time.time() - start:.0f}"
        )
    logger.info(f"done training in {time.time() - start:.1f} seconds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
