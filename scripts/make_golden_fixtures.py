#!/usr/bin/env python3
"""Writes the golden fixtures of tests/nn: weights, inputs and expected outputs of
the real PyTorch Geometric layers (and plain PyTorch DLRM, NCF and Wide & Deep
models), so Spindle's models are checked against PyG and PyTorch themselves.

Run by hand (not in CI) with torch + torch_geometric installed, e.g. on Debian 12:
  apt-get install python3-torch && pip install --break-system-packages torch_geometric==2.3.1
  /usr/bin/python3 scripts/make_golden_fixtures.py tests/nn/golden [--only ncf,wnd]
  (--only pyg: the models of scripts/pyg_user_models.py, trained on Cora, exported with
  spindle_client.export.export_pyg)

Each GNN fixture is a 2-hop sampled subgraph in Spindle's sampler layout
(hop_end, CSR rows of expanded nodes -> local neighbour ids). PyG runs the model
on the whole subgraph (edge_index: neighbour -> row), as with NeighborLoader, and
the seeds' rows are the expected output.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

IN, HIDDEN, OUT, HEADS = 8, 16, 5, 2


def to_numpy(t):
    # Debian's torch 1.13 is built without the NumPy bridge: go through lists.
    return np.array(t.tolist(), np.float32)


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        data = np.array(t.detach().cpu().float().flatten().tolist(), np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_model_dir(out_dir, name, model, toml_text):
    """DIR/name with the model's weights.safetensors and model.toml; returns DIR/name."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "weights.safetensors"), model.state_dict())
    with open(os.path.join(d, "model.toml"), "w") as f:
        f.write(toml_text)
    return d


def sampled_subgraph(rng):
    hop_end = [4, 12, 30]
    indptr, indices = [0], []
    for row in range(hop_end[1]):
        limit = hop_end[1] if row < hop_end[0] else hop_end[2]
        k = int(rng.integers(0, 4)) if row >= hop_end[0] else 3
        nbrs = rng.choice(limit, size=k, replace=False)
        indices.extend(int(v) for v in nbrs)
        indptr.append(len(indices))
    return np.array(hop_end, np.int64), np.array(indptr, np.int64), np.array(indices, np.int32)


def batch_subgraph(rng):
    """A jointly sampled batch of 64 seeds (fanouts up to 25, 10), hub-heavy like
    R-MAT: neighbours are drawn by a Zipf law, so many rows share them."""
    hop_end = [64, 600, 2400]
    indptr, indices = [0], []
    for row in range(hop_end[1]):
        limit = hop_end[1] if row < hop_end[0] else hop_end[2]
        weights = 1.0 / np.arange(1, limit + 1)
        k = int(rng.integers(5, 26)) if row < hop_end[0] else int(rng.integers(0, 11))
        nbrs = rng.choice(limit, size=k, replace=False, p=weights / weights.sum())
        indices.extend(int(v) for v in nbrs)
        indptr.append(len(indices))
    return np.array(hop_end, np.int64), np.array(indptr, np.int64), np.array(indices, np.int32)


class GNN(torch.nn.Module):
    def __init__(self, convs):
        super().__init__()
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = torch.relu(x)
        return x


def gin_mlp(i, o):
    return torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.ReLU(), torch.nn.Linear(o, o))


def gnn_fixture(out_dir, arch, convs, extra, name=None, subgraph=sampled_subgraph):
    rng = np.random.default_rng(7)
    hop_end, indptr, indices = subgraph(rng)
    x = rng.standard_normal((hop_end[-1], IN)).astype(np.float32)
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    edge_index = torch.tensor(np.stack([indices.astype(np.int64), rows]).tolist(), dtype=torch.long)
    model = GNN(convs).eval()
    with torch.no_grad():
        for p in model.parameters():  # biases default to zero: make them count
            p.uniform_(-0.5, 0.5)
        expected = to_numpy(model(torch.tensor(x.tolist()), edge_index)[: hop_end[0]])
    d = write_model_dir(out_dir, name or arch, model,
                        f'[model]\nname = "golden-{arch}"\narch = "{arch}"\nweights = "weights.safetensors"\n'
                        f"in = {IN}\nhidden = {HIDDEN}\nout = {OUT}\nlayers = 2\n{extra}")
    for name, arr in [("x", x), ("hop_end", hop_end), ("indptr", indptr), ("indices", indices),
                      ("expected", expected)]:
        np.save(os.path.join(d, name + ".npy"), arr)


