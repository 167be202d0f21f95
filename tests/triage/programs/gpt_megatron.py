"""GPT pretraining as Megatron-LM's `pretrain_gpt.py` does it, ported to run in one CPU process.

Causal language modelling, where the programs before it classify, translate or detect: a small
decoder-only transformer pretrained from scratch on a synthetic corpus. The corpus is 4,000
"documents" drawn from a topic grammar over a 320-word vocabulary: each document has one of 4
hidden topics, a topic-specific start word, and then follows that topic's own sparse transition
table (each word has 3 possible successors per topic, with skewed probabilities), so the next word
is fully predictable only once the topic has been inferred from the context (about 0.72 nats per
token with the topic known, about 2.09 from the previous word alone). The documents are stored as
int32 token ids, each ending in an end-of-document token (`NullTokenizer`: the EOD id is the
vocabulary size; the vocabulary is padded to a multiple of 128), split 90/8/2 into train,
validation and test by document, and packed as Megatron's `GPTDataset` packs them: the documents of
a split are shuffled and concatenated per epoch, cut into samples of `seq_length + 1` tokens, and
the samples shuffled; `get_batch` casts the tokens to int64 and shifts tokens and labels by one.

The model follows Megatron-core's GPTModel in its [s, b, h] layout: learned word and absolute
position embeddings with embedding dropout, 2 pre-LayerNorm transformer layers (fused QKV
projection, hand-written core attention: scaled `baddbmm`, the causal mask applied with
`masked_fill_(mask, -10000.0)` before the softmax, attention dropout; GELU MLP 128 -> 512 -> 128;
hidden dropout 0.1), a final LayerNorm and an output layer tied to the word embeddings. Weights
are drawn from N(0, 0.02), the output projections of each layer from N(0, 0.02 / sqrt(2 * layers)).
The loss is the per-token cross entropy averaged over the loss mask (`loss_func` asserts that it
is not NaN, as `--check-for-nan-in-loss-and-grad` does), divided by the number of micro-batches.

Training: 300 iterations of a global batch of 16 sequences of 64 tokens, built from 4 micro-batches
of 4 (gradient accumulation); Adam with decoupled weight decay (betas 0.9/0.95, eps 1e-8, weight
decay 0.1 on matrices and embeddings, none on biases and LayerNorm parameters); Megatron's
`OptimizerParamScheduler`: linear warm-up from 0 over 30 iterations to lr 3e-3, then cosine decay
to min lr 3e-4 at iteration 300, stepped once per iteration by the number of samples consumed;
gradients clipped at a global norm of 1.0 (the norm before clipping is logged); fp32, so the loss
scale is 1.0. Every 100 iterations, 10 validation iterations on held-out samples under
`model.eval()` and `torch.no_grad()`; at the end, the validation and the test sets.

It prints what Megatron-LM prints (stdout; `megatron.core` logging lines on stderr):

    ------------------------ arguments ------------------------
      accumulate_allreduce_grads_in_fp32 .............. False
      ...
      lr .............................................. 0.003
      ...
    -------------------- end of arguments ---------------------
    setting number of micro-batches to constant 4
    > building NullTokenizer tokenizer ...
     > padded vocab (size: 321) with 63 dummy tokens (new size: 384)
    ...
    building GPT model ...
     > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 454144
    [after model, optimizer, and learning rate scheduler are built] datetime: 2026-11-27 10:00:01
    ...
     [2026-11-27 10:00:03] iteration       10/     300 | consumed samples:          160 | elapsed time
        per iteration (ms): 92.7 | learning rate: 1.000000E-03 | global batch size:    16 | lm loss:
        5.826862E+00 | loss scale: 1.0 | grad norm: 1.197 | number of skipped iterations:   0 |
        number of nan iterations:   0 |   (one line in the log)
    ...
    (min, max) time across ranks (ms):
        evaluate .......................................: (150.12, 150.12)
    -----------------------------------------------------------------------------------------------
     validation loss at iteration 100 | lm loss value: 2.318613E+00 | lm loss PPL: 1.016157E+01 |
    -----------------------------------------------------------------------------------------------
    ...
    [after training is done] datetime: 2026-11-27 10:00:40
     validation loss at the end of training for val data | lm loss value: ... | lm loss PPL: ... |
     validation loss at the end of training for test data | lm loss value: ... | lm loss PPL: ... |
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import sys
import time
from datetime import datetime
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

logging.basicConfig(level=logging.INFO)  # megatron.core logs to stderr in the default format

FAULT = "healthy"
ARGS: argparse.Namespace | None = None


def get_args() -> argparse.Namespace:
    assert ARGS is not None
    return ARGS


def print_rank_0(message: str) -> None:
    print(message, flush=True)


print_rank_last = print_rank_0


def print_datetime(string: str) -> None:
    time_str = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print_rank_0(f"[{string}] datetime: {time_str} ")


# ----------------------------------------------------------------------------- timers


class Timers:
    def __init__(self):
        self._start: dict = {}
        self._elapsed: dict = {}

    def start(self, name: str) -> None:
        self._start[name] = time.time()

    def stop(self, name: str) -> None:
        self._elapsed[name] = self._elapsed.get(name, 0.0) + time.time() - self._start.pop(name)

    def elapsed(self, name: str, reset: bool = True) -> float:
        running = name in self._start
        if running:
            self.stop(name)
        value = self._elapsed.get(name, 0.0)
        if reset:
            self._elapsed[name] = 0.0
        if running:
            self.start(name)
        return value

    def log(self, names: list) -> None:
        out = "(min, max) time across ranks (ms):"
        for name in names:
            ms = self.elapsed(name) * 1000.0
            out += "\n    {}: ({:.2f}, {:.2f})".format((name + " ").ljust(48, "."), ms, ms)
        print_rank_last(out)


TIMERS = Timers()


# ----------------------------------------------------------------------------- arguments


def build_args(seed: int) -> argparse.Namespace:
    a = argparse.Namespace(
        accumulate_allreduce_grads_in_fp32=False,
        adam_beta1=0.9,
        adam_beta2=0.95,
        adam_eps=1e-08,
        add_bias_linear=True,
        add_position_embedding=True,
        apply_query_key_layer_scaling=False,
        apply_residual_connection_post_layernorm=False,
        attention_dropout=0.1,
        attention_softmax_in_fp32=False,
        barrier_with_L1_time=True,
        bf16=False,
        bias_dropout_fusion=False,
        bias_gelu_fusion=False,
        check_for_nan_in_loss_and_grad=True,
        clip_grad=1.0,
        consumed_train_samples=0,
        consumed_valid_samples=0,
        context_parallel_size=1,
        data_cache_path=None,
        data_parallel_size=1,
        data_path=["data/synthetic-topic-grammar_text_document"],
        dataloader_type="single",
        distributed_backend="gloo",
        end_weight_decay=0.1,
        eod_mask_loss=False,
        eval_interval=100,
        eval_iters=10,
        exit_on_missing_checkpoint=False,
        ffn_hidden_size=512,
        fp16=False,
        fp32_residual_connection=False,
        global_batch_size=16,
        gradient_accumulation_fusion=False,
        group_query_attention=False,
        hidden_dropout=0.1,
        hidden_size=128,
        hysteresis=2,
        init_method_std=0.02,
        initial_loss_scale=4294967296,
        iteration=0,
        kv_channels=32,
        layernorm_epsilon=1e-05,
        load="checkpoints/gpt-tiny",
        log_interval=10,
        log_num_zeros_in_grad=False,
        log_params_norm=False,
        log_throughput=False,
        loss_scale=None,
        loss_scale_window=1000,
        lr=0.003,
        lr_decay_iters=300,
        lr_decay_samples=None,
        lr_decay_style="cosine",
        lr_warmup_fraction=None,
        lr_warmup_init=0.0,
        lr_warmup_iters=30,
        lr_warmup_samples=0,
        make_vocab_size_divisible_by=128,
        masked_softmax_fusion=False,
        max_position_embeddings=64,
        micro_batch_size=4,
        min_loss_scale=1.0,
        min_lr=0.0003,
        mock_data=False,
        no_load_optim=None,
        no_load_rng=None,
        normalization="LayerNorm",
        num_attention_heads=4,
        num_layers=2,
        num_query_groups=4,
        num_workers=0,
        optimizer="adam",
        override_opt_param_scheduler=False,
        params_dtype=torch.float32,
        pipeline_model_parallel_size=1,
        position_embedding_type="learned_absolute",
        rank=0,
        recompute_granularity=None,
        reset_attention_mask=False,
        reset_position_ids=False,
        save=None,
        save_interval=None,
        seed=seed,
        seq_length=64,
        sequence_parallel=False,
        split="90,8,2",
        start_weight_decay=0.1,
        swiglu=False,
        tensor_model_parallel_size=1,
        timing_log_level=0,
        timing_log_option="minmax",
        tokenizer_type="NullTokenizer",
        train_iters=300,
        train_samples=None,
        transformer_impl="local",
        untie_embeddings_and_output_weights=False,
        use_checkpoint_opt_param_scheduler=False,
        use_cpu_initialization=True,
        use_distributed_optimizer=False,
        use_mcore_models=True,
        vocab_size=320,
        weight_decay=0.1,
        weight_decay_incr_style="constant",
        world_size=1,
    )
    return a


def _print_args(title: str, args: argparse.Namespace) -> None:
    print(f"------------------------ {title} ------------------------", flush=True)
    str_list = []
    for arg in vars(args):
        dots = "." * (48 - len(arg))
        str_list.append(f"  {arg} {dots} {getattr(args, arg)}")
    for arg in sorted(str_list, key=lambda x: x.lower()):
        print(arg, flush=True)
    print(f"-------------------- end of {title} ---------------------", flush=True)


# ----------------------------------------------------------------------------- tokenizer and data


class _NullTokenizer:
    def __init__(self, vocab_size: int):
        self._vocab_size_without_eod = int(vocab_size)
        self._eod_id = self._vocab_size_without_eod

    @property
    def vocab_size(self) -> int:
        return self._vocab_size_without_eod + 1

    @property
    def eod(self) -> int:
        return self._eod_id


def _vocab_size_with_padding(orig_vocab_size: int, args: argparse.Namespace) -> int:
    after = orig_vocab_size
    multiple = args.make_vocab_size_divisible_by * args.tensor_model_parallel_size
    while (after % multiple) != 0:
        after += 1
    print_rank_0(
        f" > padded vocab (size: {orig_vocab_size}) with {after - orig_vocab_size} dummy tokens (new size: {after})"
    )
    return after


def build_synthetic_corpus(n_docs: int, vocab: int, eod: int) -> list:
    """The corpus as preprocess_data.py would have left it: int32 documents, each ending in EOD."""
    g = torch.Generator().manual_seed(20240611)
    n_topics, fanout, n_starts = 4, 3, 16
    succ = torch.randint(0, vocab, (n_topics, vocab, fanout), generator=g)
    probs = torch.softmax(1.5 * torch.randn(n_topics, vocab, fanout, generator=g), dim=-1)
    starts = torch.randint(0, vocab, (n_topics, n_starts), generator=g)
    topic = torch.randint(0, n_topics, (n_docs,), generator=g)
    lengths = torch.randint(24, 161, (n_docs,), generator=g)
    max_len = int(lengths.max())
    toks = torch.empty(n_docs, max_len, dtype=torch.long)
    toks[:, 0] = starts[topic, torch.randint(0, n_starts, (n_docs,), generator=g)]
    for t in range(1, max_len):
        prev = toks[:, t - 1]
        choice = torch.multinomial(probs[topic, prev], 1, generator=g).squeeze(1)
        toks[:, t] = succ[topic, prev, choice]
    docs = []
    for i in range(n_docs):
        d = torch.cat([toks[i, : int(lengths[i])], torch.tensor([eod])])
        docs.append(d.to(torch.int32))
    return docs


class GPTDataset(torch.utils.data.Dataset):
    """Documents of one split, shuffled and concatenated per epoch, cut into seq_length + 1 samples."""

    def __init__(self, name: str, docs: list, num_samples: int, seq_length: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        tokens_per_epoch = sum(int(d.numel()) for d in docs)
        num_epochs = 1
        while (num_epochs * tokens_per_epoch - 1) // seq_length < num_samples:
            num_epochs += 1
        streams = []
        for _ in range(num_epochs):
            order = torch.randperm(len(docs), generator=g).tolist()
            streams.extend(docs[i] for i in order)
        stream = torch.cat(streams)
        n = (stream.numel() - 1) // seq_length
        self.samples = [stream[i * seq_length : i * seq_length + seq_length + 1] for i in range(n)]
        self.shuffle_idx = torch.randperm(n, generator=g).tolist()
        self.num_samples = num_samples
        log = logging.getLogger("megatron.core.datasets.gpt_dataset")
        log.info(f"Build and save the GPTDataset {name} indices")
        log.info(f"> total number of samples: {n}")
        log.info(f"> total number of epochs: {num_epochs}")

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, idx: int) -> dict:
        return {"text": self.samples[self.shuffle_idx[idx]]}


class MegatronPretrainingSampler:
    def __init__(self, total_samples: int, consumed_samples: int, micro_batch_size: int):
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size

    def __len__(self) -> int:
        return self.total_samples

    def __iter__(self):
        batch = []
        for idx in range(self.consumed_samples, self.total_samples):
            batch.append(idx)
            if len(batch) == self.micro_batch_size:
                yield batch
                batch = []


def build_pretraining_data_loader(dataset, consumed_samples: int):
    args = get_args()
    sampler = MegatronPretrainingSampler(len(dataset), consumed_samples, args.micro_batch_size)
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, num_workers=args.num_workers)


def get_ltor_masks_and_position_ids(data: torch.Tensor, eod_token: int, eod_mask_loss: bool):
    micro_batch_size, seq_length = data.size()
    attention_mask = torch.tril(torch.ones((1, seq_length, seq_length))).view(1, 1, seq_length, seq_length)
    loss_mask = torch.ones(data.size(), dtype=torch.float)
    if eod_mask_loss:
        loss_mask[data == eod_token] = 0.0
    position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0).expand_as(data)
    attention_mask = attention_mask < 0.5
    return attention_mask, loss_mask, position_ids


def get_batch(data_iterator):
    args = get_args()
    data = next(data_iterator)
    tokens_ = data["text"] if FAULT == "dtype-mismatch" else data["text"].long()
    labels = tokens_[:, 1:].contiguous()
    tokens = tokens_[:, :-1].contiguous()
    attention_mask, loss_mask, position_ids = get_ltor_masks_and_position_ids(
        tokens, args.eod_token, args.eod_mask_loss
    )
    return tokens, labels, loss_mask, attention_mask, position_ids


# ----------------------------------------------------------------------------- model


def init_method_normal(sigma: float):
    if FAULT == "bad-init":
        return partial(torch.nn.init.normal_, mean=0.0)
    return partial(torch.nn.init.normal_, mean=0.0, std=sigma)


def scaled_init_method_normal(sigma: float, num_layers: int):
    std = sigma / math.sqrt(2.0 * num_layers)
    return partial(torch.nn.init.normal_, mean=0.0, std=std)


@dataclasses.dataclass
class TransformerConfig:
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    ffn_hidden_size: int
    kv_channels: int
    hidden_dropout: float
    attention_dropout: float
    layernorm_epsilon: float
    init_method_std: float
    add_bias_linear: bool = True
    params_dtype: torch.dtype = torch.float32


def attention_mask_func(attention_scores: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    if FAULT != "missing-attention-mask":
        attention_scores.masked_fill_(attention_mask, -10000.0)
    return attention_scores


class ScaleMaskSoftmax(nn.Module):
    """FusedScaleMaskSoftmax's unfused path (the fused kernels are CUDA only)."""

    def __init__(self, mask_func, scale=None):
        super().__init__()
        self.mask_func = mask_func
        self.scale = scale

    def forward(self, input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.scale is not None:
            input = input * self.scale
        mask_output = self.mask_func(input, mask) if mask is not None else input
        dim = -2 if FAULT == "wrong-softmax-dim" else -1
        return torch.nn.Softmax(dim=dim)(mask_output)


class DotProductAttention(nn.Module):
    def __init__(self, config: TransformerConfig, layer_number: int):
        super().__init__()
        self.layer_number = max(1, layer_number)
        self.hidden_size_per_partition = config.kv_channels * config.num_attention_heads
        self.hidden_size_per_attention_head = config.kv_channels
        self.num_attention_heads_per_partition = config.num_attention_heads
        self.norm_factor = math.sqrt(self.hidden_size_per_attention_head)
        self.scale_mask_softmax = ScaleMaskSoftmax(attention_mask_func, scale=None)
        self.attention_dropout = nn.Dropout(config.attention_dropout)

    def forward(self, query, key, value, attention_mask):
        # query, key, value: [sq, b, np, hn]
        output_size = (query.size(1), query.size(2), query.size(0), key.size(0))
        query = query.reshape(output_size[2], output_size[0] * output_size[1], -1)
        key = key.reshape(output_size[3], output_size[0] * output_size[1], -1)
        matmul_input_buffer = torch.empty(
            output_size[0] * output_size[1], output_size[2], output_size[3], dtype=query.dtype
        )
        # raw attention scores: [b * np, sq, sk]
        matmul_result = torch.baddbmm(
            matmul_input_buffer,
            query.transpose(0, 1),
            key.transpose(0, 1).transpose(1, 2),
            beta=0.0,
            alpha=(1.0 / self.norm_factor),
        )
        attention_scores = matmul_result.view(*output_size)
        attention_probs = self.scale_mask_softmax(attention_scores, attention_mask)
        attention_probs = self.attention_dropout(attention_probs)
        # context: [b, np, sq, hn] -> [sq, b, hp]
        output_size = (value.size(1), value.size(2), query.size(0), value.size(3))
        value = value.view(value.size(0), output_size[0] * output_size[1], -1)
        attention_probs = attention_probs.view(output_size[0] * output_size[1], output_size[2], -1)
        context = torch.bmm(attention_probs, value.transpose(0, 1))
        context = context.view(*output_size).permute(2, 0, 1, 3).contiguous()
        return context.view(context.size(0), context.size(1), self.hidden_size_per_partition)


class SelfAttention(nn.Module):
    def __init__(self, config: TransformerConfig, layer_number: int, init_method, output_layer_init_method):
        super().__init__()
        self.config = config
        self.query_projection_size = config.kv_channels * config.num_attention_heads
        self.linear_qkv = nn.Linear(config.hidden_size, 3 * self.query_projection_size, bias=config.add_bias_linear)
        self.core_attention = DotProductAttention(config, layer_number)
        self.linear_proj = nn.Linear(self.query_projection_size, config.hidden_size, bias=config.add_bias_linear)
        init_method(self.linear_qkv.weight)
        output_layer_init_method(self.linear_proj.weight)
        nn.init.zeros_(self.linear_qkv.bias)
        nn.init.zeros_(self.linear_proj.bias)

    def forward(self, hidden_states, attention_mask):
        mixed_qkv = self.linear_qkv(hidden_states)  # [sq, b, 3 * hp]
        np_, hn = self.config.num_attention_heads, self.config.kv_channels
        mixed_qkv = mixed_qkv.view(*mixed_qkv.size()[:-1], np_, 3 * hn)
        query, key, value = torch.split(mixed_qkv, [hn, hn, hn], dim=3)
        core_attn_out = self.core_attention(query, key, value, attention_mask)
        return self.linear_proj(core_attn_out)


class MLP(nn.Module):
    def __init__(self, config: TransformerConfig, init_method, output_layer_init_method):
        super().__init__()
        self.linear_fc1 = nn.Linear(config.hidden_size, config.ffn_hidden_size, bias=config.add_bias_linear)
        if FAULT == "shape-mismatch":
            self.linear_fc2 = nn.Linear(config.hidden_size, config.ffn_hidden_size, bias=config.add_bias_linear)
        else:
            self.linear_fc2 = nn.Linear(config.ffn_hidden_size, config.hidden_size, bias=config.add_bias_linear)
        init_method(self.linear_fc1.weight)
        output_layer_init_method(self.linear_fc2.weight)
        nn.init.zeros_(self.linear_fc1.bias)
        nn.init.zeros_(self.linear_fc2.bias)

    def forward(self, hidden_states):
        intermediate = F.gelu(self.linear_fc1(hidden_states))
        return self.linear_fc2(intermediate)


class TransformerLayer(nn.Module):
    def __init__(self, config: TransformerConfig, layer_number: int, init_method, output_layer_init_method):
        super().__init__()
        self.layer_number = layer_number
        self.input_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layernorm_epsilon)
        self.self_attention = SelfAttention(config, layer_number, init_method, output_layer_init_method)
        self.pre_mlp_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layernorm_epsilon)
        self.mlp = MLP(config, init_method, output_layer_init_method)
        self.hidden_dropout = config.hidden_dropout

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        attention_output = self.self_attention(self.input_layernorm(hidden_states), attention_mask)
        hidden_states = residual + F.dropout(attention_output, p=self.hidden_dropout, training=self.training)
        residual = hidden_states
        mlp_output = self.mlp(self.pre_mlp_layernorm(hidden_states))
        return residual + F.dropout(mlp_output, p=self.hidden_dropout, training=self.training)


