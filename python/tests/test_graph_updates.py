"""Graph updates while serving, checked against PyG: a GraphSAGE and a GCN
(norm "graph", every neighbour sampled) exported from live PyG modules, served
with --graph-updates; after every kind of update the served answers equal the
modules' model(x, edge_index) on the updated graph; a bad batch changes
nothing; kill -9 and a restart replay the acknowledged batches."""
import json
import os
import signal
import socket
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
from serving import free_port, start_server, prepare_dataset  # noqa: E402
from spindle_client.export import export_pyg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
N, F, C = 200, 12, 4


class TwoConvs(torch.nn.Module):
    """conv(F, 16), ReLU, conv(16, C): the served GraphSAGE or GCN."""

    def __init__(self, conv):
        super().__init__()
        self.conv1 = conv(F, 16)
        self.conv2 = conv(16, C)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def random_graph(rng):
    """A directed graph without self loops or repeated edges, and its features."""
    pairs = set()
    while len(pairs) < 900:
        u, v = rng.integers(0, N, 2)
        if u != v:
            pairs.add((int(u), int(v)))
    edges = np.array(sorted(pairs), dtype=np.int64).T
    return edges, rng.standard_normal((N, F)).astype(np.float32)


class Graph:
    """The graph as PyG sees it, changed the way the server is asked to."""

    def __init__(self, edges, x):
        self.edges = [tuple(e) for e in edges.T.tolist()]
        self.x = x.copy()
        self.removed = set()

    def remove_edge(self, c, u, v):
        """Removes edge u -> v on the server `c` and here."""
        c.update_graph(remove_edges=([u], [v]))
        self.edges.remove((u, v))

    def remove_node(self, c, n):
        """Removes node n (and its edges) on the server `c` and here."""
        c.update_graph(remove_nodes=[n])
        self.edges = [(a, b) for a, b in self.edges if n not in (a, b)]
        self.removed.add(n)

    def add_node(self, c, row, edges):
        """Adds a node with feature row `row` ([1, F]) and `edges` ((sources), (targets))
        on the server `c` and here; returns the server's answer."""
        r = c.update_graph(add_nodes=row, add_edges=edges)
        self.x = np.vstack([self.x, row])
        self.edges += list(zip(*edges))
        return r

    def remove_node_and_check(self, c, n, check, version):
        """remove_node, then `check(version)` on the others and a call for n refused."""
        self.remove_node(c, n)
        check(version)
        with pytest.raises(sc.SpindleError, match="was removed"):
            c.infer_gnn([n])

    def pyg(self, model):
        ei = torch.tensor(np.array(self.edges, dtype=np.int64).T.reshape(2, -1))
        with torch.no_grad():
            return model(torch.from_numpy(self.x), ei).numpy()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graph-updates")
    rng = np.random.default_rng(7)
    edges, x = random_graph(rng)
    prepare_dataset(SPINDLE, tmp, edges, x)
    torch.manual_seed(0)
    models = {"sage": TwoConvs(pyg_nn.SAGEConv).eval(), "gcn": TwoConvs(pyg_nn.GCNConv).eval()}
    for name, m in models.items():
        export_pyg(m, str(tmp / name), name=name, fanouts=[-1, -1], check=False)
    return tmp, edges, x, models


def serve(tmp, model, *extra):
    return start_server([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model", str(tmp / model),
                         "--name", model, "--listen", "127.0.0.1:0", "--admin-token-file",
                         str(tmp / "token"), "--graph-updates", "--graph-log",
                         str(tmp / f"{model}.log"), "--device", "host", *extra])


