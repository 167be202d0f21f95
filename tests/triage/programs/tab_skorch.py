r"""Program 28 (written for issue 9's fresh program 28 without reading triage's rules): tabular classifier, skorch-style log.

A tabular classifier trained the way a skorch user trains one (`NeuralNetClassifier` with
`verbose=1`), written from scratch with torch only: skorch is not imported, its net, callbacks
and console are imitated by a small class of this script's own.

Data: 6,000 synthetic "loan applications" (the training CSV) and a separate draw of 2,000 for
the test set. Twelve numeric columns with very different scales and skews (annual income and
loan amount log-normal, age, a credit score, a debt-to-income ratio, years employed
(exponential), open accounts and delinquencies (Poisson), the term in months (36 or 60), an
interest rate tied to the credit score, savings (heavily log-normal), credit utilisation) and
three categorical columns (purpose, 6 levels; home ownership, 3; region, 5). The 4 classes
(risk grades A-D) are the quartiles of a nonlinear latent risk (a credit-score term, the
loan-to-income ratio through a tanh, squared utilisation, delinquencies, a U-shape in age, a
purpose effect and a purpose x tenure interaction, a little noise), then 4% of labels are
redrawn at random. The numeric columns are standardised with the training CSV's statistics
(a StandardScaler fitted on what `fit` gets). The CSV is stored sorted by grade, as a file
exported sorted by label would be; the net's `train_split` is a stratified 5-fold
`ValidSplit` (20% validation) that, like sklearn's `StratifiedKFold` without shuffling, keeps
the remaining training rows in file order, so only the training iterator's `shuffle=True`
mixes the grades.

Model: embeddings for the categorical columns (4, 3 and 3 dimensions) concatenated with the
numeric columns, two hidden layers (Linear, BatchNorm1d, ReLU, Dropout 0.2; 128 and 64 units)
and a linear head returning logits; the criterion is `nn.CrossEntropyLoss`. Optimiser: SGD with
momentum 0.9 and Nesterov, lr 0.05, weight decay 1e-4, batch size 128, at most 20 epochs; the
callbacks are an `LRScheduler` stepping `CosineAnnealingLR(T_max=20)` once per epoch, a
`GradientNormClipping` at norm 5, a `Checkpoint` on the best validation loss and an
`EarlyStopping` with patience 6 on the validation loss (relative threshold 1e-4). After `fit`
the best checkpoint is reloaded and the script prints its own test accuracy.

`detached-graph` and `no-grad-training` are left to crash as torch makes them crash: the loss
has no graph, so `loss.backward()` raises, and the traceback ends the run with a non-zero exit
(nothing here catches it or calls `requires_grad_()` to hide it).

The log imitates skorch's console, including the ANSI colour codes PrintLog writes around the
best values even when stdout is not a terminal (cyan train_loss, green valid_acc, magenta
valid_loss), e.g. (codes shown here as written):

    Re-initializing module.
    Re-initializing criterion.
    Re-initializing optimizer.
      epoch    train_loss    valid_acc    valid_loss    cp      lr     dur
    -------  ------------  -----------  ------------  ----  ------  ------
          1        \x1b[36m1.0470\x1b[0m       \x1b[32m0.6731\x1b[0m        \x1b[35m0.8130\x1b[0m     +  0.0500  0.1118
          2        \x1b[36m0.8063\x1b[0m       \x1b[32m0.7406\x1b[0m        \x1b[35m0.6968\x1b[0m     +  0.0497  0.0557
          3        \x1b[36m0.7232\x1b[0m       0.7389        \x1b[35m0.6553\x1b[0m     +  0.0488  0.0585
    ...
         20        \x1b[36m0.4851\x1b[0m       \x1b[32m0.8332\x1b[0m        0.5028        0.0003  0.0644
    test accuracy: 0.8405

When the validation loss has not improved for 6 epochs the table ends early with
`Stopping since valid_loss has not improved in the last 6 epochs.` before the test line.
"""

import argparse
import copy
import math
import re
import time

import torch
import torch.nn as nn

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

NUMERIC = (
    "annual_income",
    "loan_amount",
    "age",
    "credit_score",
    "debt_to_income",
    "years_employed",
    "open_accounts",
    "delinquencies",
    "term_months",
    "interest_rate",
    "savings",
    "utilisation",
)
CATEGORICAL = {"purpose": 6, "home_ownership": 3, "region": 5}
N_CLASSES = 4


