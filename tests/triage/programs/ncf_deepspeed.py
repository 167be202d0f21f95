"""Program 23 (written for issue 9's fresh program 23 without reading triage's rules): NeuMF recommender, DeepSpeed-style log.

A neural collaborative filtering recommender (NeuMF: a GMF branch and an MLP branch over separate
user and item embeddings, dropout between the MLP layers, a linear head over the concatenation of
both branches) trained on implicit feedback with negative sampling (4 sampled negatives per
positive, resampled every epoch). The data are synthetic: 500 users and 300 items drawn around
latent clusters, each user's interactions sampled from a softmax over user/item affinity plus item
popularity and stored sorted by user; the last interaction of each user is held out (leave-one-out)
and ranked against 99 sampled unseen items (HR@10, NDCG@10). The loss is binary cross-entropy
written out by hand on sigmoid probabilities with an epsilon inside the logs, mean-reduced. The
optimizer is Adam (lr 1e-3) with DeepSpeed's WarmupDecayLR schedule (log warm-up over 100 steps,
then linear decay to 0) stepped once per optimizer step, micro-batches of 256 and 2 gradient
accumulation steps, gradient clipping at 1.0, 8 epochs. DeepSpeed is not installed: the loop is
plain PyTorch and prints DeepSpeed's own log lines (accelerator/comm set-up, the engine banner and
configuration dump, `log_dist` step lines and the throughput timer every 100 global steps) next to
the script's own prints. A short sample of the log:

    [2026-11-29 10:00:01,123] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed Final Optimizer = Adam
    [2026-11-29 10:00:01,124] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed using configured LR scheduler = WarmupDecayLR
    epoch 1 step 200 loss 0.4973
    [2026-11-29 10:00:02,311] [INFO] [logging.py:96:log_dist] [Rank 0] step=100, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]
    [2026-11-29 10:00:02,312] [INFO] [timer.py:260:stop] epoch=0/micro_step=200/global_step=100, RunningAvgSamplesPerSec=61234.5, CurrSamplesPerSec=70011.2, MemAllocated=0.29GB, MaxMemAllocated=0.29GB
    epoch 1 done: avg loss 0.4512 (105 optimizer steps, 2.1s)
    Eval epoch 1: HR@10 = 0.4520, NDCG@10 = 0.2603
"""

# ruff: noqa: UP031  (written as the framework's own code is)

import argparse
import contextlib
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

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
    "missing-epsilon",
)

FAULT = "healthy"

DS_VERSION = "0.14.4"


# --------------------------------------------------------------------------------------------
# DeepSpeed-style logging (the library is not installed; these mimic its logger output)
# --------------------------------------------------------------------------------------------


