"""spindle_client.export.export_pyg on models as PyG users write them: what it
cannot express is refused by name, writing nothing; what it writes is checked
against the live module by Spindle's own forward (spindle model verify) before it
is written. Needs torch and torch_geometric (skipped without) and the spindle
binary ($SPINDLE_BINARY, set by ctest)."""
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import torch.nn.functional as F  # noqa: E402
from torch_geometric.nn import GATConv, GCNConv, GENConv, SAGEConv  # noqa: E402

from pyg_models import one_conv  # noqa: E402
from spindle_client.export import ExportError, export_pyg  # noqa: E402


class Scaled(torch.nn.Module):  # an arithmetic Spindle does not compute
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(8, 4)

    def forward(self, x, edge_index):
        return self.conv1(x, edge_index) * 2


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = SAGEConv(8, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.conv2 = SAGEConv(16, 3)

    def forward(self, x, edge_index):
        x = F.elu(self.bn(self.conv1(x, edge_index)))
        x = F.dropout(x, p=0.5, training=self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=-1)


@pytest.mark.parametrize("model,message", [
    (lambda: one_conv(GENConv(8, 4)), "conv1: GENConv is not supported"),
    (lambda: one_conv(SAGEConv(8, 4, aggr="lstm")), "conv1: SAGEConv(aggr='lstm') is not supported"),
    (Scaled, "not a scalar factor"),
])
def test_an_unsupported_model_is_refused_by_name_and_nothing_is_written(tmp_path, model, message):
    out = tmp_path / "m"
    with pytest.raises(ExportError) as e:
        export_pyg(model(), str(out), name="m", check=False)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)
    assert not out.exists()


def test_a_user_model_is_written_and_spindle_loads_it(tmp_path):
    out = tmp_path / "plain"
    kinds = export_pyg(Plain(), str(out), name="plain", fanouts=[10, -1], check=False)
    assert kinds == ["sage", "batch_norm", "elu", "sage", "log_softmax"]
    text = (out / "model.toml").read_text()
    assert 'arch = "stack"' in text and "fanouts = [10, -1]" in text
    binary = os.environ.get("SPINDLE_BINARY")
    if binary:  # the C++ loader accepts every tensor written (none unused, none missing)
        info = subprocess.run([binary, "model", "info", str(out)], capture_output=True, text=True)
        assert info.returncode == 0, info.stderr
        assert "bn.running_var" in info.stdout and "op 1 batch_norm" in info.stdout


def test_fanouts_must_match_the_layers(tmp_path):
    with pytest.raises(ExportError, match="2 message-passing layers"):
        export_pyg(Plain(), str(tmp_path / "p"), name="p", fanouts=[10], check=False)


@pytest.mark.parametrize("make,message", [
    (lambda: GATConv(8, 4, aggr="mean"), "conv1: GATConv(aggr='mean') computing with"),
    (lambda: GCNConv(8, 4, aggr="max"), "conv1: GCNConv(aggr='max') computing with"),
    (lambda: SAGEConv(8, 4, flow="target_to_source"),
     "conv1: SAGEConv(flow='target_to_source') is not served"),
    (lambda: GCNConv(8, 4, node_dim=1), "conv1: GCNConv(node_dim=1) is not served"),
])
def test_an_option_spindle_does_not_compute_is_refused_by_name(tmp_path, make, message):
    with pytest.raises(ExportError) as e:
        export_pyg(one_conv(make()), str(tmp_path / "m"), name="m", check=False)
    assert message in str(e.value)


def test_options_of_newer_pyg_releases_are_refused_unless_default(tmp_path):
    import inspect
    if "residual" not in inspect.signature(GATConv.__init__).parameters:
        pytest.skip("this torch_geometric's GATConv has no residual option")
    with pytest.raises(ExportError, match=r"conv1: GATConv\(residual=True\) is not served"):
        export_pyg(one_conv(GATConv(8, 4, residual=True)), str(tmp_path / "m"), name="m",
                   check=False)
    export_pyg(one_conv(GATConv(8, 4, residual=False)), str(tmp_path / "ok"), name="m", check=False)


def test_options_without_effect_in_inference_are_taken(tmp_path):
    export_pyg(one_conv(GATConv(8, 4, dropout=0.3)), str(tmp_path / "a"), name="m", check=False)
    export_pyg(one_conv(GCNConv(8, 4, cached=True)), str(tmp_path / "b"), name="m", check=False)


def _replaced_lin():
    c = GCNConv(8, 4)
    c.lin = torch.nn.Linear(8, 4)  # with a bias GCNConv's own lin does not have
    return c


def _aggr_set_later():
    c = SAGEConv(8, 4)
    c.aggr = "max"  # PyG still computes with the mean module it was built with
    return c


def _aggr_module_swapped():
    from torch_geometric.nn.aggr import MeanAggregation
    c = GCNConv(8, 4)
    c.aggr_module = MeanAggregation()
    return c


def _hooked():
    c = SAGEConv(8, 4)
    c.register_forward_hook(lambda m, i, o: o * 2)
    return c


def _message_replaced():
    c = SAGEConv(8, 4)
    c.message = lambda x_j: 2 * x_j
    return c


class _Twice(torch.nn.Linear):
    def forward(self, x):
        return 2 * super().forward(x)


class _PlainSage(SAGEConv):
    pass


class _PlainerSage(_PlainSage):  # PyG 2.8 compiles propagate onto each class: not user code
    pass


class _WithTwice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = SAGEConv(8, 4)
        self.head = _Twice(4, 2)

    def forward(self, x, edge_index):
        return self.head(self.conv1(x, edge_index))


@pytest.mark.parametrize("make,message", [
    (lambda: one_conv(_replaced_lin()), "conv1.lin.bias: a tensor Spindle does not compute with"),
    (lambda: one_conv(_aggr_set_later()), "SAGEConv(aggr='max') is not supported"),
    (lambda: one_conv(_aggr_module_swapped()), "computing with MeanAggregation() is not served"),
    (lambda: one_conv(_hooked()), "conv1: has a forward hook (_forward_hooks)"),
    (lambda: one_conv(_message_replaced()), "conv1: its message() is replaced on the instance"),
    (_WithTwice, "head: _Twice is a subclass of Linear with code of its own (_Twice.forward)"),
    (lambda: one_conv(_PlainSage(8, 4)),
     "conv1: _PlainSage subclasses SAGEConv and adds no code; Spindle recognises"),
    (lambda: one_conv((_PlainSage(8, 4), _PlainerSage(8, 4))[1]),
     "conv1: _PlainerSage subclasses SAGEConv and adds no code; Spindle recognises"),
])
def test_what_tracing_cannot_see_is_refused_by_name(tmp_path, make, message):
    with pytest.raises(ExportError) as e:
        export_pyg(make(), str(tmp_path / "m"), name="m", check=False)
    assert message in str(e.value)
