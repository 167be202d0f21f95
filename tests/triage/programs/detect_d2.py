"""Program 16 (written for issue 9's fresh program 16 without reading triage's rules): a detector.

Object detection, where the programs before it classify, reconstruct or contrast: a tiny
single-object detector on synthetic 32x32 RGB images, each holding one filled shape of four
categories (box, ellipse, triangle, cross) in a random colour, size and aspect at a random place
over a noisy, tinted background. The annotations are COCO-like (category ids start at 1, mapped
to contiguous ids by the dataset's metadata) and the images are stored category by category. A
small convolutional backbone with batch norm (a stem and three stride-2 stages), a box head
(one fully connected layer) with a classification output and a box-regression output predicting
deltas (dx, dy, dw, dh) from one prior box at the image centre, decoded as Box2BoxTransform
does. The loss sums a cross-entropy term, a smooth-L1 term on the deltas and an IoU term
(-log IoU, the IoU clamped at a small epsilon) on the decoded boxes. SGD with momentum 0.9 and
weight decay, a linear warm-up then a step decay (x0.1 at two milestones), stepped every
iteration; iteration-based training over an endless iterator of a shuffling DataLoader, a random
horizontal flip and brightness jitter in the mapper, evaluation every 200 iterations and at the
end (batch size 1, as detectron2 runs inference). It logs as detectron2's DefaultTrainer does
(detectron2 itself is not used): the environment, the full config and the model at start, then

    [11/27 10:00:01 d2.utils.events]:  eta: 0:00:31  iter: 19  total_loss: 3.7  loss_cls: 1.385  loss_box_reg: 0.36
      loss_box_iou: 2    time: 0.0390  last_time: 0.0380  data_time: 0.0040  ...   lr: 0.0038162  max_mem: 340M
    [11/27 10:00:05 d2.evaluation.coco_evaluation]: Evaluation results for bbox:
    |   AP   |  AP50  |  AP75  |  APs   |  APm   |  APl   |

(losses are medians over the last 20 iterations, max_mem is the process's peak resident memory;
AP counts a detection as right when its class is right and its IoU passes the threshold, AP is
the mean over IoU 0.50:0.95), and a non-finite loss raises FloatingPointError as detectron2's
trainer does.

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import platform
import resource
import statistics
import sys
import time
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

SIZE = 32
CATEGORIES = ("box", "ellipse", "triangle", "cross")
NUM_CLASSES = len(CATEGORIES)
# the annotation file numbers its categories from 1, as COCO does
DATASET_ID_TO_CONTIGUOUS_ID = {i + 1: i for i in range(NUM_CLASSES)}
PRIOR = (0.5, 0.5, 0.3, 0.3)  # (cx, cy, w, h) of the single prior box, normalised
SCALE_CLAMP = math.log(1000.0 / 16)
PIXEL_MEAN = (0.35, 0.35, 0.35)
PIXEL_STD = (0.25, 0.25, 0.25)

CFG = {
    "DATALOADER": {"NUM_WORKERS": 0, "SAMPLER_TRAIN": "TrainingSampler", "ASPECT_RATIO_GROUPING": False},
    "DATASETS": {"TRAIN": ("shapes_train",), "TEST": ("shapes_val",)},
    "INPUT": {"FORMAT": "RGB", "MIN_SIZE_TRAIN": (32,), "RANDOM_FLIP": "horizontal", "BRIGHTNESS": (0.8, 1.2)},
    "MODEL": {
        "META_ARCHITECTURE": "ShapesDetector",
        "DEVICE": "cpu",
        "PIXEL_MEAN": list(PIXEL_MEAN),
        "PIXEL_STD": list(PIXEL_STD),
        "BACKBONE": {"NAME": "build_small_convnet_backbone", "FREEZE_AT": 0},
        "ROI_HEADS": {"NUM_CLASSES": NUM_CLASSES},
        "ROI_BOX_HEAD": {
            "FC_DIM": 128,
            "NUM_FC": 1,
            "BBOX_REG_LOSS_TYPE": "smooth_l1+iou",
            "SMOOTH_L1_BETA": 0.1,
            "BBOX_REG_LOSS_WEIGHT": 1.0,
            "IOU_LOSS_EPS": 1e-6,
            "PRIOR_BOX": list(PRIOR),
        },
    },
    "SOLVER": {
        "IMS_PER_BATCH": 32,
        "BASE_LR": 0.02,
        "MOMENTUM": 0.9,
        "WEIGHT_DECAY": 0.0001,
        "LR_SCHEDULER_NAME": "WarmupMultiStepLR",
        "WARMUP_METHOD": "linear",
        "WARMUP_FACTOR": 0.001,
        "WARMUP_ITERS": 100,
        "STEPS": (550, 700),
        "GAMMA": 0.1,
        "MAX_ITER": 800,
        "CHECKPOINT_PERIOD": 5000,
    },
    "TEST": {"EVAL_PERIOD": 200},
    "OUTPUT_DIR": "./output/shapes_det",
    "SEED": 0,
    "VERSION": 2,
}


# ---------------------------------------------------------------- logging (detectron2's setup_logger)
class _D2Formatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        record.name = record.name.replace("detectron2.", "d2.")
        log = super().formatMessage(record)
        if record.levelno == logging.WARNING:
            return "WARNING " + log
        if record.levelno >= logging.ERROR:
            return "ERROR " + log
        return log


def setup_logger(name: str) -> logging.Logger:
    root = logging.getLogger(name)
    root.setLevel(logging.DEBUG)
    root.propagate = False
    handler = logging.StreamHandler(stream=sys.stdout)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(_D2Formatter("[%(asctime)s %(name)s]: %(message)s", datefmt="%m/%d %H:%M:%S"))
    root.addHandler(handler)
    return root


def max_mem_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def dump_yaml(d: dict, indent: int = 0) -> str:
    lines = []
    for k in sorted(d):
        v = d[k]
        pad = "  " * indent
        if isinstance(v, dict):
            lines.append(f"{pad}{k}:")
            lines.append(dump_yaml(v, indent + 1))
        elif isinstance(v, (list, tuple)):
            inner = ", ".join(repr(x) if isinstance(x, str) else str(x) for x in v)
            lines.append(f"{pad}{k}: [{inner}]")
        elif isinstance(v, bool):
            lines.append(f"{pad}{k}: {str(v).lower()}")
        else:
            lines.append(f"{pad}{k}: {v}")
    return "\n".join(lines)


def pipe_table(rows: list[list[str]], headers: list[str], align: str) -> str:
    """A markdown table as tabulate's "pipe" format writes it (align: "center" or "left")."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def cell(s: str, w: int) -> str:
        return " " + (s.center(w) if align == "center" else s.ljust(w)) + " "

    out = ["|" + "|".join(cell(h, w) for h, w in zip(headers, widths, strict=True)) + "|"]
    if align == "center":
        out.append("|" + "|".join(":" + "-" * w + ":" for w in widths) + "|")
    else:
        out.append("|" + "|".join(":" + "-" * (w + 1) for w in widths) + "|")
    for r in rows:
        out.append("|" + "|".join(cell(s, w) for s, w in zip(r, widths, strict=True)) + "|")
    return "\n".join(out)


