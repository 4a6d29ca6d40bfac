"""Edge attributes served as PyG computes them: GINEConv models (with and without
edge_dim, eps trained) and attention layers with edge_dim (GATConv, GATv2Conv,
TransformerConv; self-loops filled with the mean of a node's edges) exported with one call, checked against the live module on
a generated graph with edge attributes and the user's (a tuple or a Data), then
served from a dataset prepared from save_graph with every neighbour sampled:
each node's answer equals model(x, edge_index, edge_attr). A gine model on a
dataset without edge attributes, and edge attributes given to any other layer
(or to an attention layer without edge_dim), are refused by name."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
from torch_geometric.data import Data  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from spindle_client.export import ExportError, export_pyg, save_graph  # noqa: E402

from serving import start_server  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
F = 8  # node features and edge attributes alike (GINEConv without edge_dim needs it)


def graph(seed=5, n=60, e=300):
    rng = np.random.default_rng(seed)
    src, dst = list(rng.integers(0, n - 1, e)), list(rng.integers(0, n - 1, e))
    src += [4, 4, 9, 9]  # a self-loop twice and a repeated edge; node n-1 is isolated
    dst += [4, 4, 2, 2]
    ei = torch.tensor([src, dst], dtype=torch.long)
    x = torch.from_numpy(rng.standard_normal((n, F)).astype(np.float32))
    ea = torch.from_numpy(rng.standard_normal((ei.shape[1], F)).astype(np.float32))
    return Data(x=x, edge_index=ei, edge_attr=ea)


def mlp(i, o):
    return torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.ReLU(), torch.nn.Linear(o, o))


class Gine(torch.nn.Module):
    """conv1 without edge_dim (edge attributes as wide as x) unless `projected`;
    conv2 projects them (edge_dim); eps trained to values of its own."""

    def __init__(self, projected):
        super().__init__()
        self.conv1 = pyg_nn.GINEConv(mlp(F, 16), train_eps=True,
                                     edge_dim=F if projected else None)
        self.conv2 = pyg_nn.GINEConv(mlp(16, 16), train_eps=True, edge_dim=F)
        self.lin = torch.nn.Linear(16, 5)
        with torch.no_grad():
            self.conv1.eps.fill_(0.3)
            self.conv2.eps.fill_(-0.2)

    def forward(self, x, edge_index, edge_attr):
        x = self.conv1(x, edge_index, edge_attr).relu()
        x = self.conv2(x, edge_index, edge_attr=edge_attr).relu()
        return self.lin(x)


def build(projected):
    torch.manual_seed(1 if projected else 0)
    return Gine(projected).eval()


class Attention(torch.nn.Module):
    """Every attention layer with edge_dim: GATConv with self-loops (their
    attributes the mean of the node's edges) and without, GATv2Conv (concat=False),
    TransformerConv with beta; or (`variant`) TransformerConv without root_weight
    averaging 3 heads and GATv2Conv without self-loops, sharing weights."""

    def __init__(self, variant):
        super().__init__()
        if variant:
            self.convs = torch.nn.ModuleList([
                pyg_nn.TransformerConv(F, 4, heads=3, edge_dim=F, concat=False,
                                       root_weight=False),
                pyg_nn.GATv2Conv(4, 5, edge_dim=F, add_self_loops=False, share_weights=True)])
        else:
            self.convs = torch.nn.ModuleList([
                pyg_nn.GATConv(F, 4, heads=2, edge_dim=F),
                pyg_nn.GATv2Conv(8, 4, heads=2, edge_dim=F, concat=False),
                pyg_nn.TransformerConv(4, 6, heads=2, edge_dim=F, beta=True),
                pyg_nn.GATConv(12, 3, edge_dim=F, add_self_loops=False)])

    def forward(self, x, edge_index, edge_attr):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index, edge_attr)
            if i + 1 < len(self.convs):
                x = x.relu()
        return x


def build_attention(variant):
    torch.manual_seed(2 + variant)
    return Attention(variant).eval()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("edge_attr")
    data = graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    torch.manual_seed(4)  # PyG's basic model, edge_attr a keyword of its forward
    basic = pyg_nn.GAT(F, 8, 2, 3, v2=True, edge_dim=F, heads=2, jk="cat").eval()
    models = {"plain": build(False), "projected": build(True), "attention": build_attention(0),
              "attention2": build_attention(1), "basic": basic}
    checks = {"plain": (data.x, data.edge_index, data.edge_attr), "projected": data,
              "attention": data, "attention2": data, "basic": data}
    hops = {"plain": 2, "projected": 2, "attention": 4, "attention2": 2, "basic": 2}
    kinds = {}
    for name, model in models.items():
        (tmp / "repo" / name).mkdir(parents=True)
        kinds[name] = export_pyg(model, str(tmp / "repo" / name / "1"), name=name,
                                 fanouts=[-1] * hops[name], check=checks[name],
                                 spindle=SPINDLE)
    return tmp, data, models, kinds


def test_gine_exports_as_its_op_and_nn_checked_with_edge_attributes(served):
    tmp, _, _, kinds = served
    assert kinds["plain"][:4] == ["gine", "linear", "relu", "linear"], kinds
    plain = (tmp / "repo" / "plain" / "1" / "model.toml").read_text()
    assert plain.count('kind = "gine"') == 2 and plain.count("edge_dim = 8") == 1, plain
    assert "edge attributes 8 wide" in plain and "yours: 60 nodes" in plain, plain
    projected = (tmp / "repo" / "projected" / "1" / "model.toml").read_text()
    assert projected.count("edge_dim = 8") == 2, projected
    assert kinds["attention"] == ["gat", "relu", "gatv2", "relu", "transformer", "relu", "gat"]
    attention = (tmp / "repo" / "attention" / "1" / "model.toml").read_text()
    assert attention.count("edge_dim = 8") == 4, attention


def test_served_answers_equal_pyg_with_edge_attributes(served):
    tmp, data, models, _ = served
    proc, endpoint = start_server(
        [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository", str(tmp / "repo"),
         "--listen", "127.0.0.1:0", "--device", "host"])
    try:
        c = sc.Client(endpoint)
        seeds = list(range(data.num_nodes))
        for name, model in models.items():
            with torch.no_grad():
                want = (model(data.x, data.edge_index, edge_attr=data.edge_attr) if name == "basic"
                        else model(data.x, data.edge_index, data.edge_attr)).numpy()
            got = c.infer_gnn(seeds, model=name)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(),
                                       err_msg=name)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_gine_model_on_a_dataset_without_edge_attributes_is_refused_by_name(served, tmp_path):
    tmp, data, _, _ = served
    bare = Data(x=data.x, edge_index=data.edge_index)
    save_graph(bare, str(tmp_path / "bare"))
    model = str(tmp / "repo" / "plain" / "1")
    r = subprocess.run([SPINDLE, "model", "verify", model, "--graph", str(tmp_path / "bare"),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode != 0
    assert "op[0] (gine, conv1) reads edge attributes, and dataset" in r.stderr, r.stderr
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp_path / "bare"), "--out",
                    str(tmp_path / "ds")], check=True, capture_output=True)
    r = subprocess.run([SPINDLE, "serve", "--dataset", str(tmp_path / "ds"), "--model-repository",
                        str(tmp / "repo"), "--listen", "127.0.0.1:0", "--device", "host"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "reads edge attributes, and dataset" in r.stderr, r.stderr[-2000:]


class Edges(torch.nn.Module):
    def __init__(self, conv, pass_attr):
        super().__init__()
        self.conv = conv
        self.pass_attr = pass_attr

    def forward(self, x, edge_index, edge_attr):
        return self.conv(x, edge_index, edge_attr) if self.pass_attr else self.conv(x, edge_index)


class Keywords(torch.nn.Module):
    """Layers called with keywords (conv(x, edge_index=..., edge_attr=...)) and a
    1-D edge_attr (one attribute per edge, as PyG's layers take it)."""

    def __init__(self):
        super().__init__()
        self.conv1 = pyg_nn.GATConv(F, 4, heads=2, edge_dim=1)
        self.conv2 = pyg_nn.TransformerConv(8, 3, edge_dim=1)

    def forward(self, x, edge_index, edge_attr):
        x = self.conv1(x, edge_index=edge_index, edge_attr=edge_attr).relu()
        return self.conv2(x=x, edge_index=edge_index, edge_attr=edge_attr)


def test_keyword_calls_and_one_attribute_per_edge_export_checked(tmp_path):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    data = graph()
    torch.manual_seed(5)
    kinds = export_pyg(Keywords().eval(), str(tmp_path / "k"), name="k",
                       check=(data.x, data.edge_index, data.edge_attr[:, 0]), spindle=SPINDLE)
    assert kinds == ["gat", "relu", "transformer"], kinds
    text = (tmp_path / "k" / "model.toml").read_text()
    assert "edge attributes 1 wide" in text and '"yours: 60 nodes, 304 edges"]' in text, text


def test_edge_attributes_for_other_layers_and_missing_ones_are_refused_by_name(tmp_path):
    data = graph()
    refused = [
        (pyg_nn.GATConv(F, 4), True, "GATConv without edge_dim given edge attributes"),
        (pyg_nn.GATConv(F, 4, edge_dim=F), False, r"GATConv\(edge_dim=...\) must be called as"),
        (pyg_nn.TransformerConv(F, 4, edge_dim=F), False, "TransformerConv.* must be called as"),
        (pyg_nn.GCNConv(F, 4), True, "GCNConv with edge attributes is not served"),
        (pyg_nn.GATv2Conv(F, 4, edge_dim=F, fill_value="add"), True,
         r"GATv2Conv\(fill_value='add'\) with edge_dim"),
        (pyg_nn.GATConv(F, 4, edge_dim=F, fill_value=0.5), True,
         r"GATConv\(fill_value=0.5\) with edge_dim")]
    for i, (conv, pass_attr, match) in enumerate(refused):
        with pytest.raises(ExportError, match=match):
            export_pyg(Edges(conv, pass_attr).eval(), str(tmp_path / str(i)), name="e",
                       check=False)
        assert not (tmp_path / str(i)).exists()
    with pytest.raises(ExportError, match="the model reads edge attributes"):
        export_pyg(build(False), str(tmp_path / "c"), name="c", spindle=SPINDLE,
                   check=(data.x, data.edge_index))


def test_graph_updates_on_a_graph_with_edge_attributes_are_refused_by_name(served):
    tmp, _, _, _ = served
    (tmp / "admin.token").write_text("a" * 32 + "\n")
    os.chmod(tmp / "admin.token", 0o600)
    r = subprocess.run([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository",
                        str(tmp / "repo"), "--graph-updates", "--listen", "127.0.0.1:0",
                        "--admin-token-file", str(tmp / "admin.token"), "--device", "host"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "graph updates on a graph with edge attributes (edge_attr.npy) are not served" in \
        r.stderr, r.stderr[-2000:]
    assert not (tmp / "ds" / "graph.log").exists()
