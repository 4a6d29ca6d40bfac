"""Graph updates on a typed (heterogeneous) graph, checked against PyG: a
to_hetero GraphSAGE on users and merchants, served with --graph-updates; after
typed batches (nodes of two types, edges of three edge types, feature rows,
removed edges and nodes) through the Python client, the CLI and KServe HTTP,
every node type's answers equal the module's on the changed HeteroData. Bad
typed items are refused by name; doors without types (gRPC, Redis streams)
refuse by name; a restart replays the typed batches, and `spindle compact`
folds them into a dataset that serves the same answers; an added node of a type
read from an embedding table is refused by name wherever a call reaches it."""
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
from torch_geometric.data import HeteroData  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
from pyg_models import two_sage  # noqa: E402
import spindle_client as sc  # noqa: E402
from serving import start_server, start_server_with_http  # noqa: E402
from spindle_client.export import export_pyg, save_graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
WIDTH = {"user": 4, "merchant": 3}
PAYS, REV, KNOWS = ("user", "pays", "merchant"), ("merchant", "rev_pays", "user"), \
    ("user", "knows", "user")


def pairs(rng, n_src, n_dst, k, loops=True):
    out = set()
    while len(out) < k:
        u, v = int(rng.integers(0, n_src)), int(rng.integers(0, n_dst))
        if loops or u != v:
            out.add((u, v))
    return sorted(out)


class Typed:
    """The typed graph as PyG sees it, changed as the server is asked to."""

    def __init__(self, seed=5):
        rng = np.random.default_rng(seed)
        self.x = {"user": rng.standard_normal((30, 4)).astype(np.float32),
                  "merchant": rng.standard_normal((12, 3)).astype(np.float32)}
        pays = pairs(rng, 30, 12, 80)
        self.edges = {PAYS: pays, REV: [(m, u) for u, m in pays],
                      KNOWS: pairs(rng, 30, 30, 60, loops=False)}

    def data(self):
        d = HeteroData()
        for t, x in self.x.items():
            d[t].x = torch.from_numpy(x)
        for e, lst in self.edges.items():
            d[e].edge_index = torch.tensor(np.array(lst, dtype=np.int64).T.reshape(2, -1))
        return d

    def apply(self, add_nodes=None, add_edges=None, set_features=None, remove_edges=None,
              remove_nodes=None):
        for t, rows in (add_nodes or {}).items():
            self.x[t] = np.vstack([self.x[t], rows])
        for e, (s, d) in (add_edges or {}).items():
            self.edges[e] += list(zip(s, d))
        for t, (ids, rows) in (set_features or {}).items():
            self.x[t][ids] = rows
        for e, (s, d) in (remove_edges or {}).items():
            for p in zip(s, d):
                self.edges[e].remove(p)
        for t, ids in (remove_nodes or {}).items():
            for e in self.edges:
                self.edges[e] = [(a, b) for a, b in self.edges[e]
                                 if not (e[0] == t and a in ids) and not (e[2] == t and b in ids)]


def answers(model, g):
    d = g.data()
    with torch.no_grad():
        return {k: v.numpy() for k, v in model(d.x_dict, d.edge_index_dict).items()}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("typed-updates")
    g = Typed()
    save_graph(g.data(), str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    torch.manual_seed(0)
    model = pyg_nn.to_hetero(two_sage(16, 16, head=5), g.data().metadata(), aggr="sum")
    answers(model, g)  # lazy modules take their widths
    model.eval()
    export_pyg(model, str(tmp / "sage"), name="sage", fanouts=[-1, -1], check=g.data(),
               spindle=SPINDLE)
    return tmp, model


def serve(tmp, log, *extra, dataset=None):
    return start_server_with_http(
        [SPINDLE, "serve", "--dataset", str(dataset or tmp / "ds"), "--model", str(tmp / "sage"), "--name",
         "sage", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin-token-file",
         str(tmp / "token"), "--graph-updates", "--graph-log", str(log), "--device", "host",
         *extra])


def check(c, model, g, removed=(), version=None):
    want = answers(model, g)
    for t, rows in want.items():
        seeds = [i for i in range(rows.shape[0]) if (t, i) not in removed]
        got = c.infer_gnn(seeds, node_type=t, min_version=version or 0)
        w = rows[seeds]
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4 * np.abs(w).max(), err_msg=t)
        if version is not None:
            assert got.version == version