# The plain PyTorch DLRM (EmbeddingBag sum, bottom MLP, dot interaction, top
# MLP) is shared with the benchmark's PyTorch peer, so both measure one model.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                                "torch_baseline"))
from dlrm_torch import DLRM  # noqa: E402


def dlrm_fixture(out_dir):
    rng = np.random.default_rng(11)
    rows, dim, batch = [50, 30, 20], 8, 6
    model = DLRM(13, [16, dim], [12, 1], rows, dim).eval()
    dense = rng.standard_normal((batch, 13)).astype(np.float32)
    indices, offsets = [], []
    for n in rows:
        lens = rng.integers(0, 4, size=batch)
        offsets.append(np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        indices.append(rng.integers(0, n, size=int(lens.sum())).astype(np.int64))
    with torch.no_grad():
        expected = to_numpy(model(torch.tensor(dense.tolist()), [torch.tensor(i.tolist(), dtype=torch.long) for i in indices],
                                  [torch.tensor(o[:-1].tolist(), dtype=torch.long) for o in offsets]))
    d = write_model_dir(out_dir, "dlrm", model,
                        '[model]\nname = "golden-dlrm"\narch = "dlrm"\nweights = "weights.safetensors"\n'
                        f"dense_in = 13\nbottom = [16, {dim}]\ntop = [12, 1]\nembedding_dim = {dim}\n"
                        f"table_rows = [{', '.join(map(str, rows))}]\n")
    np.save(os.path.join(d, "dense.npy"), dense)
    for t in range(len(rows)):
        np.save(os.path.join(d, f"indices{t}.npy"), indices[t])
        np.save(os.path.join(d, f"offsets{t}.npy"), offsets[t])
    np.save(os.path.join(d, "expected.npy"), expected)


class NCF(torch.nn.Module):
    """NeuMF (He et al. 2017): GMF over tables 0 (user) and 1 (item) beside an MLP
    over tables 2 and 3, then one predict layer and a sigmoid (Hera Table I: 4
    tables, 1 lookup, concat)."""

    def __init__(self, rows, dim, mlp):
        super().__init__()
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(n, dim, mode="sum") for n in rows])
        widths, layers = [2 * dim] + mlp, []
        for i in range(1, len(widths)):
            layers += [torch.nn.Linear(widths[i - 1], widths[i]), torch.nn.ReLU()]
        self.mlp_l = torch.nn.Sequential(*layers)
        self.predict = torch.nn.Linear(dim + mlp[-1], 1)

    def forward(self, dense, indices, offsets):
        e = [emb(i, o) for emb, i, o in zip(self.emb_l, indices, offsets)]
        h = self.mlp_l(torch.cat([e[2], e[3]], dim=1))
        return torch.sigmoid(self.predict(torch.cat([e[0] * e[1], h], dim=1)))


class WideDeep(torch.nn.Module):
    """Wide & Deep (Cheng et al. 2016): a linear wide part over the dense
    features plus one learned weight per sparse key, and a deep MLP over the
    dense features and every table's embedding; sigmoid of the sum."""

    def __init__(self, dense_in, rows, dim, top):
        super().__init__()
        self.wide = torch.nn.Linear(dense_in, 1)
        self.wide_emb = torch.nn.ModuleList([torch.nn.EmbeddingBag(n, 1, mode="sum") for n in rows])
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(n, dim, mode="sum") for n in rows])
        widths, layers = [dense_in + len(rows) * dim] + top, []
        for i in range(1, len(widths)):
            layers.append(torch.nn.Linear(widths[i - 1], widths[i]))
            if i < len(widths) - 1:
                layers.append(torch.nn.ReLU())
        self.top_l = torch.nn.Sequential(*layers)

    def forward(self, dense, indices, offsets):
        wide = self.wide(dense)
        for w, i, o in zip(self.wide_emb, indices, offsets):
            wide = wide + w(i, o)
        deep = self.top_l(torch.cat([dense] + [e(i, o) for e, i, o in zip(self.emb_l, indices, offsets)], dim=1))
        return torch.sigmoid(wide + deep)


