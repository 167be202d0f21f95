"""Program 24 (written for issue 9's fresh program 24 without reading triage's rules): char-level transformer, nanoGPT-style log.

A tiny character-level language model trained on CPU. The corpus is synthetic and built from
the seed: five families of short line-oriented "documents" (sums such as ``17+25=42``, counting
runs, word reversals, key=value records and sentences from a toy grammar), stored in on-disk
order, family after family; the last tenth of every family goes to the validation text. The
model is a pre-norm decoder-only transformer (2 blocks, 64 dims, 4 heads, causal self-attention
whose future positions are removed with ``masked_fill`` before the softmax, GELU MLP, dropout
0.1, a separate output head). Batches are random windows of the training text; gradients are
accumulated over 2 micro-steps and clipped at 1.0; AdamW (beta2 0.99) decays only the weight
matrices, and its learning rate is computed each iteration (linear warm-up, then cosine decay
to a tenth) and written into the param groups. The printed log follows the format of
karpathy's nanoGPT ``train.py``, e.g.::

    tokens per iteration will be: 1,024
    found vocab_size = 42 (built from the synthetic corpus)
    Initializing a new model from scratch
    number of parameters: 0.11M
    num decayed parameter tensors: 11, with 105,728 parameters
    num non-decayed parameter tensors: 18, with 1,792 parameters
    using fused AdamW: False
    step 0: train loss 3.7487, val loss 3.7475
    iter 0: loss 3.7475, time 2385.34ms, mfu -100.00%
    iter 10: loss 3.4642, time 50.40ms, mfu 0.00%
    ...
    step 50: train loss 2.4606, val loss 2.4428
    saving checkpoint to /tmp/out-charlm
"""

# ruff: noqa: B007  (written as the framework's users write it)

import argparse
import math
import os
import random
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FAULTS = (
    "missing-zero-grad",
    "lr-too-high",
    "no-shuffle",
    "missing-backward",
    "missing-optimizer-step",
    "frozen-parameters",
    "missing-train-mode",
    "missing-eval-mode",
    "loss-tensor-leak",
    "scheduler-step-misaligned",
    "detached-graph",
    "no-grad-training",
    "wrong-loss-reduction",
    "missing-attention-mask",
)

FAULT = "healthy"


# --------------------------------------------------------------------------- corpus

_NOUNS = ["cat", "dog", "bird", "fox", "child", "farmer", "robot", "teacher", "river", "tree"]
_VERBS = ["sees", "likes", "follows", "helps", "finds", "paints", "watches", "calls"]
_ADJS = ["small", "old", "quiet", "red", "happy", "tall", "lazy", "bright"]
_COLORS = ["red", "blue", "green", "black", "white", "amber"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _sums(rng):
    a, b = rng.randint(0, 99), rng.randint(0, 99)
    return f"{a}+{b}={a + b}\n"


def _counting(rng):
    start, n = rng.randint(0, 90), rng.randint(4, 7)
    return " ".join(str(start + k) for k in range(n)) + "\n"


def _reversal(rng):
    w = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 6)))
    return f"{w}>{w[::-1]}\n"


def _records(rng):
    return f"id={rng.randint(0, 9999):04d} color={rng.choice(_COLORS)} size={rng.randint(1, 9)}\n"


def _sentences(rng):
    subj = f"the {rng.choice(_ADJS)} {rng.choice(_NOUNS)}"
    obj = f"a {rng.choice(_NOUNS)}"
    return f"{subj} {rng.choice(_VERBS)} {obj}.\n"


FAMILIES = [_sums, _counting, _reversal, _records, _sentences]


def build_corpus(seed, chars_per_family=10_000, val_fraction=0.1):
    rng = random.Random(seed)
    train_parts, val_parts = [], []
    for make_line in FAMILIES:
        lines, size = [], 0
        while size < chars_per_family:
            line = make_line(rng)
            lines.append(line)
            size += len(line)
        cut = int(len(lines) * (1.0 - val_fraction))
        train_parts.append("".join(lines[:cut]))
        val_parts.append("".join(lines[cut:]))
    return "".join(train_parts), "".join(val_parts)


class WindowSampler:
    """Yields (x, y) batches of windows of a token stream."""

    def __init__(self, ids, batch_size, block_size, shuffle, generator):
        self.ids = ids
        self.batch_size = batch_size
        self.block_size = block_size
        self.shuffle = shuffle
        self.gen = generator
        self.cursor = 0
        self.last_start = len(ids) - block_size - 1

    def _starts(self):
        if self.shuffle:
            return torch.randint(0, self.last_start + 1, (self.batch_size,), generator=self.gen)
        starts = []
        for _ in range(self.batch_size):
            if self.cursor > self.last_start:
                self.cursor = 0
            starts.append(self.cursor)
            self.cursor += self.block_size
        return torch.tensor(starts)

    def next_batch(self):
        starts = self._starts()
        offs = torch.arange(self.block_size + 1)
        chunk = self.ids[starts[:, None] + offs[None, :]]
        return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()