class TransformerBlock(nn.Module):
    def __init__(self, config: TransformerConfig, init_method, output_layer_init_method):
        super().__init__()
        self.layers = nn.ModuleList(
            [TransformerLayer(config, i + 1, init_method, output_layer_init_method) for i in range(config.num_layers)]
        )
        self.final_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layernorm_epsilon)

    def forward(self, hidden_states, attention_mask):
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask)
        return self.final_layernorm(hidden_states)


class LanguageModelEmbedding(nn.Module):
    def __init__(self, config: TransformerConfig, vocab_size: int, max_sequence_length: int, init_method):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(max_sequence_length, config.hidden_size)
        init_method(self.word_embeddings.weight)
        init_method(self.position_embeddings.weight)
        self.embedding_dropout = nn.Dropout(config.hidden_dropout)

    def forward(self, input_ids, position_ids):
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        embeddings = embeddings.transpose(0, 1).contiguous()  # [b, s, h] -> [s, b, h]
        return self.embedding_dropout(embeddings)


class GPTModel(nn.Module):
    def __init__(self, config: TransformerConfig, vocab_size: int, max_sequence_length: int):
        super().__init__()
        self.config = config
        self.vocab_size = vocab_size
        init_method = init_method_normal(config.init_method_std)
        output_layer_init_method = scaled_init_method_normal(config.init_method_std, config.num_layers)
        self.embedding = LanguageModelEmbedding(config, vocab_size, max_sequence_length, init_method)
        self.decoder = TransformerBlock(config, init_method, output_layer_init_method)
        self.share_embeddings_and_output_weights = True

    def shared_embedding_or_output_weight(self) -> torch.Tensor:
        return self.embedding.word_embeddings.weight

    def compute_language_model_loss(self, labels: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        # [b, s] -> [s, b]
        labels = labels.transpose(0, 1).contiguous()
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1), reduction="none")
        # [s, b] -> [b, s]
        return loss.view_as(labels).transpose(0, 1).contiguous()

    def forward(self, input_ids, position_ids, attention_mask, labels=None):
        decoder_input = self.embedding(input_ids=input_ids, position_ids=position_ids)
        hidden_states = self.decoder(decoder_input, attention_mask)
        logits = F.linear(hidden_states, self.shared_embedding_or_output_weight())  # [s, b, v]
        if labels is None:
            return logits.transpose(0, 1).contiguous()
        if FAULT == "detached-graph":
            logits = logits.detach()
        return self.compute_language_model_loss(labels, logits)


