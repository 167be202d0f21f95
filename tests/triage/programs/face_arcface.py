r"""Program 30 (written for issue 9's fresh program 30 without reading triage's rules): face-recognition embeddings, arcface_torch-style log.

A face-recognition embedding model trained the way insightface's
`recognition/arcface_torch/train_v2.py` trains one, written from scratch with torch only
(insightface is not imported). The console follows arcface_torch's own code as read in
`recognition/arcface_torch/train_v2.py` (the config dump, the per-iteration
`lr_scheduler.step()`, `clip_grad_norm_(backbone.parameters(), 5)`, `loss_am.update(...)`),
`utils/utils_logging.py` (`init_logging`: the format `Training: %(asctime)s-%(message)s`,
`rank_id: 0`, `AverageMeter`), `utils/utils_callbacks.py` (`CallBackLogging`'s
`Speed %.2f samples/sec   Loss %.4f   LearningRate %.6f   Epoch: %d   Global Step: %d   Required: %1.f hours`,
the first call at a logging step only starting the clock; `CallBackVerification`'s
`[%s][%d]XNorm: %f`, `[%s][%d]Accuracy-Flip: %1.5f+-%1.5f`, `[%s][%d]Accuracy-Highest: %1.5f`,
with `backbone.eval()` before and `backbone.train()` after) and `eval/verification.py`
(`load_bin`'s `loading bin 0` and shape print, `test`'s `testing verification..`, the embedding
shape and `infer time` prints, embeddings of the image and its flip summed, the squared distance
of L2-normalised embeddings against thresholds 0..4 step 0.01, the best threshold chosen on 9
folds and scored on the tenth, unshuffled 10-fold; XNorm the mean norm of all raw embeddings).

Data: synthetic 16x16 3-channel "face crops". Each identity has a fixed template: a shared
mean "face" (a bright oval, two dark eye spots, a mouth bar) plus an identity-specific smooth
low-frequency pattern, mostly left-right symmetric, with its own skin tint. Each image of an
identity applies a random pose (rotation up to about 12 degrees, shifts up to 1.5 px, scale
0.9-1.1 by `affine_grid`), lighting (a contrast factor, a brightness offset, a linear ramp
across the face, a colour cast) and Gaussian noise. 200 training identities with 10 images
each (2,000 images, stored sorted by identity as an image-folder record is), random horizontal
flips in training; a verification set ("pairs", as an `.bin` file would hold it) of 300 pairs
(150 same, 150 different, interleaved) from 30 other identities never seen in training.
Images are floats in [-1, 1], as arcface_torch's `((x / 255) - 0.5) / 0.5` leaves them.

Model: an iresnet-like small backbone: conv-BN-PReLU blocks 3->16 (16x16), 16->32 stride 2,
32->32, 32->64 stride 2 (4x4), then iresnet's head: `bn2` (BatchNorm2d), dropout 0, flatten,
`fc` to a 64-d embedding and `features` (BatchNorm1d whose weight is fixed at 1 and not
trained, as iresnet does). The backbone starts from "pretrained" weights: a short plain-softmax
pass at start-up (20 SGD steps) over 40 other identities (the checkpoint the config's `pretrained` names),
loaded with `load_state_dict`. Head: `PartialFC_V2` with `sample_rate=1.0` (the whole class
centre matrix, 200 x 64, initialised N(0, 0.01)): L2-normalised embeddings times the
L2-normalised centres, clamped to [-1, 1], the ArcFace margin (`margin_list=(1.0, 0.5, 0.0)`:
theta + 0.5 on the target logit, cos(theta) - sin(pi - m) * m past pi - m), times s=64, then
cross-entropy averaged over the batch.

Optimiser: SGD lr 0.1, momentum 0.9, weight decay 5e-4 over the backbone and the head,
batch size 64 (`drop_last=True`: 31 iterations per epoch), 12 epochs (372 steps), the
`PolyScheduler` (a linear warm-up over 2 epochs, then a polynomial decay with power 2 to 0)
stepped after every optimizer step, clipping `clip_grad_norm_(backbone.parameters(), 5)`.
Logging every 10 global steps (`frequent`), verification every 100 (`verbose`) and once more
after the last step; then the script prints its own headline line.

Faults, each really injected: `scheduler-step-misaligned` is the per-iteration PolyScheduler
stepped once per epoch (as older arcface_torch scripts stepped their per-epoch LambdaLR), so
the 62-step warm-up takes 62 epochs and the rate is still climbing at the end of the run.
`detached-graph` (the embeddings `.detach()`ed before `PartialFC`) and `no-grad-training` (the
backbone forward under `torch.no_grad()`) do NOT crash: the class-centre matrix still requires
grad, so the loss has a graph; the backbone simply gets no gradient and only the head trains,
as real code would behave. `frozen-parameters` is `backbone.requires_grad_(False)` left after
loading the pretrained weights. `double-softmax`: the margin head returns softmax probabilities
and the cross-entropy applies its own softmax again. `loss-tensor-leak`: the per-step loss kept
(with its graph) in a list for the loss curve saved at the end.

The log (stdout; `print` lines without the prefix), e.g.

    Training: 2026-11-30 10:00:00,101-rank_id: 0
    Training: 2026-11-30 10:00:00,102-: margin_list              (1.0, 0.5, 0.0)
    Training: 2026-11-30 10:00:00,102-: network                  r_tiny
    ...
    loading bin 0
    torch.Size([600, 3, 16, 16])
    Training: 2026-11-30 10:00:01,510-Speed 1234.56 samples/sec   Loss 42.1234   LearningRate 0.032258   Epoch: 0   Global Step: 20   Required: 0 hours
    ...
    testing verification..
    (600, 64)
    infer time 0.012345
    Training: 2026-11-30 10:00:10,456-[pairs][100]XNorm: 21.241234
    Training: 2026-11-30 10:00:10,457-[pairs][100]Accuracy-Flip: 0.91500+-0.02345
    Training: 2026-11-30 10:00:10,457-[pairs][100]Accuracy-Highest: 0.91500
    ...
    final verification accuracy-flip: 0.9650
"""

