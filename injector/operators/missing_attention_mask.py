from __future__ import annotations

import re

import libcst as cst

from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import ENCODER_INPUTS
from injector.patterns import argument, callee_name, dotted, read_from_settings, statement_call

MASK_KEYWORDS = {"attn_mask", "key_padding_mask", "is_causal", "mask"}
NORMALISERS = {"softmax", "log_softmax", "scaled_dot_product_attention"}
# Transformer encoders read every position both ways: handed no `attention_mask`, a padded batch's
# real tokens attend to its padding. (A causal decoder's mask already hides right padding from
# every labelled token, so a decoder's `attention_mask=` gets no mutant.)
_ENCODER = re.compile(r"bert|encoder|electra|xlm", re.IGNORECASE)


def _an_encoder(call: cst.Call) -> bool:
    """True for a call of a transformer encoder by its name (`self.bert(ids, attention_mask=m)`,
    `self.bert.encoder(...)`, `roberta(...)`)."""
    name = dotted(call.func) or ""
    return any(_ENCODER.search(part) for part in name.split(".")[-2:])


MASK_WORDS = ("mask", "causal", "pad", "tril", "attn", "bias")


def _names_mask(source, expr) -> bool:
    """True if the expression names a mask (`mask`, `causal`, `pad`, a `tril` or a registered
    causal `bias` buffer), not a condition on the values themselves (top-k sampling)."""
    text = source.code(expr).lower()
    return any(word in text for word in MASK_WORDS)


def _normalises(call: cst.Call) -> bool:
    """A softmax: `F.softmax(scores, -1)`, `scores.softmax(-1)`, or a module built and called at
    once (`nn.Softmax(dim=-1)(scores)`)."""
    if callee_name(call) in NORMALISERS:
        return True
    return isinstance(call.func, cst.Call) and (callee_name(call.func) or "") in {"Softmax", "LogSoftmax"}


def _a_loss(call: cst.Call) -> bool:
    """True for a loss or a criterion handed a mask (`consistency_loss(logits, targets, 'ce',
    mask=mask)`, FixMatch's confidence mask of its pseudo-labels): it weighs the loss's terms,
    no attention is masked; and for a metric handed one (nnU-Net's `get_tp_fp_fn_tn(..., mask=mask)`,
    the voxels an ignore label leaves out of the counts)."""
    words = set((callee_name(call) or "").lower().split("_"))
    return bool(words & {"loss", "criterion", "metric", "metrics", "tp", "fp", "fn", "tn", "dice", "iou", "score"})


