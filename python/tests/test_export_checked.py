"""Every export is checked against the user's live module before it is written:
the faults a new user met (in-place activations dropped, GCNConv(improved=True)
read against the wrong PyG release, PyG's own model classes untraceable) export
and match, a translation that parts from the module is refused naming the op,
and refusals name the module path and the reason. Needs torch, torch_geometric
and the spindle binary ($SPINDLE_BINARY, set by ctest)."""
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import numpy as np  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_geometric.nn import GCNConv, GraphConv, SAGEConv, SGConv  # noqa: E402
from torch_geometric.nn.models import GAT, GCN, GIN, GraphSAGE  # noqa: E402

from pyg_models import one_conv  # noqa: E402
from spindle_client import _pyg_translate  # noqa: E402
from spindle_client.export import ExportError, export_pyg  # noqa: E402

BINARY = os.environ.get("SPINDLE_BINARY")
needs_binary = pytest.mark.skipif(not BINARY, reason="SPINDLE_BINARY is not set (ctest sets it)")


def user_graph(n=60, f=8, seed=3):
    """A directed graph as users save it: self-loops and repeated edges left in."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, 4 * n), generator=g)
    ei = torch.cat([ei, torch.tensor([[1, 1, 2], [1, 1, 3]]), ei[:, :5]], dim=1)
    return torch.randn(n, f, generator=g), ei


class InPlaceMethod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = SAGEConv(8, 16), SAGEConv(16, 3)

    def forward(self, x, edge_index):
        h = self.conv1(x, edge_index)
        h.relu_()
        return self.conv2(h, edge_index)


class InPlaceFunctional(InPlaceMethod):
    def forward(self, x, edge_index):
        h = self.conv1(x, edge_index)
        F.relu(h, inplace=True)
        return self.conv2(h, edge_index)


class InPlaceModule(InPlaceMethod):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x, edge_index):
        h = self.conv1(x, edge_index)
        self.act(h)
        return self.conv2(h, edge_index)


class ExampleGcn(torch.nn.Module):
    """PyG's examples/gcn.py as written: an optional edge_weight, .relu(), dropout."""

    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(8, 16, cached=True)
        self.conv2 = GCNConv(16, 3, cached=True)

    def forward(self, x, edge_index, edge_weight=None):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index, edge_weight).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index, edge_weight)


def improved():
    return one_conv(GCNConv(8, 4, improved=True))


def no_self_loops():
    return one_conv(GCNConv(8, 4, add_self_loops=False))


def export_checked(model, tmp_path, **kw):
    out = tmp_path / "m"
    kinds = export_pyg(model, str(out), name="m", spindle=BINARY, **kw)
    return kinds, (out / "model.toml").read_text()


@needs_binary
@pytest.mark.parametrize("model", [InPlaceMethod, InPlaceFunctional, InPlaceModule])
def test_an_in_place_activation_is_served(tmp_path, model):
    torch.manual_seed(0)
    kinds, text = export_checked(model(), tmp_path, check=user_graph())
    assert kinds == ["sage", "relu", "sage"]
    assert "checked = true" in text


@needs_binary
def test_improved_follows_the_installed_pyg_release(tmp_path):
    torch.manual_seed(0)
    m = improved()
    _, text = export_checked(m, tmp_path, check=user_graph())
    in_effect = _pyg_translate.gcn_improved_in_effect(m.conv1)
    assert f"improved = {'true' if in_effect else 'false'}" in text


@needs_binary
def test_a_translation_that_parts_from_the_module_is_refused_naming_the_op(tmp_path, monkeypatch):
    # The fault PyG 2.3.1 users met, forced: self-loops weighed as the other release does.
    torch.manual_seed(0)
    m = improved()
    truth = _pyg_translate.gcn_improved_in_effect(m.conv1)
    monkeypatch.setattr(_pyg_translate, "gcn_improved_in_effect", lambda conv: not truth)
    with pytest.raises(ExportError, match=r"op 0 \(gcn, conv1\) differs from your module"):
        export_checked(m, tmp_path)
    assert not (tmp_path / "m").exists()


