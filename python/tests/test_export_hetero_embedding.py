"""Featureless node types with learnt tables (PyG's nn.Embedding): a model whose
forward takes x_dict with the table as a type's x (a full-graph PyG forward) is
exported with export_pyg(..., embeddings={type: module}), checked against the
live module, and served from a dataset where the type has no features: every
node type's answers equal the module's. Tables of another row count or width,
and embeddings for an untyped model, are refused by name."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
from torch_geometric.data import HeteroData  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
from pyg_models import two_sage  # noqa: E402
import spindle_client as sc  # noqa: E402
from serving import start_server  # noqa: E402
from spindle_client.export import ExportError, export_pyg, save_graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
USERS, ITEMS = 50, 30


def graph(seed=7):
    """Users without features, items with 6; users rate items, items rated by users."""
    rng = np.random.default_rng(seed)
    d = HeteroData()
    d["user"].num_nodes = USERS
    d["item"].x = torch.from_numpy(rng.standard_normal((ITEMS, 6)).astype(np.float32))
    ei = np.stack([rng.integers(0, USERS, 200), rng.integers(0, ITEMS, 200)])
    d["user", "rates", "item"].edge_index = torch.from_numpy(ei)
    d["item", "rated_by", "user"].edge_index = torch.from_numpy(ei[::-1].copy())
    return d


class Recommender(torch.nn.Module):
    """PyG's recommendation pattern: a table for the featureless users beside the
    typed GNN (to_hetero); x_dict["user"] is the table."""

    def __init__(self, metadata, dim=8):
        super().__init__()
        self.user_emb = torch.nn.Embedding(USERS, dim)
        self.gnn = pyg_nn.to_hetero(two_sage(16, 4), metadata, aggr="sum")


def build(data):
    torch.manual_seed(0)
    model = Recommender(data.metadata())
    x = dict(data.x_dict, user=model.user_emb.weight)
    with torch.no_grad():
        model.gnn(x, data.edge_index_dict)  # lazy modules take their widths
    return model.eval()


def answers(model, data):
    with torch.no_grad():
        return model.gnn(dict(data.x_dict, user=model.user_emb.weight), data.edge_index_dict)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("tables")
    data = graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    model = build(data)
    (tmp / "repo" / "rec").mkdir(parents=True)
    export_pyg(model.gnn, str(tmp / "repo" / "rec" / "1"), name="rec", fanouts=[-1, -1],
               check=data, embeddings={"user": model.user_emb}, spindle=SPINDLE)
    return tmp, data, model


def test_the_table_is_stored_with_the_model(exported):
    tmp, _, _ = exported
    text = (tmp / "repo" / "rec" / "1" / "model.toml").read_text()
    assert 'embedding = "embedding.user.weight"' in text and "embedding_rows = 50" in text, text
    assert 'graphs = ["generated", "yours: 80 nodes"]' in text, text
    info = subprocess.run([SPINDLE, "model", "info", str(tmp / "repo" / "rec" / "1")],
                          capture_output=True, text=True)
    assert info.returncode == 0 and "embedding.user.weight" in info.stdout, info.stdout


def test_served_answers_equal_pyg_for_both_node_types(exported):
    tmp, data, model = exported
    proc, endpoint = start_server(
        [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository", str(tmp / "repo"),
         "--listen", "127.0.0.1:0", "--device", "host"])
    try:
        c = sc.Client(endpoint)
        want = answers(model, data)
        for node_type, rows in want.items():
            seeds = list(range(rows.shape[0]))
            got = c.infer_gnn(seeds, model="rec", node_type=node_type)
            w = rows.numpy()
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4 * np.abs(w).max(),
                                       err_msg=node_type)
            one = c.infer_gnn([seeds[-1]], model="rec", node_type=node_type)
            np.testing.assert_allclose(one, w[[-1]], rtol=1e-4, atol=1e-4 * np.abs(w).max())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_dataset_with_another_count_of_the_type_is_refused_by_name(exported, tmp_path):
    tmp, data, _ = exported
    small = graph(seed=8)
    small["user"].num_nodes = USERS - 1
    for e in small.edge_types:  # keep the edges inside the smaller user range
        ei = small[e].edge_index
        col = 0 if e[0] == "user" else 1
        small[e].edge_index = ei[:, ei[col] < USERS - 1]
    save_graph(small, str(tmp_path / "g"))
    r = subprocess.run([SPINDLE, "model", "verify", str(tmp / "repo" / "rec" / "1"), "--graph",
                        str(tmp_path / "g"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert ("node type 'user': the model's embedding table embedding.user.weight has 50 rows, "
            "the graph has 49 nodes of the type") in r.stderr, r.stderr


def test_tables_that_do_not_fit_are_refused_by_name(tmp_path):
    data = graph()
    model = build(data)
    with pytest.raises(ExportError, match=r"embeddings\['user'\] is 5 wide; the model reads 8"):
        export_pyg(model.gnn, str(tmp_path / "a"), name="a", metadata=data.metadata(),
                   embeddings={"user": torch.nn.Embedding(USERS, 5)}, spindle=SPINDLE)
    with pytest.raises(ExportError, match="failed initialising its lazy modules"):
        export_pyg(model.gnn, str(tmp_path / "a"), name="a",
                   embeddings={"user": torch.nn.Embedding(USERS, 5)}, check=data,
                   spindle=SPINDLE)
    with pytest.raises(ExportError, match=r"embeddings\['user'\] has 40 rows; the graph has 50"):
        export_pyg(model.gnn, str(tmp_path / "b"), name="b",
                   embeddings={"user": torch.nn.Embedding(40, 8)}, check=data, spindle=SPINDLE)
    with pytest.raises(ExportError, match="'person' is not a node type"):
        export_pyg(model.gnn, str(tmp_path / "c"), name="c",
                   embeddings={"person": model.user_emb}, check=data, spindle=SPINDLE)
    with pytest.raises(ExportError, match="max_norm"):
        export_pyg(model.gnn, str(tmp_path / "d"), name="d",
                   embeddings={"user": torch.nn.Embedding(USERS, 8, max_norm=1.0)}, check=data,
                   spindle=SPINDLE)
    with pytest.raises(ExportError, match="this model reads one node type"):
        export_pyg(pyg_nn.GCNConv(4, 2), str(tmp_path / "e"), name="e",
                   embeddings={"user": model.user_emb}, check=False)
    for sub in "abcde":
        assert not (tmp_path / sub).exists()
