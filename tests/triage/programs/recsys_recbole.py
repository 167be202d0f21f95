"""A fresh program (written without reading triage's rules): top-k recommendation.

Implicit-feedback recommendation, where the programs before it classify, generate, detect or act:
a NeuMF trained the way RecBole users train a custom model, scaled down to the CPU. The dataset is a
synthetic "atomic file" of user-item interactions with latent structure: 600 users and 400 items from
6 hidden taste clusters (each user a main and a second taste, each item one cluster and a log-normal
popularity), 15 to 44 interactions per user sampled without replacement from a softmax over cluster
affinity + popularity + noise (17,630 interactions). As RecBole does, tokens are remapped to ids from
1 (0 is [PAD]), the interactions are shuffled (`order: RO`) and split per user 80/10/10
(`split: {'RS': [0.8, 0.1, 0.1]}`, `group_by: user`), so the training split is stored grouped by
user. The model is RecBole's NeuMF (a GMF branch and an MLP tower [128, 64] with dropout 0.1 over
separate 64-dim user/item embeddings initialised N(0, 0.01), concatenated into a linear predict
layer) turned pair-wise: each training interaction gets one uniformly sampled negative item the user
has not interacted with, and the loss is RecBole's BPRLoss, `-log(gamma + sigmoid(pos - neg)).mean()`
with gamma 1e-10. Adam (lr 0.001, weight decay 1e-5), a shuffling training loader of 512
interactions (14,636 interactions, 29 batches an epoch), up to 40 epochs; after each a full-sort evaluation of the
validation split (every item scored for every user, the user's training items masked) under
`torch.no_grad()` and `model.eval()`: recall, mrr, ndcg, hit and precision at 10; early stopping on
mrr@10 (`stopping_step = 8`), the best state kept ("saved"), and at the end the test split evaluated
with the best state (training and validation items masked). A NaN batch loss raises
`ValueError("Training loss is nan")` as RecBole's trainer does.

It logs as a RecBole (1.2) user script does (`Config`, `init_logger`, `create_dataset`,
`data_preparation`, the model, `Trainer.fit`, `Trainer.evaluate`, as RecBole's customize-model guide
writes it, closing with run_recbole's environment table and result lines; RecBole itself is not
used): everything through the root logger to stderr, no progress bars (`show_progress = False`):

    27 Nov 10:00    INFO
    General Hyper Parameters:
    gpu_id = 0
    use_gpu = True
    seed = 2020
    ...
    Training Hyper Parameters:
    epochs = 40
    train_batch_size = 512
    learner = adam
    learning_rate = 0.001
    ...
    27 Nov 10:00    INFO  synthetic-clusters
    The number of users: 601
    Average actions of users: 29.383333333333333
    ...
    The sparsity of the dataset: 92.68467765693919%
    Remain Fields: ['user_id', 'item_id']
    27 Nov 10:00    INFO  [Training]: train_batch_size = [512] train_neg_sample_args: [{'distribution': 'uniform', ...}]
    27 Nov 10:00    INFO  [Evaluation]: eval_batch_size = [4096] eval_args: [{'split': {'RS': [0.8, 0.1, 0.1]}, ...}]
    27 Nov 10:00    INFO  NeuMF(
      (user_mf_embedding): Embedding(601, 64)
      ...
      (loss): BPRLoss()
    )
    Trainable parameters: 153153
    27 Nov 10:00    INFO  epoch 0 training [time: 0.38s, train loss: 19.9211]
    27 Nov 10:00    INFO  epoch 0 evaluating [time: 1.00s, valid_score: 0.079100]
    27 Nov 10:00    INFO  valid result:
    recall@10 : 0.0885    mrr@10 : 0.0791    ndcg@10 : 0.0598    hit@10 : 0.205    precision@10 : 0.0223
    27 Nov 10:00    INFO  Saving current: saved/NeuMF-Nov-27-2026_10-00-01.pth
    ...
    27 Nov 10:00    INFO  Finished training, best eval result in epoch 16     (only when early stopping fires)
    27 Nov 10:00    INFO  Loading model structure and parameters from saved/NeuMF-Nov-27-2026_10-00-01.pth
    27 Nov 10:00    INFO  The running environment of this training is as follows:
    +-------------+----------------+
    | Environment |     Usage      |
    ...
    27 Nov 10:00    INFO  best valid : OrderedDict([('recall@10', 0.2853), ('mrr@10', 0.2489), ...])
    27 Nov 10:00    INFO  test result: OrderedDict([('recall@10', 0.2678), ('mrr@10', 0.2382), ...])

As in RecBole, the train loss is the sum over the epoch of the batch losses, and the checkpoint
line appears whenever the validation score is at least the best so far.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import logging
import math
import os
import random
import sys
import time
from collections import Counter, OrderedDict
from enum import Enum

import torch
from torch import nn
from torch.nn.init import normal_
from torch.utils.data import DataLoader

DATASET = "synthetic-clusters"
FAULTS = (
    "lr-too-high",
    "missing-zero-grad",
    "missing-backward",
    "missing-optimizer-step",
    "missing-eval-mode",
    "no-shuffle",
    "wrong-loss-reduction",
    "loss-tensor-leak",
    "frozen-parameters",
    "detached-graph",
    "label-out-of-range",
    "shape-mismatch",
    "dtype-mismatch",
    "bad-init",
)
FAULT = "healthy"  # set from --fault


class ModelType(Enum):
    GENERAL = 1


class InputType(Enum):
    POINTWISE = 1
    PAIRWISE = 2


class EvaluatorType(Enum):
    RANKING = 1


# ----------------------------------------------------------------------------- config

GENERAL_ARGS = [
    "gpu_id",
    "use_gpu",
    "seed",
    "reproducibility",
    "state",
    "data_path",
    "checkpoint_dir",
    "show_progress",
    "config_file",
    "save_dataset",
    "dataset_save_path",
    "save_dataloaders",
    "dataloaders_save_path",
    "log_wandb",
]
TRAINING_ARGS = [
    "epochs",
    "train_batch_size",
    "learner",
    "learning_rate",
    "train_neg_sample_args",
    "eval_step",
    "stopping_step",
    "clip_grad_norm",
    "weight_decay",
    "loss_decimal_place",
]
EVALUATION_ARGS = [
    "eval_args",
    "repeatable",
    "metrics",
    "topk",
    "valid_metric",
    "valid_metric_bigger",
    "eval_batch_size",
    "metric_decimal_place",
]
DATASET_ARGS = [
    "field_separator",
    "seq_separator",
    "USER_ID_FIELD",
    "ITEM_ID_FIELD",
    "RATING_FIELD",
    "TIME_FIELD",
    "seq_len",
    "LABEL_FIELD",
    "threshold",
    "NEG_PREFIX",
    "ITEM_LIST_LENGTH_FIELD",
    "LIST_SUFFIX",
    "MAX_ITEM_LIST_LENGTH",
    "POSITION_FIELD",
    "HEAD_ENTITY_ID_FIELD",
    "TAIL_ENTITY_ID_FIELD",
    "RELATION_ID_FIELD",
    "ENTITY_ID_FIELD",
    "load_col",
    "unload_col",
    "unused_col",
    "additional_feat_suffix",
    "rm_dup_inter",
    "val_interval",
    "filter_inter_by_user_or_item",
    "user_inter_num_interval",
    "item_inter_num_interval",
    "alias_of_user_id",
    "alias_of_item_id",
    "alias_of_entity_id",
    "alias_of_relation_id",
    "preload_weight",
    "normalize_field",
    "normalize_all",
    "benchmark_filename",
]

OVERALL_YAML = {
    "gpu_id": "0",
    "worker": 0,
    "use_gpu": True,
    "seed": 2020,
    "state": "INFO",
    "reproducibility": True,
    "data_path": "dataset/",
    "checkpoint_dir": "saved",
    "show_progress": True,
    "save_dataset": False,
    "dataset_save_path": None,
    "save_dataloaders": False,
    "dataloaders_save_path": None,
    "log_wandb": False,
    "wandb_project": "recbole",
    "shuffle": True,
    "epochs": 300,
    "train_batch_size": 2048,
    "learner": "adam",
    "learning_rate": 0.001,
    "train_neg_sample_args": {
        "distribution": "uniform",
        "sample_num": 1,
        "alpha": 1.0,
        "dynamic": False,
        "candidate_num": 0,
    },
    "eval_step": 1,
    "stopping_step": 10,
    "clip_grad_norm": None,
    "weight_decay": 0.0,
    "loss_decimal_place": 4,
    "require_pow": False,
    "enable_amp": False,
    "enable_scaler": False,
    "transform": None,
    "eval_args": {"split": {"RS": [0.8, 0.1, 0.1]}, "group_by": "user", "order": "RO", "mode": "full"},
    "repeatable": False,
    "metrics": ["Recall", "MRR", "NDCG", "Hit", "Precision"],
    "topk": [10],
    "valid_metric": "MRR@10",
    "valid_metric_bigger": True,
    "eval_batch_size": 4096,
    "metric_decimal_place": 4,
}
NEUMF_YAML = {
    "mf_embedding_size": 64,
    "mlp_embedding_size": 64,
    "mlp_hidden_size": [128, 64],
    "dropout_prob": 0.1,
    "mf_train": True,
    "mlp_train": True,
    "use_pretrain": False,
    "mf_pretrain_path": None,
    "mlp_pretrain_path": None,
}
SAMPLE_YAML = {
    "field_separator": "\t",
    "seq_separator": " ",
    "USER_ID_FIELD": "user_id",
    "ITEM_ID_FIELD": "item_id",
    "RATING_FIELD": "rating",
    "TIME_FIELD": "timestamp",
    "seq_len": None,
    "LABEL_FIELD": "label",
    "threshold": None,
    "NEG_PREFIX": "neg_",
    "numerical_features": [],
    "load_col": {"inter": ["user_id", "item_id"]},
    "unload_col": None,
    "unused_col": None,
    "additional_feat_suffix": None,
    "rm_dup_inter": None,
    "val_interval": None,
    "filter_inter_by_user_or_item": True,
    "user_inter_num_interval": "[0,inf)",
    "item_inter_num_interval": "[0,inf)",
    "alias_of_user_id": None,
    "alias_of_item_id": None,
    "alias_of_entity_id": None,
    "alias_of_relation_id": None,
    "preload_weight": None,
    "normalize_field": None,
    "normalize_all": None,
    "discretization": None,
    "ITEM_LIST_LENGTH_FIELD": "item_length",
    "LIST_SUFFIX": "_list",
    "MAX_ITEM_LIST_LENGTH": 50,
    "POSITION_FIELD": "position_id",
    "HEAD_ENTITY_ID_FIELD": "head_id",
    "TAIL_ENTITY_ID_FIELD": "tail_id",
    "RELATION_ID_FIELD": "relation_id",
    "ENTITY_ID_FIELD": "entity_id",
    "kg_reverse_r": False,
    "entity_kg_num_interval": "[0,inf)",
    "relation_kg_num_interval": "[0,inf)",
    "benchmark_filename": None,
}


class Config:
    """RecBole's Config: the property files, then the user's dict, then the derived defaults."""

    def __init__(self, model, dataset: str, config_dict: dict):
        self.parameters = {
            "General": GENERAL_ARGS,
            "Training": TRAINING_ARGS,
            "Evaluation": EVALUATION_ARGS,
            "Dataset": DATASET_ARGS,
        }
        self.model = model.__name__
        self.model_class = model
        self.dataset = dataset
        d = dict(copy.deepcopy(OVERALL_YAML))
        d.update(copy.deepcopy(NEUMF_YAML))
        d.update(copy.deepcopy(SAMPLE_YAML))
        d["MODEL_TYPE"] = model.type
        d.update(copy.deepcopy(config_dict))
        self.final_config_dict = d
        # _set_default_parameters
        d["dataset"] = dataset
        d["model"] = self.model
        d["data_path"] = os.path.join(d["data_path"], dataset)
        d["MODEL_INPUT_TYPE"] = model.input_type
        d["eval_type"] = EvaluatorType.RANKING
        d["valid_metric_bigger"] = d["valid_metric"].split("@")[0].lower() not in {"gauc", "mae", "rmse", "logloss"}
        for k, v in {
            "distribution": "uniform",
            "sample_num": 1,
            "alpha": 1.0,
            "dynamic": False,
            "candidate_num": 0,
        }.items():
            d["train_neg_sample_args"].setdefault(k, v)
        eval_args = {
            "split": {"RS": [0.8, 0.1, 0.1]},
            "order": "RO",
            "group_by": "user",
            "mode": {"valid": "full", "test": "full"},
        }
        eval_args.update(d["eval_args"])
        if isinstance(eval_args["mode"], str):
            eval_args["mode"] = {"valid": eval_args["mode"], "test": eval_args["mode"]}
        d["eval_args"] = eval_args
        # _init_device
        d["gpu_id"] = str(d["gpu_id"])
        d["single_spec"] = True
        d["local_rank"] = 0
        d["device"] = torch.device("cuda") if d["use_gpu"] and torch.cuda.is_available() else torch.device("cpu")
        for phase in ("valid", "test"):
            d[f"{phase}_neg_sample_args"] = {"distribution": "uniform", "sample_num": "none"}

    def __getitem__(self, item):
        return self.final_config_dict.get(item)

    def __str__(self):
        args_info = "\n"
        for category in self.parameters:
            args_info += category + " Hyper Parameters:\n"
            args_info += "\n".join(
                f"{arg} = {value}" for arg, value in self.final_config_dict.items() if arg in self.parameters[category]
            )
            args_info += "\n\n"
        args_info += "Other Hyper Parameters: \n"
        known = {a for args in self.parameters.values() for a in args} | {"model", "dataset", "config_files"}
        args_info += "\n".join(f"{arg} = {value}" for arg, value in self.final_config_dict.items() if arg not in known)
        args_info += "\n\n"
        return args_info


def init_seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def init_logger() -> None:
    sh = logging.StreamHandler()  # stderr
    sh.setFormatter(logging.Formatter("%(asctime)-15s %(levelname)s  %(message)s", "%d %b %H:%M"))
    logging.basicConfig(level=logging.INFO, handlers=[sh])


def get_local_time() -> str:
    return datetime.datetime.now().strftime("%b-%d-%Y_%H-%M-%S")


# ----------------------------------------------------------------------------- data


def write_atomic_inter_file() -> list[tuple[str, str]]:
    """The dataset's .inter file (user_id:token, item_id:token), as the data owner exported it: by user."""
    g = torch.Generator().manual_seed(7)
    n_users, n_items, n_clusters = 600, 400, 6
    item_cluster = torch.randint(0, n_clusters, (n_items,), generator=g)
    log_pop = 0.8 * torch.randn(n_items, generator=g)
    main_taste = torch.randint(0, n_clusters, (n_users,), generator=g)
    second_taste = (main_taste + torch.randint(1, n_clusters, (n_users,), generator=g)) % n_clusters
    rows = []
    for u in range(n_users):
        aff = (
            3.0 * (item_cluster == main_taste[u]).float()
            + 1.5 * (item_cluster == second_taste[u]).float()
            + log_pop
            + 0.5 * torch.randn(n_items, generator=g)
        )
        n_u = int(torch.randint(15, 45, (1,), generator=g))
        items = torch.multinomial(torch.softmax(aff, 0), n_u, replacement=False, generator=g)
        rows.extend((f"u{u + 1:04d}", f"i{int(i) + 1:04d}") for i in items)
    return rows


