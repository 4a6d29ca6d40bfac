"""Typed link prediction served as PyG computes it: a user-movie recommendation
model as PyG's typed link examples write it (a to_hetero GraphSAGE encoder and
an EdgeDecoder reading z_dict['user'][edge_label_index[0]] and
z_dict['movie'][edge_label_index[1]]) is exported with one call, checked
against the live modules, and served: each (user, movie) pair's score over the
Cap'n Proto and KServe doors equals PyG's on the full graph, and the encoder's
named values (conv1__movie, ...) are served for a call's node type. The other decoder forms (dot,
forward(z_src, z_dst), forward(z_user, z_movie, edge_label_index) computing the
dot product) are served too; a decoder reading the wrong end, pairs given a
node type, and pair numbers outside their types are refused by name."""
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
import spindle_client as sc  # noqa: E402
from serving import start_server_with_http  # noqa: E402
from spindle_client.export import ExportError, export_pyg, save_graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))


def ratings_graph(seed=5):
    rng = np.random.default_rng(seed)
    d = HeteroData()
    d["user"].x = torch.from_numpy(rng.standard_normal((50, 8)).astype(np.float32))
    d["movie"].x = torch.from_numpy(rng.standard_normal((30, 12)).astype(np.float32))
    rates = np.stack([rng.integers(0, 50, 240), rng.integers(0, 30, 240)])
    d["user", "rates", "movie"].edge_index = torch.from_numpy(rates)
    d["movie", "rev_rates", "user"].edge_index = torch.from_numpy(rates[::-1].copy())
    return d


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = pyg_nn.SAGEConv((-1, -1), 16)
        self.conv2 = pyg_nn.SAGEConv((-1, -1), 16)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


class EdgeDecoder(torch.nn.Module):  # as PyG's typed link examples write it
    def __init__(self, hidden=16):
        super().__init__()
        self.lin1 = torch.nn.Linear(2 * hidden, hidden)
        self.lin2 = torch.nn.Linear(hidden, 1)

    def forward(self, z_dict, edge_label_index):
        row, col = edge_label_index
        z = torch.cat([z_dict["user"][row], z_dict["movie"][col]], dim=-1)
        z = self.lin1(z).relu()
        return self.lin2(z).view(-1)


class WrongEnd(EdgeDecoder):
    def forward(self, z_dict, edge_label_index):
        z = torch.cat([z_dict["movie"][edge_label_index[0]], z_dict["user"][edge_label_index[1]]],
                      dim=-1)
        return self.lin2(self.lin1(z).relu()).view(-1)


class Classifier(torch.nn.Module):  # PyG's link-prediction tutorial's dot product
    def forward(self, x_user, x_movie, edge_label_index):
        return (x_user[edge_label_index[0]] * x_movie[edge_label_index[1]]).sum(dim=-1)


class PairMlp(torch.nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.lin = torch.nn.Linear(2 * hidden, 1)

    def forward(self, z_src, z_dst):
        return self.lin(torch.cat([z_src, z_dst], dim=-1)).squeeze(-1)


def encoder(data):
    torch.manual_seed(0)
    model = pyg_nn.to_hetero(Encoder(), data.metadata(), aggr="sum")
    with torch.no_grad():
        model(data.x_dict, data.edge_index_dict)  # lazy modules take their widths
    return model.eval()


DECODERS = {"edge": EdgeDecoder, "dot": lambda: "dot", "classifier": Classifier,
            "pair": PairMlp}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("typed-link")
    data = ratings_graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    enc, decoders = encoder(data), {}
    for kind, make in DECODERS.items():
        torch.manual_seed(1)
        decoders[kind] = make()
        if not isinstance(decoders[kind], str):
            decoders[kind].eval()
        (tmp / "repo" / kind).mkdir(parents=True)
        export_pyg(enc, str(tmp / "repo" / kind / "1"), name=kind, fanouts=[-1, -1],
                   check=data, spindle=SPINDLE, task="link", decoder=decoders[kind],
                   pair_types=("user", "movie"))
    return tmp, data, enc, decoders


def pyg_scores(enc, decoder, data, pairs):
    with torch.no_grad():
        z = enc(data.x_dict, data.edge_index_dict)
        u, v = torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1])
        if isinstance(decoder, str):
            return (z["user"][u] * z["movie"][v]).sum(-1).numpy()
        if isinstance(decoder, PairMlp):
            return decoder(z["user"][u], z["movie"][v]).numpy()
        index = torch.from_numpy(pairs.T.copy())
        if isinstance(decoder, Classifier):
            return decoder(z["user"], z["movie"], index).numpy()
        return decoder(z, index).numpy()