# --------------------------------------------------------------------------- data
def draw_applications(n):
    """n applications: (numeric (n, 12), categorical (n, 3), latent risk (n,))."""
    D = torch.distributions

    def lognormal(median, sigma):
        return D.LogNormal(math.log(median), sigma).sample((n,))

    def choice(probs):
        return torch.multinomial(torch.tensor(probs), n, replacement=True)

    income = lognormal(55_000, 0.5)
    loan = lognormal(15_000, 0.7)
    age = (42 + 12 * torch.randn(n)).clamp(18, 80)
    score = (680 + 70 * torch.randn(n)).clamp(300, 850)
    dti = D.Beta(2.0, 5.0).sample((n,)) * 0.8
    years = D.Exponential(1 / 6.0).sample((n,))
    accounts = D.Poisson(7.0).sample((n,))
    delinq = D.Poisson(0.4).sample((n,))
    term = torch.tensor([36.0, 60.0])[choice([0.65, 0.35])]
    rate = (28 - 0.03 * (score - 500) + 2.0 * torch.randn(n)).clamp(3, 30)
    savings = lognormal(8_000, 1.2)
    util = D.Beta(2.0, 3.0).sample((n,))
    purpose = choice([0.35, 0.15, 0.15, 0.1, 0.1, 0.15])
    home = choice([0.4, 0.2, 0.4])
    region = choice([0.2] * 5)

    z = (
        -1.3 * (score - 680) / 70
        + 1.6 * torch.tanh(2.0 * (torch.log(loan / income) + 1.3))
        + 2.2 * (dti - 0.23)
        + 1.5 * util**2
        + 0.6 * delinq.clamp(max=3)
        - 0.5 * torch.log1p(years)
        - 0.25 * torch.log(savings / loan)
        + 0.35 * ((age - 42) / 14) ** 2
        + 0.3 * (term == 60).float()
        + torch.tensor([0.0, 0.3, -0.3, 0.8, 0.4, 0.2])[purpose]
        + torch.tensor([0.3, -0.4, 0.0])[home]
        + torch.tensor([0.0, 0.1, -0.1, 0.15, -0.05])[region]
        + 1.2 * ((purpose == 3) & (years < 2)).float()
        + 0.15 * torch.randn(n)
    )
    num = torch.stack([income, loan, age, score, dti, years, accounts, delinq, term, rate, savings, util], 1)
    cat = torch.stack([purpose, home, region], 1)
    return num, cat, z


def load_data(seed):
    torch.manual_seed(7000 + seed)
    num, cat, z = draw_applications(8000)
    cuts = torch.quantile(z, torch.tensor([0.25, 0.5, 0.75]))
    y = torch.bucketize(z, cuts)
    noisy = torch.rand(len(y)) < 0.04
    y[noisy] = torch.randint(0, N_CLASSES, (int(noisy.sum()),))
    train, test = slice(0, 6000), slice(6000, 8000)
    # applications.csv was exported sorted by risk grade
    order = torch.sort(y[train], stable=True).indices
    X_num, X_cat, y_tr = num[train][order], cat[train][order], y[train][order]
    mean, std = X_num.mean(0), X_num.std(0, unbiased=False)  # StandardScaler fitted on the training CSV
    X = {"num": (X_num - mean) / std, "cat": X_cat}
    X_test = {"num": (num[test] - mean) / std, "cat": cat[test]}
    return X, y_tr, X_test, y[test]


def valid_split(y, cv=5):
    """Stratified k-fold, first fold held out, indices in file order (as StratifiedKFold)."""
    idx_valid = []
    for c in torch.unique(y):
        members = torch.nonzero(y == c).flatten()
        idx_valid.append(members[: len(members) // cv])
    idx_valid = torch.sort(torch.cat(idx_valid)).values
    mask = torch.ones(len(y), dtype=torch.bool)
    mask[idx_valid] = False
    return torch.nonzero(mask).flatten(), idx_valid


def batches(X, y, batch_size, shuffle, gen=None):
    n = len(y)
    idx = torch.randperm(n, generator=gen) if shuffle else torch.arange(n)
    for start in range(0, n, batch_size):
        b = idx[start : start + batch_size]
        yield {k: v[b] for k, v in X.items()}, y[b]


# -------------------------------------------------------------------------- model
class LoanNet(nn.Module):
    def __init__(self, n_num=12, cards=(6, 3, 5), emb_dims=(4, 3, 3), hidden=(128, 64), dropout=0.2, n_classes=4):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(c, d) for c, d in zip(cards, emb_dims, strict=True))
        width = n_num + sum(emb_dims)
        layers = []
        for h in hidden:
            layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(dropout)]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, n_classes)

    def forward(self, num, cat):
        embs = [emb(cat[:, i]) for i, emb in enumerate(self.embeddings)]
        h = self.body(torch.cat([num, *embs], dim=1))
        return self.head(h)


class LoanNetProba(LoanNet):
    """The module as first written for predict_proba: it returns probabilities."""

    def forward(self, num, cat):
        return torch.softmax(super().forward(num, cat), dim=-1)