# ---------------------------------------------------------------- data
GRID = torch.meshgrid(torch.arange(SIZE).float(), torch.arange(SIZE).float(), indexing="ij")


def render(cat: int, g: torch.Generator) -> tuple[torch.Tensor, list[float]]:
    """One uint8 HWC image holding one shape of category `cat`, and its XYWH_ABS box."""
    yy, xx = GRID
    w = int(torch.randint(8, 19, (1,), generator=g))
    h = int(torch.randint(8, 19, (1,), generator=g))
    x0 = int(torch.randint(0, SIZE - w + 1, (1,), generator=g))
    y0 = int(torch.randint(0, SIZE - h + 1, (1,), generator=g))
    cx, cy = x0 + (w - 1) / 2, y0 + (h - 1) / 2
    inside = (xx >= x0) & (xx < x0 + w) & (yy >= y0) & (yy < y0 + h)
    if cat == 0:  # box
        mask = inside
    elif cat == 1:  # ellipse
        mask = ((xx - cx) / (w / 2)) ** 2 + ((yy - cy) / (h / 2)) ** 2 <= 1.0
    elif cat == 2:  # triangle, apex up
        frac = (yy - y0 + 0.5) / h
        mask = inside & ((xx - cx).abs() <= frac * w / 2 + 0.25)
    else:  # cross
        tw, th = max(2, w // 3), max(2, h // 3)
        mask = inside & (((xx - cx).abs() < tw / 2 + 0.01) | ((yy - cy).abs() < th / 2 + 0.01))
    tint = 0.05 + 0.4 * torch.rand(3, 1, 1, generator=g)
    bg = tint + 0.08 * torch.randn(3, SIZE, SIZE, generator=g)
    colour = 0.55 + 0.45 * torch.rand(3, 1, 1, generator=g)
    fg = colour + 0.04 * torch.randn(3, SIZE, SIZE, generator=g)
    img = torch.where(mask[None], fg, bg).clamp(0, 1)
    cols = mask.any(dim=0).nonzero().flatten()
    rows = mask.any(dim=1).nonzero().flatten()
    x1, x2 = int(cols.min()), int(cols.max()) + 1
    y1, y2 = int(rows.min()), int(rows.max()) + 1
    hwc = (img * 255).round().to(torch.uint8).permute(1, 2, 0).contiguous()
    return hwc, [float(x1), float(y1), float(x2 - x1), float(y2 - y1)]


def load_shapes(per_category: int, g: torch.Generator, start_id: int) -> list[dict]:
    """Dataset dicts in detectron2's standard format, written category by category."""
    dicts = []
    for cat in range(NUM_CLASSES):
        for _ in range(per_category):
            img, bbox = render(cat, g)
            dicts.append(
                {
                    "image_id": start_id + len(dicts),
                    "height": SIZE,
                    "width": SIZE,
                    "image": img,
                    "annotations": [{"bbox": bbox, "bbox_mode": "XYWH_ABS", "category_id": cat + 1}],
                }
            )
    return dicts


class DatasetMapper(Dataset):
    """Reads one dataset dict, applies the augmentations, returns the model's input dict."""

    def __init__(self, dicts: list[dict], is_train: bool, fault: str) -> None:
        self.dicts, self.is_train, self.fault = dicts, is_train, fault

    def __len__(self) -> int:
        return len(self.dicts)

    def brightness(self, image: torch.Tensor, factor: float) -> torch.Tensor:
        if self.fault == "dataloader-bottleneck":
            out = torch.empty_like(image)
            for c in range(image.shape[0]):
                for y in range(image.shape[1]):
                    out[c, y] = image[c, y] * factor
            return out
        return image * factor

    def __getitem__(self, i: int) -> dict:
        d = self.dicts[i]
        image = d["image"].permute(2, 0, 1).float() / 255.0
        anno = d["annotations"][0]
        x, y, w, h = anno["bbox"]
        box = torch.tensor([x, y, x + w, y + h]) / SIZE
        if self.is_train:
            if torch.rand(1) < 0.5:
                image = image.flip(2)
                box = torch.stack([1 - box[2], box[1], 1 - box[0], box[3]])
            image = self.brightness(image, 0.8 + 0.4 * float(torch.rand(1)))
        if self.fault == "label-out-of-range":
            gt_class = anno["category_id"]
        else:
            gt_class = DATASET_ID_TO_CONTIGUOUS_ID[anno["category_id"]]
        return {"image": image, "gt_boxes": box, "gt_classes": gt_class, "image_id": d["image_id"]}


# ---------------------------------------------------------------- model
def conv_bn(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 8, 1)
        self.res2 = conv_bn(8, 32, 2)
        self.res3 = conv_bn(32, 48, 2)
        self.res4 = conv_bn(48, 64, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.res4(self.res3(self.res2(self.stem(x))))


def encode(boxes: torch.Tensor) -> torch.Tensor:
    """x1y1x2y2 boxes -> deltas from the prior box (Box2BoxTransform.get_deltas)."""
    pcx, pcy, pw, ph = PRIOR
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    cx, cy = boxes[:, 0] + 0.5 * w, boxes[:, 1] + 0.5 * h
    return torch.stack([(cx - pcx) / pw, (cy - pcy) / ph, torch.log(w / pw), torch.log(h / ph)], dim=1)


def decode(deltas: torch.Tensor) -> torch.Tensor:
    """Deltas -> x1y1x2y2 boxes (Box2BoxTransform.apply_deltas)."""
    pcx, pcy, pw, ph = PRIOR
    cx, cy = pcx + deltas[:, 0] * pw, pcy + deltas[:, 1] * ph
    w = pw * torch.exp(deltas[:, 2].clamp(max=SCALE_CLAMP))
    h = ph * torch.exp(deltas[:, 3].clamp(max=SCALE_CLAMP))
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=1)


def pairwise_iou(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """IoU of aligned x1y1x2y2 boxes."""
    iw = (torch.min(a[:, 2], b[:, 2]) - torch.max(a[:, 0], b[:, 0])).clamp(min=0)
    ih = (torch.min(a[:, 3], b[:, 3]) - torch.max(a[:, 1], b[:, 1])).clamp(min=0)
    inter = iw * ih
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = (area_a + area_b - inter).clamp(min=eps)
    return inter / union


class ShapesDetector(nn.Module):
    def __init__(self, cfg: dict, fault: str) -> None:
        super().__init__()
        head = cfg["MODEL"]["ROI_BOX_HEAD"]
        self.fault = fault
        self.beta = head["SMOOTH_L1_BETA"]
        self.iou_eps = head["IOU_LOSS_EPS"]
        self.backbone = SmallConvNet()
        self.box_head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 4 * 4, head["FC_DIM"]), nn.ReLU())
        self.cls_score = nn.Linear(head["FC_DIM"], NUM_CLASSES)
        self.bbox_pred = nn.Linear(head["FC_DIM"], 4)
        nn.init.normal_(self.cls_score.weight, std=0.01)
        nn.init.normal_(self.bbox_pred.weight, std=0.001)
        for layer in (self.cls_score, self.bbox_pred):
            nn.init.constant_(layer.bias, 0)
        self.register_buffer("pixel_mean", torch.tensor(cfg["MODEL"]["PIXEL_MEAN"]).view(1, 3, 1, 1), False)
        self.register_buffer("pixel_std", torch.tensor(cfg["MODEL"]["PIXEL_STD"]).view(1, 3, 1, 1), False)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Class scores and box deltas for a batch of images in [0, 1]."""
        x = (images - self.pixel_mean) / self.pixel_std
        feats = self.box_head(self.backbone(x))
        return self.cls_score(feats), self.bbox_pred(feats)

    def losses(self, scores, deltas, gt_classes, gt_boxes) -> dict:
        loss_cls = F.cross_entropy(scores, gt_classes, reduction="mean")
        gt_deltas = encode(gt_boxes)
        if self.fault == "wrong-loss-reduction":
            loss_box_reg = F.smooth_l1_loss(deltas, gt_deltas, beta=self.beta, reduction="sum")
        else:
            loss_box_reg = F.smooth_l1_loss(deltas, gt_deltas, beta=self.beta, reduction="mean")
        iou = pairwise_iou(decode(deltas), gt_boxes)
        if self.fault == "missing-epsilon":
            loss_box_iou = -torch.log(iou).mean()
        else:
            loss_box_iou = -torch.log(iou.clamp(min=self.iou_eps)).mean()
        return {"loss_cls": loss_cls, "loss_box_reg": loss_box_reg, "loss_box_iou": loss_box_iou}


# ---------------------------------------------------------------- solver
def build_lr_lambda(solver: dict):
    warmup_iters, warmup_factor = solver["WARMUP_ITERS"], solver["WARMUP_FACTOR"]
    steps, gamma = solver["STEPS"], solver["GAMMA"]

    def factor(it: int) -> float:
        decay = gamma ** sum(1 for s in steps if it >= s)
        if it >= warmup_iters:
            return decay
        alpha = it / warmup_iters
        return decay * (warmup_factor * (1 - alpha) + alpha)

    return factor


# ---------------------------------------------------------------- metric storage (EventStorage)
class EventStorage:
    def __init__(self) -> None:
        self.iter = 0
        self.histories: OrderedDict[str, list] = OrderedDict()

    def put_scalar(self, name: str, value) -> None:
        self.histories.setdefault(name, []).append(value)

    def median(self, name: str, window: int) -> float:
        return statistics.median(self.histories[name][-window:])

    def avg(self, name: str, window: int) -> float:
        vals = self.histories[name][-window:]
        return sum(vals) / len(vals)

    def latest(self, name: str):
        return self.histories[name][-1]


# ---------------------------------------------------------------- evaluation
def inference_and_evaluate(model: nn.Module, loader: DataLoader, fault: str) -> OrderedDict:
    log = logging.getLogger("detectron2.evaluation.evaluator")
    log.info(f"Start inference on {len(loader)} batches")
    thresholds = [0.5 + 0.05 * k for k in range(10)]
    num_warmup = min(5, len(loader) - 1)
    start = time.perf_counter()
    compute = 0.0
    records = []
    if fault != "missing-eval-mode":
        model.eval()
    with torch.no_grad():
        for idx, batch in enumerate(loader):
            if idx == num_warmup:
                start, compute = time.perf_counter(), 0.0
            t0 = time.perf_counter()
            scores, deltas = model(batch["image"])
            probs, boxes = scores.softmax(dim=-1), decode(deltas)
            compute += time.perf_counter() - t0
            iou = pairwise_iou(boxes, batch["gt_boxes"])
            pred = probs.argmax(dim=1)
            gt_box = batch["gt_boxes"][0]
            area = float((gt_box[2] - gt_box[0]) * (gt_box[3] - gt_box[1])) * SIZE * SIZE
            records.append((int(batch["gt_classes"][0]), int(pred[0]), float(iou[0]), area))
    if fault != "missing-train-mode":
        model.train()
    total = time.perf_counter() - start
    n = len(loader) - num_warmup
    log.info(
        f"Total inference time: {datetime.timedelta(seconds=total)} ({total / n:.6f} s / iter per device, on 1 devices)"
    )
    log.info(
        f"Total inference pure compute time: {datetime.timedelta(seconds=int(compute))} "
        f"({compute / n:.6f} s / iter per device, on 1 devices)"
    )

    def ap(recs, ts) -> float:
        if not recs:
            return float("nan")
        hits = [sum(1 for gt, p, iou, _ in recs if p == gt and iou > t) / len(recs) for t in ts]
        return 100.0 * sum(hits) / len(hits)

    results = OrderedDict()
    results["AP"] = ap(records, thresholds)
    results["AP50"] = ap(records, [0.5])
    results["AP75"] = ap(records, [0.75])
    results["APs"] = ap([r for r in records if r[3] < 100], thresholds)
    results["APm"] = ap([r for r in records if 100 <= r[3] < 200], thresholds)
    results["APl"] = ap([r for r in records if r[3] >= 200], thresholds)
    coco_log = logging.getLogger("detectron2.evaluation.coco_evaluation")
    coco_log.info("Preparing results for COCO format ...")
    coco_log.info("Evaluating predictions with unofficial COCO API...")
    coco_log.info(
        "Evaluation results for bbox: \n"
        + pipe_table([[f"{v:.3f}" for v in results.values()]], list(results.keys()), "center")
    )
    per_cat = []
    for c, name in enumerate(CATEGORIES):
        v = ap([r for r in records if r[0] == c], thresholds)
        results[f"AP-{name}"] = v
        per_cat.extend([name, f"{v:.3f}"])
    n_cols = min(6, len(per_cat))
    rows = [per_cat[i : i + n_cols] for i in range(0, len(per_cat), n_cols)]
    rows = [r + [""] * (n_cols - len(r)) for r in rows]
    coco_log.info("Per-category bbox AP: \n" + pipe_table(rows, ["category", "AP"] * (n_cols // 2), "left"))
    return results


# ---------------------------------------------------------------- training
def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fault = a.fault
    torch.set_num_threads(1)
    cfg = CFG
    cfg["SEED"] = a.seed
    solver = cfg["SOLVER"]

    logger = setup_logger("detectron2")
    setup_logger("fvcore")
    logger.info("Rank of current process: 0. World size: 1")
    env_rows = [
        ("sys.platform", sys.platform),
        ("Python", platform.python_version()),
        ("detectron2", "not installed (shapes_det standalone trainer)"),
        ("Compiler", platform.python_compiler()),
        ("PyTorch", torch.__version__),
        ("PyTorch debug build", str(torch.version.debug)),
        ("GPU available", f"No: torch.cuda.is_available(): {torch.cuda.is_available()}"),
        ("CPU threads", str(torch.get_num_threads())),
    ]
    bar = "-" * 22 + "  " + "-" * 46
    logger.info("Environment info:\n" + bar + "\n" + "\n".join(f"{k:<22}  {v}" for k, v in env_rows) + "\n" + bar)
    logger.info(
        "Command line arguments: Namespace(config_file='configs/shapes_det.yaml', dist_url='tcp://127.0.0.1:50152', "
        f"eval_only=False, machine_rank=0, num_gpus=0, num_machines=1, opts=['SEED', '{a.seed}'], resume=False)"
    )
    logger.info("Running with full config:\n" + dump_yaml(cfg))
    logger.info(f"Full config saved to {cfg['OUTPUT_DIR']}/config.yaml")
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(1000 + a.seed)

    model = ShapesDetector(cfg, fault)
    if fault == "frozen-parameters":
        model.backbone.requires_grad_(False)
    logging.getLogger("detectron2.engine.defaults").info(f"Model:\n{model}")

    params = [q for q in model.parameters() if q.requires_grad]
    lr = solver["BASE_LR"] * (100 if fault == "lr-too-high" else 1)
    optimizer = torch.optim.SGD(params, lr=lr, momentum=solver["MOMENTUM"], weight_decay=solver["WEIGHT_DECAY"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, build_lr_lambda(solver))

    train_dicts = load_shapes(500, g, 0)
    val_dicts = load_shapes(100, g, 100000)
    build_log = logging.getLogger("detectron2.data.build")
    build_log.info(f"Removed 0 images with no usable annotations. {len(train_dicts)} images left.")
    counts = [sum(1 for d in train_dicts if d["annotations"][0]["category_id"] == c + 1) for c in range(NUM_CLASSES)]
    dist = []
    for name, c in zip(CATEGORIES, counts, strict=True):
        dist.extend([name, str(c)])
    dist = [dist[:6], dist[6:] + ["total", str(sum(counts))] + [""] * 2]
    build_log.info(
        f"Distribution of instances among all {NUM_CLASSES} categories:\n"
        + pipe_table(dist, ["category", "#instances"] * 3, "center")
    )
    logging.getLogger("detectron2.data.dataset_mapper").info(
        "[DatasetMapper] Augmentations used in training: [RandomFlip(), RandomBrightness(intensity_min=0.8, "
        "intensity_max=1.2)]"
    )
    build_log.info("Using training sampler TrainingSampler")
    common_log = logging.getLogger("detectron2.data.common")
    common_log.info("Serializing the dataset using: <class 'detectron2.data.common._TorchSerializedList'>")
    common_log.info(f"Serializing {len(train_dicts)} elements to byte tensors and concatenating them all ...")
    common_log.info(f"Serialized dataset takes {len(train_dicts) * SIZE * SIZE * 3 / 2**20:.2f} MiB")

    train_loader = DataLoader(
        DatasetMapper(train_dicts, True, fault),
        batch_size=solver["IMS_PER_BATCH"],
        shuffle=fault != "no-shuffle",
        num_workers=cfg["DATALOADER"]["NUM_WORKERS"],
        drop_last=True,
    )
    val_loader = DataLoader(DatasetMapper(val_dicts, False, fault), batch_size=1, shuffle=False)

    def endless(loader):
        while True:
            yield from loader

    data_iter = endless(train_loader)
    max_iter, eval_period = solver["MAX_ITER"], cfg["TEST"]["EVAL_PERIOD"]
    storage = EventStorage()
    events_log = logging.getLogger("detectron2.utils.events")
    hooks_log = logging.getLogger("detectron2.engine.hooks")
    loop_log = logging.getLogger("detectron2.engine.train_loop")
    last_write = [None]

    def write_metrics_line(iteration: int) -> None:
        if not any("loss" in k for k in storage.histories):
            return
        losses = "  ".join(f"{k}: {storage.median(k, 20):.4g}" for k in storage.histories if "loss" in k)
        parts = []
        if "time" in storage.histories:
            times = storage.histories["time"]
            eta = datetime.timedelta(seconds=int(statistics.median(times[-1000:]) * (max_iter - iteration - 1)))
            head = f" eta: {eta}  iter: {iteration}  "
            tail = f"time: {sum(times) / len(times):.4f}  last_time: {times[-1]:.4f}  "
        else:
            head, tail = f" iter: {iteration}  ", ""
        if "data_time" in storage.histories:
            tail += (
                f"data_time: {storage.avg('data_time', 20):.4f}  last_data_time: {storage.latest('data_time'):.4f}  "
            )
        lr_s = f"{storage.latest('lr'):.5g}" if "lr" in storage.histories else "N/A"
        parts.append(head + losses + "    " + tail + f" lr: {lr_s}  max_mem: {max_mem_mb():.0f}M")
        events_log.info(parts[0])
        last_write[0] = iteration

    def write_metrics(loss_dict: dict, data_time: float, iteration: int) -> None:
        if fault == "loss-tensor-leak":
            metrics = {k: v for k, v in loss_dict.items()}
        else:
            metrics = {k: v.detach().item() for k, v in loss_dict.items()}
        total = sum(metrics.values())
        if not math.isfinite(total):
            raise FloatingPointError(
                f"Loss became infinite or NaN at iteration={iteration}!\n"
                f"loss_dict = { ({k: float(v) for k, v in metrics.items()}) }"
            )
        storage.put_scalar("total_loss", total)
        for k, v in metrics.items():
            storage.put_scalar(k, v)
        storage.put_scalar("data_time", data_time)

    def run_step(iteration: int) -> None:
        start = time.perf_counter()
        data = next(data_iter)
        data_time = time.perf_counter() - start
        scores, deltas = model(data["image"])
        loss_dict = model.losses(scores, deltas, data["gt_classes"], data["gt_boxes"])
        losses = sum(loss_dict.values())
        if fault != "missing-zero-grad":
            optimizer.zero_grad()
        if fault != "missing-backward":
            losses.backward()
        write_metrics(loss_dict, data_time, iteration)
        if fault != "missing-optimizer-step":
            optimizer.step()
        if fault == "scheduler-step-misaligned":
            scheduler.step()

    def do_test(iteration: int) -> None:
        logging.getLogger("detectron2.data.dataset_mapper").info("[DatasetMapper] Augmentations used in inference: []")
        common_log.info(f"Serializing {len(val_dicts)} elements to byte tensors and concatenating them all ...")
        common_log.info(f"Serialized dataset takes {len(val_dicts) * SIZE * SIZE * 3 / 2**20:.2f} MiB")
        results = inference_and_evaluate(model, val_loader, fault)
        logging.getLogger("detectron2.engine.defaults").info("Evaluation results for shapes_val in csv format:")
        test_log = logging.getLogger("detectron2.evaluation.testing")
        keys = ["AP", "AP50", "AP75", "APs", "APm", "APl"]
        test_log.info("copypaste: Task: bbox")
        test_log.info("copypaste: " + ",".join(keys))
        test_log.info("copypaste: " + ",".join(f"{results[k]:.4f}" for k in keys))

    model.train()
    logging.getLogger("fvcore.common.checkpoint").info("No checkpoint found. Initializing model from scratch")
    loop_log.info("Starting training from iteration 0")
    train_start = time.perf_counter()
    hook_time = 0.0
    warmup_iter = 3
    iteration = 0
    try:
        for iteration in range(max_iter):
            storage.iter = iteration
            t0 = time.perf_counter()
            run_step(iteration)
            step_time = time.perf_counter() - t0
            if iteration + 1 >= warmup_iter:
                storage.put_scalar("time", step_time)
            else:
                train_start, hook_time = time.perf_counter(), 0.0
            h0 = time.perf_counter()
            # LRScheduler hook
            storage.put_scalar("lr", optimizer.param_groups[0]["lr"])
            scheduler.step()
            # EvalHook
            if (iteration + 1) % eval_period == 0 or iteration == max_iter - 1:
                do_test(iteration)
            # PeriodicWriter
            if (iteration + 1) % 20 == 0 or iteration == max_iter - 1:
                write_metrics_line(iteration)
            hook_time += time.perf_counter() - h0
        iteration += 1
    except Exception:
        loop_log.exception("Exception during training:")
        raise
    finally:
        total_time = time.perf_counter() - train_start
        minus_hooks = total_time - hook_time
        num_iter = iteration + 1 - warmup_iter if iteration < max_iter else max_iter - warmup_iter
        if num_iter > 0 and minus_hooks > 0:
            hooks_log.info(
                f"Overall training speed: {num_iter} iterations in "
                f"{datetime.timedelta(seconds=int(minus_hooks))} ({minus_hooks / num_iter:.4f} s / it)"
            )
        hooks_log.info(
            f"Total training time: {datetime.timedelta(seconds=int(total_time))} "
            f"({datetime.timedelta(seconds=int(hook_time))} on hooks)"
        )
        if iteration < max_iter and last_write[0] != iteration:
            write_metrics_line(iteration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