class Dataset:
    """RecBole's Dataset for a general model: token fields remapped to ids, 0 kept for [PAD]."""

    def __init__(
        self,
        config: Config,
        rows: list[tuple[str, str]] | None = None,
        inter: dict | None = None,
        field2id_token: dict | None = None,
    ):
        self.config = config
        self.dataset_name = config["dataset"]
        self.uid_field, self.iid_field = config["USER_ID_FIELD"], config["ITEM_ID_FIELD"]
        if rows is not None:
            self.field2id_token, self.field2token_id = {}, {}
            cols = list(zip(*rows, strict=True))
            inter = {}
            for field, col in ((self.uid_field, cols[0]), (self.iid_field, cols[1])):
                token_id = {"[PAD]": 0}
                for tok in col:
                    token_id.setdefault(tok, len(token_id))
                self.field2token_id[field] = token_id
                self.field2id_token[field] = list(token_id)
                inter[field] = torch.tensor([token_id[t] for t in col], dtype=torch.long)
        else:
            self.field2id_token = field2id_token
        self.inter_feat = inter
        self.field2type = {self.uid_field: "token", self.iid_field: "token"}

    def num(self, field: str) -> int:
        return len(self.field2id_token[field])

    @property
    def user_num(self) -> int:
        return self.num(self.uid_field)

    @property
    def item_num(self) -> int:
        return self.num(self.iid_field)

    @property
    def inter_num(self) -> int:
        return len(self.inter_feat[self.uid_field])

    @property
    def avg_actions_of_users(self) -> float:
        counts = list(Counter(self.inter_feat[self.uid_field].tolist()).values())
        return sum(counts) / len(counts)

    @property
    def avg_actions_of_items(self) -> float:
        counts = list(Counter(self.inter_feat[self.iid_field].tolist()).values())
        return sum(counts) / len(counts)

    @property
    def sparsity(self) -> float:
        return 1 - self.inter_num / self.user_num / self.item_num

    def __len__(self) -> int:
        return self.inter_num

    def __getitem__(self, index) -> dict:
        return {k: v[index] for k, v in self.inter_feat.items()}

    def copy(self, index: list[int]) -> Dataset:
        idx = torch.tensor(index, dtype=torch.long)
        return Dataset(
            self.config, inter={k: v[idx] for k, v in self.inter_feat.items()}, field2id_token=self.field2id_token
        )

    def shuffle(self) -> None:
        perm = torch.randperm(self.inter_num)
        self.inter_feat = {k: v[perm] for k, v in self.inter_feat.items()}

    @staticmethod
    def _calcu_split_ids(tot: int, ratios: list[float]) -> list[int]:
        cnt = [int(ratios[i] * tot) for i in range(len(ratios))]
        cnt[0] = tot - sum(cnt[1:])
        for i in range(1, len(ratios)):
            if cnt[0] <= 1:
                break
            if 0 < ratios[-i] * tot < 1:
                cnt[-i] += 1
                cnt[0] -= 1
        out, acc = [], 0
        for c in cnt[:-1]:
            acc += c
            out.append(acc)
        return out

    def split_by_ratio(self, ratios: list[float], group_by: str) -> list[Dataset]:
        tot_ratio = sum(ratios)
        ratios = [r / tot_ratio for r in ratios]
        grouped: dict[int, list[int]] = {}
        for i, key in enumerate(self.inter_feat[group_by].tolist()):
            grouped.setdefault(key, []).append(i)
        next_index: list[list[int]] = [[] for _ in ratios]
        for grouped_index in grouped.values():
            tot = len(grouped_index)
            split_ids = self._calcu_split_ids(tot, ratios)
            for index, start, end in zip(next_index, [0] + split_ids, split_ids + [tot], strict=True):
                index.extend(grouped_index[start:end])
        return [self.copy(index) for index in next_index]

    def build(self) -> list[Dataset]:
        eval_args = self.config["eval_args"]
        if eval_args["order"] == "RO":
            self.shuffle()
        return self.split_by_ratio(eval_args["split"]["RS"], group_by=self.uid_field)

    def __str__(self) -> str:
        info = [
            self.dataset_name,
            f"The number of users: {self.user_num}",
            f"Average actions of users: {self.avg_actions_of_users}",
            f"The number of items: {self.item_num}",
            f"Average actions of items: {self.avg_actions_of_items}",
            f"The number of inters: {self.inter_num}",
            f"The sparsity of the dataset: {self.sparsity * 100}%",
            f"Remain Fields: {list(self.field2type)}",
        ]
        return "\n".join(info)