# ruff: noqa: UP031  (arcface_torch's own %-style message formats, kept as it writes them)

import argparse
import copy
import datetime
import logging
import math
import sys
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
    "double-softmax",
)

SIZE = 16
EMB = 64
N_IDS = 200
PER_ID = 10


# --------------------------------------------------------------------------- data
def _u(gen, shape, lo, hi):
    return lo + (hi - lo) * torch.rand(shape, generator=gen)


def _smooth(n, gen, cells):
    coarse = torch.randn(n, 3, cells, cells, generator=gen)
    return F.interpolate(coarse, size=(SIZE, SIZE), mode="bicubic", align_corners=True)


def make_identities(n, gen):
    """Identity templates (n, 3, 16, 16): a mean face plus a mostly symmetric personal pattern."""
    lin = torch.linspace(-1, 1, SIZE)
    Y, X = torch.meshgrid(lin, lin, indexing="ij")
    face = torch.exp(-(((X / 0.75) ** 2 + (Y / 0.95) ** 2) ** 2)) * 0.9 - 0.45
    for ex in (-0.38, 0.38):
        face = face - 0.5 * torch.exp(-(((X - ex) / 0.16) ** 2 + ((Y + 0.2) / 0.11) ** 2))
    face = face - 0.35 * torch.exp(-((X / 0.3) ** 2 + ((Y - 0.5) / 0.08) ** 2))
    pattern = _smooth(n, gen, 4) + 0.6 * _smooth(n, gen, 6)
    pattern = 0.75 * (pattern + pattern.flip(-1)) / 2 + 0.25 * pattern
    # channel mixing: patterns correlated across channels, as skin and hair are
    mix = torch.tensor([[1.0, 0.5, 0.3], [0.5, 1.0, 0.5], [0.3, 0.5, 1.0]])
    pattern = torch.einsum("ij,njhw->nihw", mix, pattern) / 1.6
    tint = _u(gen, (n, 3, 1, 1), -0.15, 0.15)
    return face[None, None] + 0.36 * pattern + tint


