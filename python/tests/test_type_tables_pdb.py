"""A typed model's featureless node type read through the parameter server
(serve --type-table-pdb): the table's rows are loaded into the RocksDB PDB once
and read per batch through the L1 cache, not held by the model. Answers equal
PyG's on the full graph and are bit-identical to the table held in memory; a
second start reuses the loaded rows (through a VDB too). A PDB folder that
cannot be opened, settings without a folder and a table whose rows are not
model.toml's are refused by name, and so are the flags on a server with no
typed table to move. Calls move the tables' counters in Admin stats and
/metrics; the load is logged; a repository roll drops the old version's table
once it is unloaded; a second server on a folder in use is refused; cluster
ranks (node, launch) read through their own folders."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import spindle_client as sc  # noqa: E402
from serving import cluster_toml, free_port, start_server  # noqa: E402
from spindle_client.export import export_pyg, save_graph  # noqa: E402
from test_export_hetero_embedding import answers, build, graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("pdb")
    data = graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    model = build(data)
    export_pyg(model.gnn, str(tmp / "rec"), name="rec", fanouts=[-1, -1], check=data,
               embeddings={"user": model.user_emb}, spindle=SPINDLE)
    return tmp, data, model


def serve(tmp, model_dir, *extra):
    return [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model", str(model_dir),
            "--listen", "127.0.0.1:0", "--device", "host", *extra]


def served_answers(argv, data):
    proc, endpoint = start_server(argv)
    try:
        c = sc.Client(endpoint)
        return {t: np.asarray(c.infer_gnn(list(range(data[t].num_nodes)), model="rec",
                                          node_type=t)) for t in ("user", "item")}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_parameter_server_path_answers_as_pyg_and_as_the_table_in_memory(exported):
    tmp, data, model = exported
    want = {t: v.numpy() for t, v in answers(model, data).items()}
    held = served_answers(serve(tmp, tmp / "rec"), data)
    pdb = tmp / "pdb"
    argv = serve(tmp, tmp / "rec", "--type-table-pdb", str(pdb), "--type-table-min-mb", "0")
    first = served_answers(argv, data)
    # The PDB already holds the rows (reused), now with a VDB between L1 and the PDB.
    again = served_answers(argv + ["--type-table-vdb", "hash_map"], data)
    for t, w in want.items():
        np.testing.assert_allclose(first[t], w, rtol=1e-4, atol=1e-4 * np.abs(w).max(),
                                   err_msg=t)
        np.testing.assert_array_equal(first[t], held[t], err_msg=t)
        np.testing.assert_array_equal(again[t], held[t], err_msg=t)
    assert pdb.is_dir()


def test_a_small_table_stays_in_memory_below_the_threshold(exported):
    tmp, _, _ = exported
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb2"),
                             "--workload", "20"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "read from the parameter server, not held" not in r.stderr, r.stderr
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb2"),
                             "--type-table-min-mb", "0", "--workload", "20"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "node type 'user': table embedding.user.weight (50 x 8" in r.stderr, r.stderr


def test_a_pdb_folder_that_cannot_be_opened_or_is_not_named_is_refused(exported):
    tmp, _, _ = exported
    bad = tmp / "not_a_folder"
    bad.write_text("a file\n")
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(bad),
                             "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert f"--type-table-pdb {bad}" in r.stderr, r.stderr
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "--type-table-pdb DIR serves typed tables: name the folder" in r.stderr, r.stderr


def test_a_table_whose_rows_are_not_model_toml_s_is_refused_by_name(exported):
    tmp, _, _ = exported
    other = tmp / "rec_rows"
    shutil.copytree(tmp / "rec", other)
    toml = other / "model.toml"
    # The edit unchecked (its [verified] table dropped), as a hand-written model would be.
    kept, skipping = [], False
    for line in toml.read_text().splitlines(keepends=True):
        if line.startswith("["):
            skipping = line.strip() == "[verified]"
        if not skipping:
            kept.append(line.replace("embedding_rows = 50", "embedding_rows = 49"))
    toml.write_text("".join(kept))
    r = subprocess.run(serve(tmp, other, "--type-table-pdb", str(tmp / "pdb3"),
                             "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert ("node type 'user': " in r.stderr and "tensor embedding.user.weight is [50, 8], "
            "model.toml says [49, 8]" in r.stderr), r.stderr


def start_with_metrics(argv):
    """Runs a serve command with --metrics 127.0.0.1:0; returns (process, the
    Cap'n Proto endpoint, the metrics URL)."""
    proc = subprocess.Popen(argv + ["--metrics", "127.0.0.1:0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    metrics = None
    for line in proc.stdout:
        if line.startswith("metrics "):
            metrics = line.split()[1]
        if line.startswith("listening "):
            return proc, line.split()[1], metrics
    proc.kill()
    raise AssertionError("server did not start")


def metric(text, family, **labels):
    """The value of `family`'s sample with exactly these labels (model, type, ...)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{family}\{{{re.escape(want)}\}} (\S+)$", text, re.M)
    assert m, f"no {family}{{{want}}} in:\n{text}"
    return float(m.group(1))


def test_calls_move_the_tables_counters_in_stats_and_metrics(exported):
    tmp, data, _ = exported
    token = tmp / "stats.token"
    argv = serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb_stats"),
                 "--type-table-min-mb", "0", "--admin-token-file", str(token))
    proc, endpoint, url = start_with_metrics(argv)
    try:
        c = sc.Client(endpoint, token_file=str(token))
        first = c.stats()["models"]["rec"]["type_tables"]["user"]
        assert first["table"].startswith("embedding.user.weight@sha256:"), first
        assert first["rows_loaded"] == 50 and first["bytes_loaded"] == 50 * 8 * 4, first
        c.infer_gnn(list(range(data["user"].num_nodes)), model="rec", node_type="user")
        after = c.stats()["models"]["rec"]["type_tables"]["user"]
        assert after["lookups"] > first["lookups"], (first, after)
        assert after["l1_misses"] > first["l1_misses"], (first, after)
        assert after["pdb_reads"] > first["pdb_reads"], (first, after)
        assert after["bytes_read"] >= after["pdb_reads"] * 8 * 4, after
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        labels = {"model": "rec", "type": "user"}
        assert metric(text, "spindle_type_table_lookups_total", **labels) >= after["lookups"]
        assert metric(text, "spindle_type_table_lower_rows_total", **labels,
                      level="pdb") >= after["pdb_reads"]
        assert metric(text, "spindle_type_table_loaded_rows", **labels) == 50
        assert "# TYPE spindle_type_table_l1_total counter" in text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_load_is_logged_for_a_server_without_a_terminal(exported):
    tmp, _, _ = exported
    env = dict(os.environ, SPINDLE_PROGRESS="0")  # no bar: the log alone says it
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb_log"),
                             "--type-table-min-mb", "0", "--workload", "5"),
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    into = f"load embedding.user.weight into {tmp / 'pdb_log'}"
    assert re.search(rf"^\[I [^]]*\] {re.escape(into)}: 50 rows of 8 floats$", r.stderr,
                     re.M), r.stderr
    assert re.search(rf"^\[I [^]]*\] {re.escape(into)}: 50 rows in [0-9.]+ s$", r.stderr,
                     re.M), r.stderr


def test_the_flags_are_refused_where_no_typed_table_is_served(exported):
    tmp, _, _ = exported
    golden = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")
    r = subprocess.run([SPINDLE, "serve", "--rec-model", "ctr=" + golden, "--listen",
                        "127.0.0.1:0", "--type-table-pdb", str(tmp / "pdb_rec"),
                        "--type-table-vdb", "hash_map"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert ("--type-table-pdb, --type-table-vdb: this server serves no GNN" in r.stderr), r.stderr
    untyped = tmp / "untyped"
    subprocess.run([SPINDLE, "model", "init", "--arch", "graphsage", "--in", "4", "--hidden",
                    "8", "--classes", "3", "--out-dir", str(untyped)], check=True,
                   capture_output=True)
    r = subprocess.run(serve(tmp, untyped, "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert (f"--type-table-min-mb: no GNN served at start ({untyped}) has a featureless node "
            "type read from an embedding table" in r.stderr), r.stderr
    assert not (tmp / "pdb_rec").exists()


def door_of(proc, timeout=120):
    """The "listening HOST:PORT" endpoint a process prints, or a failure after `timeout` s."""
    found = []

    def read():
        for line in proc.stdout:
            if line.startswith("listening "):
                found.append(line.split()[1])
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    assert found, "no door opened"
    return found[0]


def test_cluster_ranks_read_their_tables_through_their_own_folders(exported):
    tmp, data, _ = exported
    held = served_answers(serve(tmp, tmp / "rec"), data)
    ports = [free_port(), free_port()]
    toml = tmp / "cluster.toml"
    toml.write_text('coordinator = "s0"\n' + "".join(
        f'[[server]]\nname = "s{r}"\nhost = "127.0.0.1"\nport = {p}\nmemory = 1000000\n'
        for r, p in enumerate(ports)))
    env = dict(os.environ, SPINDLE_CLUSTER_TOKEN="0123456789abcdef0123456789abcdef",
               SPINDLE_PROGRESS="0")
    ranks, logs = [], []
    try:
        for rank in (1, 0):  # each rank its own folder (RocksDB locks a folder to one process)
            log = open(tmp / f"rank{rank}.log", "w")
            logs.append(log)
            extra = ["--expect", "1"] if rank == 0 else []
            ranks.append(subprocess.Popen(
                [SPINDLE, "node", "--config", str(toml), "--rank", str(rank), "--dataset",
                 str(tmp / "ds"), "--model", str(tmp / "rec"), "--listen", "127.0.0.1:0",
                 "--admin-token-file", str(tmp / f"rank{rank}.token"), "--type-table-pdb",
                 str(tmp / f"pdb_rank{rank}"), "--type-table-min-mb", "0", *extra],
                stdout=subprocess.PIPE, stderr=log, text=True, env=env))
        doors = {1: door_of(ranks[0]), 0: door_of(ranks[1])}
        for rank, endpoint in doors.items():
            c = sc.Client(endpoint, token_file=str(tmp / f"rank{rank}.token"))
            for t in ("user", "item"):
                got = np.asarray(c.infer_gnn(list(range(data[t].num_nodes)), model="rec",
                                             node_type=t))
                np.testing.assert_allclose(got, held[t], rtol=1e-6, atol=1e-6,
                                           err_msg=f"rank {rank} {t}")
            # Rank 1's door runs its own pipelines: its own folder's counters moved.
            st = c.stats()["models"]["rec"]["type_tables"]["user"]
            assert st["rows_loaded"] == 50 and st["lookups"] > 0, (rank, st)
            assert (tmp / f"pdb_rank{rank}").is_dir()
    finally:
        for p in ranks:
            p.terminate()
        for p in ranks:
            p.wait(timeout=30)
        for log in logs:
            log.close()
    for rank in (0, 1):
        text = (tmp / f"rank{rank}.log").read_text()
        assert "table embedding.user.weight (50 x 8, 0 MiB) read from the parameter server" in text, text


def test_a_roll_drops_the_old_weights_table_once_its_version_is_unloaded(exported):
    tmp, data, model = exported
    repo = tmp / "repo"
    shutil.copytree(tmp / "rec", repo / "rec" / "1")
    token, log = tmp / "roll.token", tmp / "roll.log"
    argv = [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model-repository", str(repo),
            "--listen", "127.0.0.1:0", "--device", "host", "--admin-token-file", str(token),
            "--type-table-pdb", str(tmp / "pdb_roll"), "--type-table-min-mb", "0"]
    old = hashlib.sha256((repo / "rec" / "1" / "weights.safetensors").read_bytes()).hexdigest()
    with torch.no_grad():  # version 2: other rows in the table
        model.user_emb.weight.mul_(2.0)
    try:
        export_pyg(model.gnn, str(repo / "rec" / "2"), name="rec", fanouts=[-1, -1], check=data,
                   embeddings={"user": model.user_emb}, spindle=SPINDLE)
        v2 = {t: v.numpy() for t, v in answers(model, data).items()}
    finally:
        with torch.no_grad():
            model.user_emb.weight.mul_(0.5)
    shutil.move(str(repo / "rec" / "2"), str(tmp / "rec_v2"))  # the server starts on version 1
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            endpoint = door_of(proc)
            shutil.move(str(tmp / "rec_v2"), str(repo / "rec" / "2"))
            c = sc.Client(endpoint, token_file=str(token))
            c.load_model("rec", "")  # the repository's versions now: 2, and 1 unloaded
            got = np.asarray(c.infer_gnn(list(range(data["user"].num_nodes)), model="rec",
                                         node_type="user"))
            np.testing.assert_allclose(got, v2["user"], rtol=1e-4,
                                       atol=1e-4 * np.abs(v2["user"]).max())
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log.read_text()
    assert f"dropped embedding.user.weight@sha256:{old}: other weights' rows" in text, text
    new = hashlib.sha256((repo / "rec" / "2" / "weights.safetensors").read_bytes()).hexdigest()
    assert f"dropped embedding.user.weight@sha256:{new}" not in text, text


def test_launch_gives_each_rank_its_own_folder(exported):
    tmp, data, _ = exported
    held = served_answers(serve(tmp, tmp / "rec"), data)
    ports = [free_port(), free_port()]
    door0, door1 = free_port(), free_port()
    toml = cluster_toml(tmp / "launch.toml", ports, {1: door1})
    env = dict(os.environ, SPINDLE_CLUSTER_TOKEN="0123456789abcdef0123456789abcdef",
               SPINDLE_PROGRESS="0")
    folder = tmp / "pdb_launch"
    proc = subprocess.Popen(
        [SPINDLE, "launch", "--config", str(toml), "--dataset", str(tmp / "ds"), "--model",
         str(tmp / "rec"), "--listen", f"127.0.0.1:{door0}", "--type-table-pdb", str(folder),
         "--type-table-min-mb", "0", "--type-table-vdb", "hash_map", "--type-table-vdb-mb", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []

    def read():
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.time() + 120
        while not all(any(x.startswith(f"[rank {r}] listening ") for x in lines) for r in (0, 1)):
            assert proc.poll() is None and time.time() < deadline, "".join(lines)
            time.sleep(0.1)
        for port in (door0, door1):
            c = sc.Client(f"127.0.0.1:{port}")
            for t in ("user", "item"):
                got = np.asarray(c.infer_gnn(list(range(data[t].num_nodes)), model="rec",
                                             node_type=t))
                np.testing.assert_allclose(got, held[t], rtol=1e-6, atol=1e-6,
                                           err_msg=f"door {port} {t}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    text = "".join(lines)
    for rank in (0, 1):
        assert (folder / f"rank-{rank}").is_dir(), text
        assert re.search(rf"^\[rank {rank}\] .*read from the parameter server, not held$", text,
                         re.M), text


def test_a_second_server_on_a_folder_in_use_is_refused(exported):
    """One server per folder: what lets a server drop the tables no model of its own reads."""
    tmp, data, _ = exported
    folder = tmp / "pdb_shared"
    argv = serve(tmp, tmp / "rec", "--type-table-pdb", str(folder), "--type-table-min-mb", "0")
    proc, endpoint = start_server(argv)
    try:
        second = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(folder),
                                      "--type-table-min-mb", "0", "--workload", "5"),
                                capture_output=True, text=True, timeout=120)
        assert second.returncode != 0, second.stderr
        assert f"--type-table-pdb {folder}: " in second.stderr, second.stderr
        assert "lock" in second.stderr.lower(), second.stderr
        c = sc.Client(endpoint)  # the first one goes on serving from the folder
        got = np.asarray(c.infer_gnn(list(range(data["user"].num_nodes)), model="rec",
                                     node_type="user"))
        assert got.shape[0] == data["user"].num_nodes
    finally:
        proc.terminate()
        proc.wait(timeout=30)