class DIN(torch.nn.Module):
    """Deep Interest Network (Zhou et al. 2018), as Spindle serves it: tables 0
    user, 1 candidate, 2 behaviour sequence, 3 context. Each behaviour e is
    scored against the candidate q by the local activation unit on
    [e, q, e - q, e * q] (sigmoid between layers, no softmax over behaviours);
    the interest is the weighted sum; the predict MLP (ReLU) ends in 2 logits
    and the answer is softmax(z)[:, 1]."""

    def __init__(self, rows, dim, attention, top):
        super().__init__()
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(n, dim, mode="sum") for n in rows])
        self.att_l = self.stack(4 * dim, attention, torch.nn.Sigmoid)
        self.top_l = self.stack(4 * dim, top, torch.nn.ReLU)

    @staticmethod
    def stack(width, widths, act):
        layers = []
        for i, w in enumerate(widths):
            layers.append(torch.nn.Linear(width, w))
            if i + 1 < len(widths):
                layers.append(act())
            width = w
        return torch.nn.Sequential(*layers)

    def forward(self, dense, indices, offsets):
        user, cand, ctx = (self.emb_l[t](indices[t], offsets[t]) for t in (0, 1, 3))
        keys, starts = indices[2], offsets[2].tolist() + [len(indices[2])]
        interest = []
        for b in range(cand.shape[0]):
            e = self.emb_l[2].weight[keys[starts[b]:starts[b + 1]]]
            q = cand[b].expand_as(e)
            w = self.att_l(torch.cat([e, q, e - q, e * q], dim=1))
            interest.append((w * e).sum(dim=0))
        z = self.top_l(torch.cat([user, torch.stack(interest), cand, ctx], dim=1))
        return torch.softmax(z, dim=1)[:, 1:2]


def rec_fixture(out_dir, name, model, toml, rows, dense_in, batch, max_lookups, min_lookups=1):
    """Runs `model` on a random batch and writes its weights, inputs and outputs."""
    rng = np.random.default_rng(13)
    dense = rng.standard_normal((batch, dense_in)).astype(np.float32)
    indices, offsets = [], []
    for n in rows:
        lens = rng.integers(min_lookups, max_lookups + 1, size=batch)
        offsets.append(np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        indices.append(rng.integers(0, n, size=int(lens.sum())).astype(np.int64))
    with torch.no_grad():
        for p in model.parameters():  # spread the weights so the check is not near zero
            p.uniform_(-0.3, 0.3)
        expected = to_numpy(model(torch.tensor(dense.tolist()).reshape(batch, dense_in),
                                  [torch.tensor(i.tolist(), dtype=torch.long) for i in indices],
                                  [torch.tensor(o[:-1].tolist(), dtype=torch.long) for o in offsets]))
    d = write_model_dir(out_dir, name, model, toml)
    np.save(os.path.join(d, "dense.npy"), dense)
    for t in range(len(rows)):
        np.save(os.path.join(d, f"indices{t}.npy"), indices[t])
        np.save(os.path.join(d, f"offsets{t}.npy"), offsets[t])
    np.save(os.path.join(d, "expected.npy"), expected)


def ncf_fixture(out_dir):
    rows, dim, mlp = [40, 30, 40, 30], 8, [16, 16, 8]
    rec_fixture(out_dir, "ncf", NCF(rows, dim, mlp).eval(),
                '[model]\nname = "golden-ncf"\narch = "ncf"\nweights = "weights.safetensors"\n'
                f"dense_in = 0\ntop = [{', '.join(map(str, mlp))}]\nembedding_dim = {dim}\n"
                f"table_rows = [{', '.join(map(str, rows))}]\n", rows, 0, 6, 1)


def wnd_fixture(out_dir):
    rows, dim, top = [20, 30, 25], 4, [16, 8, 1]
    rec_fixture(out_dir, "wnd", WideDeep(13, rows, dim, top).eval(),
                '[model]\nname = "golden-wnd"\narch = "wnd"\nweights = "weights.safetensors"\n'
                f"dense_in = 13\ntop = [{', '.join(map(str, top))}]\nembedding_dim = {dim}\n"
                f"table_rows = [{', '.join(map(str, rows))}]\n", rows, 13, 6, 3)


def din_fixture(out_dir):
    # Bags of 0..4 keys: a sample with no behaviours (zero interest) is covered.
    rows, dim, attention, top = [20, 30, 40, 10], 4, [12, 6, 1], [16, 8, 2]
    rec_fixture(out_dir, "din", DIN(rows, dim, attention, top).eval(),
                '[model]\nname = "golden-din"\narch = "din"\nweights = "weights.safetensors"\n'
                f"dense_in = 0\ntop = [{', '.join(map(str, top))}]\nembedding_dim = {dim}\n"
                f"attention = [{', '.join(map(str, attention))}]\n"
                f"table_rows = [{', '.join(map(str, rows))}]\n", rows, 0, 7, 4, 0)


def directed_fixture(out_dir):
    """A directed graph as PyG users hold it: edge_index [2, E] (source row 0,
    target row 1) and x, with a 2-layer GraphSAGE run by PyG on the whole graph.
    Spindle must prepare edge_index.npy so that each node aggregates over the
    sources of its incoming edges (PyG's flow source_to_target), and give the
    same outputs for every node."""
    rng = np.random.default_rng(11)
    n = 12
    pairs = set()
    while len(pairs) < 30:
        u, v = (int(a) for a in rng.integers(0, n, 2))
        if u != v and (v, u) not in pairs:  # no reciprocal pairs: direction matters everywhere
            pairs.add((u, v))
    src, dst = zip(*sorted(pairs))
    edge_index = np.array([src, dst], np.int64)
    x = rng.standard_normal((n, IN)).astype(np.float32)
    model = GNN([SAGEConv(IN, HIDDEN), SAGEConv(HIDDEN, OUT)]).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.5, 0.5)
        expected = to_numpy(model(torch.tensor(x.tolist()), torch.tensor(edge_index.tolist())))
    d = write_model_dir(out_dir, "graphsage-directed", model,
                        '[model]\nname = "golden-directed"\narch = "graphsage"\n'
                        f'weights = "weights.safetensors"\nin = {IN}\nhidden = {HIDDEN}\nout = {OUT}\n'
                        "layers = 2\n")
    np.save(os.path.join(d, "edge_index.npy"), edge_index)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "expected.npy"), expected)