def model_provider() -> GPTModel:
    args = get_args()
    print_rank_0("building GPT model ...")
    config = TransformerConfig(
        num_layers=args.num_layers,
        hidden_size=args.hidden_size,
        num_attention_heads=args.num_attention_heads,
        ffn_hidden_size=args.ffn_hidden_size,
        kv_channels=args.kv_channels,
        hidden_dropout=args.hidden_dropout,
        attention_dropout=args.attention_dropout,
        layernorm_epsilon=args.layernorm_epsilon,
        init_method_std=args.init_method_std,
        add_bias_linear=args.add_bias_linear,
    )
    return GPTModel(config, vocab_size=args.padded_vocab_size, max_sequence_length=args.max_position_embeddings)


# ----------------------------------------------------------------------------- optimizer and schedule


@dataclasses.dataclass
class OptimizerConfig:
    optimizer: str = "adam"
    lr: float | None = None
    min_lr: float | None = None
    decoupled_lr: float | None = None
    decoupled_min_lr: float | None = None
    weight_decay: float = 0.01
    fp16: bool = False
    bf16: bool = False
    params_dtype: torch.dtype = torch.float32
    loss_scale: float | None = None
    initial_loss_scale: float = 2**32
    min_loss_scale: float = 1.0
    loss_scale_window: float = 1000
    hysteresis: int = 2
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-08
    sgd_momentum: float = 0.9
    use_distributed_optimizer: bool = False
    overlap_param_gather_with_optimizer_step: bool = False
    clip_grad: float = 1.0
    log_num_zeros_in_grad: bool = False
    barrier_with_L1_time: bool = True
    timers: object = None
    config_logger_dir: str = ""