def create_dataset(config: Config) -> Dataset:
    return Dataset(config, rows=write_atomic_inter_file())


class Sampler:
    """Uniform negatives among the items a user has no interaction with (up to and including `phase`)."""

    def __init__(self, datasets: list[Dataset]):
        ds = datasets[0]
        self.uid_field, self.iid_field = ds.uid_field, ds.iid_field
        self.user_num, self.item_num = ds.user_num, ds.item_num
        self.used_ids = []
        used = torch.zeros(self.user_num, self.item_num, dtype=torch.bool)
        for d in datasets:
            used = used.clone()
            used[d.inter_feat[self.uid_field], d.inter_feat[self.iid_field]] = True
            self.used_ids.append(used)
        self.phase = 0

    def set_phase(self, phase: int) -> Sampler:
        s = copy.copy(self)
        s.phase = phase
        return s

    def sample_by_user_ids(self, user_ids: torch.Tensor, num: int) -> torch.Tensor:
        used = self.used_ids[self.phase]
        key_ids = user_ids.repeat(num)
        total_num = len(key_ids)
        value_ids = torch.zeros(total_num) if FAULT == "dtype-mismatch" else torch.zeros(total_num, dtype=torch.long)
        check_list = torch.arange(total_num)
        while len(check_list) > 0:
            value_ids[check_list] = torch.randint(1, self.item_num, (len(check_list),))
            check_list = check_list[used[key_ids[check_list], value_ids[check_list]]]
        return value_ids


