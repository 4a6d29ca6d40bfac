"""Link prediction served as PyG computes it: a model written as PyG's
link-prediction example (encode(x, edge_index) with GCNConv, decode as the dot
product) is exported with task="link", served with every neighbour sampled,
and its pairs' scores over the Cap'n Proto and KServe HTTP doors equal
model.decode(model.encode(x, edge_index), pairs); the same model serves its
embeddings to seeds, and any named value (conv1) on request; pairs given to a node model, odd pairs and a decoder that
is not the dot product are refused by name."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import start_server_with_http, prepare_dataset  # noqa: E402
from spindle_client.export import ExportError, export_pyg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
N, F = 150, 10


class LinkNet(torch.nn.Module):
    """PyG's examples/link_pred.py model."""

    def __init__(self, conv=pyg_nn.GCNConv):
        super().__init__()
        self.conv1 = conv(F, 32)
        self.conv2 = conv(32, 16)

    def encode(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)

    def decode(self, z, edge_label_index):
        return (z[edge_label_index[0]] * z[edge_label_index[1]]).sum(dim=-1)


class MlpDecoder(torch.nn.Module):
    """An MLP on the concatenation of a pair's embeddings."""

    def __init__(self, width=16):
        super().__init__()
        self.lin1 = torch.nn.Linear(2 * width, 8)
        self.lin2 = torch.nn.Linear(8, 1)

    def forward(self, z_src, z_dst):
        return self.lin2(self.lin1(torch.cat([z_src, z_dst], dim=-1)).relu()).view(-1)


