#!/usr/bin/env python3
"""A typed GNN whose featureless node type has a large learnt table, served with
the table in memory and through the parameter server (serve --type-table-pdb),
same run, same machine: the server's resident memory and seeds/s of each.

The graph: USERS featureless users (a USERS x 64 nn.Embedding table), 100k
items with 32 features; each user rates 4 items (edge types (user, rates,
item) and (item, rated_by, user)). The model: PyG's to_hetero of
SAGEConv -> relu -> SAGEConv (64 -> 16), fanouts [10, 5], exported with
export_pyg (embeddings={"user": table}). Load: `spindle client load` closed
loop, one user seed a call, 16 calls in flight. RSS is the server's VmRSS
after the load (and VmHWM, its peak since start). The parameter server runs
twice: L1 slots for 10% of the rows (the default) and for 50%; then with the
hash_map VDB between L1 and the PDB, capped at 64 MiB per table and at 4 GiB
(more than the table: as it was before the cap).

    usage: bench/type_tables_pdb.py SPINDLE [USERS=2000000] [REQUESTS=20000]
    (needs torch, torch_geometric, numpy)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

ITEMS, F, DIM = 100_000, 32, 64
VDB_MB = (64, 4096)  # the hash_map VDB's cap (--type-table-vdb-mb): one small, one past the table


def rss_mib(pid):
    got = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                got[line.split(":")[0]] = int(line.split()[1]) / 1024
    return got


def write_model_and_graph(tmp, users):
    import torch
    import torch_geometric.nn as pyg_nn
    from torch_geometric.data import HeteroData
    from pyg_models import two_sage
    from spindle_client.export import export_pyg, save_graph

    rng = np.random.default_rng(1)
    d = HeteroData()
    d["user"].num_nodes = users
    d["item"].x = torch.from_numpy(rng.standard_normal((ITEMS, F)).astype(np.float32))
    ei = np.stack([np.repeat(np.arange(users), 4), rng.integers(0, ITEMS, 4 * users)])
    d["user", "rates", "item"].edge_index = torch.from_numpy(ei)
    d["item", "rated_by", "user"].edge_index = torch.from_numpy(ei[::-1].copy())
    save_graph(d, os.path.join(tmp, "graph"))
    torch.manual_seed(0)
    table = torch.nn.Embedding(users, DIM)
    gnn = pyg_nn.to_hetero(two_sage(64, 16), d.metadata(), aggr="sum")
    small = {"user": torch.zeros(4, DIM), "item": torch.zeros(4, F)}
    tiny = torch.zeros(2, 1, dtype=torch.long)
    with torch.no_grad():  # lazy widths from a 4-node graph of the same types
        gnn(small, {e: tiny for e in d.edge_types})
    export_pyg(gnn.eval(), os.path.join(tmp, "model"), name="rec", fanouts=[10, 5],
               metadata=d.metadata(), embeddings={"user": table}, check=False)


def run(spindle, tmp, users, requests, extra):
    argv = [spindle, "serve", "--dataset", os.path.join(tmp, "ds"), "--model",
            os.path.join(tmp, "model"), "--listen", "127.0.0.1:0", "--device", "host",
            "--calibration", os.path.join(tmp, "calibration.json"), *extra]
    started = time.time()
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
    endpoint = None
    for line in proc.stdout:
        if line.startswith("listening "):
            endpoint = line.split()[1]
            break
    start_s = time.time() - started
    try:
        r = subprocess.run([spindle, "client", "--connect", endpoint, "--model", "rec", "load",
                            "--seeds", f"uniform:{users}", "--node-type", "user", "--requests",
                            str(requests), "--warmup", "2000", "--clients", "16", "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        report = json.loads(r.stdout)
        mem = rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
    with open(os.path.join(tmp, "serve.log")) as f:  # which path served it, said by the server
        assert ("read from the parameter server, not held" in f.read()) == bool(extra), argv
    return {"start_s": round(start_s, 1), "rss_mib": round(mem["VmRSS"]),
            "peak_rss_mib": round(mem["VmHWM"]), "load": report}


def main():
    spindle = os.path.abspath(sys.argv[1])
    users = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 20_000
    tmp = tempfile.mkdtemp(prefix="type_tables_pdb_")
    try:
        write_model_and_graph(tmp, users)
        subprocess.run([spindle, "prepare", "--input", os.path.join(tmp, "graph"), "--out",
                        os.path.join(tmp, "ds")], check=True, capture_output=True)
        subprocess.run([spindle, "calibrate", os.path.join(tmp, "ds"), "--plot", "", "--out",
                        os.path.join(tmp, "calibration.json")], check=True, capture_output=True)
        pdb = ["--type-table-pdb", os.path.join(tmp, "pdb"), "--type-table-min-mb", "64"]
        first = run(spindle, tmp, users, 200, pdb)  # loads the table into the PDB
        rows = {"memory": run(spindle, tmp, users, requests, []),
                "parameter server, L1 0.1": run(spindle, tmp, users, requests, pdb),
                "parameter server, L1 0.5": run(spindle, tmp, users, requests,
                                                pdb + ["--type-table-cache", "0.5"])}
        vdb = pdb + ["--type-table-vdb", "hash_map", "--type-table-vdb-mb"]
        for mb in VDB_MB:  # the VDB's cap per table: past the table's size, no cap at all
            rows[f"parameter server, L1 0.1, VDB {mb} MiB"] = run(spindle, tmp, users, requests,
                                                                  vdb + [str(mb)])
        print(f"users {users} x {DIM} table ({users * DIM * 4 / 2**20:.0f} MiB), "
              f"first start with the PDB (loading it) {first['start_s']} s")
        print("| table | start (s) | RSS after load (MiB) | peak RSS (MiB) | seeds/s | p99 (ms) |")
        print("|---|---|---|---|---|---|")
        for name, r in rows.items():
            load = r["load"]
            assert load["answered_ok"] == requests, load  # every call answered
            print(f"| {name} | {r['start_s']} | {r['rss_mib']} | {r['peak_rss_mib']} | "
                  f"{load['throughput_rps']:.0f} | {load['latency_ms']['p99']:.2f} |")
        print(json.dumps(rows))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