def http_json(url, body=None, token=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_kserve_http_door_takes_updates_and_reports_versions(setup, tmp_path):
    tmp, edges, x, models = setup
    log = tmp_path / "http.log"
    proc = subprocess.Popen([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                             str(tmp / "sage"), "--name", "sage", "--listen", "127.0.0.1:0",
                             "--http", "127.0.0.1:0", "--admin-token-file", str(tmp_path / "token"),
                             "--graph-updates", "--graph-log", str(log), "--device", "host"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        base = None
        for line in proc.stdout:
            if line.startswith("http "):
                base = line.split()[1][:-len("/v2")]
            if line.startswith("listening "):
                endpoint = line.split()[1]
                break
        assert base
        token = (tmp_path / "token").read_text().strip()
        status, body = http_json(base + "/v2/graph/update", {"add_edges": [[1], [2]]})
        assert status == 401
        status, body = http_json(base + "/v2/graph/update",
                                 {"add_edges": [[1, 3], [2, 2]], "add_nodes": [[0.5] * F]}, token)
        assert status == 200 and body == {"version": 1, "nodes": N + 1, "new_ids": [N]}, body
        status, body = http_json(base + "/v2/graph/update", {"add_edges": [[1], [N + 5]]}, token)
        assert status == 400 and "add_edges.dst[0]: node 205 out of range" in body["error"]
        status, body = http_json(base + "/v2/graph/update", {"add_edge": [[1], [2]]}, token)
        assert status == 400 and "unknown field 'add_edge'" in body["error"]
        # A client that asks before sending its body (curl past 1 MB) is told at once.
        host, port = base[len("http://"):].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /v2/graph/update HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                         b"Expect: 100-continue\r\n\r\n")
            sock.settimeout(0.5)
            assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
        status, body = http_json(base + "/v2/graph", token=token)
        assert status == 200 and body["version"] == 1
        infer = {"inputs": [{"name": "seeds", "datatype": "INT64", "shape": [2], "data": [2, N]}],
                 "parameters": {"min_version": 1}}
        status, body = http_json(base + "/v2/models/sage/infer", infer)
        assert status == 200 and body["parameters"]["graph_version"] == 1, body
        g = Graph(edges, x)
        g.edges += [(1, 2), (3, 2)]
        g.x = np.vstack([g.x, np.full((1, F), 0.5, dtype=np.float32)])
        got = np.array(body["outputs"][0]["data"], dtype=np.float32).reshape(2, -1)
        np.testing.assert_allclose(got, g.pyg(models["sage"])[[2, N]], rtol=1e-4, atol=1e-5)
        infer["parameters"]["min_version"] = 4
        status, body = http_json(base + "/v2/models/sage/infer", infer)
        assert status != 200 and "graph version 4 is not applied" in body["error"]
        c = sc.Client(endpoint, model="sage", token_file=str(tmp_path / "token"))
        by_door = c.stats()["graph"]["updates_by_door"]
        c.close()
        assert by_door["http"]["applied"] == 1 and by_door["capnp"]["applied"] == 0
        assert by_door["http"]["refused"] >= 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def served(c, g, seeds, model):
    live = [s for s in seeds if s not in g.removed]
    return c.infer_gnn(live, model=model), live


@pytest.mark.parametrize("name", ["sage", "gcn"])
def test_answers_after_every_kind_of_update_equal_pyg(setup, name):
    tmp, edges, x, models = setup
    model = models[name]
    g = Graph(edges, x)
    proc, endpoint = serve(tmp, name)
    try:
        c = sc.Client(endpoint, model=name, token_file=str(tmp / "token"))
        seeds = list(range(0, N, 9))

        def check(version):
            out, live = served(c, g, seeds + [n for n in range(N, len(g.x))], name)
            assert out.version == version
            np.testing.assert_allclose(out, g.pyg(model)[live], rtol=1e-4, atol=1e-5)

        check(0)
        r = c.update_graph(add_edges=([1, 2, 3], [10, 10, 20]))  # new transactions
        g.edges += [(1, 10), (2, 10), (3, 20)]
        assert r.version == 1 and r.new_ids.size == 0
        check(1)
        row = np.random.default_rng(1).standard_normal((1, F)).astype(np.float32)
        r = g.add_node(c, row, ([N, 5], [0, N]))  # a node and its edges
        assert r.new_ids.tolist() == [N] and r.new_ids.dtype == np.int64
        check(2)
        new_rows = np.full((2, F), 0.5, dtype=np.float32)
        c.update_graph(set_features=([0, 10], new_rows))
        g.x[[0, 10]] = new_rows
        check(3)
        g.remove_edge(c, *g.edges[0])
        check(4)
        g.remove_node_and_check(c, 20, check, 5)
        # A bad batch is refused whole: its good edge is not applied either.
        with pytest.raises(sc.SpindleError, match=r"add_edges.src\[1\]: node 100000 out of range"):
            c.update_graph(add_edges=([7, 100000], [8, 8]))
        assert c.graph_version() == 5
        check(5)
        with pytest.raises(sc.SpindleError, match="graph version 9 is not applied"):
            c.infer_gnn([1], min_version=9)  # waits 1 s (no deadline given), then refused
        # A call for the next version waits for it, and answers on it.
        import threading
        waited = {}
        t = threading.Thread(target=lambda: waited.update(
            out=sc.Client(endpoint, model=name).infer_gnn([1, 2], min_version=6)))
        t.start()
        import time
        time.sleep(0.2)
        c.update_graph(add_edges=([7], [8]))
        g.edges += [(7, 8)]
        t.join(timeout=30)
        assert waited["out"].version == 6
        np.testing.assert_allclose(waited["out"], g.pyg(model)[[1, 2]], rtol=1e-4, atol=1e-5)
        assert c.infer_gnn([1], min_version=5).version == 6  # 5 or later
        stats = c.stats()["graph"]
        assert stats["version"] == 6 and stats["updates_applied"] == 6
        assert stats["updates_refused"] == 1
        assert stats["updates_by_door"]["capnp"] == {"applied": 6, "refused": 1}
        c.close()
        # kill -9: every acknowledged batch is in the log and comes back.
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc, endpoint = serve(tmp, name)
        c = sc.Client(endpoint, model=name, token_file=str(tmp / "token"))
        assert c.graph_version() == 6
        check(6)
        c.close()
        proc.terminate()
        proc.wait(timeout=30)
        # Offline compaction: a new dataset at version 6 that serves the same answers.
        out = tmp / f"{name}-compacted"
        subprocess.run([SPINDLE, "compact", str(tmp / "ds"), "--graph-log", str(tmp / f"{name}.log"),
                        "--out", str(out)], check=True, capture_output=True)
        proc, endpoint = start_server([SPINDLE, "serve", "--dataset", str(out), "--model",
                                       str(tmp / name), "--name", name, "--listen", "127.0.0.1:0",
                                       "--admin-token-file", str(tmp / "token"), "--graph-updates",
                                       "--graph-log", str(tmp / f"{name}-compacted.log"),
                                       "--device", "host"])
        c = sc.Client(endpoint, model=name, token_file=str(tmp / "token"))
        assert c.graph_version() == 6
        check(6)
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def redis(tmp_path):
    """A redis-server on a free loopback port, stopped after the test."""
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cli = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
    for _ in range(100):
        if subprocess.run(cli + ["PING"], capture_output=True, text=True).stdout.strip() == "PONG":
            break
        import time
        time.sleep(0.05)
    yield f"127.0.0.1:{port}", cli
    proc.terminate()
    proc.wait(timeout=30)


def wait_for(predicate, what, seconds=20):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_a_redis_stream_feeds_updates_exactly_once(setup, redis, tmp_path):
    tmp, edges, x, models = setup
    endpoint_redis, cli = redis
    model, g = models["sage"], Graph(edges, x)
    key = "tx:graph"
    log = tmp_path / "stream.log"

    def start():
        return start_server([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                             str(tmp / "sage"), "--name", "sage", "--listen", "127.0.0.1:0",
                             "--admin-token-file", str(tmp / "token"), "--graph-updates",
                             "--graph-log", str(log), "--device", "host", "--graph-stream",
                             endpoint_redis, "--graph-stream-key", key])

    def publish(**arrays):
        args = [SPINDLE, "client", "graph", "update", "--redis", endpoint_redis, "--stream", key,
                "--json"]
        for flag, a in arrays.items():
            path = tmp_path / f"{flag}.npy"
            np.save(path, a)
            args += ["--" + flag.replace("_", "-"), str(path)]
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        return json.loads(out)["id"]

    def check(c, version):
        # min_version waits (up to 1 s without a deadline) for the stream's batch.
        seeds = list(range(0, len(g.x), 7))
        out = c.infer_gnn(seeds, model="sage", min_version=version)
        assert out.version == version
        np.testing.assert_allclose(out, g.pyg(model)[seeds], rtol=1e-4, atol=1e-5)

    proc, endpoint = start()
    try:
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        publish(add_edges=np.array([[1, 2], [10, 30]], dtype=np.int64))
        g.edges += [(1, 10), (2, 30)]
        check(c, 1)
        row = np.full((1, F), 0.25, dtype=np.float32)
        publish(add_nodes=row, add_edges=np.array([[N], [0]], dtype=np.int64))
        g.x = np.vstack([g.x, row])
        g.edges += [(N, 0)]
        check(c, 2)
        # Malformed entries and a batch the graph refuses go to KEY:rejected, named.
        subprocess.run(cli + ["XADD", key, "*", "add_src", "abc", "add_dst", "abcdefgh"], check=True,
                       capture_output=True)
        subprocess.run(cli + ["XADD", key, "*", "add_edge", "x"], check=True, capture_output=True)
        publish(add_edges=np.array([[3], [100000]], dtype=np.int64))
        stream = wait_for(lambda: c.stats()["graph"]["stream"]["rejected"] == 3 and
                          c.stats()["graph"]["stream"], "3 rejected entries")
        reasons = subprocess.run(cli + ["XRANGE", key + ":rejected", "-", "+"], check=True,
                                 capture_output=True, text=True).stdout
        assert "field 'add_src' has 3 bytes" in reasons
        assert "unknown field 'add_edge'" in reasons
        assert "node 100000 out of range" in reasons
        assert stream["applied"] == 2 and stream["connected"]
        assert stream["group"] in reasons  # each server names itself in its refusals
        # Staleness (append to visible) of the two applied entries: same host, so small.
        assert stream["staleness_ms"]["count"] == 2, stream
        assert 0 <= stream["staleness_ms"]["mean"] < 10_000, stream
        check(c, 2)
        c.close()
        # kill -9, entries published while it is down, and the group rewound to
        # the stream's start (every entry delivered again): each applied once.
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        ids = np.array([5], dtype=np.int64)
        rows = np.full((1, F), -1.0, dtype=np.float32)
        publish(set_ids=ids, set_rows=rows)
        g.x[5] = rows[0]
        group = stream["group"]
        subprocess.run(cli + ["XGROUP", "SETID", key, group, "0"], check=True, capture_output=True)
        # (The log elsewhere is listed in the dataset: a plain start is refused.)
        plain = subprocess.run([SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model",
                                str(tmp / "sage"), "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=120)
        assert plain.returncode != 0 and "holds graph updates" in plain.stderr
        assert "graph-logs.txt" in plain.stderr  # the first listed log with updates, named
        proc, endpoint = start()
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        check(c, 3)
        stream = wait_for(lambda: c.stats()["graph"]["stream"]["duplicates"] == 2 and
                          c.stats()["graph"]["stream"], "2 redelivered entries skipped")
        assert stream["applied"] == 1
        pending = subprocess.run(cli + ["XPENDING", key, group], check=True, capture_output=True,
                                 text=True).stdout.split()
        assert pending[0] == "0"
        c.close()
        proc.terminate()
        proc.wait(timeout=30)
        # A compacted dataset records the stream's last entry: a server of it,
        # with a new log (so a new group), starts after that entry.
        out = tmp_path / "compacted"
        subprocess.run([SPINDLE, "compact", str(tmp / "ds"), "--graph-log", str(log), "--out",
                        str(out)], check=True, capture_output=True)
        proc, endpoint = start_server([SPINDLE, "serve", "--dataset", str(out), "--model",
                                       str(tmp / "sage"), "--name", "sage", "--listen",
                                       "127.0.0.1:0", "--admin-token-file", str(tmp / "token"),
                                       "--graph-updates", "--graph-log",
                                       str(tmp_path / "compacted.log"), "--device", "host",
                                       "--graph-stream", endpoint_redis, "--graph-stream-key", key])
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        assert c.stats()["graph"]["stream"]["group"] != group
        publish(add_edges=np.array([[7], [8]], dtype=np.int64))
        g.edges += [(7, 8)]
        check(c, 4)
        stream = c.stats()["graph"]["stream"]
        assert stream["applied"] == 1 and stream["duplicates"] == 0 and stream["rejected"] == 0
        # Redis loses everything (a restart without persistence): the follower
        # creates its group again and applies what is appended after.
        subprocess.run(cli + ["FLUSHALL"], check=True, capture_output=True)
        publish(add_edges=np.array([[9], [11]], dtype=np.int64))
        g.edges += [(9, 11)]
        wait_for(lambda: c.graph_version() == 5, "the entry after FLUSHALL", seconds=30)
        check(c, 5)
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_servers_that_do_not_apply_updates_refuse_a_logged_dataset(setup, tmp_path):
    import shutil
    tmp, edges, x, models = setup
    ds = tmp_path / "ds"
    shutil.copytree(tmp / "ds", ds, ignore=shutil.ignore_patterns("graph-logs.txt"))
    proc, endpoint = start_server([SPINDLE, "serve", "--dataset", str(ds), "--model", str(tmp / "sage"),
                                   "--name", "sage", "--listen", "127.0.0.1:0", "--admin-token-file",
                                   str(tmp / "token"), "--graph-updates", "--device", "host"])
    try:
        c = sc.Client(endpoint, model="sage", token_file=str(tmp / "token"))
        assert c.update_graph(add_edges=([1], [2])).version == 1
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (tmp_path / "one.toml").write_text(
        'coordinator = "s0"\ntoken_file = "cluster.token"\n[[server]]\nname = "s0"\n'
        'host = "127.0.0.1"\nport = 1\nmemory = 240000\n')
    for argv, who in (
            ([SPINDLE, "serve", "--dataset", str(ds), "--model", str(tmp / "sage"), "--listen",
              "127.0.0.1:0"], "serve with --graph-updates"),
            ([SPINDLE, "serve-shard", str(ds)], "feature shards"),
            ([SPINDLE, "node", "--config", str(tmp_path / "one.toml"), "--rank", "0", "--dataset",
              str(ds)], "cluster ranks")):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode != 0, argv
        assert "graph.log: holds graph updates" in r.stderr and who in r.stderr, r.stderr[-800:]


@pytest.mark.parametrize("name", ["sage", "gcn"])
def test_answers_stay_equal_to_pyg_through_compactions_while_serving(setup, tmp_path, name):
    """--graph-compact-at 1: every batch is folded into a new base on disk while
    the server serves; answers after each equal PyG's, a removed node stays
    removed, and kill -9 restarts from the last base and the log after it."""
    import shutil
    import time
    tmp, edges, x, models = setup
    model = models[name]
    ds = tmp_path / "ds"
    shutil.copytree(tmp / "ds", ds, ignore=shutil.ignore_patterns("graph-logs.txt"))
    argv = [SPINDLE, "serve", "--dataset", str(ds), "--model", str(tmp / name), "--name", name,
            "--listen", "127.0.0.1:0", "--admin-token-file", str(tmp / "token"), "--graph-updates",
            "--graph-compact-at", "1", "--device", "host"]
    g = Graph(edges, x)
    proc, endpoint = start_server(argv)
    try:
        c = sc.Client(endpoint, model=name, token_file=str(tmp / "token"))
        seeds = list(range(0, N, 7))

        def check(version):
            deadline = time.monotonic() + 60
            while c.stats()["graph"]["compaction"]["last_version"] != version:
                assert time.monotonic() < deadline, c.stats()["graph"]["compaction"]
                time.sleep(0.05)
            out, live = served(c, g, seeds + [n for n in range(N, len(g.x))], name)
            assert out.version == version
            np.testing.assert_allclose(out, g.pyg(model)[live], rtol=1e-4, atol=1e-5)

        c.update_graph(add_edges=([1, 2, 3], [10, 10, 21]))
        g.edges += [(1, 10), (2, 10), (3, 21)]
        check(1)
        g.add_node(c, np.random.default_rng(2).standard_normal((1, F)).astype(np.float32),
                   ([N, 5], [0, N]))
        check(2)
        c.update_graph(set_features=([0, N], np.full((2, F), 0.25, dtype=np.float32)))
        g.x[[0, N]] = 0.25
        check(3)
        g.remove_edge(c, *g.edges[0])
        gone = 21
        g.remove_node_and_check(c, gone, check, 5)
        with pytest.raises(sc.SpindleError, match=f"node {gone} is removed"):
            c.update_graph(add_edges=([gone], [1]))
        stats = c.stats()["graph"]["compaction"]
        assert stats["done"] >= 4 and stats["failed"] == 0 and stats["bytes_freed"] > 0
        c.close()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        bases = sorted(p.name for p in ds.iterdir() if p.name.startswith("graph.log.v"))
        assert bases == ["graph.log.v5", "graph.log.v5.base"], bases
        info = subprocess.run([SPINDLE, "info", str(ds)], capture_output=True, text=True)
        assert "graph base (compacted)" in info.stdout and "version 5" in info.stdout, info.stdout
        r = subprocess.run(argv[:6] + ["--listen", "127.0.0.1:0"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0 and "compacted while served" in r.stderr, r.stderr[-600:]
        proc, endpoint = start_server(argv)
        c = sc.Client(endpoint, model=name, token_file=str(tmp / "token"))
        assert c.graph_version() == 5
        out, live = served(c, g, seeds + [N], name)
        np.testing.assert_allclose(out, g.pyg(model)[live], rtol=1e-4, atol=1e-5)
        with pytest.raises(sc.SpindleError, match="was removed"):
            c.infer_gnn([gone])
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