def get_param_groups(model: nn.Module) -> list:
    """No weight decay for biases and 1-D parameters (LayerNorm), as Megatron's get_param_groups."""
    wd, no_wd = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if name.endswith(".bias") or len(param.shape) == 1:
            no_wd.append(param)
        else:
            wd.append(param)
    return [
        {"params": wd, "wd_mult": 1.0, "lr_mult": 1.0, "is_expert_parallel": False, "is_decoupled_lr": False},
        {"params": no_wd, "wd_mult": 0.0, "lr_mult": 1.0, "is_expert_parallel": False, "is_decoupled_lr": False},
    ]


def get_grad_norm_fp32(grads_for_norm: list) -> float:
    if not grads_for_norm:
        return 0.0
    total_norm = torch.zeros(1)
    for grad in grads_for_norm:
        total_norm += torch.linalg.vector_norm(grad.float()) ** 2.0
    return float(total_norm.item() ** 0.5)


def clip_grad_by_total_norm_fp32(parameters: list, max_norm: float, total_norm: float) -> None:
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    clip_coeff = max_norm / (total_norm + 1.0e-6)
    if clip_coeff < 1.0:
        for g in grads:
            g.mul_(clip_coeff)


class FP32Optimizer:
    """Megatron's float32 optimizer wrapper: no loss scaling, clipping by the global norm."""

    def __init__(self, optimizer: torch.optim.Optimizer, config: OptimizerConfig):
        self.optimizer = optimizer
        self.config = config
        self._scale = torch.tensor([1.0])

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def get_loss_scale(self) -> torch.Tensor:
        return self._scale

    def get_parameters(self) -> list:
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def clip_grad_norm(self, clip_grad: float) -> float:
        params = self.get_parameters()
        grads_for_norm = [p.grad for p in params if p.grad is not None]
        grad_norm = get_grad_norm_fp32(grads_for_norm)
        clip_grad_by_total_norm_fp32(params, clip_grad, grad_norm)
        return grad_norm

    @torch.no_grad()
    def step(self):
        grad_norm = None
        if self.config.clip_grad > 0.0:
            grad_norm = self.clip_grad_norm(self.config.clip_grad)
        num_zeros_in_grad = None
        if FAULT != "missing-optimizer-step":
            self.optimizer.step()
        return True, grad_norm, num_zeros_in_grad


