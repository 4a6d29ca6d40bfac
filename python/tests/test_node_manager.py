"""Hera's node resource manager (Algorithm 3) and the PARTIES-style baseline on
a live `spindle serve`: the DLRM's worker pool is resized from its monitored
tail latency and traffic, and the decisions show in stats."""
import os
import subprocess
import tempfile
import time
import json

import numpy as np
import pytest

import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import start_server  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
GOLDEN = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")


def golden_batch():
    dense = np.load(os.path.join(GOLDEN, "dense.npy")).astype(np.float32).reshape(6, 13)
    sparse = []
    for t in range(3):
        idx = np.load(os.path.join(GOLDEN, "indices%d.npy" % t)).tolist()
        off = np.load(os.path.join(GOLDEN, "offsets%d.npy" % t)).tolist()
        sparse.append([idx[off[b]:off[b + 1]] for b in range(6)])
    return dense, [list(s) for s in zip(*sparse)]  # per sample, then per table


def serve(tmp, policy, extra=()):
    g = tmp + "/g"
    if not os.path.exists(g):
        subprocess.run([SPINDLE, "generate", "--scale", "8", "--feature-dim", "8", "--out", g],
                       check=True, capture_output=True)
        subprocess.run([SPINDLE, "model", "init", "--arch", "gcn", "--in", "8", "--hidden", "8",
                        "--classes", "2", "--out-dir", tmp + "/m"], check=True, capture_output=True)
    return start_server([SPINDLE, "serve", "--dataset", g, "--model", tmp + "/m", "--listen",
                         "127.0.0.1:0", "--admin-token-file", tmp + "/token", "--dlrm-model",
                         GOLDEN, "--dlrm-name", "ctr", "--pdb", tmp + "/pdb-" + policy,
                         "--dlrm-instances", "3", "--node-manager", policy,
                         "--manager-max-workers", "4", *extra])


def admin(endpoint, tmp, *args):
    out = subprocess.run([SPINDLE, "client", "--connect", endpoint, "--token-file", tmp + "/token",
                          "admin", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def manager_of(endpoint, tmp):
    return json.loads(admin(endpoint, tmp, "stats"))["models"]["ctr"]


def drive(c, seconds):
    dense, sparse = golden_batch()
    end = time.time() + seconds
    while time.time() < end:
        c.infer_rec(dense, sparse, model="ctr")
        time.sleep(0.005)


@pytest.mark.parametrize("policy", ["hera", "parties"])
def test_the_manager_resizes_the_pool_from_the_window(policy):
    tmp = tempfile.mkdtemp(prefix="spindle-manager-")
    profile = {"machine": {"cores": 4, "llc_ways": 1, "mem_bw_gbps": 10},
               "models": {"ctr": {"sla_ms": 50, "qps": [[1000], [2000], [3000], [4000]],
                                  "mem_bw_gbps": [0.1, 0.2, 0.3, 0.4]}}}
    with open(tmp + "/p.json", "w") as f:
        json.dump(profile, f)
    proc, endpoint = serve(tmp, policy, ["--profiles", tmp + "/p.json"])
    try:
        admin(endpoint, tmp, "set", "ctr", "manager_period_ms", "150")
        with sc.Client(endpoint, token_file=tmp + "/token") as c:
            # Light load, tail far under the SLA: Hera sizes for the traffic at once (1
            # worker); PARTIES gives back one worker per period (3 -> 2 -> 1), and only in
            # a period whose tail had slack: on a loaded machine some periods have none,
            # so the load goes on until the pool is down (generous limit, not a timing).
            deadline = time.time() + 30
            drive(c, 1.5)
            m = manager_of(endpoint, tmp)
            while m["workers"] != 1 and time.time() < deadline:
                drive(c, 0.5)
                m = manager_of(endpoint, tmp)
            assert m["workers"] == 1, m
            assert m["manager"]["policy"] == policy and m["manager"]["slack"] < 0.8, m
            # An SLA the model cannot meet: Hera jumps to the most workers it may use in
            # one decision; PARTIES climbs one worker per decision.
            admin(endpoint, tmp, "set", "ctr", "manager_sla_ms", "0.0001")
            import threading
            stop = threading.Event()

            def load():
                while not stop.is_set():
                    drive(c, 0.05)

            t = threading.Thread(target=load)
            t.start()
            steps = []
            end = time.time() + 2.0
            while time.time() < end:
                d = manager_of(endpoint, tmp).get("manager", {})
                if d and d["workers"] != d["workers_before"]:
                    steps.append(d["workers"] - d["workers_before"])
                time.sleep(0.03)
            stop.set()
            t.join()
            m = manager_of(endpoint, tmp)
            assert m["workers"] == 4, m
            assert steps, m
            if policy == "hera":
                assert max(steps) == 3, steps  # 1 -> 4 at once
            else:
                assert set(steps) == {1}, steps
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_hera_needs_a_profile_of_every_managed_model():
    tmp = tempfile.mkdtemp(prefix="spindle-manager-")
    with open(tmp + "/p.json", "w") as f:
        json.dump({"machine": {"cores": 2, "mem_bw_gbps": 1}, "models": {}}, f)
    subprocess.run([SPINDLE, "generate", "--scale", "8", "--feature-dim", "8", "--out", tmp + "/g"],
                   check=True, capture_output=True)
    subprocess.run([SPINDLE, "model", "init", "--arch", "gcn", "--in", "8", "--hidden", "8",
                    "--classes", "2", "--out-dir", tmp + "/m"], check=True, capture_output=True)
    r = subprocess.run([SPINDLE, "serve", "--dataset", tmp + "/g", "--model", tmp + "/m", "--listen",
                        "127.0.0.1:0", "--dlrm-model", GOLDEN, "--dlrm-name", "ctr", "--pdb",
                        tmp + "/pdb", "--node-manager", "hera", "--profiles", tmp + "/p.json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "no profile for model 'ctr'" in r.stderr, r.stderr
