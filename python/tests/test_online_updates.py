"""Online embedding updates behind the door: `spindle serve --dlrm-model M --pdb P
--updates REDIS` follows the tables' Redis Streams (as `spindle hps publish`
writes them) into its PDB and VDB, and the L1 cache takes them at its refresh,
so a call's score changes once the rows it reads are published anew, also after
Redis comes back without its data; a NaN row is refused; such a server stops
cleanly on SIGTERM; every rank of a launched cluster takes every update
into its own PDB. Starts redis-server on a free
loopback port and stops it after. Needs numpy and the spindle binary."""
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

np = pytest.importorskip("numpy")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import cluster_toml, free_port, start_server  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
GOLDEN = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")


def start_redis(port, folder):
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        ping = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "PING"],
                              capture_output=True, text=True)
        if ping.stdout.strip() == "PONG":
            break
        time.sleep(0.05)
    return proc


@pytest.fixture
def redis(tmp_path):
    """(HOST:PORT, restart): a redis-server on a free loopback port, stopped after;
    restart() kills it and starts an empty one on the same port."""
    if not shutil.which("redis-server"):
        pytest.skip("no redis-server here (Debian: redis-server)")
    port = free_port()
    procs = [start_redis(port, tmp_path)]

    def restart():
        procs[-1].kill()
        procs[-1].wait(timeout=30)
        procs.append(start_redis(port, tmp_path))

    yield f"127.0.0.1:{port}", restart
    procs[-1].terminate()
    procs[-1].wait(timeout=30)


def publish(redis, tmp_path, table, keys, value):
    np.save(tmp_path / "k.npy", np.asarray(keys, dtype=np.int64))
    np.save(tmp_path / "v.npy", np.full((len(keys), 8), value, dtype=np.float32))
    return subprocess.run([SPINDLE, "hps", "publish", "--redis", redis, "--table", table,
                           "--keys", str(tmp_path / "k.npy"), "--vectors",
                           str(tmp_path / "v.npy")], capture_output=True, text=True)


def settled_score(c, dense, sparse, differs_from, seconds=20):
    end = time.monotonic() + seconds
    score = differs_from
    while time.monotonic() < end:
        score = c.infer_rec(dense, sparse)[0]
        if abs(score - differs_from) > 1e-6:
            return score
        time.sleep(0.1)
    return score


def sample():
    """The golden batch's first sample: its dense row and its one-key bags."""
    dense = np.load(os.path.join(GOLDEN, "dense.npy"))
    bags = []
    for t in range(3):
        idx, off = (np.load(os.path.join(GOLDEN, f"{n}{t}.npy")) for n in ("indices", "offsets"))
        bags.append([int(k) for k in idx[off[0]:off[1]]])
    return [dense[0].tolist()], [bags]