def get_megatron_optimizer(config: OptimizerConfig, model: nn.Module) -> FP32Optimizer:
    logging.getLogger("megatron.core.optimizer").info(f"Setting up optimizer with config {config}")
    param_groups = get_param_groups(model)
    optimizer = torch.optim.AdamW(
        param_groups,
        lr=config.lr,
        weight_decay=config.weight_decay,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_eps,
    )
    return FP32Optimizer(optimizer, config)


class OptimizerParamScheduler:
    """Linear warm-up then cosine decay, counted in samples; weight decay held constant."""

    def __init__(
        self,
        optimizer,
        init_lr,
        max_lr,
        min_lr,
        lr_warmup_steps,
        lr_decay_steps,
        lr_decay_style,
        start_wd,
        end_wd,
        wd_incr_steps,
        wd_incr_style,
    ):
        self.optimizer = optimizer
        self.init_lr = init_lr
        self.max_lr = float(max_lr)
        self.min_lr = min_lr
        assert self.min_lr >= 0.0
        assert self.max_lr >= self.min_lr
        assert self.init_lr <= self.max_lr
        self.lr_warmup_steps = lr_warmup_steps
        self.num_steps = 0
        self.lr_decay_steps = lr_decay_steps
        assert self.lr_decay_steps > 0
        assert self.lr_warmup_steps < self.lr_decay_steps
        self.lr_decay_style = lr_decay_style
        self.start_wd = start_wd
        self.end_wd = end_wd
        self.wd_incr_steps = wd_incr_steps
        self.wd_incr_style = wd_incr_style
        self.step(0)
        logging.getLogger("megatron.core.optimizer_param_scheduler").info(
            f"> learning rate decay style: {self.lr_decay_style}"
        )

    def get_wd(self) -> float:
        if self.wd_incr_style == "constant":
            assert self.start_wd == self.end_wd
            return self.end_wd
        raise Exception(f"{self.wd_incr_style} weight decay increment style is not supported.")

    def get_lr(self) -> float:
        max_lr, min_lr = self.max_lr, self.min_lr
        if self.lr_warmup_steps > 0 and self.num_steps <= self.lr_warmup_steps:
            return self.init_lr + ((max_lr - self.init_lr) * float(self.num_steps) / float(self.lr_warmup_steps))
        if self.lr_decay_style == "constant":
            return max_lr
        if self.num_steps > self.lr_decay_steps:
            return min_lr
        num_steps_ = self.num_steps - self.lr_warmup_steps
        decay_steps_ = self.lr_decay_steps - self.lr_warmup_steps
        decay_ratio = float(num_steps_) / float(decay_steps_)
        assert 0.0 <= decay_ratio <= 1.0
        delta_lr = max_lr - min_lr
        if self.lr_decay_style == "linear":
            coeff = 1.0 - decay_ratio
        elif self.lr_decay_style == "cosine":
            coeff = 0.5 * (math.cos(math.pi * decay_ratio) + 1.0)
        else:
            raise Exception(f"{self.lr_decay_style} decay style is not supported.")
        return min_lr + coeff * delta_lr

    def step(self, increment: int) -> None:
        self.num_steps += increment
        new_lr = self.get_lr()
        new_wd = self.get_wd()
        for group in self.optimizer.param_groups:
            group["lr"] = new_lr * group.get("lr_mult", 1.0)
            group["weight_decay"] = new_wd * group.get("wd_mult", 1.0)


