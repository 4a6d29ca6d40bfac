"""save_graph and `spindle prepare` on its output: a HeteroData becomes a typed
dataset whose CSR, edge types, edge_attr, features and labels are the input's,
exactly; a Data an untyped one. Needs torch_geometric (skipped without) and, for
prepare, the spindle binary ($SPINDLE_BINARY, set by ctest; skipped without)."""
import json
import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

from spindle_client.export import save_graph  # noqa: E402

EDGE_TYPES = [("author", "writes", "paper"), ("paper", "cites", "paper"),
              ("paper", "published_in", "venue"), ("venue", "hosts", "paper")]
NODES = {"author": 6, "paper": 8, "venue": 3}


def hetero():
    g = torch.Generator().manual_seed(3)
    data = HeteroData()
    data["author"].x = torch.randn(6, 4, generator=g)
    data["author"].y = torch.randint(0, 3, (6,), generator=g)
    data["paper"].x = torch.randn(8, 2, generator=g)
    data["paper"].y = torch.randint(0, 5, (8,), generator=g)
    data["venue"].num_nodes = 3  # featureless, unlabelled
    for i, (s, r, d) in enumerate(EDGE_TYPES):
        e = 10 + 3 * i
        src = torch.randint(0, NODES[s], (e,), generator=g)
        dst = torch.randint(0, NODES[d], (e,), generator=g)
        data[s, r, d].edge_index = torch.stack([src, dst])
        data[s, r, d].edge_attr = torch.randn(e, 2, generator=g)
    return data


def homogeneous():
    g = torch.Generator().manual_seed(4)
    ei = torch.randint(0, 10, (2, 30), generator=g)
    return Data(x=torch.randn(10, 5, generator=g), y=torch.randint(0, 4, (10,), generator=g),
                edge_index=ei)


def spindle():
    binary = os.environ.get("SPINDLE_BINARY")
    if not binary or not os.path.exists(binary):
        pytest.skip("no spindle binary ($SPINDLE_BINARY)")
    return binary