def fx_values(gm, data):
    """The typed module's value at every fx node, by node name (the op names)."""
    values = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if isinstance(out, torch.Tensor):
                values[n.name] = out.detach().clone()
            return out

    with torch.no_grad():
        _Recorder(gm).run(data.x_dict, data.edge_index_dict)
    return values


def test_each_decoder_form_is_written_and_checked(served):
    tmp, _, _, _ = served
    for kind, want in (("edge", 'decoder = "ops"'), ("dot", 'decoder = "dot"'),
                       ("classifier", 'decoder = "dot"'), ("pair", 'decoder = "ops"')):
        text = (tmp / "repo" / kind / "1" / "model.toml").read_text()
        assert want in text and 'pair_types = ["user", "movie"]' in text, text
        assert "equal to" in text and "64 pairs" in text, text
    info = subprocess.run([SPINDLE, "model", "info", str(tmp / "repo" / "edge" / "1")],
                          capture_output=True, text=True)
    assert info.returncode == 0 and "pairs: (user, movie)" in info.stdout, info.stdout


def test_the_workload_generator_sends_pairs_of_the_pair_types(served):
    """`serve --workload` on a typed link model: every generated pair is a (user,
    movie) pair, each end numbered as the door would number it (none refused)."""
    tmp, _, _, _ = served
    r = subprocess.run([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                        str(tmp / "repo" / "dot" / "1"), "--workload", "200", "--clients", "4",
                        "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout[r.stdout.index("{"):])
    assert got["answered"] == 200 and got["errors"] == 0, got


def test_served_pair_scores_equal_pyg(served):
    tmp, data, enc, decoders = served
    proc, endpoint, base = start_server_with_http(
        [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository",
         str(tmp / "repo"), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--device",
         "host", "--admin-token-file", str(tmp / "token")])
    rng = np.random.default_rng(7)
    pairs = np.stack([rng.integers(0, 50, 40), rng.integers(0, 30, 40)], 1).astype(np.int64)
    pairs[:3] = [[0, 0], [49, 29], [7, 7]]
    try:
        with sc.Client(endpoint) as c:
            for kind, decoder in decoders.items():
                want = pyg_scores(enc, decoder, data, pairs)
                got = c.infer_links(pairs, model=kind)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(),
                                           err_msg=kind)
                one = c.infer_links(pairs[5:6], model=kind, sampler_seed=3)
                np.testing.assert_allclose(one, want[5:6], rtol=1e-4, atol=1e-5, err_msg=kind)
            # The KServe door: the same scores for the same pairs.
            body = {"inputs": [{"name": "pairs", "datatype": "INT64", "shape": [40, 2],
                                "data": pairs.reshape(-1).tolist()}]}
            req = urllib.request.Request(base + "/v2/models/edge/infer", method="POST",
                                         data=json.dumps(body).encode())
            with urllib.request.urlopen(req, timeout=30) as r:
                out = json.loads(r.read())["outputs"][0]
            want = pyg_scores(enc, decoders["edge"], data, pairs)
            np.testing.assert_allclose(np.array(out["data"], dtype=np.float32), want, rtol=1e-4,
                                       atol=1e-4 * np.abs(want).max())
            with urllib.request.urlopen(base + "/v2/models/edge", timeout=30) as r:
                meta = json.loads(r.read())
            names = [i["name"] for i in meta["inputs"]]
            assert "pairs" in names and "seed_ids" not in names and "pair_ids" not in names, meta
            with urllib.request.urlopen(base + "/v2/models/edge/config", timeout=30) as r:
                config = json.loads(r.read())
            assert config["parameters"]["pair_types"]["string_value"] == "user,movie", config
            # Embeddings of either type from the same model, by node type.
            z = enc(data.x_dict, data.edge_index_dict)
            np.testing.assert_allclose(c.infer_gnn([4], model="edge", node_type="movie"),
                                       z["movie"][4:5].detach().numpy(), rtol=1e-4, atol=1e-5)
            # Named values of the typed encoder, by op name, for the call's node type.
            inner = fx_values(enc, data)
            got = c.infer_gnn([4, 9, 4], model="edge", node_type="movie",
                              outputs=["conv1__movie", "relu__movie", "output"])
            for name, want in (("conv1__movie", inner["conv1__movie"]),
                               ("relu__movie", inner["relu__movie"]), ("output", z["movie"])):
                np.testing.assert_allclose(got[name], want[[4, 9, 4]].detach().numpy(),
                                           rtol=1e-4, atol=1e-5, err_msg=name)
            with pytest.raises(sc.SpindleError, match="output 'conv1__user' holds node type "
                                                      "'user' rows; the call's seeds are 'movie'"):
                c.infer_gnn([4], model="edge", node_type="movie", outputs=["conv1__user"])
            # Refusals by name; the server goes on serving.
            with pytest.raises(sc.SpindleError, match="out of range for node type 'movie'"):
                c.infer_links([[0, 30]], model="edge")
            with pytest.raises(sc.SpindleError, match="out of range for node type 'user'"):
                c.infer_links([[50, 0]], model="edge")
            with pytest.raises(sc.SpindleError, match="name the seeds' node type"):
                c.infer_gnn([0], model="edge")
            assert c.infer_links(pairs[:2], model="edge").shape == (2,)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_what_spindle_would_not_score_is_refused_by_name(tmp_path):
    data = ratings_graph()
    enc = encoder(data)
    cases = [
        (dict(decoder="dot"), "pair_types: give the node types"),
        (dict(decoder="dot", pair_types=("user", "genre")), "'genre' is not a node type"),
        (dict(decoder=WrongEnd().eval(), pair_types=("user", "movie")),
         "indexes the 'movie' embeddings with edge_label_index\\[0\\]"),
        (dict(decoder="cosine", pair_types=("user", "movie")), "decoder='cosine'"),
    ]
    for i, (kw, match) in enumerate(cases):
        with pytest.raises(ExportError, match=match):
            export_pyg(enc, str(tmp_path / str(i)), name="x", check=data, spindle=SPINDLE,
                       task="link", **kw)
    with pytest.raises(ExportError, match="pair_types= and decoder= are for task='link'|"
                                          "decoder= and pair_types= are for task='link'"):
        export_pyg(enc, str(tmp_path / "n"), name="x", check=data, pair_types=("user", "movie"))
    assert not any(p.exists() for p in tmp_path.iterdir() if p.is_dir() and
                   (p / "model.toml").exists())


def test_a_hand_edit_of_what_was_checked_is_refused_on_load(served, tmp_path):
    """The export records the digest of what it checked; swapping pair_types by
    hand afterwards is refused on load by name, renaming the model is not, and
    `model verify --pairs` names the pair type of a number out of range."""
    import shutil
    tmp, _, _, _ = served
    model = tmp_path / "edge"
    shutil.copytree(tmp / "repo" / "edge" / "1", model)
    text = (model / "model.toml").read_text()
    assert "description_xxh3_64" in text, text
    (model / "model.toml").write_text(text.replace('pair_types = ["user", "movie"]',
                                                   'pair_types = ["movie", "user"]'))
    r = subprocess.run([SPINDLE, "model", "info", str(model)], capture_output=True, text=True)
    assert r.returncode != 0 and "edited after the exporter checked it" in r.stderr, r.stderr
    assert "description_xxh3_64" in r.stderr, r.stderr
    (model / "model.toml").write_text(text.replace('name = "edge"', 'name = "renamed"'))
    r = subprocess.run([SPINDLE, "model", "info", str(model)], capture_output=True, text=True)
    assert r.returncode == 0 and "renamed" in r.stdout, r.stderr
    pairs = tmp_path / "pairs.npy"
    np.save(pairs, np.array([[0, 1], [3, 30]], np.int64))
    save_graph(ratings_graph(), str(tmp_path / "graph"))
    r = subprocess.run([SPINDLE, "model", "verify", str(model), "--graph", str(tmp_path / "graph"),
                        "--pairs", str(pairs), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "pairs[1][1] = 30 out of range (30 movie nodes)" in r.stderr, \
        r.stderr
