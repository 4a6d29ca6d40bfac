#!/usr/bin/env python3
"""Visibility of graph updates on a 3-rank cluster beside one server, same run:
each rank (and the single server) follows the same Redis Stream; this script
appends a batch of 100 new edges (XADD), and from the moment Redis acknowledges
it polls every door's graph version until each shows it. Prints p50/p99 of the
time until every door sees a batch, for the cluster and for the single server,
idle and while a closed-loop GNN load runs on the cluster's coordinator door.

    usage: bench/cluster_graph_visibility.py SPINDLE [BATCHES=200] [SCALE=16]
    (needs pycapnp and numpy, and redis-server; everything on 127.0.0.1)
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

_python = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
sys.path.insert(0, _python)
sys.path.insert(0, os.path.join(_python, "tests"))
import spindle_client as sc  # noqa: E402
from serving import free_port  # noqa: E402  (python/tests/serving.py)


class Redis:
    """XADD over RESP, enough for appending binary fields."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))

    def xadd(self, key, fields):
        parts = [b"XADD", key.encode(), b"*"]
        for k, v in fields.items():
            parts += [k.encode(), v]
        self.s.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        reply = b""
        while not reply.endswith(b"\r\n"):
            reply += self.s.recv(4096)
        if not reply.startswith(b"$"):
            raise SystemExit("XADD failed: " + reply.decode(errors="replace"))
        while reply.count(b"\r\n") < 2:
            reply += self.s.recv(4096)


def start(argv, log, what="listening "):
    proc = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    for _ in range(1800):
        for line in open(log).read().splitlines():
            if line.startswith(what):
                return proc, line.split()[1]
        if proc.poll() is not None:
            raise SystemExit(f"{argv[1]} did not start:\n" + open(log).read()[-2000:])
        time.sleep(0.1)
    raise SystemExit("did not start in 180 s: " + " ".join(argv[:4]))


def visibility(redis, doors, batches, nodes, rng, first_version):
    """Seconds from XADD's reply until every door shows each batch's version."""
    out = []
    for i in range(batches):
        src = rng.integers(0, nodes, 100).astype(np.int64)
        dst = rng.integers(0, nodes, 100).astype(np.int64)
        redis.xadd("spindle:graph", {"add_src": src.tobytes(), "add_dst": dst.tobytes()})
        t0 = time.perf_counter()
        want = first_version + i + 1
        pending = list(doors)
        while pending:
            pending = [d for d in pending if d.graph_version() < want]
        out.append(time.perf_counter() - t0)
    return np.array(out) * 1e3


