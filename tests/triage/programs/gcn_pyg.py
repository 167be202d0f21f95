"""Program 13 (written for issue 9's fresh program 13 without reading triage's rules): a GCN.

Semi-supervised node classification, where the programs before it see independent samples: a
two-layer graph convolutional network (ReLU, dropout 0.5) on a synthetic citation-like graph, a
stochastic block model of 1200 nodes in 6 classes whose node features are binary bag-of-words
vectors over a 64-word vocabulary drawn from class topics (a few nodes have no text at all, as in
Citeseer), row-normalised as PyG's NormalizeFeatures does. The propagation matrix is the sparse
D^-1/2 (A + I) D^-1/2. Planetoid-style splits: 20 labelled nodes per class, 300 for validation,
600 for testing. Full-batch training as PyG's examples/gcn.py does it (plain torch, no
torch_geometric): one Adam step per epoch over the whole graph, then accuracy on the three masks
in eval mode, and its logging:

    Data(x=[1200, 64], edge_index=[2, 14876], y=[1200], train_mask=[1200], val_mask=[1200], test_mask=[1200])
    Epoch: 001, Loss: 1.7918, Train: 0.3417, Val: 0.2900, Test: 0.3010
    ...
    Median time per epoch: 0.0123s
    Best val: 0.8120, test: 0.8050

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

NUM_NODES, NUM_CLASSES, VOCAB = 1200, 6, 64
P_IN, P_OUT = 0.03, 0.005  # edge probability within a class, across classes
TOPIC = 0.3  # share of a node's words drawn from its class topic


def sbm_edges(y: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Undirected stochastic-block-model edges, both directions, no self loops: [2, E]."""
    same = y[:, None] == y[None, :]
    prob = torch.where(same, torch.tensor(P_IN), torch.tensor(P_OUT))
    draw = torch.rand(NUM_NODES, NUM_NODES, generator=g) < prob
    upper = torch.triu(draw, diagonal=1)
    row, col = upper.nonzero(as_tuple=True)
    return torch.stack([torch.cat([row, col]), torch.cat([col, row])])


def bag_of_words(y: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Binary word-presence vectors: each class favours its own topic words."""
    topics = torch.zeros(NUM_CLASSES, VOCAB)
    for c in range(NUM_CLASSES):
        words = torch.randperm(VOCAB, generator=g)[:12]
        topics[c, words] = 1.0 / 12
    background = torch.full((VOCAB,), 1.0 / VOCAB)
    probs = TOPIC * topics[y] + (1 - TOPIC) * background
    max_len = 16
    words = torch.multinomial(probs, max_len, replacement=True, generator=g)
    length = torch.randint(4, max_len + 1, (NUM_NODES,), generator=g)
    length[torch.rand(NUM_NODES, generator=g) < 0.01] = 0  # nodes without any text
    keep = torch.arange(max_len)[None, :] < length[:, None]
    counts = torch.zeros(NUM_NODES, VOCAB, dtype=torch.float64)
    counts.scatter_add_(1, words, keep.double())
    return (counts > 0).double()


def gcn_norm(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Sparse D^-1/2 (A + I) D^-1/2."""
    loops = torch.arange(num_nodes)
    row = torch.cat([edge_index[0], loops])
    col = torch.cat([edge_index[1], loops])
    weight = torch.ones(row.numel())
    deg = torch.zeros(num_nodes).scatter_add_(0, col, weight)
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
    weight = deg_inv_sqrt[row] * weight * deg_inv_sqrt[col]
    return torch.sparse_coo_tensor(torch.stack([row, col]), weight, (num_nodes, num_nodes)).coalesce()


class Data:
    def __init__(self, **tensors: torch.Tensor) -> None:
        self.__dict__.update(tensors)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={list(v.shape)}" for k, v in self.__dict__.items() if k != "adj")
        return f"Data({fields})"


def make_data(seed: int, fault: str) -> Data:
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(NUM_NODES) % NUM_CLASSES
    y = y[torch.randperm(NUM_NODES, generator=g)]
    edge_index = sbm_edges(y, g)
    x = bag_of_words(y, g)
    # NormalizeFeatures: each row sums to one
    rowsum = x.sum(dim=-1, keepdim=True)
    if fault != "missing-epsilon":
        rowsum = rowsum.clamp(min=1)
    x = x / rowsum
    if fault != "dtype-mismatch":
        x = x.float()
    if fault == "label-out-of-range":
        y = y + 1  # classes numbered from 1 as in the raw files
    # Planetoid split: 20 per class for training, then validation and test from the rest
    perm = torch.randperm(NUM_NODES, generator=g)
    train_idx = torch.cat([perm[(y[perm] % NUM_CLASSES) == c][:20] for c in range(NUM_CLASSES)])
    train_mask = torch.zeros(NUM_NODES, dtype=torch.bool)
    train_mask[train_idx] = True
    rest = perm[~train_mask[perm]]
    val_mask = torch.zeros(NUM_NODES, dtype=torch.bool)
    val_mask[rest[:300]] = True
    test_mask = torch.zeros(NUM_NODES, dtype=torch.bool)
    test_mask[rest[300:900]] = True
    adj = gcn_norm(edge_index, NUM_NODES)
    return Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask, val_mask=val_mask, test_mask=test_mask, adj=adj)


