"""Norms that normalise over the whole graph (PyG's InstanceNorm without running
statistics, GraphNorm): exported with the statistics frozen from the user's graph
and checked against the live module there (fanouts -1, PyG's full-graph answer);
refused by name without that graph. InstanceNorm with running statistics needs no
graph. Needs torch, torch_geometric and the spindle binary ($SPINDLE_BINARY)."""
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.nn import GCNConv  # noqa: E402
from torch_geometric.nn.models import GCN, GraphSAGE  # noqa: E402
from torch_geometric.nn.norm import GraphNorm, InstanceNorm  # noqa: E402

from spindle_client.export import ExportError, export_pyg  # noqa: E402

BINARY = os.environ.get("SPINDLE_BINARY")
needs_binary = pytest.mark.skipif(not BINARY, reason="SPINDLE_BINARY is not set (ctest sets it)")


def user_graph(n=80, f=8, seed=5):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, 4 * n), generator=g)
    return torch.randn(n, f, generator=g) * 3 + 1, ei


def randomised(model):
    """Affine parameters and GraphNorm's mean_scale away from their defaults (ones
    and zeros), so a dropped or misread one shows in the check."""
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if p.dim() == 1:
            torch.nn.init.uniform_(p, 0.5, 1.5) if "norm" in name else \
                torch.nn.init.uniform_(p, -0.5, 0.5)
    return model.eval()


def export(model, tmp_path, check):
    out = tmp_path / "m"
    kinds = export_pyg(model, str(out), name="m", spindle=BINARY, check=check)
    return kinds, (out / "model.toml").read_text()


@needs_binary
@pytest.mark.parametrize("norm", ["instance_norm", "graph_norm"])
def test_whole_graph_norms_are_served_with_the_users_statistics(tmp_path, norm):
    model = randomised(GCN(8, 16, 3, 4, norm=norm))
    kinds, text = export(model, tmp_path, user_graph())
    assert kinds.count("batch_norm") == 2
    assert "checked = true" in text
    assert "2 InstanceNorm/GraphNorm frozen from your graph" in text
    assert "yours: 80 nodes" in text


@needs_binary
def test_a_sage_model_with_graph_norm_and_jumping_knowledge(tmp_path):
    model = randomised(GraphSAGE(8, 12, 3, 5, norm="graph_norm", jk="cat"))
    kinds, text = export(model, tmp_path, user_graph(seed=9))
    assert "checked = true" in text and kinds.count("batch_norm") == 3  # jk: every layer


@needs_binary
def test_instance_norm_with_running_statistics_needs_no_graph(tmp_path):
    model = GCN(8, 16, 3, 4, norm="instance_norm",
                norm_kwargs={"track_running_stats": True, "affine": True})
    for _, m in model.named_modules():
        if isinstance(m, InstanceNorm):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    kinds, text = export(randomised(model), tmp_path, True)
    assert kinds.count("batch_norm") == 2
    assert "checked = true" in text and "frozen" not in text


def test_without_the_users_graph_the_norm_is_refused_by_name(tmp_path):
    with pytest.raises(ExportError, match=r"norms.0: GraphNorm normalises with the statistics "
                                          r"of every node.*give check=\(x, edge_index\)"):
        export_pyg(GCN(8, 16, 3, 4, norm="graph_norm"), str(tmp_path / "m"), name="m",
                   check=True)
    assert not (tmp_path / "m").exists()


class NormTwice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(8, 8), GCNConv(8, 3)
        self.norm = GraphNorm(8)

    def forward(self, x, edge_index):
        x = self.norm(self.conv1(x, edge_index))
        return self.conv2(self.norm(x), edge_index)


def test_a_norm_called_twice_is_refused(tmp_path):
    with pytest.raises(ExportError, match="norm: GraphNorm is called twice in one forward"):
        export_pyg(NormTwice().eval(), str(tmp_path / "m"), name="m", check=user_graph())


def test_a_typed_model_with_a_whole_graph_norm_is_refused_saying_why(tmp_path):
    from torch_geometric.data import HeteroData
    from torch_geometric.nn import HeteroConv, SAGEConv
    data = HeteroData()
    g = torch.Generator().manual_seed(2)
    data["a"].x, data["b"].x = torch.randn(20, 8, generator=g), torch.randn(10, 8, generator=g)
    data["a", "to", "b"].edge_index = torch.stack([torch.randint(0, 20, (40,), generator=g),
                                                   torch.randint(0, 10, (40,), generator=g)])
    data["b", "back", "a"].edge_index = data["a", "to", "b"].edge_index.flip(0)

    class Typed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = HeteroConv({e: SAGEConv((8, 8), 8) for e in data.edge_types})
            self.norm = GraphNorm(8)

        def forward(self, x_dict, edge_index_dict):
            return self.norm(self.conv(x_dict, edge_index_dict)["b"])

    with pytest.raises(ExportError, match="norm: GraphNorm normalises .* typed models are served "
                                          "without such norms"):
        export_pyg(Typed().eval(), str(tmp_path / "m"), name="m", check=data)


class PairNormDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.lin = InstanceNorm(8), torch.nn.Linear(8, 1)

    def forward(self, z_src, z_dst):
        return self.lin(self.norm(z_src * z_dst)).view(-1)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GCNConv(8, 8)

    def encode(self, x, edge_index):
        return self.conv(x, edge_index)


def test_a_norm_over_a_decoders_pairs_is_refused_saying_why(tmp_path):
    with pytest.raises(ExportError, match="norm: InstanceNorm in a decoder normalises over the "
                                          "call's pairs"):
        export_pyg(Encoder().eval(), str(tmp_path / "m"), name="m", task="link",
                   decoder=PairNormDecoder().eval(), check=user_graph())


class EdgeAttrNamedOtherwise(torch.nn.Module):
    """A GINEConv model whose edge attributes arrive as `ea`, with a GraphNorm: the
    signature is refused by name before the statistics run calls the forward."""

    def __init__(self):
        super().__init__()
        from torch_geometric.nn import GINEConv
        self.conv = GINEConv(torch.nn.Linear(8, 8), edge_dim=3)
        self.norm = GraphNorm(8)

    def forward(self, x, edge_index, ea):
        return self.norm(self.conv(x, edge_index, ea))


@needs_binary
def test_edge_attributes_under_another_name_are_refused_naming_the_argument(tmp_path):
    x, ei = user_graph()
    ea = torch.randn(ei.shape[1], 3)
    with pytest.raises(ExportError, match="third argument is 'ea' and a layer reads edge "
                                          "attributes: Spindle passes them as edge_attr"):
        export_pyg(EdgeAttrNamedOtherwise().eval(), str(tmp_path / "m"), name="m",
                   check=(x, ei, ea), spindle=BINARY)


class EdgeAttrKeywordOnly(EdgeAttrNamedOtherwise):
    def forward(self, x, edge_index, *, ea):
        return self.norm(self.conv(x, edge_index, ea))


@needs_binary
def test_keyword_only_edge_attributes_under_another_name_are_refused_naming_it(tmp_path):
    x, ei = user_graph()
    with pytest.raises(ExportError, match="needs 'ea' and a layer reads edge attributes: "
                                          "Spindle passes them as edge_attr"):
        export_pyg(EdgeAttrKeywordOnly().eval(), str(tmp_path / "m"), name="m",
                   check=(x, ei, torch.randn(ei.shape[1], 3)), spindle=BINARY)