class Node(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = pyg_nn.SAGEConv(F, 4)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("link")
    rng = np.random.default_rng(11)
    pairs = {(int(u), int(v)) for u, v in rng.integers(0, N, (700, 2)) if u != v}
    edges = np.array(sorted(pairs), dtype=np.int64).T
    x = rng.standard_normal((N, F)).astype(np.float32)
    prepare_dataset(SPINDLE, tmp, edges, x)
    torch.manual_seed(0)
    models = {"link": LinkNet().eval(), "node": Node().eval(), "mlp": LinkNet(pyg_nn.SAGEConv),
              "decoder": MlpDecoder().eval()}
    (tmp / "repo" / "mlp").mkdir(parents=True)
    export_pyg(models["mlp"], str(tmp / "repo" / "mlp" / "1"), name="mlp", fanouts=[-1, -1],
               task="link", decoder=models["decoder"], check=(x, edges))
    models["hadamard"] = Hadamard().eval()
    (tmp / "repo" / "hadamard").mkdir()
    export_pyg(models["link"], str(tmp / "repo" / "hadamard" / "1"), name="hadamard",
               fanouts=[-1, -1], task="link", decoder=models["hadamard"])
    (tmp / "repo" / "link").mkdir()
    (tmp / "repo" / "node").mkdir()
    export_pyg(models["link"], str(tmp / "repo" / "link" / "1"), name="link", fanouts=[-1, -1],
               task="link", check=(x, edges))
    export_pyg(models["node"], str(tmp / "repo" / "node" / "1"), name="node", fanouts=[-1],
               check=False)
    return tmp, edges, x, models


def pyg_scores(model, x, edges, pairs):
    with torch.no_grad():
        z = model.encode(torch.from_numpy(x), torch.from_numpy(edges))
        return model.decode(z, torch.from_numpy(pairs.T.copy())).numpy(), z.numpy()


def http_json(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def serve(tmp):
    return start_server_with_http(
        [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository", str(tmp / "repo"),
         "--listen", "127.0.0.1:0",
         "--http", "127.0.0.1:0", "--device", "host"])


def test_named_outputs_are_the_modules_values_at_the_seeds(setup):
    tmp, edges, x, models = setup
    m = models["link"]
    with torch.no_grad():
        xt, ei = torch.from_numpy(x), torch.from_numpy(edges)
        conv1 = m.conv1(xt, ei)
        z = m.conv2(conv1.relu(), ei)
    seeds = [4, 0, 4, 149]
    proc, endpoint, base = serve(tmp)
    try:
        c = sc.Client(endpoint, model="link")
        got = c.infer_gnn(seeds, outputs=["conv1", "output"])
        assert sorted(got) == ["conv1", "output"] and got["conv1"].shape == (4, 32)
        np.testing.assert_allclose(got["conv1"], conv1.numpy()[seeds], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got["output"], z.numpy()[seeds], rtol=1e-4, atol=1e-5)
        body = {"inputs": [{"name": "seeds", "datatype": "INT64", "shape": [4], "data": seeds}],
                "outputs": [{"name": "relu"}, {"name": "conv2"}]}
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 200, r
        assert [o["name"] for o in r["outputs"]] == ["relu", "conv2"]
        assert r["outputs"][0]["shape"] == [4, 32]
        np.testing.assert_allclose(np.array(r["outputs"][0]["data"]).reshape(4, 32),
                                   conv1.relu().numpy()[seeds], rtol=1e-4, atol=1e-5)
        with pytest.raises(sc.SpindleError, match=r"unknown output 'conv9' \(the model's values: "
                                                  r"conv1, relu, conv2, output \(the model's output\)\)"):
            c.infer_gnn(seeds, outputs=["conv9"])
        body["outputs"] = [{"name": "conv9"}]
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 400 and "unknown output 'conv9'" in r["error"]
        for names, message in (([{"name": "conv1"}] * 2, "'conv1' is asked for twice"),
                               ([{"name": "output"}] * 2, "'output' is asked for twice"),
                               ([{"name": f"n{i}"} for i in range(17)], "at most 16")):
            body["outputs"] = names
            status, r = http_json(base + "/v2/models/link/infer", body)
            assert status == 400 and message in r["error"], (message, r)
        with pytest.raises(sc.SpindleError, match="asked for twice"):
            c.infer_gnn(seeds, outputs=["relu", "relu"])
        with pytest.raises(ValueError, match="node ids are integers"):
            c.infer_links([[1.7, 2.2]])
        np.testing.assert_allclose(c.infer_gnn(seeds), z.numpy()[seeds], rtol=1e-4, atol=1e-5)
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class OutputLayer(torch.nn.Module):
    """A layer called `output`, as many PyG models name their head."""

    def __init__(self):
        super().__init__()
        self.conv1 = pyg_nn.GCNConv(F, 8)
        self.output = torch.nn.Linear(8, 4)

    def forward(self, x, edge_index):
        return self.output(self.conv1(x, edge_index).relu()).log_softmax(-1)


def test_a_layer_called_output_does_not_take_the_outputs_name(tmp_path):
    export_pyg(OutputLayer().eval(), str(tmp_path / "m"), name="m")
    info = subprocess.run([SPINDLE, "model", "info", str(tmp_path / "m")], capture_output=True,
                          text=True, check=True).stdout
    assert "output_ [4], log_softmax [4]" in info, info


def test_the_export_records_the_task_and_checks_the_decoder(setup):
    tmp = setup[0]
    text = (tmp / "repo" / "link" / "1" / "model.toml").read_text()
    assert 'task = "link"' in text and 'decoder = "dot"' in text
    assert "equal to LinkNet.decode(z, edge_label_index) on 64 pairs" in text
    info = subprocess.run([SPINDLE, "model", "info", str(tmp / "repo" / "link" / "1")], capture_output=True,
                          text=True, check=True).stdout
    assert "task: link" in info
    assert "values (named outputs): conv1 [32], relu [32], conv2 [16]" in info


def test_served_scores_and_embeddings_equal_pyg(setup):
    tmp, edges, x, models = setup
    rng = np.random.default_rng(5)
    pairs = rng.integers(0, N, (40, 2)).astype(np.int64)
    pairs[0] = [3, 3]  # a node with itself
    pairs[1] = [7, 3]  # an end shared with another pair
    want, z = pyg_scores(models["link"], x, edges, pairs)
    proc, endpoint, base = serve(tmp)
    try:
        c = sc.Client(endpoint, model="link")
        got = c.infer_links(pairs)
        assert got.shape == (40,)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        emb = c.infer_gnn([0, 5, 9])
        np.testing.assert_allclose(emb, z[[0, 5, 9]], rtol=1e-4, atol=1e-5)
        body = {"inputs": [{"name": "pairs", "datatype": "INT64", "shape": [40, 2],
                            "data": pairs.reshape(-1).tolist()}]}
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 200, r
        out = r["outputs"][0]
        assert out["name"] == "scores" and out["shape"] == [40]
        np.testing.assert_allclose(np.array(out["data"], dtype=np.float32), want, rtol=1e-4,
                                   atol=1e-4 * np.abs(want).max())
        status, meta = http_json(base + "/v2/models/link")
        assert status == 200 and any(i["name"] == "pairs" for i in meta["inputs"]), meta
        # Refusals, each by name; the server goes on serving.
        with pytest.raises(sc.SpindleError, match="classifies nodes"):
            c.infer_links(pairs, model="node")
        status, r = http_json(base + "/v2/models/node/infer", body)
        assert status == 400 and "classifies nodes" in r["error"]
        body["inputs"][0]["shape"] = [20, 4]
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 400 and "expected [k, 2]" in r["error"]
        body["inputs"][0]["shape"] = [80]
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 400 and "expected [k, 2]" in r["error"]
        with pytest.raises(sc.SpindleError, match=r"pairs\[0\]\[1\]=153 out of range"):
            c.infer_links([[0, N + 3]])
        # The data's own ids (here the rows' numbers, as prepare names npy input).
        by_id = c.infer_links(ids=[[str(u), str(v)] for u, v in pairs])
        np.testing.assert_allclose(by_id, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        body = {"inputs": [{"name": "pair_ids", "datatype": "BYTES", "shape": [2, 2],
                            "data": [str(i) for i in pairs[:2].reshape(-1)]}]}
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 200, r
        np.testing.assert_allclose(r["outputs"][0]["data"], want[:2], rtol=1e-4, atol=1e-4)
        body["inputs"][0]["data"][1] = "no-such-node"
        status, r = http_json(base + "/v2/models/link/infer", body)
        assert status == 400 and "no-such-node" in r["error"], r
        np.testing.assert_allclose(c.infer_links(pairs), want, rtol=1e-4,
                                   atol=1e-4 * np.abs(want).max())
        # An MLP decoder on the pair's concatenation: the module's scores.
        with torch.no_grad():
            zm = models["mlp"].encode(torch.from_numpy(x), torch.from_numpy(edges))
            mlp = models["decoder"](zm[pairs[:, 0]], zm[pairs[:, 1]]).numpy()
        got = c.infer_links(pairs, model="mlp")
        np.testing.assert_allclose(got, mlp, rtol=1e-4, atol=1e-4 * np.abs(mlp).max())
        assert abs(got[2] - c.infer_links(pairs[2:3, ::-1], model="mlp")[0]) > 0  # ordered
        # A Hadamard decoder (OGB's link predictors): lin(z_u * z_v).
        with torch.no_grad():
            zl = models["link"].encode(torch.from_numpy(x), torch.from_numpy(edges))
            had = models["hadamard"](zl[pairs[:, 0]], zl[pairs[:, 1]]).reshape(-1).numpy()
        got = c.infer_links(pairs, model="hadamard")
        np.testing.assert_allclose(got, had, rtol=1e-4, atol=1e-4 * np.abs(had).max())
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class SigmoidDecode(LinkNet):
    def decode(self, z, edge_label_index):
        return super().decode(z, edge_label_index).sigmoid()


class ConvDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = pyg_nn.SAGEConv(16, 1)

    def forward(self, z_src, z_dst):
        return self.conv(z_src, z_dst)


class Hadamard(torch.nn.Module):
    """OGB's link predictors: a layer on the elementwise product."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 1)

    def forward(self, z_src, z_dst):
        return self.lin(z_src * z_dst)


class ScaledDecoder(torch.nn.Module):
    def forward(self, z_src, z_dst):
        return (z_src * 0.5).sum(-1)


class TwoColumns(MlpDecoder):
    def __init__(self):
        super().__init__()
        self.lin2 = torch.nn.Linear(8, 2)

    def forward(self, z_src, z_dst):
        return self.lin2(self.lin1(torch.cat([z_src, z_dst], dim=-1)).relu())


class NoEncode(torch.nn.Module):
    def forward(self, x, edge_index):
        return x


@pytest.mark.parametrize("model, kwargs, message", [
    (SigmoidDecode, {"task": "link"}, "differs from what Spindle serves, decoder='dot'"),
    (NoEncode, {"task": "link"}, "no encode"),
    (LinkNet, {"task": "link", "decoder": "mlp"}, "decoder='mlp'"),
    (LinkNet, {"task": "link", "decoder": ConvDecoder()}, "no graph to pass messages over"),
    (LinkNet, {"task": "link", "decoder": TwoColumns()}, "2 wide; a pair's score is one column"),
    (LinkNet, {"task": "link", "decoder": ScaledDecoder()}, "not a scalar factor"),
    (Node, {"decoder": MlpDecoder()}, "decoder= is for task='link'"),
    (LinkNet, {"task": "edges"}, "task='edges'"),
])
def test_link_exports_that_spindle_would_serve_differently_are_refused(tmp_path, model, kwargs,
                                                                        message):
    with pytest.raises(ExportError, match=message):
        export_pyg(model().eval(), str(tmp_path / "m"), name="m", **kwargs)
    assert not (tmp_path / "m").exists()