def main():
    spindle = sys.argv[1]
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    scale = sys.argv[3] if len(sys.argv) > 3 else "16"
    work = tempfile.mkdtemp(prefix="spindle-visibility-")
    procs = []
    try:
        rport = free_port()
        procs.append(subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no", "--dir", work],
                                      stdout=subprocess.DEVNULL))
        time.sleep(0.5)
        redis = Redis(rport)
        data, model = os.path.join(work, "data"), os.path.join(work, "sage")
        env = dict(os.environ, SPINDLE_PROGRESS="0")
        subprocess.run([spindle, "generate", "--scale", scale, "--feature-dim", "64", "--out", data],
                       check=True, capture_output=True, env=env)
        subprocess.run([spindle, "model", "init", "--arch", "graphsage", "--in", "64", "--hidden",
                        "64", "--classes", "8", "--seed", "1", "--out-dir", model],
                       check=True, capture_output=True, env=env)
        token = os.path.join(work, "token")
        stream = ["--graph-updates", "--graph-stream", f"127.0.0.1:{rport}"]
        config = os.path.join(work, "cluster.toml")
        with open(config, "w") as f:
            f.write(f'coordinator = "r0"\ntoken_file = "{work}/cluster.token"\n')
            for r in range(3):
                f.write(f'[[server]]\nname = "r{r}"\nhost = "127.0.0.1"\nport = {free_port()}\n'
                        f"memory = 2000000000\n")
        doors = []
        for rank in (1, 2, 0):
            argv = [spindle, "node", "--config", config, "--rank", str(rank), "--dataset", data,
                    "--model", model, "--listen", "127.0.0.1:0", "--admin-token-file", token,
                    *stream] + (["--expect", "2"] if rank == 0 else [])
            if rank == 0:
                p, endpoint = start(argv, os.path.join(work, f"rank{rank}.log"))
                doors.append(endpoint)
                procs.append(p)
            else:
                procs.append(subprocess.Popen(argv, stdout=open(os.path.join(work, f"rank{rank}.log"), "w"),
                                              stderr=subprocess.STDOUT))
        for rank in (1, 2):
            for _ in range(1800):
                lines = [l for l in open(os.path.join(work, f"rank{rank}.log")).read().splitlines()
                         if l.startswith("listening ")]
                if lines:
                    doors.append(lines[0].split()[1])
                    break
                time.sleep(0.1)
        single, single_endpoint = start([spindle, "serve", "--dataset", data, "--model", model,
                                         "--name", "sage", "--listen", "127.0.0.1:0",
                                         "--admin-token-file", token, "--graph-log",
                                         os.path.join(work, "single.log"), *stream, "--device",
                                         "host"], os.path.join(work, "single.log.txt"))
        procs.append(single)
        cluster = [sc.Client(d, token_file=token) for d in doors]
        one = [sc.Client(single_endpoint, token_file=token)]
        nodes = 1 << int(scale)
        rng = np.random.default_rng(1)
        version = one[0].graph_version()
        both = visibility(redis, cluster + one, 5, nodes, rng, version)  # warm-up
        version += 5
        idle_cluster = visibility(redis, cluster, batches, nodes, rng, version)
        version += batches
        idle_one = visibility(redis, one, batches, nodes, rng, version)
        version += batches
        # While a closed loop (4 in flight) runs against the coordinator's door.
        load = subprocess.Popen([spindle, "client", "--connect", doors[0], "--model", "graphsage",
                                 "load", "--requests", "300000", "--clients", "4", "--seeds",
                                 f"uniform:{nodes}"],
                                stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(work, "load.log"), "w"))
        procs.append(load)
        time.sleep(2)
        before = cluster[0].stats()["models"]["graphsage"]["requests"]
        t0 = time.perf_counter()
        busy_cluster = visibility(redis, cluster, batches, nodes, rng, version)
        rate = (cluster[0].stats()["models"]["graphsage"]["requests"] - before) / (time.perf_counter() - t0)
        if os.environ.get("SPINDLE_BENCH_DEBUG"):
            print(cluster[0].stats())
            print(open(os.path.join(work, "load.log")).read()[-1500:])
        if load.poll() is not None:
            raise SystemExit("the load ended early: " + open(os.path.join(work, "load.log")).read()[-1500:])
        pct = lambda a, q: np.percentile(a, q)
        print(f"graph update visibility: R-MAT s{scale}, batches of 100 edges appended to a Redis "
              f"Stream, {batches} per row (this machine, same run)")
        print(f"  one server:            p50 {pct(idle_one, 50):6.2f} ms  p99 {pct(idle_one, 99):6.2f} ms")
        print(f"  3-rank cluster, idle:  p50 {pct(idle_cluster, 50):6.2f} ms  p99 "
              f"{pct(idle_cluster, 99):6.2f} ms  (every rank's door; p99 ratio "
              f"{pct(idle_cluster, 99) / pct(idle_one, 99):.2f}x one server)")
        print(f"  3-rank cluster, under a closed-loop load (4 in flight at rank 0's door): p50 "
              f"{pct(busy_cluster, 50):6.2f} ms  p99 {pct(busy_cluster, 99):6.2f} ms  "
              f"(the load ran at {rate:.0f} calls/s meanwhile)")
        for c in cluster + one:
            c.close()
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