@needs_binary
@pytest.mark.parametrize("make,kinds", [
    (lambda: ExampleGcn(), ["gcn", "relu", "gcn"]),
    (lambda: GCN(8, 16, 2, 3), ["gcn", "relu", "gcn"]),
    (lambda: GraphSAGE(8, 16, 2, 3, norm="batch_norm", jk="cat", dropout=0.2),
     ["sage", "batch_norm", "relu", "sage", "batch_norm", "relu", "cat", "linear"]),
    (lambda: GAT(8, 16, 2, 3, heads=2), ["gat", "relu", "gat"]),
    (lambda: GIN(8, 16, 2, 3), ["gin", "linear", "relu", "linear", "relu", "gin", "linear",
                                "relu", "linear"]),
    (lambda: GraphSAGE(8, 16, 3, 3, act="elu", jk="max"), None),
])
def test_pyg_model_classes_export_as_written_and_match(tmp_path, make, kinds):
    torch.manual_seed(0)
    model = make()
    for m in model.modules():  # trained-looking norms: not the identity
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    got, text = export_checked(model, tmp_path, check=user_graph())
    if kinds is not None:
        assert got == kinds
    assert "checked = true" in text and "yours: 60 nodes" in text


class GraphAndSg(torch.nn.Module):
    """GraphConv (served as the SAGEConv op it equals) then SGConv(K=1) (as GCNConv)."""

    def __init__(self, aggr):
        super().__init__()
        self.conv1 = GraphConv(8, 16, aggr=aggr)
        self.conv2 = SGConv(16, 3)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


@needs_binary
@pytest.mark.parametrize("aggr", ["add", "mean", "max"])
def test_graph_conv_and_sg_conv_are_served_as_pyg_computes_them(tmp_path, aggr):
    torch.manual_seed(0)
    got, text = export_checked(GraphAndSg(aggr), tmp_path, check=user_graph())
    assert got == ["sage", "relu", "gcn"] and "checked = true" in text


@needs_binary
def test_a_lazy_model_is_initialised_on_the_check_graph(tmp_path):
    torch.manual_seed(0)
    model = GraphSAGE(-1, 16, 2, 3)
    with pytest.raises(ExportError, match="lazy module"):
        export_pyg(model, str(tmp_path / "lazy0"), name="m", spindle=BINARY)
    kinds, _ = export_checked(model, tmp_path, check=user_graph())
    assert kinds[0] == "sage"


class NoForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = GCN(8, 16, 2, 3)


class DlrmLike(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(10, 4, mode="sum")])
        self.bot_l = torch.nn.Linear(3, 4)

    def forward(self, dense_x, ls_o, ls_i):
        return self.bot_l(dense_x)


@pytest.mark.parametrize("make,message", [
    (lambda: GCN(8, 16, 2, 3, norm="instance_norm"),
     "norms.0: InstanceNorm normalises with the statistics of every node"),
    (lambda: GCN(8, 16, 2, 3, norm="graph_norm"),
     "norms.0: GraphNorm normalises with the statistics of every node"),
    (lambda: NoForward(), "NoForward has no forward: export the submodule"),
    (lambda: DlrmLike(), "export recommendation models with export_torch"),
])
def test_refusals_name_the_module_and_the_reason(tmp_path, make, message):
    with pytest.raises(ExportError) as e:
        export_pyg(make(), str(tmp_path / "m"), name="m", check=False)
    assert message in str(e.value)
    assert not (tmp_path / "m").exists()


def test_a_typed_model_without_its_types_is_refused_by_name(tmp_path):
    from torch_geometric.nn import HeteroConv
    hetero = one_conv(HeteroConv({("paper", "cites", "paper"): SAGEConv(8, 4)}))
    with pytest.raises(ExportError, match="needs metadata=data.metadata"):
        export_pyg(hetero, str(tmp_path / "m"), name="m", check=False)


def test_a_to_hetero_model_without_its_types_is_refused_by_name(tmp_path):
    from torch_geometric.nn import to_hetero

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = SAGEConv((-1, -1), 8)

        def forward(self, x, edge_index):
            return self.conv1(x, edge_index)

    meta = (["paper", "author"], [("author", "writes", "paper"), ("paper", "rev", "author")])
    with pytest.raises(ExportError, match="needs metadata=data.metadata"):
        export_pyg(to_hetero(Net(), meta), str(tmp_path / "m"), name="m", check=False)