def render(templates, ids, gen):
    """One image per entry of ids: the identity's template under a random pose, lighting and noise."""
    n = len(ids)
    base = templates[ids]
    ang = _u(gen, (n,), -0.26, 0.26)
    sc = _u(gen, (n,), 0.9, 1.1)
    tx, ty = _u(gen, (n,), -0.25, 0.25), _u(gen, (n,), -0.25, 0.25)
    theta = torch.stack(
        [
            torch.stack([sc * torch.cos(ang), -sc * torch.sin(ang), tx], 1),
            torch.stack([sc * torch.sin(ang), sc * torch.cos(ang), ty], 1),
        ],
        1,
    )
    grid = F.affine_grid(theta, (n, 3, SIZE, SIZE), align_corners=False)
    img = F.grid_sample(base, grid, padding_mode="border", align_corners=False)
    lin = torch.linspace(-1, 1, SIZE)
    Y, X = torch.meshgrid(lin, lin, indexing="ij")
    ramp_dir = _u(gen, (n, 1, 1), 0, 2 * math.pi)
    ramp = (X * torch.cos(ramp_dir) + Y * torch.sin(ramp_dir))[:, None] * _u(gen, (n, 1, 1, 1), 0.0, 0.4)
    contrast = _u(gen, (n, 1, 1, 1), 0.7, 1.3)
    bright = _u(gen, (n, 1, 1, 1), -0.25, 0.25)
    cast = _u(gen, (n, 3, 1, 1), -0.1, 0.1)
    img = img * contrast + bright + ramp + cast
    img = img + 0.26 * torch.randn(img.shape, generator=gen)
    return img.clamp(-1, 1)


def load_data(seed):
    gen = torch.Generator().manual_seed(3000 + seed)
    templates = make_identities(N_IDS + 30 + 40, gen)
    # training record: N_IDS identities x PER_ID images, sorted by identity (an image-folder record)
    labels = torch.arange(N_IDS).repeat_interleave(PER_ID)
    x_train = render(templates, labels, gen)
    # verification pairs from 30 identities never trained on
    issame = torch.arange(300) % 2 == 0
    first = N_IDS + torch.randint(0, 30, (300,), generator=gen)
    other = N_IDS + (first - N_IDS + torch.randint(1, 30, (300,), generator=gen)) % 30
    second = torch.where(issame, first, other)
    ids = torch.stack([first, second], 1).reshape(-1)  # interleaved: pair k is images 2k, 2k+1
    x_pairs = render(templates, ids, gen)
    # the pretraining identities, 40 others
    pre_labels = torch.arange(40).repeat_interleave(15)
    x_pre = render(templates, N_IDS + 30 + pre_labels, gen)
    return (x_train, labels), (x_pairs, issame), (x_pre, pre_labels)


class TrainLoader:
    """DataLoader(dataset, batch_size, shuffle, drop_last=True) with a random horizontal flip."""

    def __init__(self, data, batch_size, shuffle, gen):
        self.x, self.y = data
        self.batch_size, self.shuffle, self.gen = batch_size, shuffle, gen

    def __len__(self):
        return len(self.x) // self.batch_size

    def __iter__(self):
        n = len(self.x)
        idx = torch.randperm(n, generator=self.gen) if self.shuffle else torch.arange(n)
        for k in range(len(self)):
            b = idx[k * self.batch_size : (k + 1) * self.batch_size]
            img = self.x[b]
            flip = torch.rand(len(b), generator=self.gen) < 0.5
            img = torch.where(flip[:, None, None, None], img.flip(-1), img)
            yield img, self.y[b]


# -------------------------------------------------------------------------- model
def block(cin, cout, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout, eps=1e-05), nn.PReLU(cout)
    )