def _ts():
    now = datetime.datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % (now.microsecond // 1000)


def ds_info(where, msg):
    sys.stdout.write("[%s] [INFO] [%s] %s\n" % (_ts(), where, msg))
    sys.stdout.flush()


def log_dist(msg):
    ds_info("logging.py:96:log_dist", "[Rank 0] " + msg)


_PAGE = os.sysconf("SC_PAGE_SIZE")
_max_rss = 0


def memory_allocated():
    """DeepSpeed's CPU accelerator reports the process RSS as 'allocated' memory."""
    global _max_rss
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * _PAGE
    _max_rss = max(_max_rss, rss)
    return rss


def max_memory_allocated():
    memory_allocated()
    return _max_rss


class ThroughputTimer:
    def __init__(self, batch_size, steps_per_output, start_step=2):
        self.batch_size = batch_size
        self.steps_per_output = steps_per_output
        self.start_step = start_step
        self.epoch_count = 0
        self.micro_step_count = 0
        self.global_step_count = 0
        self.total_elapsed_time = 0.0
        self.step_elapsed_time = 0.0
        self.start_time = 0.0

    def start(self):
        self.start_time = time.time()

    def avg_samples_per_sec(self):
        if self.global_step_count > 0 and self.total_elapsed_time > 0:
            steps = self.global_step_count - self.start_step
            return self.batch_size / (self.total_elapsed_time / max(steps, 1))
        return float("-inf")

    def stop(self, global_step=False, report_speed=True):
        self.micro_step_count += 1
        if global_step:
            self.global_step_count += 1
        duration = time.time() - self.start_time
        self.step_elapsed_time += duration
        if global_step:
            if self.global_step_count > self.start_step:
                self.total_elapsed_time += self.step_elapsed_time
            if report_speed and self.global_step_count % self.steps_per_output == 0:
                curr = self.batch_size / max(self.step_elapsed_time, 1e-9)
                ds_info(
                    "timer.py:260:stop",
                    f"epoch={self.epoch_count}/micro_step={self.micro_step_count}/global_step={self.global_step_count}, RunningAvgSamplesPerSec={self.avg_samples_per_sec()}, "
                    f"CurrSamplesPerSec={curr}, MemAllocated={round(memory_allocated() / 1024**3, 2)}GB, MaxMemAllocated={round(max_memory_allocated() / 1024**3, 2)}GB",
                )
            self.step_elapsed_time = 0.0


def print_ds_banner(ds_config, model):
    log_dist(f"DeepSpeed info: version={DS_VERSION}, git-hash=unknown, git-branch=unknown")
    ds_info("config.py:733:__init__", "Config mesh_device None world_size = 1")
    log_dist("DeepSpeed Flops Profiler Enabled: False")
    log_dist("Using DeepSpeed Optimizer param name adam as basic optimizer")
    log_dist("Removing param_group that has no 'params' in the basic Optimizer")
    log_dist("DeepSpeed Basic Optimizer = Adam")
    log_dist("DeepSpeed Final Optimizer = Adam")
    log_dist("DeepSpeed using configured LR scheduler = WarmupDecayLR")
    log_dist(
        "DeepSpeed LR Scheduler = <deepspeed.runtime.lr_schedules.WarmupDecayLR object at 0x7f%09x>"
        % (id(model) & 0xFFFFFFFFF)
    )


def print_ds_config(ds_config):
    opt = ds_config["optimizer"]["params"]
    sch = ds_config["scheduler"]["params"]
    entries = {
        "activation_checkpointing_config": '{\n    "partition_activations": false, \n    "contiguous_memory_optimization": false, \n    "cpu_checkpointing": false, \n    "number_checkpoints": null, \n    "synchronize_checkpoint_boundary": false, \n    "profile": false\n}',
        "aio_config": "{'block_size': 1048576, 'queue_depth': 8, 'thread_count': 1, 'single_submit': False, 'overlap_events': True}",
        "amp_enabled": False,
        "amp_params": False,
        "bfloat16_enabled": False,
        "checkpoint_parallel_write_pipeline": False,
        "checkpoint_tag_validation_enabled": True,
        "checkpoint_tag_validation_fail": False,
        "communication_data_type": None,
        "curriculum_enabled_legacy": False,
        "curriculum_params_legacy": False,
        "data_efficiency_enabled": False,
        "dataloader_drop_last": False,
        "disable_allgather": False,
        "dump_state": False,
        "dynamic_loss_scale_args": None,
        "eigenvalue_enabled": False,
        "elasticity_enabled": False,
        "flops_profiler_config": '{\n    "enabled": false, \n    "recompute_fwd_factor": 0.0, \n    "profile_step": 1, \n    "module_depth": -1, \n    "top_modules": 1, \n    "detailed": true, \n    "output_file": null\n}',
        "fp16_auto_cast": None,
        "fp16_enabled": False,
        "fp16_master_weights_and_gradients": False,
        "global_rank": 0,
        "grad_accum_dtype": None,
        "gradient_accumulation_steps": ds_config["gradient_accumulation_steps"],
        "gradient_clipping": ds_config["gradient_clipping"],
        "gradient_predivide_factor": 1.0,
        "graph_harvesting": False,
        "initial_dynamic_scale": 65536,
        "load_universal_checkpoint": False,
        "loss_scale": 0,
        "memory_breakdown": False,
        "mics_hierarchial_params_gather": False,
        "mics_shard_size": -1,
        "monitor_config": "tensorboard=TensorBoardConfig(enabled=False, output_path='', job_name='DeepSpeedJobName') "
        "wandb=WandbConfig(enabled=False, group=None, team=None, project='deepspeed') "
        "csv_monitor=CSVConfig(enabled=False, output_path='', job_name='DeepSpeedJobName') enabled=False",
        "optimizer_legacy_fusion": False,
        "optimizer_name": "adam",
        "optimizer_params": opt,
        "pipeline": "{'stages': 'auto', 'partition': 'best', 'seed_layers': False, 'activation_checkpoint_interval': 0, 'pipe_partitioned': True, 'grad_partitioned': True}",
        "pld_enabled": False,
        "pld_params": False,
        "prescale_gradients": False,
        "scheduler_name": "WarmupDecayLR",
        "scheduler_params": sch,
        "seq_parallel_communication_data_type": "torch.float32",
        "sparse_attention": None,
        "sparse_gradients_enabled": False,
        "steps_per_print": ds_config["steps_per_print"],
        "timers_config": "enabled=True synchronized=True",
        "train_batch_size": ds_config["train_batch_size"],
        "train_micro_batch_size_per_gpu": ds_config["train_micro_batch_size_per_gpu"],
        "use_data_before_expert_parallel_": False,
        "use_node_local_storage": False,
        "wall_clock_breakdown": ds_config["wall_clock_breakdown"],
        "weight_quantization_config": None,
        "world_size": 1,
        "zero_allow_untested_optimizer": False,
        "zero_config": "stage=0 contiguous_gradients=True reduce_scatter=True reduce_bucket_size=500,000,000 "
        "use_multi_rank_bucket_allreduce=True allgather_partitions=True allgather_bucket_size=500,000,000 "
        "overlap_comm=False load_from_fp32_weights=True elastic_checkpoint=False offload_param=None "
        "offload_optimizer=None sub_group_size=1,000,000,000 round_robin_gradients=False",
        "zero_enabled": False,
        "zero_force_ds_cpu_optimizer": True,
        "zero_optimization_stage": 0,
    }
    ds_info("config.py:997:print", "DeepSpeedEngine configuration:")
    for key in sorted(entries):
        dots = "." * (29 - len(key))
        ds_info("config.py:1001:print", f"  {key} {dots} {entries[key]}")
    ds_info("config.py:987:print_user_config", "  json = " + json.dumps(ds_config, sort_keys=True, indent=4))


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_data(num_users, num_items, seed, num_clusters=10, dim=8, min_inter=15, max_inter=30, num_test_neg=99):
    g = torch.Generator().manual_seed(1000 + seed)
    centers = torch.randn(num_clusters, dim, generator=g) * 1.5
    user_cluster = torch.randint(0, num_clusters, (num_users,), generator=g)
    item_cluster = torch.randint(0, num_clusters, (num_items,), generator=g)
    user_vec = centers[user_cluster] + 0.7 * torch.randn(num_users, dim, generator=g)
    item_vec = centers[item_cluster] + 0.7 * torch.randn(num_items, dim, generator=g)
    popularity = 0.8 * torch.randn(num_items, generator=g)
    affinity = user_vec @ item_vec.t() / math.sqrt(dim) + popularity

    counts = torch.randint(min_inter, max_inter + 1, (num_users,), generator=g)
    probs = torch.softmax(affinity / 0.7, dim=1)
    # interactions of each user in time order (sampling without replacement), sorted by user
    seq = torch.multinomial(probs, max_inter, replacement=False, generator=g)
    pos = torch.arange(max_inter).unsqueeze(0)
    # the last interaction in time is held out for leave-one-out evaluation
    test_items = seq.gather(1, (counts - 1).unsqueeze(1)).squeeze(1)
    in_train = pos < (counts - 1).unsqueeze(1)
    train_u = torch.arange(num_users).unsqueeze(1).expand(-1, max_inter)[in_train]
    train_i = seq[in_train]
    interacted = torch.zeros(num_users, num_items, dtype=torch.bool)
    interacted[train_u, train_i] = True
    interacted[torch.arange(num_users), test_items] = True

    # 99 items the user never interacted with, drawn uniformly without replacement
    noise = torch.rand(num_users, num_items, generator=g)
    noise[interacted] = 2.0
    test_neg = noise.topk(num_test_neg, dim=1, largest=False).indices

    train_mat = torch.zeros(num_users, num_items, dtype=torch.bool)
    train_mat[train_u, train_i] = True
    return train_u, train_i, train_mat, test_items, test_neg


class NCFData:
    """Training pairs: every positive followed (after all positives) by its sampled negatives."""

    def __init__(self, train_u, train_i, train_mat, num_items, num_ng, seed):
        self.train_u = train_u
        self.train_i = train_i
        self.train_mat = train_mat
        self.num_items = num_items
        self.num_ng = num_ng
        self.g = torch.Generator().manual_seed(2000 + seed)

    def ng_sample(self):
        users = self.train_u.repeat_interleave(self.num_ng)
        items = torch.randint(0, self.num_items, users.shape, generator=self.g)
        bad = self.train_mat[users, items]
        while bad.any():
            items[bad] = torch.randint(0, self.num_items, (int(bad.sum()),), generator=self.g)
            bad = self.train_mat[users, items]
        all_u = torch.cat([self.train_u, users])
        all_i = torch.cat([self.train_i, items])
        labels = torch.cat([torch.ones(self.train_u.numel()), torch.zeros(users.numel())])
        return TensorDataset(all_u, all_i, labels)


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------


class NeuMF(nn.Module):
    def __init__(self, num_users, num_items, factor_num=16, num_layers=3, dropout=0.2):
        super().__init__()
        mlp_dim = factor_num * (2 ** (num_layers - 1))
        self.embed_user_GMF = nn.Embedding(num_users, factor_num)
        self.embed_item_GMF = nn.Embedding(num_items, factor_num)
        self.embed_user_MLP = nn.Embedding(num_users, mlp_dim)
        self.embed_item_MLP = nn.Embedding(num_items, mlp_dim)
        layers = []
        for k in range(num_layers):
            in_size = factor_num * (2 ** (num_layers - k))
            layers.append(nn.Dropout(p=dropout))
            layers.append(nn.Linear(in_size, in_size // 2))
            layers.append(nn.ReLU())
        self.MLP_layers = nn.Sequential(*layers)
        self.predict_layer = nn.Linear(factor_num * 2, 1)
        self._init_weight()

    def _init_weight(self):
        for emb in (self.embed_user_GMF, self.embed_item_GMF, self.embed_user_MLP, self.embed_item_MLP):
            nn.init.normal_(emb.weight, std=0.01)
        for m in self.MLP_layers:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.kaiming_uniform_(self.predict_layer.weight, a=1, nonlinearity="sigmoid")
        nn.init.zeros_(self.predict_layer.bias)

    def forward(self, user, item):
        output_GMF = self.embed_user_GMF(user) * self.embed_item_GMF(item)
        interaction = torch.cat((self.embed_user_MLP(user), self.embed_item_MLP(item)), -1)
        output_MLP = self.MLP_layers(interaction)
        concat = torch.cat((output_GMF, output_MLP), -1)
        return self.predict_layer(concat).view(-1)


def bce_loss(logits, labels, eps=1e-8):
    p = torch.sigmoid(logits)
    if FAULT == "missing-epsilon":
        loss = -(labels * torch.log(p) + (1 - labels) * torch.log(1 - p))
    else:
        loss = -(labels * torch.log(p + eps) + (1 - labels) * torch.log(1 - p + eps))
    if FAULT == "wrong-loss-reduction":
        return loss.sum()
    return loss.mean()


def warmup_decay_lambda(total_num_steps, warmup_num_steps):
    """DeepSpeed's WarmupDecayLR (log warm-up from 0, then linear decay to 0) as a factor of the base lr."""
    inverse_log_warm_up = 1.0 / math.log(warmup_num_steps)

    def fn(step):
        if step < warmup_num_steps:
            return inverse_log_warm_up * math.log(step + 1)
        return max(0.0, float(total_num_steps - step) / float(max(1.0, total_num_steps - warmup_num_steps)))

    return fn


@torch.no_grad()
def evaluate(model, test_items, test_neg, top_k=10):
    if FAULT != "missing-eval-mode":
        model.eval()
    num_users = test_items.numel()
    users = torch.arange(num_users).unsqueeze(1).expand(-1, 1 + test_neg.size(1))
    items = torch.cat([test_items.unsqueeze(1), test_neg], dim=1)
    scores = model(users.reshape(-1), items.reshape(-1)).view(num_users, -1)
    # rank of the held-out item (column 0) among its 100 candidates
    rank = (scores[:, 1:] > scores[:, :1]).sum(dim=1)
    hit = (rank < top_k).float()
    ndcg = torch.where(rank < top_k, 1.0 / torch.log2(rank.float() + 2.0), torch.zeros_like(hit))
    return hit.mean().item(), ndcg.mean().item()


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main():
    global FAULT
    parser = argparse.ArgumentParser(description="NeuMF with DeepSpeed")
    parser.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--num_users", type=int, default=500)
    parser.add_argument("--num_items", type=int, default=300)
    parser.add_argument("--num_ng", type=int, default=4)
    parser.add_argument("--factor_num", type=int, default=16)
    parser.add_argument("--num_layers", type=int, default=3)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--top_k", type=int, default=10)
    parser.add_argument("--log_interval", type=int, default=200, help="micro steps between loss prints")
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    FAULT = args.fault

    ds_info("real_accelerator.py:203:get_accelerator", "Setting ds_accelerator to cpu (auto detect)")
    torch.manual_seed(args.seed)
    ds_info("comm.py:637:init_distributed", "cdb=None")
    ds_info(
        "comm.py:652:init_distributed",
        "Not using the DeepSpeed or dist launchers, attempting to detect MPI environment...",
    )
    ds_info(
        "comm.py:702:mpi_discovery",
        "Discovered MPI settings of world_rank=0, local_rank=0, world_size=1, master_addr=127.0.0.1, master_port=29500",
    )
    ds_info("comm.py:668:init_distributed", "Initializing TorchBackend in DeepSpeed with backend gloo")

    train_u, train_i, train_mat, test_items, test_neg = make_data(args.num_users, args.num_items, args.seed)
    print(
        f"Loaded data: {args.num_users} users, {args.num_items} items, {train_u.numel()} train interactions, "
        f"{test_items.numel()} test users x {1 + test_neg.size(1)} candidates"
    )
    data = NCFData(train_u, train_i, train_mat, args.num_items, args.num_ng, args.seed)

    micro_bs, gas = 256, 2
    samples_per_epoch = train_u.numel() * (1 + args.num_ng)
    micro_steps_per_epoch = math.ceil(samples_per_epoch / micro_bs)
    total_num_steps = args.epochs * (micro_steps_per_epoch // gas)
    ds_config = {
        "train_batch_size": micro_bs * gas,
        "train_micro_batch_size_per_gpu": micro_bs,
        "gradient_accumulation_steps": gas,
        "gradient_clipping": 1.0,
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
        "optimizer": {
            "type": "Adam",
            "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "torch_adam": True},
        },
        "scheduler": {
            "type": "WarmupDecayLR",
            "params": {
                "total_num_steps": total_num_steps,
                "warmup_min_lr": 0,
                "warmup_max_lr": 1e-3,
                "warmup_num_steps": 100,
            },
        },
    }

    model = NeuMF(args.num_users, args.num_items, args.factor_num, args.num_layers, args.dropout)
    if args.fault == "frozen-parameters":
        # embeddings meant to be initialised from pre-trained GMF / MLP checkpoints
        for emb in (model.embed_user_GMF, model.embed_item_GMF, model.embed_user_MLP, model.embed_item_MLP):
            emb.weight.requires_grad = False
    n_total = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(
        f"Model: NeuMF(factor_num={args.factor_num}, num_layers={args.num_layers}, dropout={args.dropout}) "
        f"params={n_total:,} trainable={n_train:,}"
    )

    opt_cfg = ds_config["optimizer"]["params"]
    lr = opt_cfg["lr"]
    if args.fault == "lr-too-high":
        lr = lr * 100
    optimizer = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad],
        lr=lr,
        betas=tuple(opt_cfg["betas"]),
        eps=opt_cfg["eps"],
        weight_decay=opt_cfg["weight_decay"],
    )
    sch_cfg = ds_config["scheduler"]["params"]
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_decay_lambda(sch_cfg["total_num_steps"], sch_cfg["warmup_num_steps"])
    )

    print_ds_banner(ds_config, model)
    log_dist(
        "step=0, skipped=0, lr={}, mom={}".format(
            [g["lr"] for g in optimizer.param_groups], [g["betas"] for g in optimizer.param_groups]
        )
    )
    print_ds_config(ds_config)

    timer = ThroughputTimer(micro_bs * gas, ds_config["steps_per_print"])
    global_step = 0
    micro_step = 0
    best_hr, best_ndcg, best_epoch = 0.0, 0.0, 0

    hr, ndcg = evaluate(model, test_items, test_neg, args.top_k)
    print(f"Eval epoch 0: HR@{args.top_k} = {hr:.4f}, NDCG@{args.top_k} = {ndcg:.4f}")

    for epoch in range(1, args.epochs + 1):
        if args.fault != "missing-train-mode":
            model.train()
        t0 = time.time()
        dataset = data.ng_sample()
        loader = DataLoader(
            dataset, batch_size=micro_bs, shuffle=(args.fault != "no-shuffle"), num_workers=0, drop_last=False
        )
        epoch_losses = []
        steps_this_epoch = 0
        for user, item, label in loader:
            timer.start()
            ctx = torch.no_grad() if args.fault == "no-grad-training" else contextlib.nullcontext()
            with ctx:
                logits = model(user, item)
                if args.fault == "detached-graph":
                    logits = logits.detach()
                loss = bce_loss(logits, label)
            if args.fault != "missing-backward":
                (loss / gas).backward()
            micro_step += 1
            if args.fault == "loss-tensor-leak":
                epoch_losses.append(loss)
            else:
                epoch_losses.append(loss.item())

            boundary = micro_step % gas == 0
            if boundary:
                torch.nn.utils.clip_grad_norm_(model.parameters(), ds_config["gradient_clipping"])
                if args.fault != "missing-optimizer-step":
                    optimizer.step()
                if args.fault != "scheduler-step-misaligned":
                    scheduler.step()
                if args.fault != "missing-zero-grad":
                    optimizer.zero_grad()
                global_step += 1
                steps_this_epoch += 1
                if global_step % ds_config["steps_per_print"] == 0:
                    log_dist(
                        "step={}, skipped={}, lr={}, mom={}".format(
                            global_step,
                            0,
                            [g["lr"] for g in optimizer.param_groups],
                            [g["betas"] for g in optimizer.param_groups],
                        )
                    )
            if args.fault == "scheduler-step-misaligned":
                scheduler.step()
            timer.stop(global_step=boundary, report_speed=True)

            if micro_step % args.log_interval == 0:
                window = epoch_losses[-args.log_interval :]
                print(f"epoch {epoch} step {micro_step} loss {sum(window) / len(window):.4f}")

        avg = sum(epoch_losses) / len(epoch_losses)
        print(f"epoch {epoch} done: avg loss {avg:.4f} ({steps_this_epoch} optimizer steps, {time.time() - t0:.1f}s)")
        hr, ndcg = evaluate(model, test_items, test_neg, args.top_k)
        print(f"Eval epoch {epoch}: HR@{args.top_k} = {hr:.4f}, NDCG@{args.top_k} = {ndcg:.4f}")
        if hr > best_hr:
            best_hr, best_ndcg, best_epoch = hr, ndcg, epoch

    print(f"End. Best epoch {best_epoch:03d}: HR@{args.top_k} = {best_hr:.4f}, NDCG@{args.top_k} = {best_ndcg:.4f}")


if __name__ == "__main__":
    main()