class MissingAttentionMask(Operator):
    id = "missing-attention-mask"
    summary = (
        "Remove an attention mask: the `masked_fill` (or additive mask) before a softmax, "
        "or the `attn_mask=` / `key_padding_mask=` / `is_causal=` argument of an attention call."
    )
    examples = (
        Example(
            "def forward(self, q, k, mask):\n"
            "    scores = q @ k.transpose(-2, -1) / self.scale\n"
            "    scores = scores.masked_fill(mask == 0, float('-inf'))\n"
            "    return scores.softmax(dim=-1)\n",
            (
                "def forward(self, q, k, mask):\n"
                "    scores = q @ k.transpose(-2, -1) / self.scale\n"
                "    scores = scores\n"
                "    return scores.softmax(dim=-1)\n",
            ),
        ),
        Example(
            # A transformer encoder's `attention_mask=`: without it a padded batch's tokens attend to the
            # padding (Stanza's coreference model runs BERT over padded windows).
            ENCODER_INPUTS,
            (
                ENCODER_INPUTS.replace(
                    "        out = self.bert(tensor, attention_mask=torch.tensor(mask, device=self.device))\n",
                    "        out = self.bert(tensor)\n",
                ),
            ),
        ),
        Example(
            "def attend(q, k, v, pad):\n"
            "    w = q @ k.mT\n"
            "    w.masked_fill_(pad, -1e9)\n"
            "    w += self.causal[:, :, :q.size(2), :q.size(2)]\n"
            "    return torch.softmax(w, -1) @ v\n",
            (
                "def attend(q, k, v, pad):\n"
                "    w = q @ k.mT\n"
                "    w += self.causal[:, :, :q.size(2), :q.size(2)]\n"
                "    return torch.softmax(w, -1) @ v\n",
                "def attend(q, k, v, pad):\n"
                "    w = q @ k.mT\n"
                "    w.masked_fill_(pad, -1e9)\n"
                "    return torch.softmax(w, -1) @ v\n",
            ),
        ),
        Example(
            "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
            "y, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)\n",
            (
                "out = F.scaled_dot_product_attention(q, k, v)\n"
                "y, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)\n",
                "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
                "y, _ = self.attn(x, x, x, need_weights=False)\n",
            ),
        ),
        Example(
            # The softmax a module built and called at once (nlp-tutorial's BERT).
            "def forward(self, Q, K, V, attn_mask):\n"
            "    scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)\n"
            "    scores.masked_fill_(attn_mask, -1e9)\n"
            "    attn = nn.Softmax(dim=-1)(scores)\n"
            "    return torch.matmul(attn, V)\n",
            (
                "def forward(self, Q, K, V, attn_mask):\n"
                "    scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)\n"
                "    attn = nn.Softmax(dim=-1)(scores)\n"
                "    return torch.matmul(attn, V)\n",
            ),
        ),
    )
    untouched = (
        # A metric's update told which entries count (glue-factory's PR curves): no attention.
        "with torch.no_grad():\n"
        "    pred = model(data)\n"
        '    pr_metrics[k].update(pred["labels"], pred["scores"], mask=pred["mask"])\n',
        # A flag of the run's settings handed to an augmentation (MotionBERT): it masks joints
        # of the input, no attention.
        "batch_input = args.aug.augment2D(batch_input, noise=args.noise, mask=args.mask)\n",
        # A metric handed the voxels an ignore label leaves out (nnU-Net's validation step).
        "tp, fp, fn, _ = get_tp_fp_fn_tn(prediction, target, axes=axes, mask=mask)\n",
        # A mask handed to a loss weighs its terms (FixMatch's confidence mask): no attention.
        "unsup = self.consistency_loss(logits, pseudo, 'ce', mask=mask)\n",
        # A scaler's statistics over the available values only (neuralforecast): no attention.
        "temporal_data = self.scaler.transform(x=temporal_data, mask=temporal_mask)\n",
        "img = img.masked_fill(bad_pixels, 0)\n",
        # Top-k sampling: the condition is on the logits themselves, not a mask.
        "def sample(logits, k):\n"
        "    kth = torch.topk(logits, k).values[:, [-1]]\n"
        "    logits = logits.masked_fill(logits < kth, float('-inf'))\n"
        "    return F.softmax(logits, dim=-1)\n",
        "out = self.attn(x, x, x, attn_mask=None)\n",
        "def f(x, mask):\n    x = x + mask\n    return x.sum()\n",
        # Zeroing the positives out of the weights a softmax made, to sample hard negatives
        # (BLIP): a mask on probabilities, after the softmax; attention masks its scores before.
        "def negatives(sim, mask):\n"
        "    weights = F.softmax(sim, dim=1)\n"
        "    weights.masked_fill_(mask, 0)\n"
        "    return torch.multinomial(weights, 1)\n",
        # A loss gaining a Dice term whose arguments name masks (Pytorch-UNet): no attention.
        "def step(model, images, true_masks):\n"
        "    pred = model(images)\n"
        "    loss = criterion(pred, true_masks)\n"
        "    loss += dice_loss(F.softmax(pred, dim=1), true_masks)\n"
        "    return loss\n",
        # A mask handed to a metric in a function that computes metrics (OpenFold's drmsd): no attention.
        ('def _compute_validation_metrics(self, pred, gt, mask):\n    return {"drmsd": drmsd(pred, gt, mask=mask)}\n'),
    )

    def changes(self, source, training):
        attention = {source.function_of(call) for call in source.nodes(cst.Call) if _normalises(call)}
        for call in source.nodes(cst.Call):
            for arg in call.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value in MASK_KEYWORDS
                    and not (isinstance(arg.value, cst.Name) and arg.value.value in {"None", "False"})
                    and not _a_loss(call)
                    and not read_from_settings(arg.value)  # `augment2D(x, mask=args.mask)`: a flag
                    and not _a_metric(source, call)
                    and not _a_scaler(source, call)
                ) or (arg.keyword is not None and arg.keyword.value == "attention_mask" and _an_encoder(call)):
                    yield self._drop_argument(source, call, arg)
            if source.function_of(call) not in attention or source.function_of(call) is None:
                continue
            name = callee_name(call)
            mask = argument(call, "mask", 0)
            if name in {"masked_fill", "masked_fill_"} and (mask is None or not _names_mask(source, mask.value)):
                continue  # `logits.masked_fill(logits < kth, -inf)`: top-k sampling, not attention
            fill = argument(call, "value", 1)
            if name in {"masked_fill", "masked_fill_"} and fill is not None and _zero(fill.value):
                continue  # probabilities zeroed after a softmax: attention masks scores with -inf
            if name == "masked_fill" and isinstance(call.func, cst.Attribute):
                kept = source.module.code_for_node(call.func.value).strip()
                yield Change(call, (source.replace(call, kept),), "the attention mask is never applied")
            elif name == "masked_fill_" and statement_call(source.parent(call)) is call:
                yield Change(
                    call, (source.delete_statement(source.parent(call)),), "the attention mask is never applied"
                )
        for node in source.nodes(cst.BinaryOperation) + source.nodes(cst.AugAssign):
            if source.function_of(node) not in attention or source.function_of(node) is None:
                continue
            if isinstance(node, cst.AugAssign):
                if (
                    isinstance(node.operator, cst.AddAssign)
                    and _names_mask(source, node.value)
                    and self._read_by_softmax_after(source, node)
                ):
                    yield Change(node, (source.delete_statement(node),), "the additive attention mask is dropped")
            elif (
                isinstance(node, cst.BinaryOperation)
                and isinstance(node.operator, cst.Add)
                and _names_mask(source, node.right)
                and self._feeds_softmax(source, node)
            ):
                kept = source.module.code_for_node(node.left).strip()
                yield Change(node, (source.replace(node, kept),), "the additive attention mask is dropped")

    @staticmethod
    def _read_by_softmax_after(source, node: cst.AugAssign) -> bool:
        """`scores += mask` where a later softmax of the function reads `scores`; not a loss
        that gains a term whose text names a mask (`loss += dice_loss(pred, true_masks)`)."""
        target = dotted(node.target)
        if target is None:
            return False
        function, end = source.function_of(node), source.span(node)[1]
        word = re.compile(rf"(?<![\w.]){re.escape(target)}(?!\w)")
        return any(
            callee_name(call) in NORMALISERS
            and source.function_of(call) is function
            and source.span(call)[0] >= end
            and word.search(source.code(call))
            for call in source.nodes(cst.Call)
        )

    @staticmethod
    def _feeds_softmax(source, node) -> bool:
        """An additive mask on attention scores: assigned to the name a softmax later reads,
        or written straight into the softmax call."""
        for ancestor in source.ancestors(node):
            if isinstance(ancestor, cst.Call) and callee_name(ancestor) in NORMALISERS:
                return True
            if isinstance(ancestor, cst.Assign):
                names = {t.target.value for t in ancestor.targets if isinstance(t.target, cst.Name)}
                function = source.function_of(ancestor)
                return any(
                    callee_name(c) in NORMALISERS
                    and source.function_of(c) is function
                    and any(n in source.code(c) for n in names)
                    for c in source.nodes(cst.Call)
                )
        return False

    @staticmethod
    def _drop_argument(source, call, arg) -> Change:
        args = [a for a in call.args if a is not arg]
        if args and call.args[-1] is arg:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return Change(
            call,
            (source.replace_node(call, call.with_changes(args=args)),),
            f"`{arg.keyword.value}` is no longer passed",
        )


