#!/usr/bin/env python3
"""Graph updates while serving, on one server: the same closed-loop GNN load
(`spindle client load`) with no updates (the baseline, same server, same run)
and while this script streams update batches through the Python client
(1,000 new edges per batch, and 1,000 feature rows of the dataset's width per
batch), logged with fdatasync before each acknowledgement; then the open-loop
phase again on a server that compacts (folds the delta into a new base on
disk) all the while. Prints update MB/s
and edges/s, served p99 and throughput beside the baseline's, and the
visibility check: every acknowledged version answered a min_version call at once.

    usage: bench/graph_updates.py SPINDLE DATASET_DIR [SECONDS=20] [CLIENTS=4]
    (needs pycapnp and numpy; the dataset is copied: the log goes beside the copy)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import spindle_client as sc  # noqa: E402


def start(argv, log):
    proc = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    for _ in range(1200):
        text = open(log).read()
        for line in text.splitlines():
            if line.startswith("listening "):
                return proc, line.split()[1]
        if proc.poll() is not None:
            raise SystemExit("server did not start:\n" + text[-2000:])
        time.sleep(0.1)
    raise SystemExit("server did not start in 120 s")


def load(spindle, endpoint, data, requests, clients, rate=0.0):
    level = ["--rate", f"{rate:.0f}"] if rate > 0 else ["--clients", str(clients)]
    out = subprocess.run([spindle, "client", "--connect", endpoint, "--model", "sage", "load",
                          "--requests", str(requests), "--warmup", "200", *level,
                          "--seeds", f"degree:{data}", "--json"],
                         check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    load.last = j  # the whole report (refusals by status among it)
    return j["throughput_rps"], j["latency_ms"]["p99"], j["latency_ms"]["p50"]


def main():
    spindle, source = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
    clients = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    work = tempfile.mkdtemp(prefix="spindle-graph-bench-")
    proc = None
    try:
        data = os.path.join(work, "data")
        shutil.copytree(source, data)
        meta = json.load(open(os.path.join(data, "metadata.json")))
        nodes, width = meta["num_nodes"], meta["feature_dim"]
        env = dict(os.environ, SPINDLE_PROGRESS="0")
        subprocess.run([spindle, "model", "init", "--arch", "graphsage", "--in", str(width),
                        "--hidden", "256", "--classes", "47", "--seed", "1", "--out-dir",
                        os.path.join(work, "sage")], check=True, capture_output=True, env=env)
        # Static serving first: the same server without --graph-updates, so the
        # empty delta's cost (one atomic load per batch) shows beside it.
        static, static_endpoint = start([spindle, "serve", "--dataset", data, "--model",
                                         os.path.join(work, "sage"), "--name", "sage", "--listen",
                                         "127.0.0.1:0", "--device", "host"],
                                        os.path.join(work, "static.log"))
        static_rps, static_p99, static_p50 = load(spindle, static_endpoint, data, 4000, clients)
        static.terminate()
        static.wait(timeout=60)
        proc, endpoint = start([spindle, "serve", "--dataset", data, "--model",
                                os.path.join(work, "sage"), "--name", "sage", "--listen",
                                "127.0.0.1:0", "--admin-token-file", os.path.join(work, "token"),
                                "--graph-updates", "--device", "host"], os.path.join(work, "serve.log"))
        # The baseline: the same load, no updates. Its request count sets the updated run's.
        t0 = time.time()
        base_rps, base_p99, base_p50 = load(spindle, endpoint, data, 4000, clients)
        requests = max(2000, int(base_rps * seconds))
        c = sc.Client(endpoint, model="sage", token_file=os.path.join(work, "token"))
        rng = np.random.default_rng(1)
        sent = {"batches": 0, "edges": 0, "rows": 0, "bytes": 0, "unseen": 0, "ack_ms": []}

        def stream(stop, mb_per_s=0.0):
            started = time.perf_counter()
            while not stop.is_set():
                if mb_per_s > 0:  # paced: no faster than the target rate
                    ahead = sent["bytes"] / (mb_per_s * 1e6) - (time.perf_counter() - started)
                    if ahead > 0:
                        time.sleep(ahead)
                        continue
                src = rng.integers(0, nodes, 1000)
                dst = rng.integers(0, nodes, 1000)
                ids = rng.integers(0, nodes, 1000)
                rows = rng.standard_normal((1000, width)).astype(np.float32)
                a = time.perf_counter()
                r = c.update_graph(add_edges=(src, dst), set_features=(ids, rows))
                sent["ack_ms"].append((time.perf_counter() - a) * 1e3)
                sent["batches"] += 1
                sent["edges"] += 1000
                sent["rows"] += 1000
                sent["bytes"] += 2 * 8 * 1000 + 8 * 1000 + rows.nbytes
                try:
                    if c.infer_gnn([int(dst[0])], min_version=r.version).version < r.version:
                        sent["unseen"] += 1
                except sc.SpindleError:  # refused (overloaded): not a visibility failure
                    sent["probe_refused"] = sent.get("probe_refused", 0) + 1

        def while_updating(rate, phase_seconds=seconds, mb_per_s=0.0):
            stop = threading.Event()
            t = threading.Thread(target=stream, args=(stop, mb_per_s))
            t.start()
            n = max(2000, int((rate if rate > 0 else base_rps) * phase_seconds))
            figures = load(spindle, endpoint, data, n, clients, rate)
            stop.set()
            t.join()
            return figures

        start_s = time.perf_counter()
        upd_rps, upd_p99, upd_p50 = while_updating(0.0)
        elapsed = time.perf_counter() - start_s
        sent = dict(sent, ack_ms=list(sent["ack_ms"]))  # the closed-loop phase's figures
        phase = sent
        sent = {"batches": 0, "edges": 0, "rows": 0, "bytes": 0, "unseen": 0, "ack_ms": []}
        # The level: an open loop at half the static server's capacity.
        half = 0.5 * static_rps
        half_rps, half_p99, half_p50 = while_updating(half)
        half_report, half_sent = load.last, sent
        # The goal's own terms: updates at 7 MB/s (twice DGS's per-core rate) beside
        # the same half-capacity load.
        sent = {"batches": 0, "edges": 0, "rows": 0, "bytes": 0, "unseen": 0, "ack_ms": []}
        t_paced = time.perf_counter()
        paced_rps, paced_p99, paced_p50 = while_updating(half, mb_per_s=7.0)
        paced_report, paced_sent = load.last, sent
        paced_mbps = paced_sent["bytes"] / (time.perf_counter() - t_paced) / 1e6
        stats = c.stats()["graph"]
        c.close()
        # Compaction while serving: the same server restarted with
        # --graph-compact-at 1 (its log replayed), so the delta is folded into a
        # new base on disk again and again while the same open-loop load and
        # update stream run.
        proc.terminate()
        proc.wait(timeout=120)
        proc, endpoint = start([spindle, "serve", "--dataset", data, "--model",
                                os.path.join(work, "sage"), "--name", "sage", "--listen",
                                "127.0.0.1:0", "--admin-token-file", os.path.join(work, "token"),
                                "--graph-updates", "--graph-compact-at", "1", "--device", "host"],
                               os.path.join(work, "serve-compact.log"))
        c = sc.Client(endpoint, model="sage", token_file=os.path.join(work, "token"))
        sent = {"batches": 0, "edges": 0, "rows": 0, "bytes": 0, "unseen": 0, "ack_ms": []}
        # Compaction runs at background priority (nice 19): long enough for a
        # few of them on a busy machine.
        comp_rps, comp_p99, comp_p50 = while_updating(half, max(seconds, 60.0))
        comp_report, comp_sent = load.last, sent
        compaction = c.stats()["graph"]["compaction"]
        c.close()
        ack = np.array(phase["ack_ms"]) if phase["ack_ms"] else np.zeros(1)
        print(f"graph updates while serving: {source}, GraphSAGE {width}-256-47, "
              f"{clients} calls in flight, one server (this machine, same run)")
        print(f"  served, without --graph-updates: {static_rps:7.0f} calls/s  p50 {static_p50:.2f} ms  "
              f"p99 {static_p99:.2f} ms")
        print(f"  served, no updates (baseline):  {base_rps:8.0f} calls/s  p50 {base_p50:.2f} ms  "
              f"p99 {base_p99:.2f} ms  (empty delta: {base_rps / static_rps:.2f}x the static "
              f"server's throughput)")
        print(f"  served, while updating:         {upd_rps:8.0f} calls/s  p50 {upd_p50:.2f} ms  "
              f"p99 {upd_p99:.2f} ms  (p99 ratio {upd_p99 / base_p99:.2f}x, throughput "
              f"{upd_rps / base_rps:.2f}x)")
        print(f"  served at 50% of the static capacity (open loop, {half:.0f} calls/s) while "
              f"updating: {half_rps:.0f} calls/s answered ok  p50 {half_p50:.2f} ms  p99 "
              f"{half_p99:.2f} ms; calls by status {half_report.get('status')}; "
              f"{half_sent['batches']} update batches meanwhile")
        print(f"  the same with updates paced at 7 MB/s: {paced_rps:.0f} calls/s answered ok  "
              f"p50 {paced_p50:.2f} ms  p99 {paced_p99:.2f} ms; calls by status "
              f"{paced_report.get('status')}; {paced_sent['batches']} update batches, "
              f"{paced_mbps:.2f} MB/s")
        done = max(compaction["done"], 1)
        print(f"  the same, compacting all the while (--graph-compact-at 1): {comp_rps:.0f} calls/s "
              f"answered ok  p50 {comp_p50:.2f} ms  p99 {comp_p99:.2f} ms (p99 ratio "
              f"{comp_p99 / half_p99:.2f}x the phase above); calls by status "
              f"{comp_report.get('status')}; {comp_sent['batches']} update batches meanwhile; "
              f"{compaction['done']} compactions, {compaction['total_seconds'] / done:.1f} s each "
              f"on average (last {compaction['last_seconds']:.1f} s), {compaction['failed']} failed, "
              f"{compaction['bytes_freed'] / 1e6:.0f} MB of log and old bases freed")
        print(f"  updates (closed-loop phase): {phase['batches']} batches in {elapsed:.1f} s: "
              f"{phase['bytes'] / elapsed / 1e6:.2f} MB/s, {phase['edges'] / elapsed:.0f} edges/s "
              f"+ {phase['rows'] / elapsed:.0f} rows/s; ack p50 {np.percentile(ack, 50):.1f} ms "
              f"p99 {np.percentile(ack, 99):.1f} ms (fdatasync per batch)")
        print(f"  visibility: {phase['batches'] - phase['unseen']}/{phase['batches']} acknowledged "
              f"versions answered at once with min_version; graph at version {stats['version']}, "
              f"{stats['rows_changed']} rows and {stats['feature_rows_set']} feature rows in the delta")
        print(f"  (run took {time.time() - t0:.0f} s)")
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
