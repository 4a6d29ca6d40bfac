"""The live `precision` tunable of a served GNN: a GraphSAGE exported from a live
PyG module, served in fp32 (PyG's answers), switched to bf16 or int8 while it serves
(answers change, within the stated bounds, predictions kept), and back (PyG's
answers again, bit for bit as before); a bad value is refused by name and the
server keeps serving. Needs torch, torch_geometric and the spindle binary."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import start_server, prepare_dataset  # noqa: E402
from spindle_client.export import export_pyg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
N, F, H, C = 300, 64, 64, 5


class Sage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = pyg_nn.SAGEConv(F, H), pyg_nn.SAGEConv(H, C)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("precision")
    rng = np.random.default_rng(11)
    edges = rng.integers(0, N, (2, 6 * N)).astype(np.int64)
    x = rng.standard_normal((N, F)).astype(np.float32)
    prepare_dataset(SPINDLE, tmp, edges, x)
    torch.manual_seed(0)
    model = Sage().eval()
    export_pyg(model, str(tmp / "sage"), name="sage", fanouts=[-1, -1], check=False)
    with torch.no_grad():
        want = model(torch.from_numpy(x), torch.from_numpy(edges)).numpy()
    proc, endpoint = start_server([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                                   str(tmp / "sage"), "--listen", "127.0.0.1:0",
                                   "--admin-token-file", str(tmp / "token"), "--device", "host"])
    try:
        yield sc.Client(endpoint, model="sage", token=(tmp / "token").read_text().strip()), want
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def relative(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("mode,bound,skip", [("bf16", 5e-2, "has no AVX-512 BF16"),
                                              ("int8", 1e-1, "has no AVX-512 VNNI")])
def test_precision_switches_while_serving_and_changes_the_arithmetic(served, mode, bound, skip):
    c, want = served
    seeds = list(range(0, N, 3))
    fp32 = np.asarray(c.infer_gnn(seeds))
    assert relative(fp32, want[seeds]) < 1e-4
    assert c.tunables()["precision"] == "fp32"
    try:
        c.set_tunable("precision", mode)
    except sc.SpindleError as e:
        if skip in str(e):
            pytest.skip(str(e))
        raise
    assert c.tunables()["precision"] == mode
    reduced = np.asarray(c.infer_gnn(seeds))
    d = relative(reduced, fp32)
    assert 0 < d < bound, d  # changed, and within the mode's rounding
    agree = (reduced.argmax(1) == fp32.argmax(1)).mean()
    assert agree >= 0.95, agree
    c.set_tunable("precision", "fp32")
    assert np.array_equal(np.asarray(c.infer_gnn(seeds)), fp32)


def test_a_bad_precision_is_refused_by_name_and_serving_goes_on(served):
    c, want = served
    with pytest.raises(sc.SpindleError, match="precision = 'int4': expected fp32, bf16 or int8"):
        c.set_tunable("precision", "int4")
    assert c.tunables()["precision"] == "fp32"
    assert relative(np.asarray(c.infer_gnn([1, 2])), want[[1, 2]]) < 1e-4


@pytest.mark.parametrize("mode,says", [
    ("int8", "weights as int8 codes with a scale per output, inputs quantised per row, sums in int32"),
    ("bf16", "inputs and weights in bfloat16, sums in float32")])
def test_model_info_says_what_each_precision_computes_with(tmp_path, mode, says):
    torch.manual_seed(0)
    export_pyg(Sage().eval(), str(tmp_path / "sage"), name="sage", fanouts=[-1, -1], check=False)
    toml = tmp_path / "sage" / "model.toml"
    text = toml.read_text()
    assert "precision" not in text
    toml.write_text(text.replace("[model]\n", f'[model]\nprecision = "{mode}"\n', 1))
    r = subprocess.run([SPINDLE, "model", "info", str(tmp_path / "sage")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"precision: {mode} (the layers' projections' {says})" in r.stdout, r.stdout