def http_update(base, token, body):
    req = urllib.request.Request(base + "/v2/graph/update", json.dumps(body).encode(),
                                 {"Authorization": "Bearer " + token}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def grpc_update(port, token, src, dst):
    """A gRPC GraphUpdate (add_src, add_dst) sent with curl over HTTP/2; its
    grpc-status and grpc-message trailers."""
    def packed(field, values):
        body = b"".join(bytes([v]) for v in values)  # small non-negative varints
        return bytes([field << 3 | 2, len(body)]) + body
    msg = packed(1, src) + packed(2, dst)
    frame = b"\0" + len(msg).to_bytes(4, "big") + msg
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null",
                        "-H", "content-type: application/grpc", "-H", "te: trailers",
                        "-H", "authorization: Bearer " + token, "--data-binary", "@-",
                        f"http://127.0.0.1:{port}/inference.SpindleGraphService/GraphUpdate"],
                       input=frame, capture_output=True, timeout=30)
    return r.stdout.decode(errors="replace")


def test_typed_batches_answer_as_pyg_on_the_changed_heterodata(setup, tmp_path):
    tmp, model = setup
    g = Typed()
    log = tmp_path / "typed.log"
    proc, endpoint, base = serve(tmp, log)
    try:
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        check(c, model, g)
        rng = np.random.default_rng(11)
        new_u = rng.standard_normal((2, 4)).astype(np.float32)
        new_m = rng.standard_normal((1, 3)).astype(np.float32)
        b1 = dict(add_nodes={"user": new_u, "merchant": new_m},
                  add_edges={PAYS: ([30, 3], [12, 12]), REV: ([12, 12], [30, 3]),
                             KNOWS: ([30, 31], [5, 30])})
        r = c.update_graph(**b1)
        assert r.version == 1
        assert {t: v.tolist() for t, v in r.new_ids.items()} == {"user": [30, 31], "merchant": [12]}
        g.apply(**b1)
        check(c, model, g, version=1)
        rows = rng.standard_normal((2, 4)).astype(np.float32)
        b2 = dict(set_features={"user": ([0, 31], rows)})
        assert c.update_graph(**b2).version == 2
        g.apply(**b2)
        check(c, model, g, version=2)
        u, m = g.edges[PAYS][0]
        b3 = dict(remove_edges={PAYS: ([u], [m]), "rev_pays": ([m], [u])})
        assert c.update_graph(**b3).version == 3
        g.apply(remove_edges={PAYS: ([u], [m]), REV: ([m], [u])})
        check(c, model, g, version=3)
        b4 = dict(remove_nodes={"merchant": [2]})
        assert c.update_graph(**b4).version == 4
        g.apply(**b4)
        check(c, model, g, removed={("merchant", 2)}, version=4)
        with pytest.raises(sc.SpindleError, match="of node type 'merchant' was removed"):
            c.infer_gnn([2], node_type="merchant")
        # The CLI: one edge type, from an edge_index file.
        np.save(tmp_path / "knows.npy", np.array([[7], [31]], dtype=np.int64))
        out = subprocess.run([SPINDLE, "client", "--connect", endpoint, "--token-file",
                              str(tmp / "token"), "graph", "update", "--edge-type", "knows",
                              "--add-edges", str(tmp_path / "knows.npy")],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "graph version 5" in out.stdout, out.stderr
        g.apply(add_edges={KNOWS: ([7], [31])})
        check(c, model, g, removed={("merchant", 2)}, version=5)
        # KServe HTTP: typed fields keyed by type; new ids per type.
        token = (tmp / "token").read_text().strip()
        row = [0.25, -1.0, 0.5]
        status, body = http_update(base, token, {
            "add_nodes": {"merchant": [row]},
            "add_edges": {"user,pays,merchant": [[4], [13]], "rev_pays": [[13], [4]]}})
        assert status == 200, body
        assert body["version"] == 6 and body["new_ids_by_type"] == {"merchant": [13]}, body
        g.apply(add_nodes={"merchant": np.array([row], np.float32)},
                add_edges={PAYS: ([4], [13]), REV: ([13], [4])})
        check(c, model, g, removed={("merchant", 2)}, version=6)
        refusals(c, base, token, tmp_path)
        assert c.graph_version() == 6  # every refused batch changed nothing
        # kill -9 and a restart: the log's typed batches come back, to the same answers.
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        out = subprocess.run([SPINDLE, "compact", str(tmp / "ds"), "--out", str(tmp_path / "c"),
                              "--graph-log", str(log)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        # The compacted dataset: each type's nodes in one range again (merchants
        # past the added users), ids within types kept, answers PyG's.
        info = json.loads((tmp_path / "c" / "metadata.json").read_text())
        assert [(t["name"], t["offset"], t["count"]) for t in info["node_types"]] == \
            [("user", 0, 32), ("merchant", 32, 14)], info["node_types"]
        proc, endpoint, base = serve(tmp, tmp_path / "c.log", dataset=tmp_path / "c")
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        assert c.graph_version() == 6
        check(c, model, g, removed={("merchant", 2)}, version=6)
        r = c.update_graph(add_nodes={"merchant": np.zeros((1, 3), np.float32)})
        assert r.version == 7 and r.new_ids["merchant"].tolist() == [14]
        with pytest.raises(sc.SpindleError, match="of node type 'merchant' was removed"):
            c.infer_gnn([2], node_type="merchant")
        proc.terminate()
        proc.wait(timeout=30)
        proc, endpoint, base = serve(tmp, log)
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        assert c.graph_version() == 6
        check(c, model, g, removed={("merchant", 2)}, version=6)
        r = c.update_graph(add_nodes={"user": np.zeros((1, 4), np.float32)})
        assert r.version == 7 and r.new_ids["user"].tolist() == [32]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def refusals(c, base, token, tmp_path):
    def refused(match, **batch):
        with pytest.raises(sc.SpindleError, match=match):
            c.update_graph(**batch)
    refused(r"add_edges\['user,buys,merchant'\]: edge type 'user,buys,merchant' is not one of",
            add_edges={("user", "buys", "merchant"): ([0], [0])})
    refused(r"add_edges\['user,pays,merchant'\].dst\[0\]: merchant 14 out of range "
            r"\(node type 'merchant' has 14 nodes\)", add_edges={PAYS: ([0], [14])})
    refused(r"add_nodes\['user'\]: 3 values for 1 rows of width 4",
            add_nodes={"user": np.zeros((1, 3), np.float32)})
    refused(r"set_features\['shop'\]: node type 'shop' is not one of",
            set_features={"shop": ([0], np.zeros((1, 4), np.float32))})
    refused(r"add_edges: the graph is typed: name each change's edge or node type",
            add_edges=([0], [1]))
    refused(r"remove_edges\['knows'\]\[0\]: no edge 0 -> 0 of this type",
            remove_edges={"knows": ([0], [0])})
    status, body = http_update(base, token, {"add_edges": [[0], [1]]})
    assert status == 400 and "the graph is typed" in body["error"], body
    status, body = http_update(base, token, {"remove_nodes": {"user": [99]}})
    assert status == 400 and "remove_nodes['user'][0]: user 99 out of range" in body["error"]
    # The CLI names the missing type; the stream door takes no types.
    np.save(tmp_path / "rows.npy", np.zeros((1, 4), np.float32))
    out = subprocess.run([SPINDLE, "client", "graph", "update", "--redis", "127.0.0.1:1",
                          "--node-type", "user", "--add-nodes", str(tmp_path / "rows.npy")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "stream entries carry no node or edge types" in out.stderr


def test_doors_without_types_refuse_a_typed_graph_by_name(setup, tmp_path):
    tmp, _ = setup
    bad = subprocess.run([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                          str(tmp / "sage"), "--listen", "127.0.0.1:0", "--admin-token-file",
                          str(tmp / "token"), "--graph-updates", "--graph-log",
                          str(tmp_path / "s.log"), "--graph-stream", "127.0.0.1:1",
                          "--device", "host"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0
    assert "is typed, and stream entries carry no node or edge types" in bad.stderr, bad.stderr
    if subprocess.run(["which", "curl"], capture_output=True).returncode != 0:
        pytest.skip("no curl for the gRPC door")
    proc = subprocess.Popen([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                             str(tmp / "sage"), "--name", "sage", "--listen", "127.0.0.1:0",
                             "--grpc", "127.0.0.1:0", "--admin-token-file", str(tmp / "token"),
                             "--graph-updates", "--graph-log", str(tmp_path / "g.log"),
                             "--device", "host"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in proc.stdout:
            if line.startswith("grpc "):
                port = int(line.split()[1].rsplit(":", 1)[1])
            if line.startswith("listening "):
                break
        assert port, "no gRPC door"
        trailers = grpc_update(port, (tmp / "token").read_text().strip(), [0], [1])
        assert "grpc-status: 3" in trailers, trailers
        assert "the graph is typed, and this door's batches carry no node" in \
            urllib.parse.unquote(trailers), trailers
    finally:
        proc.terminate()
        proc.wait(timeout=30)


USERS, ITEMS = 20, 10


def table_graph(seed=7):
    rng = np.random.default_rng(seed)
    d = HeteroData()
    d["user"].num_nodes = USERS
    d["item"].x = torch.from_numpy(rng.standard_normal((ITEMS, 6)).astype(np.float32))
    ei = np.array(pairs(rng, USERS, ITEMS, 40), dtype=np.int64).T
    d["user", "rates", "item"].edge_index = torch.from_numpy(ei)
    d["item", "rated_by", "user"].edge_index = torch.from_numpy(ei[::-1].copy())
    return d


def test_an_added_node_of_an_embedding_table_type_is_refused_by_name(tmp_path):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    data = table_graph()
    save_graph(data, str(tmp_path / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp_path / "graph"), "--out",
                    str(tmp_path / "ds")], check=True, capture_output=True)
    torch.manual_seed(0)
    emb = torch.nn.Embedding(USERS, 8)
    gnn = pyg_nn.to_hetero(two_sage(8, 4), data.metadata(), aggr="sum")
    with torch.no_grad():
        gnn(dict(data.x_dict, user=emb.weight), data.edge_index_dict)
    gnn.eval()
    export_pyg(gnn, str(tmp_path / "rec"), name="rec", fanouts=[-1, -1], check=data,
               embeddings={"user": emb}, spindle=SPINDLE)
    rated = int(data["user", "rates", "item"].edge_index[1, 0])
    alone = [i for i in range(ITEMS) if i not in data["user", "rates", "item"].edge_index[1].tolist()]

    def serve_table(ds, log):
        return start_server(
            [SPINDLE, "serve", "--dataset", str(ds), "--model", str(tmp_path / "rec"),
             "--name", "rec", "--listen", "127.0.0.1:0", "--admin-token-file",
             str(tmp_path / "token"), "--graph-updates", "--graph-log", str(log), "--device",
             "host"])

    def refused_and_answered(c):
        for seeds, t in (([rated], "item"), ([USERS], "user")):
            with pytest.raises(sc.SpindleError,
                               match=r"outside its embedding table .* a node added to the graph "
                                     r"while served has no learnt row"):
                c.infer_gnn(seeds, node_type=t, min_version=1)
        if alone:  # a neighbourhood that does not reach the new user is answered
            with torch.no_grad():
                want = gnn(dict(data.x_dict, user=emb.weight), data.edge_index_dict)["item"]
            np.testing.assert_allclose(c.infer_gnn(alone[:1], node_type="item"),
                                       want.numpy()[alone[:1]], rtol=1e-4, atol=1e-5)

    proc, endpoint = serve_table(tmp_path / "ds", tmp_path / "g.log")
    try:
        c = sc.Client(endpoint, model="rec", token_file=str(tmp_path / "token"))
        r = c.update_graph(add_nodes={"user": 1},
                           add_edges={"rates": ([USERS], [rated]), "rated_by": ([rated], [USERS])})
        assert r.new_ids["user"].tolist() == [USERS]
        refused_and_answered(c)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # Compacted, the added user is in the base, past the rows the table learnt:
    # the same model serves it, refusing the same calls.
    out = subprocess.run([SPINDLE, "compact", str(tmp_path / "ds"), "--out", str(tmp_path / "c"),
                          "--graph-log", str(tmp_path / "g.log")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    proc, endpoint = serve_table(tmp_path / "c", tmp_path / "c.log")
    try:
        refused_and_answered(sc.Client(endpoint, model="rec", token_file=str(tmp_path / "token")))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_compaction_keeps_the_seeds_its_metrics_were_computed_for(setup, tmp_path):
    """A typed dataset's metrics restricted to a node type and drawn from a file of
    seed ids: compaction keeps the type, and renumbers the file's ids with the
    nodes (a user added moves every merchant's global id). Without a log it
    refuses by name and writes nothing into the dataset."""
    tmp, _ = setup
    g = Typed()
    save_graph(g.data(), str(tmp_path / "graph"))
    np.save(tmp_path / "seeds.npy", np.arange(30, 34, dtype=np.int64))  # merchants 0-3
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp_path / "graph"), "--out",
                    str(tmp_path / "ds"), "--seed-node-type", "merchant", "--seed-distribution",
                    str(tmp_path / "seeds.npy")], check=True, capture_output=True)
    out = subprocess.run([SPINDLE, "compact", str(tmp_path / "ds"), "--out", str(tmp_path / "n")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "graph.log: no graph log" in out.stderr, out.stderr
    assert not os.path.exists(tmp_path / "ds" / "graph.log")
    proc, endpoint = start_server(
        [SPINDLE, "serve", "--dataset", str(tmp_path / "ds"), "--model", str(tmp / "sage"),
         "--name", "sage", "--listen", "127.0.0.1:0", "--admin-token-file", str(tmp / "token"),
         "--graph-updates", "--graph-log", str(tmp_path / "g.log"), "--device", "host"])
    try:
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        assert c.update_graph(add_nodes={"user": np.zeros((1, 4), np.float32)}).version == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = subprocess.run([SPINDLE, "compact", str(tmp_path / "ds"), "--out", str(tmp_path / "c"),
                          "--graph-log", str(tmp_path / "g.log")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "c" / "metadata.json").read_text())["metrics"]
    assert metrics["seed_node_types"] == ["merchant"], metrics
    assert metrics["seed_distribution"].endswith("seed_ids.txt"), metrics
    ids = [int(v) for v in (tmp_path / "c" / "seed_ids.txt").read_text().split()]
    assert ids == [31, 32, 33, 34], ids  # merchants 0-3 past 31 users
    fap = np.load(tmp_path / "c" / "fap.npy")
    assert fap[31:35].min() > 0, fap[:40]  # the seeds are the renumbered merchants