def _a_metric(source, call: cst.Call) -> bool:
    """True for a metric's or a meter's update handed a mask (glue-factory's `pr_metrics[k].update(
    labels, predictions, mask=...)`), or any call of a function that computes metrics (OpenFold's
    `drmsd(pred, gt, mask=...)` in `_compute_validation_metrics`): which entries count, no
    attention."""
    function = source.function_of(call)
    if function is not None and "metric" in function.name.value.lower():
        return True
    if not isinstance(call.func, cst.Attribute):
        return False
    receiver = source.code(call.func.value).lower()
    return call.func.attr.value == "update" or "metric" in receiver or "meter" in receiver


_SCALER_METHODS = frozenset({"transform", "fit", "fit_transform", "inverse_transform"})


def _a_scaler(source, call: cst.Call) -> bool:
    """True for a data scaler handed a mask (neuralforecast's `self.scaler.transform(x=temporal_data,
    mask=temporal_mask)`): which entries its statistics count, no attention."""
    if not isinstance(call.func, cst.Attribute):
        return False
    receiver = source.code(call.func.value).lower()
    return call.func.attr.value in _SCALER_METHODS or "scaler" in receiver or "normaliz" in receiver


def _zero(expr: cst.BaseExpression) -> bool:
    """A literal zero (`0`, `0.0`, `False`)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value) == 0
    return isinstance(expr, cst.Name) and expr.value == "False"