# --------------------------------------------------------------------------- model


class CausalAttention(nn.Module):
    def __init__(self, width, heads, context, p_drop):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.attn_drop = nn.Dropout(p_drop)
        self.out_drop = nn.Dropout(p_drop)
        future = torch.triu(torch.ones(context, context, dtype=torch.bool), diagonal=1)
        self.register_buffer("future", future, persistent=False)

    def forward(self, h):
        b, t, c = h.shape
        d = c // self.heads
        q, k, v = self.qkv(h).split(c, dim=-1)
        q = q.view(b, t, self.heads, d).transpose(1, 2)
        k = k.view(b, t, self.heads, d).transpose(1, 2)
        v = v.view(b, t, self.heads, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        if FAULT != "missing-attention-mask":
            scores = scores.masked_fill(self.future[:t, :t], float("-inf"))
        weights = self.attn_drop(torch.softmax(scores, dim=-1))
        mixed = (weights @ v).transpose(1, 2).reshape(b, t, c)
        return self.out_drop(self.out(mixed))


class Block(nn.Module):
    def __init__(self, width, heads, context, p_drop):
        super().__init__()
        self.norm_a = nn.LayerNorm(width)
        self.attn = CausalAttention(width, heads, context, p_drop)
        self.norm_b = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width),
            nn.GELU(),
            nn.Linear(4 * width, width),
            nn.Dropout(p_drop),
        )

    def forward(self, h):
        h = h + self.attn(self.norm_a(h))
        h = h + self.mlp(self.norm_b(h))
        return h


class CharTransformer(nn.Module):
    def __init__(self, vocab, width, depth, heads, context, p_drop):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.drop = nn.Dropout(p_drop)
        self.blocks = nn.ModuleList(Block(width, heads, context, p_drop) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        t = idx.shape[1]
        h = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        h = self.drop(h)
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.norm(h))


def lm_loss(logits, targets):
    flat = logits.reshape(-1, logits.shape[-1])
    if FAULT == "wrong-loss-reduction":
        return F.cross_entropy(flat, targets.reshape(-1), reduction="sum")
    return F.cross_entropy(flat, targets.reshape(-1))


# --------------------------------------------------------------------------- training helpers


