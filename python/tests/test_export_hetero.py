"""Typed (heterogeneous) graphs served as PyG computes them: models built with
to_hetero (aggr sum, mean, max) and with HeteroConv (R-GAT as MLPerf's GNN
benchmark writes it: GATConv(heads, add_self_loops=False) per edge type) are
exported with one call, checked against the live module on a generated typed
graph and the user's HeteroData, and served with every neighbour sampled: each
node type's answers over the Cap'n Proto and KServe doors equal the module's.
Layers without a typed form, other aggregations and calls without a node type
are refused by name."""
import json
import os
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
from torch_geometric.data import HeteroData  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
from pyg_models import two_sage  # noqa: E402
import spindle_client as sc  # noqa: E402
from serving import start_server_with_http  # noqa: E402
from spindle_client.export import ExportError, export_pyg, save_graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))


def typed_graph(seed=3):
    rng = np.random.default_rng(seed)
    d = HeteroData()
    n = {"paper": 60, "author": 40, "venue": 8}
    d["paper"].x = torch.from_numpy(rng.standard_normal((60, 12)).astype(np.float32))
    d["author"].x = torch.from_numpy(rng.standard_normal((40, 6)).astype(np.float32))
    d["venue"].x = torch.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))

    def edges(s, t, k):
        return torch.from_numpy(np.stack([rng.integers(0, n[s], k), rng.integers(0, n[t], k)]))

    d["paper", "cites", "paper"].edge_index = edges("paper", "paper", 200)
    d["author", "writes", "paper"].edge_index = edges("author", "paper", 150)
    d["paper", "rev_writes", "author"].edge_index = d["author", "writes", "paper"].edge_index.flip(0)
    d["paper", "in", "venue"].edge_index = edges("paper", "venue", 60)
    d["venue", "rev_in", "paper"].edge_index = d["paper", "in", "venue"].edge_index.flip(0)
    return d