def prepare(binary, graph_dir, out):
    r = subprocess.run([binary, "prepare", "--input", str(graph_dir), "--out", str(out),
                        "--fanouts", "2,2"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    return json.loads((out / "metadata.json").read_text())


def stored_edges(out, meta, typed):
    """(row, neighbour, type, attr...) of every stored edge, in CSR order."""
    indptr = np.load(out / "indptr.npy")
    indices = np.load(out / "indices.npy").astype(np.int64)
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    types = np.load(out / "edge_types.npy") if typed else np.zeros(len(indices), np.int16)
    if typed:
        assert types.dtype == np.int16
    cols = [rows, indices, types.astype(np.int64)]
    if "edge_attr" in meta["arrays"]:
        cols += list(np.load(out / "edge_attr.npy").T.astype(np.float64))
    return np.stack(cols, axis=1)


def sorted_rows(a):
    return a[np.lexsort(a.T[::-1])]


def test_hetero_data_prepares_into_the_typed_graph_it_holds(tmp_path):
    data = hetero()
    path = save_graph(data, tmp_path / "g")
    assert json.loads(open(path).read())["node_types"][2] == {
        "name": "venue", "num_nodes": 3, "x": None, "y": None}
    out = tmp_path / "ds"
    meta = prepare(spindle(), tmp_path / "g", out)
    names = [t["name"] for t in meta["node_types"]]
    assert names == ["author", "paper", "venue"]
    offset = {t["name"]: t["offset"] for t in meta["node_types"]}
    assert offset == {"author": 0, "paper": 6, "venue": 14}
    assert [t["feature_dim"] for t in meta["node_types"]] == [4, 2, 0]
    assert meta["num_nodes"] == 17 and meta["feature_dim"] == 4
    assert [(t["src"], t["rel"], t["dst"]) for t in meta["edge_types"]] == EDGE_TYPES
    assert [t["count"] for t in meta["edge_types"]] == [10, 13, 16, 19]

    want = []
    for t, key in enumerate(EDGE_TYPES):
        ei = data[key].edge_index.numpy()
        attr = data[key].edge_attr.numpy().astype(np.float32).astype(np.float64)
        for i in range(ei.shape[1]):  # direction "in": dst's row lists src
            want.append([offset[key[2]] + ei[1, i], offset[key[0]] + ei[0, i], t, *attr[i]])
    got = stored_edges(out, meta, typed=True)
    np.testing.assert_array_equal(sorted_rows(got), sorted_rows(np.array(want, np.float64)))
    # Within each row the edges run by (edge type, neighbour).
    key = got[:, 0] * 1e6 + got[:, 2] * 1e3 + got[:, 1]
    assert (np.diff(key) >= 0).all()

    x = np.load(out / "features.npy")
    np.testing.assert_array_equal(x[0:6], data["author"].x.numpy())
    np.testing.assert_array_equal(x[6:14, :2], data["paper"].x.numpy())
    assert (x[6:14, 2:] == 0).all() and (x[14:] == 0).all()
    y = np.load(out / "labels.npy")
    np.testing.assert_array_equal(y[:6], data["author"].y.numpy())
    np.testing.assert_array_equal(y[6:14], data["paper"].y.numpy())
    assert (y[14:] == -1).all()

    info = subprocess.run([spindle(), "info", str(out)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert "3 node types" in info.stdout and "(venue, hosts, paper)" in info.stdout


def test_data_prepares_into_an_untyped_graph(tmp_path):
    data = homogeneous()
    save_graph(data, tmp_path / "g")
    out = tmp_path / "ds"
    meta = prepare(spindle(), tmp_path / "g", out)
    assert "node_types" not in meta and "edge_types" not in meta["arrays"]
    assert meta["edge_direction"] == "in" and meta["num_edges"] == 30
    ei = data.edge_index.numpy()
    want = np.stack([ei[1], ei[0], np.zeros(30, np.int64)], axis=1).astype(np.float64)
    got = stored_edges(out, meta, typed=False).astype(np.float64)
    np.testing.assert_array_equal(sorted_rows(got), sorted_rows(want))
    np.testing.assert_array_equal(np.load(out / "features.npy"), data.x.numpy())
    np.testing.assert_array_equal(np.load(out / "labels.npy"), data.y.numpy())


def test_save_graph_refuses_what_would_not_come_back(tmp_path):
    data = hetero()
    data["paper"].x = torch.zeros(8)
    with pytest.raises(ValueError, match="node type 'paper': x has shape"):
        save_graph(data, tmp_path / "a")
    data = hetero()
    data["author", "writes", "paper"].edge_index[1, 4] = 8
    with pytest.raises(ValueError, match=r"\(author, writes, paper\): edge_index\[1\]\[4\] = 8"):
        save_graph(data, tmp_path / "b")
    data = hetero()
    data["author", "wrote it", "paper"].edge_index = torch.zeros(2, 1, dtype=torch.long)
    with pytest.raises(ValueError, match="relation 'wrote it'"):
        save_graph(data, tmp_path / "c")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and holds no earlier save_graph output"):
        save_graph(homogeneous(), busy)


def test_save_graph_replaces_its_own_earlier_output(tmp_path):
    save_graph(hetero(), tmp_path / "g")
    save_graph(homogeneous(), tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "graph.json").read_text())
    assert [t["name"] for t in meta["node_types"]] == ["node"]
    named = {f for t in meta["node_types"] + meta["edge_types"] for f in t.values()
             if isinstance(f, str) and f.endswith(".npy")}
    assert set(os.listdir(tmp_path / "g")) == named | {"graph.json"}


def test_prepare_refuses_typed_input_flags_by_name(tmp_path):
    save_graph(hetero(), tmp_path / "g")
    r = subprocess.run([spindle(), "prepare", "--input", str(tmp_path / "g"), "--out",
                        str(tmp_path / "ds"), "--undirected"], capture_output=True, text=True)
    assert r.returncode != 0 and "--undirected" in r.stderr + r.stdout


def prepare_error(graph_dir, out):
    r = subprocess.run([spindle(), "prepare", "--input", str(graph_dir), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    return r.stderr + r.stdout


def test_prepare_names_the_file_and_field_it_refuses(tmp_path):
    g = tmp_path / "g"
    save_graph(hetero(), g)
    meta = json.loads((g / "graph.json").read_text())
    x_file = meta["node_types"][1]["x"]
    np.save(g / x_file, np.zeros((8, 2), np.float64))
    err = prepare_error(g, tmp_path / "a")
    assert "node_types[1].x" in err and "float64" in err, err
    save_graph(hetero(), g)
    os.remove(g / meta["edge_types"][2]["edge_index"])
    err = prepare_error(g, tmp_path / "b")
    assert "edge_types[2].edge_index" in err and meta["edge_types"][2]["edge_index"] in err, err
    save_graph(hetero(), g)
    ei = np.load(g / meta["edge_types"][0]["edge_index"])
    ei[0, 3] = 6  # author has 6 nodes
    np.save(g / meta["edge_types"][0]["edge_index"], ei)
    err = prepare_error(g, tmp_path / "c")
    assert "edge_types[0].edge_index[0][3] = 6 out of range for node type 'author'" in err, err


def test_prepare_refuses_edge_attr_of_mixed_widths(tmp_path):
    data = hetero()
    data["paper", "cites", "paper"].edge_attr = torch.zeros(13, 3)
    save_graph(data, tmp_path / "g")
    err = prepare_error(tmp_path / "g", tmp_path / "ds")
    assert "edge_attr" in err and "(paper, cites, paper) has 3 columns" in err, err


def test_non_finite_edge_attributes_are_refused_by_name(tmp_path):
    """As x's: a NaN would reach answers PyG gives as NaN."""
    data = hetero()
    for e in data.edge_types:
        data[e].edge_attr = torch.ones(data[e].edge_index.shape[1], 2)
    data["paper", "cites", "paper"].edge_attr[3, 1] = float("nan")
    with pytest.raises(ValueError, match=r"\(paper, cites, paper\): edge_attr holds NaN"):
        save_graph(data, tmp_path / "a")
    data["paper", "cites", "paper"].edge_attr[3, 1] = 1.0
    save_graph(data, tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "graph.json").read_text())
    k = next(i for i, e in enumerate(meta["edge_types"]) if e["rel"] == "cites")
    attr = np.load(tmp_path / "g" / meta["edge_types"][k]["edge_attr"])
    attr[0, 0] = np.inf
    np.save(tmp_path / "g" / meta["edge_types"][k]["edge_attr"], attr)
    err = prepare_error(tmp_path / "g", tmp_path / "ds")
    assert f"edge_types[{k}].edge_attr holds NaN or infinite values" in err, err
