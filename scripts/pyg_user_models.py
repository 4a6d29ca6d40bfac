"""PyG models written the way PyG's examples write them, trained briefly on Cora and
exported with spindle_client.export.export_pyg: the golden fixtures of
tests/serving/pyg_golden_test.cpp (make_golden_fixtures.py --only pyg runs this).

Cora comes from the LINQS release in the test data folder's cora/ (node i = line i of
cora.content.gz; citations in both directions, as PyG's Planetoid Cora), with a fixed
random split of 140 training and 1000 test nodes (seed 0; not Planetoid's split).
Written to OUT/pyg-cora: edge_index.npy, x_ones.npy (the coordinates of the 1s of the
0/1 features; the test rebuilds x), labels.npy, test_nodes.npy; and per model
OUT/pyg-NAME: model.toml + weights.safetensors (export_pyg), expected.npy (PyG's
model(x, edge_index) on the test nodes, full graph, eval mode) and pyg.json (its test
accuracy).
"""
import gzip
import json
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, GINConv, JumpingKnowledge, MLP, SAGEConv

CORA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "cora")


def load_cora():
    ids, feats, labels = [], [], []
    with gzip.open(os.path.join(CORA, "cora.content.gz"), "rt") as f:
        for line in f:
            parts = line.split()
            ids.append(parts[0])
            feats.append([float(v) for v in parts[1:-1]])
            labels.append(parts[-1])
    index = {p: i for i, p in enumerate(ids)}
    classes = sorted(set(labels))
    y = torch.tensor([classes.index(c) for c in labels])
    pairs = set()
    with open(os.path.join(CORA, "cora.cites")) as f:
        for line in f:
            a, b = line.split()
            u, v = index[a], index[b]
            pairs.add((u, v))
            pairs.add((v, u))
    edge_index = torch.tensor(sorted(pairs)).t().contiguous()
    return torch.tensor(feats), edge_index, y


# --- models as users write them -------------------------------------------------------
class SageBatchNorm(torch.nn.Module):  # the model: SAGEConv + BatchNorm1d, conv1/conv2
    def __init__(self, cin, classes):
        super().__init__()
        self.conv1 = SAGEConv(cin, 64)
        self.bn1 = torch.nn.BatchNorm1d(64)
        self.conv2 = SAGEConv(64, classes)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index)
        x = self.bn1(x)
        x = F.relu(x)
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=1)


class GatElu(torch.nn.Module):  # PyG's examples/gat.py
    def __init__(self, cin, classes):
        super().__init__()
        self.conv1 = GATConv(cin, 8, heads=8, dropout=0.6)
        self.conv2 = GATConv(8 * 8, classes, heads=1, concat=False, dropout=0.6)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.6, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.6, training=self.training)
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=-1)


class SageMax(torch.nn.Module):  # max aggregation, x.relu()
    def __init__(self, cin, classes):
        super().__init__()
        self.conv1 = SAGEConv(cin, 32, aggr="max")
        self.conv2 = SAGEConv(32, classes, aggr="max")

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


class GcnWidths(torch.nn.Module):  # per-layer widths 1433-64-32-7, three hops
    def __init__(self, cin, classes):
        super().__init__()
        self.convs = torch.nn.ModuleList([GCNConv(cin, 64), GCNConv(64, 32), GCNConv(32, classes)])

    def forward(self, x, edge_index):
        for conv in self.convs[:-1]:
            x = F.relu(conv(x, edge_index))
            x = F.dropout(x, p=0.5, training=self.training)
        return self.convs[-1](x, edge_index)


class GinJk(torch.nn.Module):  # PyG's MLP inside GINConv, JumpingKnowledge cat, Linear head
    def __init__(self, cin, classes):
        super().__init__()
        self.convs = torch.nn.ModuleList([GINConv(MLP([cin, 32, 32]), train_eps=True),
                                          GINConv(MLP([32, 32, 32]), train_eps=True)])
        self.jk = JumpingKnowledge("cat")
        self.lin = torch.nn.Linear(64, classes)

    def forward(self, x, edge_index):
        xs = []
        for conv in self.convs:
            x = conv(x, edge_index).relu()
            xs.append(x)
        return F.log_softmax(self.lin(self.jk(xs)), dim=-1)


class SageResidual(torch.nn.Module):  # leaky ReLU, a residual add, LayerNorm, JK max
    def __init__(self, cin, classes):
        super().__init__()
        self.lin_in = torch.nn.Linear(cin, 32)
        self.conv1 = SAGEConv(32, 32, aggr="sum", normalize=True)
        self.conv2 = SAGEConv(32, 32, root_weight=False, project=True)
        self.norm = torch.nn.LayerNorm(32)
        self.jk = JumpingKnowledge("max")
        self.head = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(),
                                        torch.nn.Linear(32, classes))

    def forward(self, x, edge_index):
        x = F.leaky_relu(self.lin_in(x), 0.1)
        h1 = self.conv1(x, edge_index) + x
        h2 = self.norm(self.conv2(h1, edge_index).tanh())
        return self.head(self.jk([h1, h2]))


MODELS = {"sage-bn": SageBatchNorm, "gat-elu": GatElu, "sage-max": SageMax,
          "gcn-widths": GcnWidths, "gin-jk": GinJk, "sage-residual": SageResidual}


def train(model, x, edge_index, y, train_nodes, epochs=60):
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        out = model(x, edge_index)
        logp = out if out.max() <= 0 else F.log_softmax(out, dim=-1)
        F.nll_loss(logp[train_nodes], y[train_nodes]).backward()
        opt.step()
    model.eval()


def write_npy(path, array):
    np.save(path, array)


def write_fixtures(out_dir):
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
    from spindle_client.export import export_pyg

    x, edge_index, y = load_cora()
    perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))
    train_nodes, test_nodes = perm[:140], perm[140:1140]
    data_dir = os.path.join(out_dir, "pyg-cora")
    os.makedirs(data_dir, exist_ok=True)
    write_npy(os.path.join(data_dir, "edge_index.npy"), np.array(edge_index.tolist(), np.int64))
    write_npy(os.path.join(data_dir, "x_ones.npy"), np.array(x.nonzero().tolist(), np.int32))
    write_npy(os.path.join(data_dir, "labels.npy"), np.array(y.tolist(), np.int64))
    write_npy(os.path.join(data_dir, "test_nodes.npy"), np.array(test_nodes.tolist(), np.int64))
    for i, (name, cls) in enumerate(MODELS.items()):
        torch.manual_seed(10 + i)
        model = cls(x.shape[1], int(y.max()) + 1)
        train(model, x, edge_index, y, train_nodes)
        with torch.no_grad():
            out = model(x, edge_index)
        acc = float((out[test_nodes].argmax(-1) == y[test_nodes]).float().mean())
        hops = sum(1 for m in model.modules() if type(m).__name__.endswith("Conv"))
        d = os.path.join(out_dir, f"pyg-{name}")
        export_pyg(model, d, name=name, fanouts=[-1] * hops)
        write_npy(os.path.join(d, "expected.npy"), np.array(out[test_nodes].tolist(), np.float32))
        with open(os.path.join(d, "pyg.json"), "w") as f:
            json.dump({"pyg_test_accuracy": acc, "test_nodes": len(test_nodes),
                       "torch": torch.__version__,
                       "torch_geometric": __import__("torch_geometric").__version__}, f)
        print(f"pyg-{name}: PyG test accuracy {acc:.3f}")