class Gat(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = pyg_nn.GATConv((-1, -1), 8, heads=2, add_self_loops=False)
        self.lin = pyg_nn.Linear(-1, 5)

    def forward(self, x, edge_index):
        return self.lin(torch.nn.functional.elu(self.conv1(x, edge_index)))


class RGat(torch.nn.Module):
    """MLPerf Inference's R-GAT (GraphLearn-for-PyTorch examples/igbh/rgnn.py), small."""

    def __init__(self, edge_types, hidden=16, heads=4, out=5, layers=2):
        super().__init__()
        self.convs = torch.nn.ModuleList(
            pyg_nn.HeteroConv({e: pyg_nn.GATConv((-1, -1), hidden // heads, heads=heads,
                                                 add_self_loops=False) for e in edge_types})
            for _ in range(layers))
        self.lin = pyg_nn.Linear(hidden, out)

    def forward(self, x_dict, edge_index_dict):
        for i, conv in enumerate(self.convs):
            x_dict = conv(x_dict, edge_index_dict)
            if i != len(self.convs) - 1:
                x_dict = {k: torch.nn.functional.leaky_relu(x) for k, x in x_dict.items()}
        return self.lin(x_dict["paper"])


class HSage(torch.nn.Module):
    """HeteroConv of SAGEConv per edge type with an aggregation over edge types
    (cat: a Linear per node type after it), returning every node type."""

    def __init__(self, edge_types, aggr):
        super().__init__()
        self.conv1 = pyg_nn.HeteroConv({e: pyg_nn.SAGEConv((-1, -1), 8) for e in edge_types},
                                       aggr=aggr)
        self.conv2 = pyg_nn.HeteroConv({e: pyg_nn.SAGEConv((-1, -1), 8) for e in edge_types},
                                       aggr=aggr)
        self.lin = pyg_nn.Linear(-1, 5)

    def forward(self, x_dict, edge_index_dict):
        h = {k: v.relu() for k, v in self.conv1(x_dict, edge_index_dict).items()}
        return {"paper": self.lin(self.conv2(h, edge_index_dict)["paper"])}


def module_answers(model, data):
    with torch.no_grad():
        out = model(data.x_dict, data.edge_index_dict)
    return out if isinstance(out, dict) else {"paper": out}


def build(kind, data):
    torch.manual_seed(0)
    if kind == "rgat":
        model = RGat(data.edge_types)
    elif kind.startswith("hc-"):
        model = HSage(data.edge_types, kind[3:])
    else:
        sage = lambda: two_sage(16, 16, head=5)  # noqa: E731
        base, aggr = {"sum": (sage, "sum"), "mean": (sage, "mean"), "max": (sage, "max"),
                      "gat": (Gat, "sum")}[kind]
        model = pyg_nn.to_hetero(base(), data.metadata(), aggr=aggr)
    module_answers(model, data)  # lazy modules take their widths
    return model.eval()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("typed")
    data = typed_graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    models = {}
    for kind in ("sum", "mean", "max", "gat", "rgat", "hc-max", "hc-cat", "hc-mean"):
        models[kind] = build(kind, data)
        (tmp / "repo" / kind).mkdir(parents=True)
        export_pyg(models[kind], str(tmp / "repo" / kind / "1"), name=kind, fanouts=[-1, -1]
                   if kind != "gat" else [-1], check=data, spindle=SPINDLE)
    return tmp, data, models


def test_the_export_is_a_typed_stack_checked_on_both_graphs(served):
    tmp, _, _ = served
    text = (tmp / "repo" / "rgat" / "1" / "model.toml").read_text()
    assert "[[node_type]]" in text and "[[edge_type]]" in text and "[[output]]" in text
    assert 'graphs = ["generated", "yours: 108 nodes"]' in text, text
    info = subprocess.run([SPINDLE, "model", "info", str(tmp / "repo" / "rgat" / "1")],
                          capture_output=True, text=True)
    assert info.returncode == 0, info.stderr


def serve(tmp):
    return start_server_with_http(
        [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository", str(tmp / "repo"),
         "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--device", "host",
         "--admin-token-file", str(tmp / "token")])


def test_served_answers_equal_pyg_for_every_node_type(served):
    tmp, data, models = served
    proc, endpoint, base = serve(tmp)
    try:
        c = sc.Client(endpoint)
        for kind, model in models.items():
            want = module_answers(model, data)
            for node_type, rows in want.items():
                seeds = list(range(0, rows.shape[0], 3))
                got = c.infer_gnn(seeds, model=kind, node_type=node_type)
                w = rows.numpy()[seeds]
                np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4 * np.abs(w).max(),
                                           err_msg=f"{kind} {node_type}")
                for s in (0, rows.shape[0] - 1):  # alone: a batch may hold no node of a type
                    one = c.infer_gnn([s], model=kind, node_type=node_type, sampler_seed=s + 1)
                    w = rows.numpy()[[s]]
                    np.testing.assert_allclose(one, w, rtol=1e-4, atol=1e-4 * np.abs(w).max(),
                                               err_msg=f"{kind} {node_type} seed {s}")
        body = {"parameters": {"node_type": "author"},
                "inputs": [{"name": "seeds", "datatype": "INT64", "shape": [3],
                            "data": [0, 7, 39]}]}
        req = urllib.request.Request(base + "/v2/models/sum/infer", json.dumps(body).encode(),
                                     method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            out = json.loads(r.read())["outputs"][0]
        w = module_answers(models["sum"], data)["author"].numpy()[[0, 7, 39]]
        np.testing.assert_allclose(np.array(out["data"], dtype=np.float32).reshape(3, -1), w,
                                   rtol=1e-4, atol=1e-4 * np.abs(w).max())
        # Refusals by name; the server goes on serving.
        with pytest.raises(sc.SpindleError, match="name the seeds' node type"):
            c.infer_gnn([0], model="sum")
        with pytest.raises(sc.SpindleError, match="name the seeds' node type"):
            c.infer_gnn([0], model="sum", node_type=None)
        with pytest.raises(sc.SpindleError, match="out of range for node type 'venue'"):
            c.infer_gnn([8], model="sum", node_type="venue")
        with pytest.raises(sc.SpindleError, match="answers seeds of node types paper"):
            c.infer_gnn([0], model="rgat", node_type="author")
        assert c.infer_gnn([1], model="sum", node_type="paper").shape == (1, 5)
        # Unloaded and loaded again while serving: warmed on a node of a type it answers.
        auth = {"Authorization": "Bearer " + (tmp / "token").read_text().strip()}
        for action in ("unload", "load"):
            req = urllib.request.Request(f"{base}/v2/repository/models/sum/{action}", b"{}",
                                         headers=auth, method="POST")
            with urllib.request.urlopen(req, timeout=60) as r:
                assert r.status == 200
        w = module_answers(models["sum"], data)["venue"].numpy()[[3]]
        np.testing.assert_allclose(c.infer_gnn([3], model="sum", node_type="venue"), w,
                                   rtol=1e-4, atol=1e-4 * np.abs(w).max())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Gcn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = pyg_nn.GCNConv(-1, 4, add_self_loops=False)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


class MinConv(torch.nn.Module):
    def __init__(self, edge_types):
        super().__init__()
        self.conv = pyg_nn.HeteroConv({e: pyg_nn.SAGEConv((-1, -1), 4) for e in edge_types},
                                      aggr="min")

    def forward(self, x_dict, edge_index_dict):
        return self.conv(x_dict, edge_index_dict)["paper"]


def test_what_spindle_would_not_compute_is_refused_by_name(tmp_path):
    data = typed_graph()
    papers = data.node_type_subgraph(["paper"])  # GCNConv takes one node type only
    gcn = pyg_nn.to_hetero(Gcn(), papers.metadata())
    module_answers(gcn, papers)
    with pytest.raises(ExportError, match="GCNConv on an edge type is not supported"):
        export_pyg(gcn, str(tmp_path / "a"), name="a", check=papers, spindle=SPINDLE)
    m = MinConv(data.edge_types)
    module_answers(m, data)
    with pytest.raises(ExportError, match="aggr='min'"):
        export_pyg(m, str(tmp_path / "b"), name="b", check=data, spindle=SPINDLE)
    with pytest.raises(ExportError, match="pair_types: give the node types of a pair's two ends"):
        export_pyg(build("sum", data), str(tmp_path / "c"), name="c", check=data, task="link")
    with pytest.raises(ExportError, match="metadata"):
        export_pyg(build("sum", data), str(tmp_path / "d"), name="d", check=True)
    with pytest.raises(ExportError, match=r"fanouts: edge type \('paper', 'x', 'paper'\)"):
        export_pyg(build("sum", data), str(tmp_path / "e"), name="e", check=data, spindle=SPINDLE,
                   fanouts={("paper", "x", "paper"): [-1, -1]})
    with pytest.raises(ExportError, match="needs 'edge_attr_dict', which Spindle does not pass"):
        export_pyg(WithAttrs(), str(tmp_path / "f"), name="f", metadata=data.metadata(),
                   check=False)
    assert not any((tmp_path / k).exists() for k in "abcdef")


class WithAttrs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = pyg_nn.HeteroConv({("paper", "cites", "paper"): pyg_nn.SAGEConv(12, 4)})

    def forward(self, x_dict, edge_index_dict, edge_attr_dict):
        return self.conv(x_dict, edge_index_dict)["paper"]


def test_the_check_refuses_a_module_spindle_would_answer_differently(tmp_path):
    """The check compares every answered node type: a module changed after its
    translation (one edge type's weights) differs, and is named."""
    from spindle_client import _hetero_export as hx
    data = typed_graph()
    model = build("sum", data)
    export_pyg(model, str(tmp_path / "m"), name="m", fanouts=[-1, -1], check=False,
               metadata=data.metadata())
    with torch.no_grad():
        getattr(model.conv2, "author__writes__paper").lin_l.weight.mul_(1.5)
    with pytest.raises(ExportError, match="node type 'paper' differs from your module"):
        hx._check(model, str(tmp_path / "m"), [("yours", data)], {"paper": "x", "author": "y"},
                  SPINDLE, 1e-4)


def test_a_node_type_with_no_nodes_yet_is_checked_as_empty(tmp_path):
    """A typed graph whose item type has no nodes yet (a shop before its first
    item): the check answers it with no rows instead of failing on no seeds."""
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    rng = np.random.default_rng(0)
    d = HeteroData()
    d["user"].x = torch.from_numpy(rng.standard_normal((20, 4)).astype(np.float32))
    d["item"].x = torch.zeros((0, 4))
    d["user", "knows", "user"].edge_index = torch.from_numpy(rng.integers(0, 20, (2, 60)))
    d["user", "buys", "item"].edge_index = torch.zeros((2, 0), dtype=torch.long)
    d["item", "bought_by", "user"].edge_index = torch.zeros((2, 0), dtype=torch.long)
    torch.manual_seed(0)
    model = pyg_nn.to_hetero(two_sage(8, 3), d.metadata(), aggr="sum")
    with torch.no_grad():
        model(d.x_dict, d.edge_index_dict)
    export_pyg(model.eval(), str(tmp_path / "m"), name="m", fanouts=[-1, -1], check=d,
               spindle=SPINDLE)
    assert '"yours: 20 nodes"' in (tmp_path / "m" / "model.toml").read_text()
