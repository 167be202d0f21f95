"""Program 15 (written for issue 9's fresh program 15 without reading triage's rules): seq2seq.

Sequence-to-sequence translation, where the programs before it classify, reconstruct or forecast:
a tiny pre-norm Transformer encoder-decoder (two layers each, four heads, d_model 64, dropout 0.1)
trained with teacher forcing on a synthetic toy "language pair": the target sentence is the source
sentence reversed, each word mapped through a fixed bilingual dictionary, with an occasional word
that the dictionary renders as two target words. Sentences have 3 to 14 words and are padded per
batch; BOS/EOS on the target side; the padding is masked in attention and in the loss
(ignore_index). The training corpus is stored sorted by source length, as translation corpora often
are. Adam (betas 0.9, 0.998), the Noam schedule (linear warm-up, then inverse square root) stepped
on every optimizer step, label smoothing 0.1, loss normalised by the target tokens, gradient
accumulation over two micro-batches, clipping by norm. Teacher-forced validation on a held-out
split every 100 steps. It logs as OpenNMT-py's `onmt_train` does (OpenNMT itself is not used):

    [2026-11-27 10:00:01,123 INFO] Building model...
    [2026-11-27 10:00:01,143 INFO] * number of parameters: 172312
    [2026-11-27 10:00:01,345 INFO] Start training loop and validate every 100 steps...
    [2026-11-27 10:00:03,188 INFO] Step   25/  600; acc:  7.47; ppl:   34.47; xent: 3.54; lr: 0.00078; sents:  1200;
        bsz:  204/ 259/ 24; 3596/4556 tok/s;      3 sec   (one line in the log)
    [2026-11-27 10:00:09,959 INFO] Validation perplexity: 7.0521
    [2026-11-27 10:00:09,959 INFO] Validation accuracy: 42.0851

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

UNK, PAD, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<unk>", "<blank>", "<s>", "</s>"]
N_WORDS = 20
SRC_WORDS = [f"{c}{v}" for c in "bdkmnpst" for v in "aiu"][:N_WORDS]
TGT_WORDS = [f"{v}{c}" for c in "fghlrvwz" for v in "eoy"][:N_WORDS]
MIN_LEN, MAX_LEN = 3, 14

logger = logging.getLogger("onmt")


def init_logger() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(asctime)s %(levelname)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


# ----------------------------------------------------------------------------- data


def make_corpus(n: int, g: torch.Generator, dictionary: list[int], compound: set[int]) -> list[tuple[list, list]]:
    """Source sentences and their translations: reversed, word by word through the dictionary."""
    pairs = []
    for _ in range(n):
        length = int(torch.randint(MIN_LEN, MAX_LEN + 1, (1,), generator=g))
        src = [4 + int(w) for w in torch.randint(0, N_WORDS, (length,), generator=g)]
        tgt = []
        for w in reversed(src):
            tgt.append(4 + dictionary[w - 4])
            if w - 4 in compound:  # the dictionary renders this word as two target words
                tgt.append(4 + dictionary[(w - 4 + 7) % N_WORDS])
        pairs.append((src, tgt))
    return pairs


def collate(pairs: list[tuple[list, list]]) -> dict:
    """Pad a batch: src (B, S), tgt_in <s> w1 .. wn (B, T), tgt_out w1 .. wn </s> (B, T)."""
    s_len = max(len(s) for s, _ in pairs)
    t_len = max(len(t) for _, t in pairs) + 1
    src = torch.full((len(pairs), s_len), PAD, dtype=torch.long)
    tgt_in = torch.full((len(pairs), t_len), PAD, dtype=torch.long)
    tgt_out = torch.full((len(pairs), t_len), PAD, dtype=torch.long)
    for i, (s, t) in enumerate(pairs):
        src[i, : len(s)] = torch.tensor(s)
        tgt_in[i, : len(t) + 1] = torch.tensor([BOS] + t)
        tgt_out[i, : len(t) + 1] = torch.tensor(t + [EOS])
    return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out}


# ----------------------------------------------------------------------------- model


class PositionalEncoding(nn.Module):
    def __init__(self, dim: int, dropout: float, max_len: int = 64) -> None:
        super().__init__()
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, dim, 2).float() * -(math.log(10000.0) / dim))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.dropout = nn.Dropout(p=dropout)
        self.dim = dim

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        emb = emb * math.sqrt(self.dim)
        return self.dropout(emb + self.pe[:, : emb.size(1)])


class Embeddings(nn.Module):
    def __init__(self, dim: int, vocab_size: int, dropout: float) -> None:
        super().__init__()
        self.make_embedding = nn.ModuleDict(
            {"emb_luts": nn.Embedding(vocab_size, dim, padding_idx=PAD), "pe": PositionalEncoding(dim, dropout)}
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.make_embedding["pe"](self.make_embedding["emb_luts"](ids))


class MultiHeadedAttention(nn.Module):
    def __init__(self, head_count: int, model_dim: int, dropout: float, fault: str) -> None:
        super().__init__()
        self.head_count, self.dim_per_head = head_count, model_dim // head_count
        self.linear_keys = nn.Linear(model_dim, model_dim)
        self.linear_values = nn.Linear(model_dim, model_dim)
        self.linear_query = nn.Linear(model_dim, model_dim)
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.final_linear = nn.Linear(model_dim, model_dim)
        self.fault = fault

    def forward(self, key: torch.Tensor, value: torch.Tensor, query: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, h, d = key.size(0), self.head_count, self.dim_per_head

        def shape(x: torch.Tensor) -> torch.Tensor:
            return x.view(b, -1, h, d).transpose(1, 2)

        k, v = shape(self.linear_keys(key)), shape(self.linear_values(value))
        q = shape(self.linear_query(query)) / math.sqrt(d)
        scores = torch.matmul(q, k.transpose(2, 3)).float()  # (B, H, Lq, Lk)
        # mask: (B, 1, Lk) padding or (B, Lq, Lk) padding + future, True where not allowed
        if self.fault != "missing-attention-mask":
            scores = scores.masked_fill(mask.unsqueeze(1), -1e18)
        attn = self.dropout(self.softmax(scores))
        context = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, -1, h * d)
        return self.final_linear(context)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout_1 = nn.Dropout(dropout)
        self.relu = nn.ReLU()
        self.dropout_2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inter = self.dropout_1(self.relu(self.w_1(self.layer_norm(x))))
        return self.dropout_2(self.w_2(inter)) + x


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float, fault: str) -> None:
        super().__init__()
        self.self_attn = MultiHeadedAttention(heads, d_model, dropout, fault)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x_norm = self.layer_norm(x)
        context = self.self_attn(x_norm, x_norm, x_norm, mask)
        return self.feed_forward(self.dropout(context) + x)


class TransformerEncoder(nn.Module):
    def __init__(self, layers: int, d_model: int, heads: int, d_ff: int, dropout: float, emb: Embeddings, fault: str):
        super().__init__()
        self.embeddings = emb
        self.transformer = nn.ModuleList(
            [TransformerEncoderLayer(d_model, heads, d_ff, dropout, fault) for _ in range(layers)]
        )
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.embeddings(src)
        mask = src.eq(PAD).unsqueeze(1)  # (B, 1, S)
        for layer in self.transformer:
            out = layer(out, mask)
        return self.layer_norm(out), mask


class TransformerDecoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float, fault: str) -> None:
        super().__init__()
        self.self_attn = MultiHeadedAttention(heads, d_model, dropout, fault)
        self.context_attn = MultiHeadedAttention(heads, d_model, dropout, fault)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.layer_norm_1 = nn.LayerNorm(d_model, eps=1e-6)
        self.layer_norm_2 = nn.LayerNorm(d_model, eps=1e-6)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor, dec_mask: torch.Tensor):
        x_norm = self.layer_norm_1(x)
        query = self.drop(self.self_attn(x_norm, x_norm, x_norm, dec_mask)) + x
        query_norm = self.layer_norm_2(query)
        mid = self.drop(self.context_attn(memory, memory, query_norm, src_mask)) + query
        return self.feed_forward(mid)


class TransformerDecoder(nn.Module):
    def __init__(self, layers: int, d_model: int, heads: int, d_ff: int, dropout: float, emb: Embeddings, fault: str):
        super().__init__()
        self.embeddings = emb
        self.transformer_layers = nn.ModuleList(
            [TransformerDecoderLayer(d_model, heads, d_ff, dropout, fault) for _ in range(layers)]
        )
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        out = self.embeddings(tgt)
        t = tgt.size(1)
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        dec_mask = tgt.eq(PAD).unsqueeze(1) | future.unsqueeze(0)  # (B, T, T)
        for layer in self.transformer_layers:
            out = layer(out, memory, src_mask, dec_mask)
        return self.layer_norm(out)


class NMTModel(nn.Module):
    def __init__(self, encoder: TransformerEncoder, decoder: TransformerDecoder) -> None:
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        memory, src_mask = self.encoder(src)
        return self.decoder(tgt_in, memory, src_mask)


def build_model(opt: dict, src_vocab: list, tgt_vocab: list, fault: str) -> NMTModel:
    d, drop = opt["hidden_size"], opt["dropout"]
    enc = TransformerEncoder(
        opt["enc_layers"], d, opt["heads"], opt["transformer_ff"], drop, Embeddings(d, len(src_vocab), drop), fault
    )
    dec = TransformerDecoder(
        opt["dec_layers"], d, opt["heads"], opt["transformer_ff"], drop, Embeddings(d, len(tgt_vocab), drop), fault
    )
    model = NMTModel(enc, dec)
    n_out = len(tgt_vocab)
    if fault == "label-out-of-range":
        n_out = len(TGT_WORDS)
    softmax_dim = 0 if fault == "wrong-softmax-dim" else -1
    model.generator = nn.Sequential(nn.Linear(d, n_out), nn.LogSoftmax(dim=softmax_dim))
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    with torch.no_grad():
        enc.embeddings.make_embedding["emb_luts"].weight[PAD].zero_()
        dec.embeddings.make_embedding["emb_luts"].weight[PAD].zero_()
    if fault == "frozen-parameters":
        # kept fixed from the pretrained checkpoint recipe; only the encoder is adapted
        for p in model.decoder.parameters():
            p.requires_grad = False
        for p in model.generator.parameters():
            p.requires_grad = False
    return model


# ----------------------------------------------------------------------------- statistics


class Statistics:
    """Running totals as onmt.utils.Statistics keeps them."""

    def __init__(self, loss=0.0, n_words: int = 0, n_correct: int = 0, n_sents: int = 0, n_src: int = 0):
        self.loss, self.n_words, self.n_correct = loss, n_words, n_correct
        self.n_sents, self.n_src_words, self.n_batchs = n_sents, n_src, 0 if n_sents == 0 else 1
        self.start_time = time.time()

    def update(self, stat: Statistics) -> None:
        self.loss += stat.loss
        self.n_words += stat.n_words
        self.n_correct += stat.n_correct
        self.n_sents += stat.n_sents
        self.n_src_words += stat.n_src_words
        self.n_batchs += stat.n_batchs

    def accuracy(self) -> float:
        return 100 * (self.n_correct / self.n_words)

    def xent(self) -> float:
        return self.loss / self.n_words

    def ppl(self) -> float:
        return math.exp(min(self.loss / self.n_words, 100))

    def output(self, step: int, num_steps: int, learning_rate: float, start: float) -> None:
        t = time.time() - self.start_time
        logger.info(
            f"Step {step:4d}/{num_steps:5d}; acc: {self.accuracy():5.2f}; ppl: {self.ppl():7.2f}; "
            f"xent: {self.xent():4.2f}; lr: {learning_rate:7.5f}; sents: {self.n_sents:5d}; "
            f"bsz: {self.n_src_words / self.n_batchs:4.0f}/{self.n_words / self.n_batchs:4.0f}/"
            f"{self.n_sents / self.n_batchs:3.0f}; "
            f"{self.n_src_words / (t + 1e-5):3.0f}/{self.n_words / (t + 1e-5):3.0f} tok/s; "
            f"{time.time() - start:6.0f} sec"
        )


def compute_loss(model: NMTModel, batch: dict, dec_out: torch.Tensor, smoothing: float, fault: str):
    """Label-smoothed NLL summed over the non-padding target tokens, and its statistics."""
    if fault == "detached-graph":
        dec_out = dec_out.detach()
    logp = model.generator(dec_out.reshape(-1, dec_out.size(-1)))
    gold = batch["tgt_out"].reshape(-1)
    non_pad = gold.ne(PAD)
    nll = F.nll_loss(logp, gold, ignore_index=PAD, reduction="sum")
    uniform = -(logp.sum(dim=-1) / logp.size(-1)).masked_select(non_pad).sum()
    loss = (1.0 - smoothing) * nll + smoothing * uniform
    pred = logp.argmax(dim=-1)
    n_correct = int(pred.eq(gold).masked_select(non_pad).sum())
    n_src = int(batch["src"].ne(PAD).sum())
    stats = Statistics(
        loss if fault == "loss-tensor-leak" else loss.item(),
        int(non_pad.sum()),
        n_correct,
        batch["src"].size(0),
        n_src,
    )
    return loss, stats


# ----------------------------------------------------------------------------- training


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fault = a.fault
    init_logger()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)

    opt = dict(
        enc_layers=2,
        dec_layers=2,
        heads=4,
        hidden_size=64,
        transformer_ff=128,
        dropout=0.1,
        batch_size=24,
        accum_count=2,
        train_steps=600,
        valid_steps=100,
        report_every=25,
        save_checkpoint_steps=300,
        learning_rate=0.25,
        warmup_steps=100,
        adam_beta1=0.9,
        adam_beta2=0.998,
        label_smoothing=0.1,
        max_grad_norm=1.0,
    )
    corpus_seed = 1234 + a.seed
    g = torch.Generator().manual_seed(corpus_seed)
    dictionary = torch.randperm(N_WORDS, generator=g).tolist()
    compound = {int(w) for w in torch.randperm(N_WORDS, generator=g)[:3]}
    train = make_corpus(12000, g, dictionary, compound)
    valid = make_corpus(600, g, dictionary, compound)
    # the corpus was written out sorted by source length (as the toolkit's preprocessing left it)
    train.sort(key=lambda pair: len(pair[0]))

    logger.info("Missing transforms field for corpus_1 data, set to default: [].")
    logger.info("Missing transforms field for valid data, set to default: [].")
    logger.info("Parsed 2 corpora from -data.")
    logger.info("Get special vocabs from Transforms: {'src': [], 'tgt': []}.")
    logger.info("Loading vocab from text file...")
    src_vocab, tgt_vocab = SPECIALS + SRC_WORDS, SPECIALS + TGT_WORDS
    logger.info(f"Loaded src vocab has {len(SRC_WORDS)} tokens.")
    logger.info(f"Loaded tgt vocab has {len(TGT_WORDS)} tokens.")
    logger.info("Building model...")
    model = build_model(opt, src_vocab, tgt_vocab, fault)
    logger.info(model)
    n_params, enc, dec = 0, 0, 0
    trainable, non_trainable = {"torch.float32": 0}, {"torch.float32": 0}
    for name, param in model.named_parameters():
        n_params += param.nelement()
        if "encoder" in name:
            enc += param.nelement()
        else:
            dec += param.nelement()
        (trainable if param.requires_grad else non_trainable)["torch.float32"] += param.nelement()
    logger.info(f"encoder: {enc}")
    logger.info(f"decoder: {dec}")
    logger.info(f"* number of parameters: {n_params}")
    logger.info(f"Trainable parameters = {trainable}")
    logger.info(f"Non trainable parameters = {non_trainable}")
    logger.info(f" * src vocab size = {len(src_vocab)}")
    logger.info(f" * tgt vocab size = {len(tgt_vocab)}")

    params = [q for q in model.parameters() if q.requires_grad]
    lr = opt["learning_rate"]
    if fault == "lr-too-high":
        lr = opt["learning_rate"] * 100
    optimizer = torch.optim.Adam(params, lr=lr, betas=(opt["adam_beta1"], opt["adam_beta2"]), eps=1e-9)
    d_model, warmup = opt["hidden_size"], opt["warmup_steps"]

    def noam_decay(step: int) -> float:
        step = step + 1
        return d_model ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_decay)

    train_loader = DataLoader(
        train, batch_size=opt["batch_size"], shuffle=fault != "no-shuffle", collate_fn=collate, drop_last=True
    )
    valid_loader = DataLoader(valid, batch_size=opt["batch_size"] * 2, shuffle=False, collate_fn=collate)

    def train_batches():
        while True:  # the training iterator is infinite; steps, not epochs, end the run
            yield from train_loader

    def accum_batches(batches):
        bucket = []
        for batch in batches:
            bucket.append(batch)
            if len(bucket) == opt["accum_count"]:
                yield bucket
                bucket = []

    def validate() -> Statistics:
        if fault != "missing-eval-mode":
            model.eval()
        stats = Statistics()
        with torch.no_grad():
            for batch in valid_loader:
                dec_out = model(batch["src"], batch["tgt_in"])
                _, batch_stats = compute_loss(model, batch, dec_out, opt["label_smoothing"], fault)
                stats.update(batch_stats)
        if fault != "missing-train-mode":
            model.train()
        return stats

    logger.info("Starting training on CPU, could not use GPU.")
    logger.info(f"Start training loop and validate every {opt['valid_steps']} steps...")
    logger.info("Scoring with: TransformPipe()")
    model.train()
    total_stats, report_stats = Statistics(), Statistics()
    start = time.time()
    train_steps = opt["train_steps"]
    for i, batches in enumerate(accum_batches(train_batches())):
        step = i + 1
        normalization = sum(int(b["tgt_out"].ne(PAD).sum()) for b in batches)
        learning_rate = optimizer.param_groups[0]["lr"]
        if fault != "missing-zero-grad":
            optimizer.zero_grad()
        for batch in batches:
            dec_out = model(batch["src"], batch["tgt_in"])
            loss, batch_stats = compute_loss(model, batch, dec_out, opt["label_smoothing"], fault)
            if fault != "missing-backward":
                loss.div(float(normalization)).backward()
            total_stats.update(batch_stats)
            report_stats.update(batch_stats)
            if fault == "scheduler-step-misaligned":
                scheduler.step()
        torch.nn.utils.clip_grad_norm_(params, opt["max_grad_norm"])
        if fault != "missing-optimizer-step":
            optimizer.step()
        if fault != "scheduler-step-misaligned":
            scheduler.step()

        if step % opt["report_every"] == 0:
            report_stats.output(step, train_steps, learning_rate, start)
            report_stats = Statistics()
        if step % opt["valid_steps"] == 0:
            valid_stats = validate()
            logger.info(f"Validation perplexity: {valid_stats.ppl():g}")
            logger.info(f"Validation accuracy: {valid_stats.accuracy():g}")
        if step % opt["save_checkpoint_steps"] == 0:
            logger.info(f"Saving checkpoint models/toy_rev_step_{step}.pt")
        if step >= train_steps:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