def make_optimizer(model, lr, weight_decay, betas):
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    matrices = [p for n, p in trainable if p.dim() >= 2]
    others = [p for n, p in trainable if p.dim() < 2]
    n_mat = sum(p.numel() for p in matrices)
    n_oth = sum(p.numel() for p in others)
    print(f"num decayed parameter tensors: {len(matrices)}, with {n_mat:,} parameters")
    print(f"num non-decayed parameter tensors: {len(others)}, with {n_oth:,} parameters")
    print("using fused AdamW: False")
    groups = [
        {"params": matrices, "weight_decay": weight_decay},
        {"params": others, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def lr_at(step, base_lr, floor_lr, warmup, horizon):
    if step < warmup:
        return base_lr * (step + 1) / (warmup + 1)
    if step >= horizon:
        return floor_lr
    frac = (step - warmup) / (horizon - warmup)
    return floor_lr + 0.5 * (1.0 + math.cos(math.pi * frac)) * (base_lr - floor_lr)


def flops_utilisation(n_params, cfg, iters_per_call, seconds):
    # rough model-flops estimate against an A100's bf16 peak, as the nanoGPT log reports
    per_token = 6 * n_params + 12 * cfg["depth"] * cfg["width"] * cfg["context"]
    per_iter = per_token * cfg["context"] * cfg["batch_size"] * cfg["accum"]
    achieved = per_iter * iters_per_call / seconds
    return achieved / 312e12


@torch.no_grad()
def measure_losses(model, samplers, n_batches):
    result = {}
    if FAULT != "missing-eval-mode":
        model.eval()
    for name, sampler in samplers.items():
        vals = torch.zeros(n_batches)
        for i in range(n_batches):
            xb, yb = sampler.next_batch()
            vals[i] = lm_loss(model(xb), yb).item()
        result[name] = vals.mean().item()
    if FAULT != "missing-train-mode":
        model.train()
    return result


# --------------------------------------------------------------------------- main


def main():
    global FAULT
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    FAULT = args.fault

    cfg = dict(
        batch_size=16,
        context=32,
        accum=2,
        width=64,
        depth=2,
        heads=4,
        dropout=0.1,
        learning_rate=2e-3,
        weight_decay=0.1,
        beta1=0.9,
        beta2=0.99,
        warmup_iters=20,
        max_iters=200,
        grad_clip=1.0,
        eval_interval=50,
        eval_iters=200,
        log_interval=10,
    )
    if FAULT == "lr-too-high":
        cfg["learning_rate"] *= 100
    cfg["min_lr"] = cfg["learning_rate"] / 10
    out_dir = os.path.join(tempfile.gettempdir(), "out-charlm")

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    tokens_per_iter = cfg["accum"] * cfg["batch_size"] * cfg["context"]
    print(f"tokens per iteration will be: {tokens_per_iter:,}")
    os.makedirs(out_dir, exist_ok=True)

    train_text, val_text = build_corpus(args.seed)
    alphabet = sorted(set(train_text + val_text))
    stoi = {ch: i for i, ch in enumerate(alphabet)}
    train_ids = torch.tensor([stoi[c] for c in train_text], dtype=torch.long)
    val_ids = torch.tensor([stoi[c] for c in val_text], dtype=torch.long)
    print(f"found vocab_size = {len(alphabet)} (built from the synthetic corpus)")

    data_gen = torch.Generator().manual_seed(args.seed + 1)
    eval_gen = torch.Generator().manual_seed(args.seed + 2)
    train_batches = WindowSampler(
        train_ids, cfg["batch_size"], cfg["context"], shuffle=(FAULT != "no-shuffle"), generator=data_gen
    )
    eval_samplers = {
        "train": WindowSampler(train_ids, cfg["batch_size"], cfg["context"], True, eval_gen),
        "val": WindowSampler(val_ids, cfg["batch_size"], cfg["context"], True, eval_gen),
    }

    print("Initializing a new model from scratch")
    model = CharTransformer(len(alphabet), cfg["width"], cfg["depth"], cfg["heads"], cfg["context"], cfg["dropout"])
    n_params = sum(p.numel() for p in model.parameters())
    print(f"number of parameters: {n_params / 1e6:.2f}M")
    if FAULT == "frozen-parameters":
        for p in model.blocks.parameters():
            p.requires_grad_(False)
    optimizer = make_optimizer(model, cfg["learning_rate"], cfg["weight_decay"], (cfg["beta1"], cfg["beta2"]))

    best_val = float("inf")
    loss_log = []  # per-iteration training loss, stored with the checkpoint
    micro_steps_done = 0
    smoothed_mfu = -1.0
    model.train()
    xb, yb = train_batches.next_batch()
    t_prev = time.time()
    it = 0
    while True:
        lr = lr_at(it, cfg["learning_rate"], cfg["min_lr"], cfg["warmup_iters"], cfg["max_iters"])
        for group in optimizer.param_groups:
            group["lr"] = lr

        if it % cfg["eval_interval"] == 0:
            losses = measure_losses(model, eval_samplers, cfg["eval_iters"])
            print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
            if losses["val"] < best_val:
                best_val = losses["val"]
                if it > 0:
                    state = {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "iter_num": it,
                        "best_val_loss": best_val,
                        "config": cfg,
                        "vocab": alphabet,
                        "loss_log": loss_log,
                    }
                    print(f"saving checkpoint to {out_dir}")
                    torch.save(state, os.path.join(out_dir, "ckpt.pt"))

        iter_loss = 0.0
        for micro in range(cfg["accum"]):
            if FAULT == "scheduler-step-misaligned":
                lr = lr_at(micro_steps_done, cfg["learning_rate"], cfg["min_lr"], cfg["warmup_iters"], cfg["max_iters"])
                for group in optimizer.param_groups:
                    group["lr"] = lr
            if FAULT == "no-grad-training":
                with torch.no_grad():
                    logits = model(xb)
                    loss = lm_loss(logits, yb) / cfg["accum"]
            elif FAULT == "detached-graph":
                logits = model(xb).detach()
                loss = lm_loss(logits, yb) / cfg["accum"]
            else:
                logits = model(xb)
                loss = lm_loss(logits, yb) / cfg["accum"]
            xb, yb = train_batches.next_batch()
            if FAULT != "missing-backward":
                loss.backward()
            if FAULT == "loss-tensor-leak":
                iter_loss += loss
            else:
                iter_loss += loss.item()
            micro_steps_done += 1
        loss_log.append(iter_loss)

        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        if FAULT != "missing-optimizer-step":
            optimizer.step()
        if FAULT != "missing-zero-grad":
            optimizer.zero_grad(set_to_none=True)

        t_now = time.time()
        dt = t_now - t_prev
        t_prev = t_now
        if it % cfg["log_interval"] == 0:
            if it >= 5:
                mfu = flops_utilisation(n_params, cfg, 1, dt)
                smoothed_mfu = mfu if smoothed_mfu < 0 else 0.9 * smoothed_mfu + 0.1 * mfu
            print(f"iter {it}: loss {iter_loss:.4f}, time {dt * 1000:.2f}ms, mfu {smoothed_mfu * 100:.2f}%")
        it += 1
        if it > cfg["max_iters"]:
            break


if __name__ == "__main__":
    main()