def test_published_rows_reach_the_answers_of_a_served_dlrm(tmp_path, redis):
    endpoint_of_redis, restart = redis
    proc, endpoint = start_server([SPINDLE, "serve", "--dlrm-model", GOLDEN, "--dlrm-name", "ctr",
                                   "--pdb", str(tmp_path / "pdb"), "--listen", "127.0.0.1:0",
                                   "--updates", endpoint_of_redis, "--refresh-ms", "100"])
    try:
        c = sc.Client(endpoint, model="ctr")
        dense, sparse = sample()
        before = c.infer_rec(dense, sparse)[0]
        # New rows for every key the sample reads in its first non-empty bag's table.
        table = next(t for t, bag in enumerate(sparse[0]) if bag)
        keys = sparse[0][table]
        pub = publish(endpoint_of_redis, tmp_path, f"emb{table}", keys, 3.0)
        assert pub.returncode == 0 and f"published {len(keys)} keys" in pub.stdout, pub.stderr
        after = settled_score(c, dense, sparse, before)
        assert abs(after - before) > 1e-6, "the published rows never reached the answer"
        # A NaN row is refused by the publisher, by name, and answers stay finite.
        np.save(tmp_path / "nan.npy", np.full((len(keys), 8), np.nan, dtype=np.float32))
        bad = subprocess.run([SPINDLE, "hps", "publish", "--redis", endpoint_of_redis, "--table",
                              f"emb{table}", "--keys", str(tmp_path / "k.npy"), "--vectors",
                              str(tmp_path / "nan.npy")], capture_output=True, text=True)
        assert bad.returncode != 0 and "rows must be finite" in bad.stderr, bad.stderr
        # Redis back without its data: the server makes its group again and follows on.
        restart()
        pub = publish(endpoint_of_redis, tmp_path, f"emb{table}", keys, -2.0)
        assert pub.returncode == 0, pub.stderr
        again = settled_score(c, dense, sparse, after, seconds=40)
        assert abs(again - after) > 1e-6, "no update applied after Redis came back empty"
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_a_server_refreshing_its_cache_stops_cleanly(tmp_path):
    """SIGTERM while the L1 cache refreshes every 100 ms: the cache actor is ended
    before the parameter server's stack it reads (it crashed the process, -11)."""
    proc, endpoint = start_server([SPINDLE, "serve", "--dlrm-model", GOLDEN, "--dlrm-name", "ctr",
                                   "--pdb", str(tmp_path / "pdb"), "--listen", "127.0.0.1:0",
                                   "--refresh-ms", "100"])
    dense, sparse = sample()
    assert sc.Client(endpoint, model="ctr").infer_rec(dense, sparse).shape == (1,)
    time.sleep(0.3)  # a few refreshes
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def launched_doors(proc, ranks, lines, seconds=120):
    """The door endpoints `spindle launch` printed ("[rank R] listening HOST:PORT");
    its output lines are appended to `lines`."""
    doors = {}
    deadline = time.time() + seconds

    def read():
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    while len(doors) < ranks:
        assert proc.poll() is None and time.time() < deadline, "".join(lines)
        for line in list(lines):
            m = re.match(r"^\[rank (\d+)\] listening (\S+)", line)
            if m:
                doors[int(m.group(1))] = m.group(2)
        time.sleep(0.1)
    return [doors[r] for r in range(ranks)]


def test_every_cluster_rank_follows_the_updates(tmp_path, redis):
    """Two launched ranks, each with a door and its own PDB, both given one
    --updates-group: each rank reads in a group of its own (GROUP.rank-N), so a
    published row reaches the answers of both doors (in one shared group each
    update would reach one rank only, and the doors would answer differently)."""
    endpoint_of_redis, _ = redis
    ports = [free_port(), free_port()]
    toml = cluster_toml(tmp_path / "c.toml", ports, {1: free_port()})
    env = dict(os.environ, SPINDLE_CLUSTER_TOKEN="0123456789abcdef0123456789abcdef",
               SPINDLE_PROGRESS="0")
    proc = subprocess.Popen(
        [SPINDLE, "launch", "--config", str(toml), "--listen", "127.0.0.1:0", "--dlrm-model",
         GOLDEN, "--dlrm-name", "ctr", "--pdb", str(tmp_path / "pdb"), "--updates",
         endpoint_of_redis, "--updates-group", "g", "--refresh-ms", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        doors = launched_doors(proc, 2, lines)
        clients = [sc.Client(d, model="ctr") for d in doors]
        dense, sparse = sample()
        before = [c.infer_rec(dense, sparse)[0] for c in clients]
        assert abs(before[0] - before[1]) < 1e-6, before
        table = next(t for t, bag in enumerate(sparse[0]) if bag)
        pub = publish(endpoint_of_redis, tmp_path, f"emb{table}", sparse[0][table], 3.0)
        assert pub.returncode == 0, pub.stderr
        after = [settled_score(c, dense, sparse, b) for c, b in zip(clients, before)]
        for rank in (0, 1):
            assert abs(after[rank] - before[rank]) > 1e-6, f"rank {rank} never took the update"
        assert abs(after[0] - after[1]) < 1e-6, after
        host, port = endpoint_of_redis.split(":")
        groups = subprocess.run(["redis-cli", "-h", host, "-p", port, "XINFO", "GROUPS",
                                 f"spindle:updates:emb{table}"], capture_output=True, text=True)
        for rank in (0, 1):
            assert f"g.rank-{rank}" in groups.stdout, groups.stdout
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0, "".join(lines)