def pyg_user_fixtures(out_dir):
    """Models as PyG users write them, trained on Cora, exported with export_pyg
    (scripts/pyg_user_models.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pyg_user_models
    pyg_user_models.write_fixtures(out_dir)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "tests/nn/golden"
    if "--only" in sys.argv:  # e.g. --only ncf,wnd: write these, leave the others as they are
        torch.manual_seed(5)
        for name in sys.argv[sys.argv.index("--only") + 1].split(","):
            {"ncf": ncf_fixture, "wnd": wnd_fixture, "din": din_fixture, "dlrm": dlrm_fixture,
             "directed": directed_fixture, "pyg": pyg_user_fixtures}[name](out_dir)
        return
    torch.manual_seed(3)
    gnn_fixture(out_dir, "graphsage", [SAGEConv(IN, HIDDEN), SAGEConv(HIDDEN, OUT)], "")
    gnn_fixture(out_dir, "gcn", [GCNConv(IN, HIDDEN), GCNConv(HIDDEN, OUT)], "")
    gnn_fixture(out_dir, "gat", [GATConv(IN, HIDDEN, heads=HEADS), GATConv(HIDDEN * HEADS, OUT, heads=1)],
                f"heads = {HEADS}\n")
    gnn_fixture(out_dir, "gin", [GINConv(gin_mlp(IN, HIDDEN)), GINConv(gin_mlp(HIDDEN, OUT))], "")
    dlrm_fixture(out_dir)
    # The same layers over a jointly sampled batch of 64 seeds (the serving path's shape);
    # made last so the fixtures above keep their weights.
    b64 = dict(subgraph=batch_subgraph)
    gnn_fixture(out_dir, "graphsage", [SAGEConv(IN, HIDDEN), SAGEConv(HIDDEN, OUT)], "",
                "graphsage-b64", **b64)
    gnn_fixture(out_dir, "gcn", [GCNConv(IN, HIDDEN), GCNConv(HIDDEN, OUT)], "", "gcn-b64", **b64)
    gnn_fixture(out_dir, "gat", [GATConv(IN, HIDDEN, heads=HEADS), GATConv(HIDDEN * HEADS, OUT, heads=1)],
                f"heads = {HEADS}\n", "gat-b64", **b64)
    gnn_fixture(out_dir, "gin", [GINConv(gin_mlp(IN, HIDDEN)), GINConv(gin_mlp(HIDDEN, OUT))], "",
                "gin-b64", **b64)
    directed_fixture(out_dir)  # last: the fixtures above keep their weights
    print("fixtures written to", out_dir)


if __name__ == "__main__":
    main()
