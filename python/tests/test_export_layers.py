"""The attention and multi-hop layers (GATv2Conv, TransformerConv,
ResGatedGraphConv, SGConv with K hops, TAGConv) and PyG's GAT(v2=True): each
exported with its options and checked by the exporter against the live module
on the generated graph and on a user's graph (fanouts -1: PyG's full-graph
answer); options Spindle does not compute are refused by name. Needs torch,
torch_geometric and the spindle binary ($SPINDLE_BINARY, set by ctest)."""
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.nn import (GATv2Conv, ResGatedGraphConv, SGConv, TAGConv,  # noqa: E402
                                TransformerConv)
from torch_geometric.nn.models import GAT  # noqa: E402

from spindle_client.export import ExportError, export_pyg  # noqa: E402

BINARY = os.environ.get("SPINDLE_BINARY")
needs_binary = pytest.mark.skipif(not BINARY, reason="SPINDLE_BINARY is not set (ctest sets it)")


def user_graph(n=60, f=8, seed=3, self_loops=True):
    """A directed graph as users save it: repeated edges, and self-loops unless told."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, 4 * n), generator=g)
    ei = torch.cat([ei, ei[:, :5]], dim=1)
    if self_loops:
        ei = torch.cat([ei, torch.tensor([[1, 1, 2], [1, 1, 3]])], dim=1)
    else:
        ei = ei[:, ei[0] != ei[1]]
    return torch.randn(n, f, generator=g), ei


class TwoLayers(torch.nn.Module):
    """conv1 -> ELU -> conv2, the shape of PyG's examples."""

    def __init__(self, conv1, conv2):
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2

    def forward(self, x, edge_index):
        return self.conv2(torch.nn.functional.elu(self.conv1(x, edge_index)), edge_index)


def export_checked(model, tmp_path, graph):
    torch.manual_seed(0)
    for p in model.parameters():  # biases away from PyG's zeros, so a dropped one shows
        if p.dim() == 1:
            torch.nn.init.uniform_(p, -0.5, 0.5)
    out = tmp_path / "m"
    kinds = export_pyg(model.eval(), str(out), name="m", spindle=BINARY, check=graph)
    text = (out / "model.toml").read_text()
    assert "checked = true" in text
    return kinds, text


CASES = {
    "gatv2": lambda: TwoLayers(GATv2Conv(8, 4, heads=2), GATv2Conv(8, 3)),
    "gatv2_mean_heads_no_loops": lambda: TwoLayers(
        GATv2Conv(8, 4, heads=3, concat=False, add_self_loops=False, negative_slope=0.1),
        GATv2Conv(4, 3, bias=False)),
    "gatv2_shared": lambda: TwoLayers(GATv2Conv(8, 4, heads=2, share_weights=True),
                                      GATv2Conv(8, 3)),
    "transformer": lambda: TwoLayers(TransformerConv(8, 4, heads=2), TransformerConv(8, 3)),
    "transformer_beta_mean": lambda: TwoLayers(
        TransformerConv(8, 4, heads=2, beta=True), TransformerConv(8, 3, heads=2, concat=False,
                                                                   beta=True, bias=False)),
    "transformer_no_root": lambda: TwoLayers(TransformerConv(8, 4, root_weight=False),
                                             TransformerConv(4, 3)),
    "res_gated": lambda: TwoLayers(ResGatedGraphConv(8, 6), ResGatedGraphConv(6, 3)),
    "res_gated_bare": lambda: TwoLayers(ResGatedGraphConv(8, 6, root_weight=False, bias=False),
                                        ResGatedGraphConv(6, 3)),
    "sg_k3": lambda: TwoLayers(SGConv(8, 6, K=3), SGConv(6, 3, K=2, add_self_loops=False)),
    "gat_v2_model": lambda: GAT(8, 8, num_layers=2, out_channels=3, v2=True, heads=2),
}
KINDS = {
    "gatv2": ["gatv2", "elu", "gatv2"],
    "transformer_no_root": ["transformer", "elu", "transformer"],
    "res_gated": ["res_gated", "elu", "res_gated"],
    "sg_k3": ["gcn_propagate", "gcn_propagate", "gcn", "elu", "gcn_propagate", "gcn"],
}


@needs_binary
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_layer_is_served_as_pyg_computes_it(tmp_path, case):
    # SGConv(add_self_loops=False) normalises as PyG does only without self-loops.
    graph = user_graph(self_loops=not case.startswith("sg"))
    kinds, _ = export_checked(CASES[case](), tmp_path, graph)
    if case in KINDS:
        assert kinds == KINDS[case]


@needs_binary
@pytest.mark.parametrize("k,normalize,bias", [(1, True, True), (2, True, False), (3, False, True)])
def test_tag_conv_is_k_propagations_and_a_linear_per_hop(tmp_path, k, normalize, bias):
    model = TwoLayers(TAGConv(8, 6, K=k, normalize=normalize, bias=bias), TAGConv(6, 3, K=1))
    kinds, _ = export_checked(model, tmp_path, user_graph(self_loops=False))
    assert kinds[:2 * k + 2] == ["gcn_propagate"] * k + ["linear"] * (k + 1) + ["add"]
    assert kinds.count("gcn_propagate") == k + 1  # one hop per propagation: k + 1 fanouts


@needs_binary
def test_tag_conv_on_a_graph_with_self_loops_is_refused_naming_the_op(tmp_path):
    model = TwoLayers(TAGConv(8, 6, K=2), TAGConv(6, 3, K=1))
    with pytest.raises(ExportError, match=r"gcn_propagate, add_self_loops = false.*without "
                                          r"self-loops"):
        export_checked(model, tmp_path, user_graph(self_loops=True))


@pytest.mark.parametrize("conv,pattern", [
    (ResGatedGraphConv(8, 3, act=torch.nn.Tanh()), r"act=Tanh\(\)\) is not served"),
    (TransformerConv(8, 3, edge_dim=4), r"TransformerConv\(edge_dim=...\) must be called as "
                                        r"conv\(x, edge_index, edge_attr\)"),
    (GATv2Conv(8, 3, edge_dim=4), r"GATv2Conv\(edge_dim=...\) must be called as"),
    (TAGConv(8, 3, K=0), r"TAGConv\(K=0\) passes no message"),
    (GATv2Conv((8, 6), 3), r"separate source/target widths"),
])
def test_an_option_spindle_does_not_compute_is_refused_by_name(tmp_path, conv, pattern):
    model = TwoLayers(conv, GATv2Conv(3, 3))
    with pytest.raises(ExportError, match=pattern):
        export_pyg(model, str(tmp_path / "m"), name="m", check=False)