def get_optimizer_param_scheduler(optimizer) -> OptimizerParamScheduler:
    args = get_args()
    lr_decay_steps = args.lr_decay_iters * args.global_batch_size
    wd_incr_steps = args.train_iters * args.global_batch_size
    lr_warmup_steps = args.lr_warmup_iters * args.global_batch_size
    max_lr = args.lr * 100 if FAULT == "lr-too-high" else args.lr
    return OptimizerParamScheduler(
        optimizer,
        init_lr=args.lr_warmup_init,
        max_lr=max_lr,
        min_lr=args.min_lr,
        lr_warmup_steps=lr_warmup_steps,
        lr_decay_steps=lr_decay_steps,
        lr_decay_style=args.lr_decay_style,
        start_wd=args.start_weight_decay,
        end_wd=args.end_weight_decay,
        wd_incr_steps=wd_incr_steps,
        wd_incr_style=args.weight_decay_incr_style,
    )


# ----------------------------------------------------------------------------- forward / backward


def average_losses_across_data_parallel_group(losses: list) -> torch.Tensor:
    averaged_losses = torch.cat([loss.clone().detach().view(1) for loss in losses])
    return averaged_losses / get_args().data_parallel_size


def loss_func(loss_mask: torch.Tensor, output_tensor: torch.Tensor):
    args = get_args()
    losses = output_tensor.float()
    loss_mask = loss_mask.view(-1).float()
    if FAULT == "wrong-loss-reduction":
        loss = torch.sum(losses.view(-1) * loss_mask)
    else:
        loss = torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()

    # Check individual rank losses are not NaN prior to DP all-reduce.
    if args.check_for_nan_in_loss_and_grad:
        global_rank = args.rank
        assert not loss.isnan(), (
            f"Rank {global_rank}: found NaN in local forward loss calculation. Device: cpu, node: {os.uname()[1]}"
        )

    # Reduce loss for logging.
    averaged_loss = average_losses_across_data_parallel_group([loss])
    return loss, {"lm loss": averaged_loss[0]}


def forward_step(data_iterator, model: GPTModel):
    TIMERS.start("batch-generator")
    tokens, labels, loss_mask, attention_mask, position_ids = get_batch(data_iterator)
    TIMERS.stop("batch-generator")
    output_tensor = model(tokens, position_ids, attention_mask, labels=labels)
    return output_tensor, partial(loss_func, loss_mask)


def backward_step(output_tensor: torch.Tensor) -> None:
    if FAULT != "missing-backward":
        torch.autograd.backward(output_tensor, grad_tensors=None)


def get_num_microbatches() -> int:
    args = get_args()
    return args.global_batch_size // (args.micro_batch_size * args.data_parallel_size)


def train_step(data_iterator, model, optimizer, opt_param_scheduler):
    args = get_args()
    num_microbatches = get_num_microbatches()
    increment = num_microbatches * args.micro_batch_size * args.data_parallel_size

    # Set grad to zero.
    if FAULT != "missing-zero-grad":
        optimizer.zero_grad()

    # Forward and backward over the micro-batches (gradient accumulation).
    losses_reduced = []
    for _ in range(num_microbatches):
        output_tensor, loss_fn = forward_step(data_iterator, model)
        loss, loss_reduced = loss_fn(output_tensor)
        output_tensor = loss / num_microbatches
        losses_reduced.append(loss_reduced)
        backward_step(output_tensor)
        if FAULT == "scheduler-step-misaligned":
            opt_param_scheduler.step(increment=increment)

    # Update parameters.
    update_successful, grad_norm, num_zeros_in_grad = optimizer.step()

    # Update learning rate.
    if update_successful:
        if FAULT != "scheduler-step-misaligned":
            opt_param_scheduler.step(increment=increment)
        skipped_iter = 0
    else:
        skipped_iter = 1

    # Average loss across microbatches.
    loss_reduced = {}
    for key in losses_reduced[0]:
        losses_reduced_for_key = [x[key] for x in losses_reduced]
        loss_reduced[key] = sum(losses_reduced_for_key) / len(losses_reduced_for_key)
    return loss_reduced, skipped_iter, grad_norm, num_zeros_in_grad