class TrainDataLoader(DataLoader):
    """Batches of training interactions, each with `sample_num` sampled negative items."""

    def __init__(self, config: Config, dataset: Dataset, sampler: Sampler, shuffle: bool = False):
        self.config = config
        self._dataset = dataset
        self._sampler = sampler
        self.neg_sample_num = config["train_neg_sample_args"]["sample_num"]
        self.neg_item_id = config["NEG_PREFIX"] + config["ITEM_ID_FIELD"]
        self.generator = torch.Generator()
        self.generator.manual_seed(config["seed"])
        batch_num = max(config["train_batch_size"] // self.neg_sample_num, 1)
        super().__init__(
            dataset=list(range(len(dataset))),
            batch_size=batch_num,
            collate_fn=self.collate_fn,
            shuffle=shuffle,
            generator=self.generator,
        )

    def collate_fn(self, index: list[int]) -> dict:
        data = self._dataset[torch.tensor(index, dtype=torch.long)]
        user_ids = data[self.config["USER_ID_FIELD"]]
        neg_item_ids = self._sampler.sample_by_user_ids(user_ids, self.neg_sample_num)
        return {
            self.config["USER_ID_FIELD"]: user_ids.repeat(self.neg_sample_num),
            self.config["ITEM_ID_FIELD"]: data[self.config["ITEM_ID_FIELD"]].repeat(self.neg_sample_num),
            self.neg_item_id: neg_item_ids,
        }


class FullSortEvalDataLoader:
    """Batches of users for full-sort evaluation, with the user's already-seen items to mask."""

    def __init__(self, config: Config, dataset: Dataset, sampler: Sampler):
        self._dataset = dataset
        self.uid_field, self.iid_field = config["USER_ID_FIELD"], config["ITEM_ID_FIELD"]
        used = sampler.used_ids[sampler.phase]
        positive = torch.zeros(dataset.user_num, dataset.item_num, dtype=torch.bool)
        positive[dataset.inter_feat[self.uid_field], dataset.inter_feat[self.iid_field]] = True
        self.uid2positive = positive
        self.uid2history = used & ~positive
        self.uid_list = torch.unique(dataset.inter_feat[self.uid_field])
        self.step = max(config["eval_batch_size"] // dataset.item_num, 1)

    def __len__(self) -> int:
        return math.ceil(len(self.uid_list) / self.step)

    def __iter__(self):
        for start in range(0, len(self.uid_list), self.step):
            uids = self.uid_list[start : start + self.step]
            history_index = self.uid2history[uids].nonzero(as_tuple=True)
            positive_u, positive_i = self.uid2positive[uids].nonzero(as_tuple=True)
            yield {self.uid_field: uids}, history_index, positive_u, positive_i


def data_preparation(config: Config, dataset: Dataset):
    built = dataset.build()
    train_dataset, valid_dataset, test_dataset = built
    sampler = Sampler(built)
    if FAULT == "no-shuffle":
        train_data = TrainDataLoader(config, train_dataset, sampler.set_phase(0), shuffle=False)
    else:
        train_data = TrainDataLoader(config, train_dataset, sampler.set_phase(0), shuffle=config["shuffle"])
    valid_data = FullSortEvalDataLoader(config, valid_dataset, sampler.set_phase(0))
    test_data = FullSortEvalDataLoader(config, test_dataset, sampler.set_phase(1))
    logger = logging.getLogger()
    logger.info(
        f"[Training]: train_batch_size = [{config['train_batch_size']}]"
        f" train_neg_sample_args: [{config['train_neg_sample_args']}]"
    )
    logger.info(f"[Evaluation]: eval_batch_size = [{config['eval_batch_size']}] eval_args: [{config['eval_args']}]")
    return train_data, valid_data, test_data


# ----------------------------------------------------------------------------- model


class BPRLoss(nn.Module):
    def __init__(self, gamma: float = 1e-10):
        super().__init__()
        self.gamma = gamma

    def forward(self, pos_score: torch.Tensor, neg_score: torch.Tensor) -> torch.Tensor:
        if FAULT == "wrong-loss-reduction":
            return -torch.log(self.gamma + torch.sigmoid(pos_score - neg_score)).sum()
        return -torch.log(self.gamma + torch.sigmoid(pos_score - neg_score)).mean()


class MLPLayers(nn.Module):
    def __init__(self, layers: list[int], dropout: float = 0.0):
        super().__init__()
        mlp_modules = []
        for input_size, output_size in zip(layers[:-1], layers[1:], strict=True):
            mlp_modules.append(nn.Dropout(p=dropout))
            mlp_modules.append(nn.Linear(input_size, output_size))
            mlp_modules.append(nn.ReLU())
        self.mlp_layers = nn.Sequential(*mlp_modules)

    def forward(self, input_feature: torch.Tensor) -> torch.Tensor:
        return self.mlp_layers(input_feature)


class GeneralRecommender(nn.Module):
    type = ModelType.GENERAL

    def __init__(self, config: Config, dataset: Dataset):
        super().__init__()
        self.USER_ID = config["USER_ID_FIELD"]
        self.ITEM_ID = config["ITEM_ID_FIELD"]
        self.NEG_ITEM_ID = config["NEG_PREFIX"] + self.ITEM_ID
        self.n_users = dataset.num(self.USER_ID)
        self.n_items = dataset.num(self.ITEM_ID)
        self.device = config["device"]

    def __str__(self) -> str:
        params = sum(p.numel() for p in self.parameters() if p.requires_grad)
        return super().__str__() + f"\nTrainable parameters: {params}"


class NeuMF(GeneralRecommender):
    """RecBole's NeuMF, trained pair-wise with BPR instead of point-wise with BCE."""

    input_type = InputType.PAIRWISE

    def __init__(self, config: Config, dataset: Dataset):
        super().__init__(config, dataset)
        if FAULT == "label-out-of-range":
            self.n_items = dataset.num(self.ITEM_ID) - 1  # the [PAD] token is not a real item
        self.mf_embedding_size = config["mf_embedding_size"]
        self.mlp_embedding_size = config["mlp_embedding_size"]
        self.mlp_hidden_size = config["mlp_hidden_size"]
        self.dropout_prob = config["dropout_prob"]

        self.user_mf_embedding = nn.Embedding(self.n_users, self.mf_embedding_size)
        self.item_mf_embedding = nn.Embedding(self.n_items, self.mf_embedding_size)
        self.user_mlp_embedding = nn.Embedding(self.n_users, self.mlp_embedding_size)
        self.item_mlp_embedding = nn.Embedding(self.n_items, self.mlp_embedding_size)
        self.mlp_layers = MLPLayers([2 * self.mlp_embedding_size] + self.mlp_hidden_size, self.dropout_prob)
        if FAULT == "shape-mismatch":
            self.predict_layer = nn.Linear(self.mf_embedding_size + self.mlp_hidden_size[0], 1)
        else:
            self.predict_layer = nn.Linear(self.mf_embedding_size + self.mlp_hidden_size[-1], 1)
        self.sigmoid = nn.Sigmoid()
        self.loss = BPRLoss()

        self.apply(self._init_weights)
        if FAULT == "frozen-parameters":
            # keep the id embeddings fixed, tune the interaction function only
            for emb in (
                self.user_mf_embedding,
                self.item_mf_embedding,
                self.user_mlp_embedding,
                self.item_mlp_embedding,
            ):
                emb.weight.requires_grad = False

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Embedding):
            if FAULT == "bad-init":
                normal_(module.weight.data, 0.01)
            else:
                normal_(module.weight.data, mean=0.0, std=0.01)

    def forward(self, user: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        user_mf_e = self.user_mf_embedding(user)
        item_mf_e = self.item_mf_embedding(item)
        user_mlp_e = self.user_mlp_embedding(user)
        item_mlp_e = self.item_mlp_embedding(item)
        mf_output = torch.mul(user_mf_e, item_mf_e)  # [batch_size, embedding_size]
        mlp_output = self.mlp_layers(torch.cat((user_mlp_e, item_mlp_e), -1))  # [batch_size, layers[-1]]
        output = self.predict_layer(torch.cat((mf_output, mlp_output), -1))
        if FAULT == "detached-graph":
            return output.squeeze(-1).detach()
        return output.squeeze(-1)

    def calculate_loss(self, interaction: dict) -> torch.Tensor:
        user = interaction[self.USER_ID]
        pos_item = interaction[self.ITEM_ID]
        neg_item = interaction[self.NEG_ITEM_ID]
        pos_score = self.forward(user, pos_item)
        neg_score = self.forward(user, neg_item)
        return self.loss(pos_score, neg_score)

    def predict(self, interaction: dict) -> torch.Tensor:
        user = interaction[self.USER_ID]
        item = interaction[self.ITEM_ID]
        return self.sigmoid(self.forward(user, item))


# ----------------------------------------------------------------------------- evaluation


class Evaluator:
    """Top-k ranking metrics from the top-k hit matrix, averaged over users, as RecBole's evaluator."""

    def __init__(self, config: Config):
        self.metrics = [m.lower() for m in config["metrics"]]
        self.topk = config["topk"]
        self.decimal_place = config["metric_decimal_place"]

    def evaluate(self, pos_index: torch.Tensor, pos_len: torch.Tensor) -> OrderedDict:
        pos_index = pos_index.double()
        pos_len = pos_len.double().unsqueeze(1)
        maxk = pos_index.size(1)
        ranks = torch.arange(1, maxk + 1, dtype=torch.float64)
        hits = pos_index.cumsum(1)
        values = {
            "hit": (hits > 0).double(),
            "recall": hits / pos_len,
            "precision": hits / ranks,
        }
        first = torch.where(pos_index.any(1), pos_index.argmax(1), torch.full_like(pos_len[:, 0], maxk).long())
        mrr = torch.zeros_like(pos_index)
        for row in range(pos_index.size(0)):
            idx = int(first[row])
            if idx < maxk:
                mrr[row, idx:] = 1.0 / (idx + 1)
        values["mrr"] = mrr
        gain = 1.0 / torch.log2(ranks + 1)
        idcg_len = torch.minimum(pos_len[:, 0], torch.tensor(float(maxk))).long()
        idcg = gain.cumsum(0).repeat(pos_index.size(0), 1)
        for row in range(pos_index.size(0)):
            n = int(idcg_len[row])
            idcg[row, n:] = idcg[row, n - 1]
        dcg = torch.where(pos_index > 0, gain, torch.zeros_like(gain)).cumsum(1)
        values["ndcg"] = dcg / idcg
        result = OrderedDict()
        for metric in self.metrics:
            avg = values[metric].mean(0)
            for k in self.topk:
                result[f"{metric}@{k}"] = round(float(avg[k - 1]), self.decimal_place)
        return result


# ----------------------------------------------------------------------------- trainer


def early_stopping(value, best, cur_step, max_step, bigger=True):
    stop_flag = False
    update_flag = False
    if bigger:
        if value >= best:
            cur_step = 0
            best = value
            update_flag = True
        else:
            cur_step += 1
            if cur_step > max_step:
                stop_flag = True
    else:
        if value <= best:
            cur_step = 0
            best = value
            update_flag = True
        else:
            cur_step += 1
            if cur_step > max_step:
                stop_flag = True
    return best, cur_step, stop_flag, update_flag


def dict2str(result_dict: dict) -> str:
    return "    ".join([str(metric) + " : " + str(value) for metric, value in result_dict.items()])


def read_rss_and_total_gb() -> tuple[float, float]:
    rss = total = 0.0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024 / 1024**3
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024 / 1024**3
    return rss, total


def cpu_percent(interval: float = 1.0) -> float:
    def snap():
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        return sum(vals), idle

    t0, i0 = snap()
    time.sleep(interval)
    t1, i1 = snap()
    return 100.0 * (1 - (i1 - i0) / max(t1 - t0, 1))


def get_environment(config: Config) -> str:
    """run_recbole's environment table (texttable layout)."""
    gpu_usage = "0.0 / 0.0"
    used, total = read_rss_and_total_gb()
    rows = [
        ["Environment", "Usage"],
        ["CPU", f"{cpu_percent(interval=1):.2f} %"],
        ["GPU", gpu_usage],
        ["Memory", f"{used:.2f} G/{total:.2f} G"],
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    line = "+" + "-" * (w0 + 2) + "+" + "-" * (w1 + 2) + "+"
    head = "+" + "=" * (w0 + 2) + "+" + "=" * (w1 + 2) + "+"
    out = [line]
    for n, (a, b) in enumerate(rows):
        out.append(f"| {a.ljust(w0)} | {b.center(w1)} |")
        out.append(head if n == 0 else line)
    return "\n".join(out)


class Trainer:
    def __init__(self, config: Config, model: NeuMF):
        self.config = config
        self.model = model
        self.logger = logging.getLogger()
        self.learner = config["learner"]
        self.learning_rate = config["learning_rate"]
        self.epochs = config["epochs"]
        self.eval_step = min(config["eval_step"], self.epochs)
        self.stopping_step = config["stopping_step"]
        self.clip_grad_norm = config["clip_grad_norm"]
        self.valid_metric = config["valid_metric"].lower()
        self.valid_metric_bigger = config["valid_metric_bigger"]
        self.device = config["device"]
        self.checkpoint_dir = config["checkpoint_dir"]
        self.saved_model_file = os.path.join(self.checkpoint_dir, "{}-{}.pth".format(config["model"], get_local_time()))
        self._saved_state = None  # what torch.save would have written to saved_model_file
        self.weight_decay = config["weight_decay"]
        self.start_epoch = 0
        self.cur_step = 0
        self.best_valid_score = -math.inf if self.valid_metric_bigger else math.inf
        self.best_valid_result = None
        self.train_loss_dict = dict()
        self.optimizer = self._build_optimizer()
        self.evaluator = Evaluator(config)

    def _build_optimizer(self) -> torch.optim.Optimizer:
        params = self.model.parameters()
        if self.learner.lower() == "adam":
            return torch.optim.Adam(params, lr=self.learning_rate, weight_decay=self.weight_decay)
        self.logger.warning("Received unrecognized optimizer, set default Adam optimizer")
        return torch.optim.Adam(params, lr=self.learning_rate)

    def _train_epoch(self, train_data: TrainDataLoader, epoch_idx: int):
        self.model.train()
        loss_func = self.model.calculate_loss
        total_loss = None
        for interaction in train_data:
            interaction = {k: v.to(self.device) for k, v in interaction.items()}
            if FAULT != "missing-zero-grad":
                self.optimizer.zero_grad()
            losses = loss_func(interaction)
            loss = losses
            if FAULT == "loss-tensor-leak":
                total_loss = losses if total_loss is None else total_loss + losses
            else:
                total_loss = losses.item() if total_loss is None else total_loss + losses.item()
            self._check_nan(loss)
            if FAULT != "missing-backward":
                loss.backward()
            if self.clip_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), **self.clip_grad_norm)
            if FAULT != "missing-optimizer-step":
                self.optimizer.step()
        return total_loss

    def _check_nan(self, loss: torch.Tensor) -> None:
        if torch.isnan(loss):
            raise ValueError("Training loss is nan")

    def _save_checkpoint(self, epoch: int) -> None:
        self._saved_state = {
            "epoch": epoch,
            "cur_step": self.cur_step,
            "best_valid_score": self.best_valid_score,
            "state_dict": copy.deepcopy(self.model.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
        }
        self.logger.info("Saving current" + f": {self.saved_model_file}")

    def _generate_train_loss_output(self, epoch_idx, s_time, e_time, losses) -> str:
        des = self.config["loss_decimal_place"] or 4
        out = f"epoch {epoch_idx} training [time: {e_time - s_time:.2f}s, "
        return out + "train loss: " + f"{float(losses):.{des}f}" + "]"

    def fit(self, train_data, valid_data=None, verbose=True, saved=True):
        for epoch_idx in range(self.start_epoch, self.epochs):
            training_start_time = time.time()
            train_loss = self._train_epoch(train_data, epoch_idx)
            self.train_loss_dict[epoch_idx] = train_loss
            training_end_time = time.time()
            train_loss_output = self._generate_train_loss_output(
                epoch_idx, training_start_time, training_end_time, train_loss
            )
            if verbose:
                self.logger.info(train_loss_output)

            if self.eval_step <= 0 or not valid_data:
                if saved:
                    self._save_checkpoint(epoch_idx)
                continue
            if (epoch_idx + 1) % self.eval_step == 0:
                valid_start_time = time.time()
                valid_result = self.evaluate(valid_data, load_best_model=False)
                valid_score = valid_result[self.valid_metric]
                self.best_valid_score, self.cur_step, stop_flag, update_flag = early_stopping(
                    valid_score,
                    self.best_valid_score,
                    self.cur_step,
                    max_step=self.stopping_step,
                    bigger=self.valid_metric_bigger,
                )
                valid_end_time = time.time()
                valid_score_output = (
                    f"epoch {epoch_idx} evaluating [time: {valid_end_time - valid_start_time:.2f}s, "
                    f"valid_score: {valid_score:f}]"
                )
                valid_result_output = "valid result" + ": \n" + dict2str(valid_result)
                if verbose:
                    self.logger.info(valid_score_output)
                    self.logger.info(valid_result_output)
                if update_flag:
                    if saved:
                        self._save_checkpoint(epoch_idx)
                    self.best_valid_result = valid_result
                if stop_flag:
                    stop_output = (
                        f"Finished training, best eval result in epoch {epoch_idx - self.cur_step * self.eval_step}"
                    )
                    if verbose:
                        self.logger.info(stop_output)
                    break
        return self.best_valid_score, self.best_valid_result

    def _full_sort_batch_eval(self, batched_data, tot_item_num: int):
        interaction, history_index, positive_u, positive_i = batched_data
        users = interaction[self.model.USER_ID]
        new_inter = {
            self.model.USER_ID: users.repeat_interleave(tot_item_num),
            self.model.ITEM_ID: torch.arange(tot_item_num).repeat(len(users)),
        }
        scores = self.model.predict(new_inter)
        scores = scores.view(-1, tot_item_num)
        scores[:, 0] = -math.inf
        scores[history_index] = -math.inf
        return interaction, scores, positive_u, positive_i

    def _evaluate(self, eval_data: FullSortEvalDataLoader) -> OrderedDict:
        if FAULT != "missing-eval-mode":
            self.model.eval()
        tot_item_num = eval_data._dataset.item_num
        maxk = max(self.config["topk"])
        pos_rows, len_rows = [], []
        for batched_data in eval_data:
            interaction, scores, positive_u, positive_i = self._full_sort_batch_eval(batched_data, tot_item_num)
            _, topk_idx = torch.topk(scores, maxk, dim=-1)
            pos_matrix = torch.zeros_like(scores, dtype=torch.int)
            pos_matrix[positive_u, positive_i] = 1
            pos_len_list = pos_matrix.sum(dim=1)
            pos_rows.append(torch.gather(pos_matrix, dim=1, index=topk_idx))
            len_rows.append(pos_len_list)
        return self.evaluator.evaluate(torch.cat(pos_rows), torch.cat(len_rows))

    @torch.no_grad()
    def evaluate(self, eval_data, load_best_model=True):
        if load_best_model:
            if self._saved_state is None:
                raise FileNotFoundError(f"[Errno 2] No such file or directory: '{self.saved_model_file}'")
            self.model.load_state_dict(self._saved_state["state_dict"])
            self.logger.info(f"Loading model structure and parameters from {self.saved_model_file}")
        return self._evaluate(eval_data)


# ----------------------------------------------------------------------------- script


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    global FAULT
    FAULT = a.fault
    torch.set_num_threads(1)

    config_dict = {
        "seed": 2020 + a.seed,
        "show_progress": False,
        "epochs": 40,
        "train_batch_size": 512,
        "learning_rate": 0.001,
        "weight_decay": 1e-05,
        "stopping_step": 8,
        "eval_args": {"split": {"RS": [0.8, 0.1, 0.1]}, "group_by": "user", "order": "RO", "mode": "full"},
        "metrics": ["Recall", "MRR", "NDCG", "Hit", "Precision"],
        "topk": [10],
        "valid_metric": "MRR@10",
    }
    if FAULT == "lr-too-high":
        config_dict["learning_rate"] = config_dict["learning_rate"] * 100
    config = Config(model=NeuMF, dataset=DATASET, config_dict=config_dict)
    init_seed(config["seed"])

    init_logger()
    logger = logging.getLogger()
    logger.info(config)

    dataset = create_dataset(config)
    logger.info(dataset)

    train_data, valid_data, test_data = data_preparation(config, dataset)

    model = NeuMF(config, train_data._dataset).to(config["device"])
    logger.info(model)

    trainer = Trainer(config, model)
    best_valid_score, best_valid_result = trainer.fit(train_data, valid_data, saved=True)
    test_result = trainer.evaluate(test_data, load_best_model=True)

    logger.info("The running environment of this training is as follows:\n" + get_environment(config))
    logger.info("best valid " + f": {best_valid_result}")
    logger.info("test result" + f": {test_result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