# ------------------------------------------------------------------ the print log
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
COLORS = ("\x1b[36m", "\x1b[32m", "\x1b[35m", "\x1b[34m", "\x1b[31m")
ENDC = "\x1b[0m"


def visible_len(text):
    return len(ANSI_RE.sub("", text))


def fmt_value(v):
    if isinstance(v, torch.Tensor):
        v = v.item()
    if isinstance(v, bool) or v is None:
        return "+" if v else ""
    if isinstance(v, int):
        return str(v)
    return f"{v:.4f}"


class PrintLog:
    """skorch's PrintLog: a tabulate 'simple' table, one row per epoch, header once."""

    def __init__(self, keys=("epoch", "train_loss", "valid_acc", "valid_loss", "cp", "lr", "dur")):
        self.keys = keys
        self.first = True

    def on_epoch_end(self, row):
        cells, color = [], iter(COLORS)
        for key in self.keys:
            text = fmt_value(row[key])
            if f"{key}_best" in row:
                c = next(color)
                if row[f"{key}_best"]:
                    text = f"{c}{text}{ENDC}"
            cells.append(text)
        widths = [max(len(k) + 2, visible_len(t)) for k, t in zip(self.keys, cells, strict=True)]
        lines = []
        if self.first:
            lines.append("  ".join(k.rjust(w) for k, w in zip(self.keys, widths, strict=True)))
            lines.append("  ".join("-" * w for w in widths))
            self.first = False
        lines.append("  ".join(" " * (w - visible_len(t)) + t for t, w in zip(cells, widths, strict=True)))
        print("\n".join(lines), flush=True)


# ------------------------------------------------------------------------ the net
class EarlyStopping:
    def __init__(self, patience=6, threshold=1e-4):
        self.patience = patience
        self.threshold = threshold
        self.misses = 0
        self.dynamic_threshold = math.inf

    def should_stop(self, score):
        score = float(score)
        if score < self.dynamic_threshold:
            self.misses = 0
            self.dynamic_threshold = score - self.threshold * score
        else:
            self.misses += 1
        return self.misses == self.patience