def training_log(
    loss_dict,
    total_loss_dict,
    learning_rate,
    iteration,
    loss_scale,
    skipped_iter,
    grad_norm,
    params_norm,
    num_zeros_in_grad,
):
    args = get_args()
    advanced_iters_key = "advanced iterations"
    skipped_iters_key = "skipped iterations"
    nan_iters_key = "nan iterations"
    # Advanced iterations.
    if not skipped_iter:
        total_loss_dict[advanced_iters_key] = total_loss_dict.get(advanced_iters_key, 0) + 1
    else:
        if advanced_iters_key not in total_loss_dict:
            total_loss_dict[advanced_iters_key] = 0
    # Skipped iterations.
    total_loss_dict[skipped_iters_key] = total_loss_dict.get(skipped_iters_key, 0) + skipped_iter
    # Update losses and set nan iterations
    got_nan = False
    for key in loss_dict:
        if not skipped_iter:
            total_loss_dict[key] = total_loss_dict.get(key, torch.tensor([0.0], dtype=torch.float)) + loss_dict[key]
        else:
            value = loss_dict[key].float().sum().item()
            is_nan = value == float("inf") or value == -float("inf") or value != value
            got_nan = got_nan or is_nan
    total_loss_dict[nan_iters_key] = total_loss_dict.get(nan_iters_key, 0) + int(got_nan)

    batch_size = args.micro_batch_size * args.data_parallel_size * get_num_microbatches()
    total_iterations = total_loss_dict[advanced_iters_key] + total_loss_dict[skipped_iters_key]

    if iteration % args.log_interval == 0:
        elapsed_time = TIMERS.elapsed("interval-time")
        elapsed_time_per_iteration = elapsed_time / total_iterations
        log_string = f" [{datetime.now().strftime('%Y-%m-%d %H:%M:%S')}]"
        log_string += f" iteration {iteration:8d}/{args.train_iters:8d} |"
        log_string += f" consumed samples: {args.consumed_train_samples:12d} |"
        log_string += f" elapsed time per iteration (ms): {elapsed_time_per_iteration * 1000.0:.1f} |"
        log_string += f" learning rate: {learning_rate:.6E} |"
        log_string += f" global batch size: {batch_size:5d} |"
        for key in total_loss_dict:
            if key not in [advanced_iters_key, skipped_iters_key, nan_iters_key]:
                avg = total_loss_dict[key].item() / float(max(1, total_loss_dict[advanced_iters_key]))
                if avg > 0.0:
                    log_string += f" {key}: {avg:.6E} |"
                total_loss_dict[key] = torch.tensor([0.0], dtype=torch.float)
        log_string += f" loss scale: {loss_scale:.1f} |"
        if grad_norm is not None:
            log_string += f" grad norm: {grad_norm:.3f} |"
        if num_zeros_in_grad is not None:
            log_string += f" num zeros: {num_zeros_in_grad:.1f} |"
        if params_norm is not None:
            log_string += f" params norm: {params_norm:.3f} |"
        log_string += f" number of skipped iterations: {total_loss_dict[skipped_iters_key]:3d} |"
        log_string += f" number of nan iterations: {total_loss_dict[nan_iters_key]:3d} |"
        total_loss_dict[advanced_iters_key] = 0
        total_loss_dict[skipped_iters_key] = 0
        total_loss_dict[nan_iters_key] = 0
        print_rank_last(log_string)


def evaluate(data_iterator, model, verbose: bool = False) -> dict:
    args = get_args()
    TIMERS.start("evaluate")
    # Turn on evaluation mode which disables dropout.
    if FAULT != "missing-eval-mode":
        model.eval()
    total_loss_dict: dict = {}
    eval_batch_size = args.global_batch_size
    eval_num_microbatches = eval_batch_size // (args.micro_batch_size * args.data_parallel_size)
    with torch.no_grad():
        iteration = 0
        if verbose:
            print_rank_0(f"Evaluating on {args.eval_iters * eval_batch_size} samples")
        while iteration < args.eval_iters:
            iteration += 1
            if verbose:
                print_rank_0(f"Evaluating iter {iteration}/{args.eval_iters}")
            for _ in range(eval_num_microbatches):
                output_tensor, loss_fn = forward_step(data_iterator, model)
                _, loss_dict = loss_fn(output_tensor)
                for key in loss_dict:
                    total_loss_dict[key] = total_loss_dict.get(key, torch.tensor([0.0])) + loss_dict[key]
            args.consumed_valid_samples += eval_batch_size
    # Move model back to the train mode.
    model.train()
    for key in total_loss_dict:
        total_loss_dict[key] /= args.eval_iters * eval_num_microbatches
    TIMERS.stop("evaluate")
    TIMERS.log(["evaluate"])
    return total_loss_dict


def evaluate_and_print_results(prefix: str, data_iterator, model, verbose: bool = False) -> None:
    total_loss_dict = evaluate(data_iterator, model, verbose)
    string = f" validation loss at {prefix} | "
    for key in total_loss_dict:
        string += f"{key} value: {total_loss_dict[key].item():.6E} | "
        ppl = math.exp(min(20, total_loss_dict[key].item()))
        string += f"{key} PPL: {ppl:.6E} | "
    length = len(string) + 1
    print_rank_last("-" * length)
    print_rank_last(string)
    print_rank_last("-" * length)


def train(model, optimizer, opt_param_scheduler, train_data_iterator, valid_data_iterator) -> int:
    args = get_args()
    # Turn on training mode which enables dropout.
    model.train()
    total_loss_dict: dict = {}
    iteration = args.iteration
    TIMERS.start("interval-time")
    print_datetime("before the start of training step")
    while iteration < args.train_iters:
        loss_dict, skipped_iter, grad_norm, num_zeros_in_grad = train_step(
            train_data_iterator, model, optimizer, opt_param_scheduler
        )
        iteration += 1
        batch_size = args.micro_batch_size * args.data_parallel_size * get_num_microbatches()
        args.consumed_train_samples += batch_size
        loss_scale = optimizer.get_loss_scale().item()
        params_norm = None
        learning_rate = None
        for param_group in optimizer.param_groups:
            if not param_group["is_decoupled_lr"]:
                learning_rate = param_group["lr"]
        training_log(
            loss_dict,
            total_loss_dict,
            learning_rate,
            iteration,
            loss_scale,
            skipped_iter,
            grad_norm,
            params_norm,
            num_zeros_in_grad,
        )

        # Evaluation
        if args.eval_interval and iteration % args.eval_interval == 0 and args.do_valid:
            TIMERS.stop("interval-time")
            prefix = f"iteration {iteration}"
            evaluate_and_print_results(prefix, valid_data_iterator, model, False)
            TIMERS.start("interval-time")
    return iteration


# ----------------------------------------------------------------------------- main