def test_a_check_needs_the_binary_and_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("SPINDLE_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ExportError, match="no spindle binary found"):
        export_pyg(GCN(8, 16, 2, 3), str(tmp_path / "m"), name="m")
    assert not (tmp_path / "m").exists()


@needs_binary
def test_the_record_says_how_the_model_was_checked(tmp_path):
    torch.manual_seed(0)
    _, text = export_checked(GCN(8, 16, 2, 3), tmp_path)
    assert "[verified]" in text and "generated: 48 nodes" in text
    info = subprocess.run([BINARY, "model", "info", str(tmp_path / "m")], capture_output=True,
                          text=True)
    assert info.returncode == 0, info.stderr
    assert "verified.checked: true" in info.stdout
    unchecked = tmp_path / "u"
    export_pyg(GCN(8, 16, 2, 3), str(unchecked), name="u", check=False)
    assert "checked = false" in (unchecked / "model.toml").read_text()


@needs_binary
def test_spindle_model_verify_writes_every_op_in_node_order(tmp_path):
    torch.manual_seed(0)
    model = GCN(8, 16, 2, 3)
    export_pyg(model, str(tmp_path / "m"), name="m", spindle=BINARY)
    x, ei = user_graph()
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "ei.npy", ei.numpy())
    r = subprocess.run([BINARY, "model", "verify", str(tmp_path / "m"), "--x", str(tmp_path / "x.npy"),
                        "--edge-index", str(tmp_path / "ei.npy"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "kept 2 self-loops" in r.stderr or "self-loops" in r.stderr
    out = np.load(tmp_path / "o" / "op-2.npy")
    with torch.no_grad():
        want = model.eval()(x, ei).numpy()
    assert out.shape == want.shape
    assert np.abs(out - want).max() <= 1e-4 * np.abs(want).max()


@needs_binary
def test_gcn_without_added_self_loops_is_served_only_on_graphs_without_them(tmp_path):
    # PyG counts an existing i->i edge in the degree there; Spindle refuses such a
    # graph rather than answer differently.
    torch.manual_seed(0)
    x, ei = user_graph()
    with pytest.raises(ExportError, match="add_self_loops = false.* without self-loops"):
        export_checked(no_self_loops(), tmp_path, check=(x, ei))
    no_loops = ei[:, ei[0] != ei[1]]
    kinds, text = export_checked(no_self_loops(), tmp_path, check=(x, no_loops))
    assert kinds == ["gcn"] and "checked = true" in text


@pytest.mark.parametrize("kwargs,message", [
    ({"fanouts": "25"}, "give a list"),
    ({"fanouts": [25.5, 10]}, "not a whole number"),
    ({"check": (torch.randn(60, 5), user_graph()[1])}, "x has 5 columns; the model reads 8"),
    ({"check": (torch.randn(60, 8), torch.tensor([[0, -1], [1, 2]]))}, "holds node -1"),
])
def test_bad_arguments_are_refused_by_name(tmp_path, kwargs, message):
    with pytest.raises(ExportError, match=message):
        export_pyg(GCN(8, 16, 2, 3), str(tmp_path / "m"), name="m", spindle=BINARY, **kwargs)
    assert not (tmp_path / "m").exists()


def test_an_out_dir_that_is_a_file_is_refused_first(tmp_path):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(ExportError, match="exists and is not a folder"):
        export_pyg(GCN(8, 16, 2, 3), str(tmp_path / "f"), name="m", check=False)
    assert (tmp_path / "f").read_text() == "mine"


@needs_binary
def test_each_module_keeps_its_own_mode(tmp_path):
    model = GraphSAGE(8, 16, 2, 3, norm="batch_norm")
    model.train()
    model.norms[0].eval()  # a frozen BatchNorm inside a model in training
    export_checked(model, tmp_path)
    assert model.training and not model.norms[0].training and model.convs[1].training