class IResNetTiny(nn.Module):
    fc_scale = 4 * 4

    def __init__(self, num_features=EMB, dropout=0.0):
        super().__init__()
        self.layers = nn.Sequential(block(3, 16), block(16, 32, 2), block(32, 32), block(32, 64, 2))
        self.bn2 = nn.BatchNorm2d(64, eps=1e-05)
        self.dropout = nn.Dropout(p=dropout, inplace=True)
        self.fc = nn.Linear(64 * self.fc_scale, num_features)
        self.features = nn.BatchNorm1d(num_features, eps=1e-05)
        nn.init.constant_(self.features.weight, 1.0)
        self.features.weight.requires_grad = False

    def forward(self, x):
        x = self.layers(x)
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = self.dropout(x)
        x = self.fc(x)
        x = self.features(x)
        return x


class CombinedMarginLoss(nn.Module):
    """ArcFace with margin_list (1.0, 0.5, 0.0): cos(theta + m2) on the target logit, times s."""

    def __init__(self, s, m1, m2, m3, return_probs=False):
        super().__init__()
        self.s, self.m1, self.m2, self.m3 = s, m1, m2, m3
        self.theta = math.cos(math.pi - m2)
        self.sinmm = math.sin(math.pi - m2) * m2
        self.return_probs = return_probs  # the head as exported for scoring identities

    def forward(self, logits, labels):
        index = torch.where(labels != -1)[0]
        target_logit = logits[index, labels[index]]
        theta = torch.acos(target_logit.clamp(-1 + 1e-7, 1 - 1e-7))
        final_target_logit = torch.where(
            target_logit > self.theta, torch.cos(theta + self.m2), target_logit - self.sinmm
        )
        logits = logits.clone()
        logits[index, labels[index]] = final_target_logit
        logits = logits * self.s
        if self.return_probs:
            return torch.softmax(logits, dim=1)
        return logits


class PartialFC_V2(nn.Module):
    """PartialFC_V2 on one rank with sample_rate=1.0: every class centre in every step."""

    def __init__(self, margin_loss, embedding_size, num_classes, sample_rate=1.0, fp16=False, reduction="mean"):
        super().__init__()
        self.embedding_size, self.num_classes, self.sample_rate, self.fp16 = (
            embedding_size,
            num_classes,
            sample_rate,
            fp16,
        )
        self.weight = nn.Parameter(torch.normal(0, 0.01, (num_classes, embedding_size)))
        self.margin_softmax = margin_loss
        self.dist_cross_entropy = nn.CrossEntropyLoss(reduction=reduction)

    def forward(self, local_embeddings, local_labels):
        local_labels = local_labels.long().view(-1)
        norm_embeddings = F.normalize(local_embeddings)
        norm_weight_activated = F.normalize(self.weight)
        logits = F.linear(norm_embeddings, norm_weight_activated)
        logits = logits.clamp(-1, 1)
        logits = self.margin_softmax(logits, local_labels)
        return self.dist_cross_entropy(logits, local_labels)


class PolyScheduler(torch.optim.lr_scheduler.LRScheduler):
    def __init__(self, optimizer, base_lr, max_steps, warmup_steps, last_epoch=-1):
        self.base_lr = base_lr
        self.warmup_lr_init = 0.0001
        self.max_steps = max_steps
        self.warmup_steps = warmup_steps
        self.power = 2
        super().__init__(optimizer, last_epoch)

    def get_warmup_lr(self):
        alpha = float(self.last_epoch) / float(self.warmup_steps)
        return [self.base_lr * alpha for _ in self.optimizer.param_groups]

    def get_lr(self):
        if self.last_epoch == -1:
            return [self.warmup_lr_init for _ in self.optimizer.param_groups]
        if self.last_epoch < self.warmup_steps:
            return self.get_warmup_lr()
        alpha = pow(
            1 - float(self.last_epoch - self.warmup_steps) / float(self.max_steps - self.warmup_steps), self.power
        )
        return [self.base_lr * alpha for _ in self.optimizer.param_groups]


