#!/usr/bin/env python3
"""R-GAT on a typed graph served by Spindle beside the script a PyG user would
write to serve it (the baseline, same run, same machine, same files).

The graph and model are bench/typed_served.py's (IGBH-shaped: papers, authors,
institutes, 64 features each, 4 edge types; R-GAT as GraphLearn-for-PyTorch
writes it: HeteroConv of GATConv(heads=4, add_self_loops=False) per edge type,
two layers, a Linear head on papers), scaled by SCALE (1.0: 1M nodes). Both
sides take fixed batches of paper seeds back to back (closed loop, one batch in
flight) with fanouts [10, 5] per edge type and report seeds/s and p50/p99 per
batch (sample + gather + forward, and for Spindle the call over Cap'n Proto).

The PyG side is set up fairly: torch threads = cores, OMP_WAIT_POLICY=PASSIVE
(set by the caller), inference_mode, a NumPy sampler per edge type that expands
each frontier once for the whole batch (as NeighborLoader does; neighbours drawn
with replacement where a row has more than the fanout, cheaper than PyG's
default; pyg-lib and torch-sparse, which NeighborLoader needs for HeteroData,
are not installed here), relabelled to each type's local ids as HeteroData
batches are.

    OMP_WAIT_POLICY=PASSIVE python3 bench/typed_vs_pyg.py SPINDLE [SCALE=0.2] [BATCHES=30]
"""
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import typed_served as ts  # noqa: E402  (the graph, the models, the server)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

FANOUTS = [10, 5]


def typed_csr(edges, counts):
    """{edge type: (indptr over its dst type, src ids)} from {edge type: [2, E]}."""
    out = {}
    for e, ei in edges.items():
        order = np.argsort(ei[1], kind="stable")
        indptr = np.zeros(counts[e[2]] + 1, dtype=np.int64)
        np.add.at(indptr, ei[1] + 1, 1)
        out[e] = (np.cumsum(indptr), ei[0][order])
    return out


def draw(indptr, indices, nodes, k, rng):
    """(src, dst position) of up to k in-neighbours of each node: all of a row with
    at most k, else k drawn with replacement."""
    lo, deg = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    small = deg <= k
    pos = np.repeat(np.arange(len(nodes)), np.where(small, deg, 0))
    first = np.repeat(lo[small], deg[small])
    within = np.arange(len(first)) - np.repeat(np.cumsum(deg[small]) - deg[small], deg[small])
    src_small = indices[first + within]
    big = np.nonzero(~small)[0]
    pos_big = np.repeat(big, k)
    src_big = indices[np.repeat(lo[big], k) + (rng.random(len(big) * k) *
                                                np.repeat(deg[big], k)).astype(np.int64)]
    return np.concatenate([src_small, src_big]), np.concatenate([pos, pos_big])


def sample(csr, slots, seeds, rng):
    """A HeteroData-style batch: per node type its global ids (seeds first), per
    edge type edge_index in local ids, 2 hops of FANOUTS per edge type. slots[t]
    maps a global id to its local one (-1: not in the batch), reset after."""
    seeds = np.unique(seeds)
    ids = {"paper": [seeds]}
    slots["paper"][seeds] = np.arange(len(seeds))
    size = {"paper": len(seeds)}
    frontier = {"paper": seeds}
    edges = {e: [[], []] for e in csr}
    for k in FANOUTS:
        nxt = {}
        for e, (indptr, indices) in csr.items():
            s, d = e[0], e[2]
            if len(frontier.get(d, ())) == 0:
                continue
            src, pos = draw(indptr, indices, frontier[d], k, rng)
            new = np.unique(src[slots[s][src] < 0])
            slots[s][new] = size.get(s, 0) + np.arange(len(new))
            size[s] = size.get(s, 0) + len(new)
            ids.setdefault(s, []).append(new)
            nxt.setdefault(s, []).append(new)
            edges[e][0].append(slots[s][src])
            edges[e][1].append(slots[d][frontier[d][pos]])
        frontier = {t: np.concatenate(v) for t, v in nxt.items()}
    ids = {t: np.concatenate(v) for t, v in ids.items()}
    for t, v in ids.items():
        slots[t][v] = -1
    return ids, {e: np.stack([np.concatenate(v[0]), np.concatenate(v[1])])
                 for e, v in edges.items() if v[0]}


def pyg_rows(model, x, csr, batches, rng):
    import torch
    slots = {t: np.full(len(v), -1, dtype=np.int64) for t, v in x.items()}
    for batch in (1, 16, 64, 256):
        times = []
        for _ in range(batches):
            seeds = rng.integers(0, len(x["paper"]), batch)
            t0 = time.perf_counter()
            ids, ei = sample(csr, slots, seeds, rng)
            x_dict = {t: torch.from_numpy(x[t][v]) for t, v in ids.items()}
            with torch.inference_mode():
                model(x_dict, {e: torch.from_numpy(v) for e, v in ei.items()})
            times.append(time.perf_counter() - t0)
        yield batch, times


def spindle_rows(spindle, tmp, scale, batches, rng):
    import spindle_client as sc
    proc, endpoint = ts.serve(spindle, os.path.join(tmp, "typed-ds"),
                              os.path.join(tmp, "typed-repo"), os.path.join(tmp, "serve.log"))
    try:
        c = sc.Client(endpoint)
        papers = int(ts.P * scale)
        for batch in (1, 16, 64, 256):
            times = []
            for _ in range(batches):
                seeds = rng.integers(0, papers, batch).tolist()
                t0 = time.perf_counter()
                c.infer_gnn(seeds, model="m", node_type="paper")
                times.append(time.perf_counter() - t0)
            yield batch, times
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def report(label, rows):
    for batch, times in rows:
        t = np.sort(np.asarray(times[2:]))  # the first two warm caches
        print(f"{label:<8} {batch:>6} {batch / t.mean():>10.0f} {t[len(t) // 2] * 1e3:>9.2f} "
              f"{t[int(0.99 * (len(t) - 1))] * 1e3:>9.2f}", flush=True)


def main():
    import torch
    spindle = os.path.abspath(sys.argv[1])
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    torch.set_num_threads(os.cpu_count())
    tmp = tempfile.mkdtemp(prefix="spindle-typed-vs-pyg-")
    try:
        rgat, _ = ts.models()
        x, edges, counts = ts.prepare_and_export(spindle, tmp, "typed", True, rgat,
                                                 np.random.default_rng(1), scale)
        print(f"{sum(counts.values())} nodes; R-GAT, fanouts {FANOUTS} per edge type; "
              f"closed loop, one batch in flight; torch threads {torch.get_num_threads()}")
        print(f"{'side':<8} {'batch':>6} {'seeds/s':>10} {'p50 ms':>9} {'p99 ms':>9}")
        report("spindle", spindle_rows(spindle, tmp, scale, batches, np.random.default_rng(1)))
        report("pyg", pyg_rows(rgat, x, typed_csr(edges, counts), batches,
                               np.random.default_rng(1)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