class NeuralNetClassifier:
    def __init__(
        self,
        module,
        criterion,
        optimizer,
        lr,
        max_epochs,
        batch_size,
        iterator_train__shuffle,
        optimizer__momentum,
        optimizer__nesterov,
        optimizer__weight_decay,
        clip_norm,
        patience,
        scheduler_every="epoch",
        fault="healthy",
        seed=0,
    ):
        self.module_cls = module
        self.criterion_cls = criterion
        self.optimizer_cls = optimizer
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.shuffle = iterator_train__shuffle
        self.opt_kwargs = dict(
            momentum=optimizer__momentum, nesterov=optimizer__nesterov, weight_decay=optimizer__weight_decay
        )
        self.clip_norm = clip_norm
        self.patience = patience
        self.scheduler_every = scheduler_every
        self.fault = fault
        self.gen = torch.Generator().manual_seed(seed)
        self.history = []

    def initialize(self):
        self.module_ = self.module_cls()
        print("Re-initializing module.")
        reduction = "sum" if self.fault == "wrong-loss-reduction" else "mean"
        self.criterion_ = self.criterion_cls(reduction=reduction)
        print("Re-initializing criterion.")
        if self.fault == "frozen-parameters":
            # the body was frozen to warm the head up first, and never unfrozen
            for p in self.module_.parameters():
                p.requires_grad_(False)
            self.module_.head.requires_grad_(True)
        self.optimizer_ = self.optimizer_cls(self.module_.parameters(), lr=self.lr, **self.opt_kwargs)
        print("Re-initializing optimizer.")
        self.lr_scheduler_ = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer_, T_max=self.max_epochs)
        self.print_log = PrintLog()
        self.early_stopping = EarlyStopping(self.patience)
        return self

    def infer(self, Xb):
        return self.module_(**Xb)

    def train_step(self, Xb, yb):
        if self.fault == "no-grad-training":
            with torch.no_grad():
                y_pred = self.infer(Xb)
                loss = self.criterion_(y_pred, yb)
        else:
            y_pred = self.infer(Xb)
            if self.fault == "detached-graph":
                y_pred = y_pred.detach()
            loss = self.criterion_(y_pred, yb)
        if self.fault != "missing-backward":
            loss.backward()
        # GradientNormClipping callback (on_grad_computed)
        torch.nn.utils.clip_grad_norm_(self.module_.parameters(), self.clip_norm)
        if self.fault != "missing-optimizer-step":
            self.optimizer_.step()
        return loss

    def evaluation_step(self, Xb):
        if self.fault != "missing-eval-mode":
            self.module_.eval()
        with torch.no_grad():
            return self.infer(Xb)

    def fit(self, X, y):
        idx_train, idx_valid = valid_split(y)
        X_tr = {k: v[idx_train] for k, v in X.items()}
        X_va = {k: v[idx_valid] for k, v in X.items()}
        y_tr, y_va = y[idx_train], y[idx_valid]
        best = {"train_loss": math.inf, "valid_acc": -math.inf, "valid_loss": math.inf}
        for epoch in range(1, self.max_epochs + 1):
            t0 = time.time()
            if self.fault != "missing-train-mode":
                self.module_.train()
            losses, sizes = [], []
            for Xb, yb in batches(X_tr, y_tr, self.batch_size, self.shuffle, self.gen):
                if self.fault != "missing-zero-grad":
                    self.optimizer_.zero_grad()
                loss = self.train_step(Xb, yb)
                lr_used = self.optimizer_.param_groups[0]["lr"]
                if self.fault == "loss-tensor-leak":
                    losses.append(loss)
                else:
                    losses.append(loss.item())
                sizes.append(len(yb))
                if self.scheduler_every == "batch":
                    self.lr_scheduler_.step()
            if self.fault == "loss-tensor-leak":
                train_loss = sum(b_loss * n for b_loss, n in zip(losses, sizes, strict=True)) / sum(sizes)
            else:
                train_loss = sum(b_loss * n for b_loss, n in zip(losses, sizes, strict=True)) / sum(sizes)

            v_losses, v_sizes, correct = [], [], 0
            for Xb, yb in batches(X_va, y_va, self.batch_size, False):
                y_pred = self.evaluation_step(Xb)
                v_losses.append(self.criterion_(y_pred, yb).item())
                v_sizes.append(len(yb))
                correct += (y_pred.argmax(1) == yb).sum().item()
            valid_loss = sum(b_loss * n for b_loss, n in zip(v_losses, v_sizes, strict=True)) / sum(v_sizes)
            valid_acc = correct / len(y_va)

            row = {"epoch": epoch, "train_loss": train_loss, "valid_acc": valid_acc, "valid_loss": valid_loss}
            row["train_loss_best"] = bool(train_loss < best["train_loss"])
            row["valid_acc_best"] = valid_acc > best["valid_acc"]
            row["valid_loss_best"] = valid_loss < best["valid_loss"]
            for key in best:
                if row[f"{key}_best"]:
                    best[key] = row[key]
            row["cp"] = row["valid_loss_best"]
            if row["cp"]:  # Checkpoint(monitor="valid_loss_best")
                self.checkpoint_ = copy.deepcopy(self.module_.state_dict())
            row["lr"] = lr_used
            if self.scheduler_every == "epoch":
                self.lr_scheduler_.step()
            row["dur"] = time.time() - t0
            self.history.append(row)
            self.print_log.on_epoch_end(row)
            if self.early_stopping.should_stop(valid_loss):
                print(f"Stopping since valid_loss has not improved in the last {self.patience} epochs.", flush=True)
                break
        return self

    def load_params(self, checkpoint):
        self.module_.load_state_dict(checkpoint)

    def predict(self, X):
        n = len(next(iter(X.values())))
        preds = []
        for Xb, _ in batches(X, torch.zeros(n, dtype=torch.long), self.batch_size, False):
            preds.append(self.evaluation_step(Xb).argmax(1))
        return torch.cat(preds)


def main():
    parser = argparse.ArgumentParser(description="Loan risk grades with a skorch-style MLP")
    parser.add_argument("--fault", default="healthy", choices=("healthy",) + FAULTS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    X, y, X_test, y_test = load_data(args.seed)
    torch.manual_seed(args.seed)
    lr = 0.05 * (100 if args.fault == "lr-too-high" else 1)
    net = NeuralNetClassifier(
        LoanNetProba if args.fault == "double-softmax" else LoanNet,
        criterion=nn.CrossEntropyLoss,
        optimizer=torch.optim.SGD,
        lr=lr,
        max_epochs=20,
        batch_size=128,
        iterator_train__shuffle=args.fault != "no-shuffle",
        optimizer__momentum=0.9,
        optimizer__nesterov=True,
        optimizer__weight_decay=1e-4,
        clip_norm=5.0,
        patience=6,
        scheduler_every="batch" if args.fault == "scheduler-step-misaligned" else "epoch",
        fault=args.fault,
        seed=args.seed,
    )
    net.initialize()
    net.fit(X, y)
    net.load_params(checkpoint=net.checkpoint_)
    y_pred = net.predict(X_test)
    print(f"test accuracy: {(y_pred == y_test).float().mean().item():.4f}")


if __name__ == "__main__":
    main()