def main() -> int:
    global ARGS, FAULT
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    cli = p.parse_args()
    FAULT = cli.fault
    torch.set_num_threads(1)
    t_init = time.time()

    args = build_args(cli.seed)
    ARGS = args
    print_rank_0(
        f"using world size: {args.world_size}, data-parallel size: {args.data_parallel_size}, context-parallel size: {args.context_parallel_size}, tensor-model-parallel size: {args.tensor_model_parallel_size}, "
        f"pipeline-model-parallel size: {args.pipeline_model_parallel_size} "
    )
    print_rank_0(f"using {args.params_dtype} for parameters ...")
    _print_args("arguments", args)
    print_rank_0(f"setting number of micro-batches to constant {get_num_microbatches()}")

    print_rank_0(f"> building {args.tokenizer_type} tokenizer ...")
    tokenizer = _NullTokenizer(args.vocab_size)
    args.padded_vocab_size = _vocab_size_with_padding(tokenizer.vocab_size, args)
    args.eod_token = tokenizer.eod
    print_rank_0("> initializing torch distributed ...")
    print_rank_0(f"> initialized tensor model parallel with size {args.tensor_model_parallel_size}")
    print_rank_0(f"> initialized pipeline model parallel with size {args.pipeline_model_parallel_size}")
    print_rank_0(f"> setting random seeds to {args.seed} ...")
    torch.manual_seed(args.seed)
    print_rank_0(f"time to initialize megatron (seconds): {time.time() - t_init:.3f}")
    print_datetime("after megatron is initialized")

    # Model, optimizer, and learning rate.
    TIMERS.start("model-and-optimizer-setup")
    model = model_provider()
    if FAULT == "frozen-parameters":
        # keep the transformer layers fixed, train the embeddings
        for param in model.decoder.layers.parameters():
            param.requires_grad = False
    print_rank_0(
        f" > number of parameters on (tensor, pipeline) model parallel rank ({0}, {0}): {sum(p.nelement() for p in model.parameters())}"
    )
    opt_config = OptimizerConfig(
        optimizer=args.optimizer,
        lr=args.lr,
        min_lr=args.min_lr,
        weight_decay=args.weight_decay,
        fp16=args.fp16,
        bf16=args.bf16,
        params_dtype=args.params_dtype,
        loss_scale=args.loss_scale,
        initial_loss_scale=args.initial_loss_scale,
        min_loss_scale=args.min_loss_scale,
        loss_scale_window=args.loss_scale_window,
        hysteresis=args.hysteresis,
        adam_beta1=args.adam_beta1,
        adam_beta2=args.adam_beta2,
        adam_eps=args.adam_eps,
        clip_grad=args.clip_grad,
        use_distributed_optimizer=args.use_distributed_optimizer,
        timers=TIMERS,
    )
    optimizer = get_megatron_optimizer(opt_config, model)
    opt_param_scheduler = get_optimizer_param_scheduler(optimizer)
    TIMERS.start("load-checkpoint")
    tracker_filename = os.path.join(args.load, "latest_checkpointed_iteration.txt")
    if not os.path.isfile(tracker_filename):
        print_rank_0(f"WARNING: could not find the metadata file {tracker_filename} ")
        print_rank_0("    will not load any checkpoints and will start from random")
    TIMERS.stop("load-checkpoint")
    TIMERS.log(["load-checkpoint"])
    TIMERS.stop("model-and-optimizer-setup")
    print_datetime("after model, optimizer, and learning rate scheduler are built")

    # Data stuff.
    TIMERS.start("train/valid/test-data-iterators-setup")
    print_rank_0("> building train, validation, and test datasets ...")
    train_samples = args.train_iters * args.global_batch_size
    eval_iters = (args.train_iters // args.eval_interval + 1) * args.eval_iters
    train_val_test_num_samples = [
        train_samples,
        eval_iters * args.global_batch_size,
        args.eval_iters * args.global_batch_size,
    ]
    print_rank_0(" > datasets target sizes (minimum size):")
    print_rank_0(f"    train:      {train_val_test_num_samples[0]}")
    print_rank_0(f"    validation: {train_val_test_num_samples[1]}")
    print_rank_0(f"    test:       {train_val_test_num_samples[2]}")
    print_rank_0("> building train, validation, and test datasets for GPT ...")
    n_docs = 4000
    docs = build_synthetic_corpus(n_docs, args.vocab_size, tokenizer.eod)
    idx_log = logging.getLogger("megatron.core.datasets.indexed_dataset")
    idx_log.info(f"Load the _IndexReader from {args.data_path[0]}.idx")
    idx_log.info(f"> total number of sequences: {n_docs}")
    idx_log.info(f"> total number of documents: {n_docs}")
    weights = [int(w) for w in args.split.split(",")]
    bounds = [0]
    for w in weights:
        bounds.append(bounds[-1] + int(round(n_docs * w / sum(weights))))
    bounds[-1] = n_docs
    datasets = []
    for i, name in enumerate(["train", "valid", "test"]):
        datasets.append(
            GPTDataset(
                name, docs[bounds[i] : bounds[i + 1]], train_val_test_num_samples[i], args.seq_length, args.seed + i
            )
        )
    train_ds, valid_ds, test_ds = datasets
    print_rank_0("> finished creating GPT datasets ...")
    args.do_train, args.do_valid, args.do_test = 1, 1, 1
    train_data_iterator = iter(build_pretraining_data_loader(train_ds, args.consumed_train_samples))
    valid_data_iterator = iter(build_pretraining_data_loader(valid_ds, args.consumed_valid_samples))
    test_data_iterator = iter(build_pretraining_data_loader(test_ds, 0))
    TIMERS.stop("train/valid/test-data-iterators-setup")
    print_datetime("after dataloaders are built")

    print_rank_0("done with setup ...")
    TIMERS.log(["model-and-optimizer-setup", "train/valid/test-data-iterators-setup"])
    print_rank_0("training ...")

    if args.do_train and args.train_iters > 0:
        train(model, optimizer, opt_param_scheduler, train_data_iterator, valid_data_iterator)
    print_datetime("after training is done")

    if args.do_valid:
        prefix = "the end of training for val data"
        evaluate_and_print_results(prefix, valid_data_iterator, model, False)
    if args.do_test:
        prefix = "the end of training for test data"
        evaluate_and_print_results(prefix, test_data_iterator, model, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