class GCNConv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        nn.init.xavier_uniform_(self.lin.weight)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(adj, self.lin(x)) + self.bias


class GCN(nn.Module):
    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, fault: str) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels)
        if fault == "shape-mismatch":
            self.conv2 = GCNConv(in_channels, out_channels)
        else:
            self.conv2 = GCNConv(hidden_channels, out_channels)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x, adj).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, adj)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden_channels", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--epochs", type=int, default=200)
    a = p.parse_args()
    fault = a.fault
    torch.manual_seed(a.seed)
    data = make_data(a.seed, fault)
    print(data)

    model = GCN(VOCAB, a.hidden_channels, NUM_CLASSES, fault)
    if fault == "frozen-parameters":
        model.conv1.lin.weight.requires_grad = False
    lr = a.lr * 100 if fault == "lr-too-high" else a.lr
    optimizer = torch.optim.Adam(
        [
            dict(params=model.conv1.parameters(), weight_decay=5e-4),
            dict(params=model.conv2.parameters(), weight_decay=0),
        ],
        lr=lr,
    )

    def train() -> float:
        if fault != "missing-train-mode":
            model.train()
        if fault != "missing-zero-grad":
            optimizer.zero_grad()
        if fault == "no-grad-training":
            with torch.no_grad():
                out = model(data.x, data.adj)
                loss = F.nll_loss(F.log_softmax(out, dim=1)[data.train_mask], data.y[data.train_mask])
        elif fault == "wrong-softmax-dim":
            out = model(data.x, data.adj)
            loss = F.nll_loss(F.log_softmax(out, dim=0)[data.train_mask], data.y[data.train_mask])
        elif fault == "double-softmax":
            out = model(data.x, data.adj)
            loss = F.cross_entropy(F.softmax(out, dim=1)[data.train_mask], data.y[data.train_mask])
        else:
            out = model(data.x, data.adj)
            loss = F.nll_loss(F.log_softmax(out, dim=1)[data.train_mask], data.y[data.train_mask])
        if fault != "missing-backward":
            loss.backward()
        if fault != "missing-optimizer-step":
            optimizer.step()
        return float(loss)

    @torch.no_grad()
    def test() -> list[float]:
        if fault != "missing-eval-mode":
            model.eval()
        pred = model(data.x, data.adj).argmax(dim=-1)
        accs = []
        for mask in [data.train_mask, data.val_mask, data.test_mask]:
            accs.append(int((pred[mask] == data.y[mask]).sum()) / int(mask.sum()))
        return accs

    best_val_acc = test_acc = 0.0
    times = []
    for epoch in range(1, a.epochs + 1):
        start = time.time()
        loss = train()
        train_acc, val_acc, tmp_test_acc = test()
        if val_acc > best_val_acc:
            best_val_acc = val_acc
            test_acc = tmp_test_acc
        print(f"Epoch: {epoch:03d}, Loss: {loss:.4f}, Train: {train_acc:.4f}, Val: {val_acc:.4f}, Test: {test_acc:.4f}")
        times.append(time.time() - start)
    print(f"Median time per epoch: {torch.tensor(times).median():.4f}s")
    print(f"Best val: {best_val_acc:.4f}, test: {test_acc:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