def pretrain_backbone(pre_data, seed, iterations=20):
    """The checkpoint named by cfg.pretrained: a short plain-softmax run over 40 other identities."""
    torch.manual_seed(700 + seed)
    net = IResNetTiny()
    head = nn.Linear(EMB, 40)
    opt = torch.optim.SGD([*net.parameters(), *head.parameters()], lr=0.05, momentum=0.9)
    x_all, y_all = pre_data
    gen = torch.Generator().manual_seed(800 + seed)
    for _ in range(iterations):
        b = torch.randint(0, len(x_all), (64,), generator=gen)
        loss = F.cross_entropy(head(net(x_all[b])), y_all[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return copy.deepcopy(net.state_dict())


# -------------------------------------------------------------------- utilities
class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def init_logging(rank):
    log_root = logging.getLogger()
    log_root.setLevel(logging.INFO)
    formatter = logging.Formatter("Training: %(asctime)s-%(message)s")
    handler_stream = logging.StreamHandler(sys.stdout)
    handler_stream.setFormatter(formatter)
    log_root.addHandler(handler_stream)
    log_root.info("rank_id: %d" % rank)


def load_bin(pairs):
    x, issame = pairs
    data_list = [x, x.flip(-1)]
    print("loading bin", 0)
    print(data_list[0].shape)
    return data_list, issame


def calculate_accuracy(threshold, dist, actual_issame):
    predict_issame = dist < threshold
    tp = (predict_issame & actual_issame).sum().item()
    tn = (~predict_issame & ~actual_issame).sum().item()
    return float(tp + tn) / dist.numel()


def calculate_roc(thresholds, embeddings1, embeddings2, actual_issame, nrof_folds=10):
    nrof_pairs = len(actual_issame)
    dist = ((embeddings1 - embeddings2) ** 2).sum(1)
    folds = torch.arange(nrof_pairs).chunk(nrof_folds)  # KFold(n_splits=10, shuffle=False)
    accuracy = torch.zeros(nrof_folds)
    for fold_idx, test_set in enumerate(folds):
        train_mask = torch.ones(nrof_pairs, dtype=torch.bool)
        train_mask[test_set] = False
        acc_train = torch.tensor(
            [calculate_accuracy(t, dist[train_mask], actual_issame[train_mask]) for t in thresholds]
        )
        best_threshold_index = int(torch.argmax(acc_train))
        accuracy[fold_idx] = calculate_accuracy(
            thresholds[best_threshold_index], dist[test_set], actual_issame[test_set]
        )
    return accuracy


@torch.no_grad()
def ver_test(data_set, backbone, batch_size, nfolds=10):
    print("testing verification..")
    data_list, issame_list = data_set
    embeddings_list = []
    time_consumed = 0.0
    for data in data_list:
        embeddings = torch.zeros(data.shape[0], EMB)
        ba = 0
        while ba < data.shape[0]:
            bb = min(ba + batch_size, data.shape[0])
            count = bb - ba
            _data = data[bb - batch_size : bb]
            time0 = datetime.datetime.now()
            net_out = backbone(_data)
            time_consumed += (datetime.datetime.now() - time0).total_seconds()
            embeddings[ba:bb] = net_out[(batch_size - count) :]
            ba = bb
        embeddings_list.append(embeddings)
    _xnorm = torch.cat(embeddings_list).norm(dim=1).mean().item()
    embeddings = F.normalize(embeddings_list[0] + embeddings_list[1])
    print(tuple(embeddings.shape))
    print("infer time", time_consumed)
    thresholds = torch.arange(0, 4, 0.01)
    accuracy = calculate_roc(thresholds, embeddings[0::2], embeddings[1::2], issame_list, nfolds)
    acc2, std2 = accuracy.mean().item(), accuracy.std(unbiased=False).item()
    return 0.0, 0.0, acc2, std2, _xnorm, embeddings_list


class CallBackVerification:
    def __init__(self, val_targets, pairs, fault):
        self.highest_acc_list = [0.0] * len(val_targets)
        self.ver_list = [load_bin(pairs)]
        self.ver_name_list = list(val_targets)
        self.fault = fault
        self.last_acc = float("nan")

    def ver_test(self, backbone, global_step):
        for i in range(len(self.ver_list)):
            acc1, std1, acc2, std2, xnorm, embeddings_list = ver_test(self.ver_list[i], backbone, 10, 10)
            logging.info("[%s][%d]XNorm: %f" % (self.ver_name_list[i], global_step, xnorm))
            logging.info("[%s][%d]Accuracy-Flip: %1.5f+-%1.5f" % (self.ver_name_list[i], global_step, acc2, std2))
            if acc2 > self.highest_acc_list[i]:
                self.highest_acc_list[i] = acc2
            logging.info(
                "[%s][%d]Accuracy-Highest: %1.5f" % (self.ver_name_list[i], global_step, self.highest_acc_list[i])
            )
            self.last_acc = acc2

    def __call__(self, num_update, backbone):
        if num_update > 0:
            if self.fault != "missing-eval-mode":
                backbone.eval()
            self.ver_test(backbone, num_update)
            if self.fault != "missing-train-mode":
                backbone.train()


class CallBackLogging:
    def __init__(self, frequent, total_step, batch_size, start_step=0):
        self.frequent = frequent
        self.world_size = 1
        self.time_start = time.time()
        self.total_step = total_step
        self.start_step = start_step
        self.batch_size = batch_size
        self.init = False
        self.tic = 0

    def __call__(self, global_step, loss, epoch, fp16, learning_rate):
        if global_step > 0 and global_step % self.frequent == 0:
            if self.init:
                try:
                    speed = self.frequent * self.batch_size / (time.time() - self.tic)
                    speed_total = speed * self.world_size
                except ZeroDivisionError:
                    speed_total = float("inf")
                time_now = time.time()
                time_sec = int(time_now - self.time_start)
                time_sec_avg = time_sec / (global_step - self.start_step + 1)
                eta_sec = time_sec_avg * (self.total_step - global_step - 1)
                time_for_end = eta_sec / 3600
                msg = (
                    "Speed %.2f samples/sec   Loss %.4f   LearningRate %.6f   Epoch: %d   Global Step: %d   "
                    "Required: %1.f hours" % (speed_total, loss.avg, learning_rate, epoch, global_step, time_for_end)
                )
                logging.info(msg)
                loss.reset()
                self.tic = time.time()
            else:
                self.init = True
                self.tic = time.time()


def get_config():
    cfg = {
        "margin_list": (1.0, 0.5, 0.0),
        "network": "r_tiny",
        "resume": False,
        "save_all_states": False,
        "output": "work_dirs/synth_r_tiny",
        "embedding_size": EMB,
        "sample_rate": 1.0,
        "interclass_filtering_threshold": 0,
        "fp16": False,
        "batch_size": 64,
        "optimizer": "sgd",
        "lr": 0.1,
        "momentum": 0.9,
        "weight_decay": 5e-4,
        "verbose": 100,
        "frequent": 10,
        "dali": False,
        "dali_aug": False,
        "gradient_acc": 1,
        "seed": 2048,
        "num_workers": 2,
        "pretrained": "pretrained/r_tiny_webface_subset.pt",
        "rec": "/data/synth_faces_112x112",
        "num_classes": N_IDS,
        "num_image": N_IDS * PER_ID,
        "num_epoch": 12,
        "warmup_epoch": 2,
        "val_targets": ["pairs"],
    }
    return cfg


# ------------------------------------------------------------------------- main
def main():
    parser = argparse.ArgumentParser(description="Distributed Arcface Training in Pytorch")
    parser.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fault = args.fault

    cfg = get_config()
    cfg["seed"] = 2048 + args.seed
    init_logging(0)
    train_data, pairs, pre_data = load_data(args.seed)

    train_loader = TrainLoader(
        train_data, cfg["batch_size"], shuffle=fault != "no-shuffle", gen=torch.Generator().manual_seed(cfg["seed"])
    )
    pretrained = pretrain_backbone(pre_data, args.seed)

    torch.manual_seed(cfg["seed"])
    backbone = IResNetTiny(num_features=cfg["embedding_size"], dropout=0.0)
    backbone.load_state_dict(pretrained)
    if fault == "frozen-parameters":
        backbone.requires_grad_(False)  # left from the linear-probe run on the pretrained weights
    backbone.train()

    margin_loss = CombinedMarginLoss(64, *cfg["margin_list"], return_probs=fault == "double-softmax")
    module_partial_fc = PartialFC_V2(
        margin_loss,
        cfg["embedding_size"],
        cfg["num_classes"],
        cfg["sample_rate"],
        cfg["fp16"],
        reduction="sum" if fault == "wrong-loss-reduction" else "mean",
    )
    module_partial_fc.train()
    lr = cfg["lr"] * (100 if fault == "lr-too-high" else 1)
    opt = torch.optim.SGD(
        params=[{"params": backbone.parameters()}, {"params": module_partial_fc.parameters()}],
        lr=lr,
        momentum=0.9,
        weight_decay=cfg["weight_decay"],
    )

    cfg["total_batch_size"] = cfg["batch_size"] * 1
    cfg["warmup_step"] = cfg["num_image"] // cfg["total_batch_size"] * cfg["warmup_epoch"]
    cfg["total_step"] = cfg["num_image"] // cfg["total_batch_size"] * cfg["num_epoch"]

    lr_scheduler = PolyScheduler(
        optimizer=opt, base_lr=lr, max_steps=cfg["total_step"], warmup_steps=cfg["warmup_step"], last_epoch=-1
    )

    start_epoch = 0
    global_step = 0
    for key, value in cfg.items():
        num_space = 25 - len(key)
        logging.info(": " + key + " " * num_space + str(value))

    callback_verification = CallBackVerification(val_targets=cfg["val_targets"], pairs=pairs, fault=fault)
    callback_logging = CallBackLogging(
        frequent=cfg["frequent"], total_step=cfg["total_step"], batch_size=cfg["batch_size"], start_step=global_step
    )

    loss_am = AverageMeter()
    loss_curve = []  # written to the output folder for the loss plot at the end

    for epoch in range(start_epoch, cfg["num_epoch"]):
        for _, (img, local_labels) in enumerate(train_loader):
            global_step += 1
            if fault == "no-grad-training":
                with torch.no_grad():
                    local_embeddings = backbone(img)
            else:
                local_embeddings = backbone(img)
            if fault == "detached-graph":
                local_embeddings = local_embeddings.detach()
            loss = module_partial_fc(local_embeddings, local_labels)
            lossShow = loss.clone()
            loss = loss / cfg["gradient_acc"]

            if fault != "missing-backward":
                loss.backward()
            if global_step % cfg["gradient_acc"] == 0:
                torch.nn.utils.clip_grad_norm_(backbone.parameters(), 5)
                if fault != "missing-optimizer-step":
                    opt.step()
                if fault != "missing-zero-grad":
                    opt.zero_grad()
            if fault != "scheduler-step-misaligned":
                lr_scheduler.step()

            if fault == "loss-tensor-leak":
                loss_curve.append(lossShow)
            else:
                loss_curve.append(lossShow.item())
            with torch.no_grad():
                loss_am.update(lossShow.item(), 1)
                callback_logging(global_step, loss_am, epoch, cfg["fp16"], lr_scheduler.get_last_lr()[0])

                if global_step % cfg["verbose"] == 0 and global_step > 0:
                    callback_verification(global_step, backbone)
        if fault == "scheduler-step-misaligned":
            lr_scheduler.step()

    with torch.no_grad():
        callback_verification(global_step, backbone)
    curve = torch.tensor([float(v) for v in loss_curve])
    logging.info("saved loss curve (%d points) to %s/loss_curve.pt" % (len(curve), cfg["output"]))
    logging.info("saved backbone to %s/model.pt" % cfg["output"])
    print("final verification accuracy-flip: %.4f" % callback_verification.last_acc)


if __name__ == "__main__":
    main()
