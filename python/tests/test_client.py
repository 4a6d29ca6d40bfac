"""The Python client against a real `spindle serve` (GNN + the golden DLRM) on a
free loopback port. Run by ctest (python_client_test) or `pytest python/tests`
with SPINDLE_BINARY pointing at build/apps/spindle."""
import json
import os
import struct
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import start_server  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
GOLDEN = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")


def load_npy(path):
    """Minimal .npy reader (little-endian float32 / int64, C order): no numpy needed."""
    with open(path, "rb") as f:
        data = f.read()
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode()
    body = data[10 + header_len:]
    fmt = "f" if "'<f4'" in header else "q"
    return list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(fmt), fmt), body))


@pytest.fixture(scope="module")
def server():
    tmp = tempfile.mkdtemp(prefix="spindle-py-")
    subprocess.run([SPINDLE, "generate", "--scale", "10", "--feature-dim", "8", "--seed", "1",
                    "--out", tmp + "/g"], check=True, capture_output=True)
    subprocess.run([SPINDLE, "model", "init", "--arch", "gcn", "--in", "8", "--hidden", "16", "--out", "3",
                    "--seed", "1", "--out-dir", tmp + "/m"], check=True, capture_output=True)
    proc, endpoint = start_server([SPINDLE, "serve", "--dataset", tmp + "/g", "--model", tmp + "/m",
                                   "--name", "gcn", "--listen", "127.0.0.1:0", "--admin-token-file",
                                   tmp + "/token", "--dlrm-model", GOLDEN, "--dlrm-name", "ctr",
                                   "--pdb", tmp + "/pdb", "--hit-rate-threshold", "1.0"])
    yield {"endpoint": endpoint, "token_file": tmp + "/token", "spindle": SPINDLE, "model_dir": tmp + "/m"}
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def test_infer_gnn_matches_the_cli_and_batches_isolate_errors(server):
    cli = subprocess.run([SPINDLE, "client", "--connect", server["endpoint"], "--model", "gcn", "infer",
                          "--seeds", "5,6", "--sampler-seed", "3", "--json"], check=True,
                         capture_output=True, text=True)
    want = json.loads(cli.stdout)

    async def main():
        async with sc.connect(server["endpoint"]) as c:
            r = await c.infer_gnn("gcn", [5, 6], sampler_seed=3)
            batch = await c.infer_gnn_batch([{"model": "gcn", "seeds": [5, 6], "sampler_seed": 3},
                                             {"model": "gcn", "seeds": [10 ** 9]},
                                             {"model": "nope", "seeds": [1]}])
            with pytest.raises(sc.SpindleError) as err:
                await c.infer_gnn("gcn", [-1])
            by_id = await c.infer_gnn("gcn", ids=["5", "6"], sampler_seed=3)  # input ids
            assert by_id.outputs == r.outputs
            return r, batch, err.value

    r, batch, err = sc.run(main())
    assert r.status == "ok" and len(r.outputs) == 2 and len(r.outputs[0]) == 3
    flat = [x for row in r.outputs for x in row]
    assert flat == pytest.approx(want["outputs"], rel=0, abs=0)
    assert batch[0].outputs == r.outputs
    assert batch[1].status == "bad_request" and "out of range" in batch[1].message
    assert batch[2].status == "bad_request" and "unknown model 'nope'" in batch[2].message
    assert err.status == "bad_request" and "seeds[0]=-1" in err.message


def test_a_batch_passes_every_field_of_a_call_and_the_blocking_client_has_it(server):
    c = sc.Client(server["endpoint"], model="gcn")
    one = c.infer_gnn([5, 6], sampler_seed=3)
    got = c.infer_gnn_batch([{"seeds": [5, 6], "sampler_seed": 3},
                             {"seeds": [5], "node_type": "paper"},
                             {"seeds": [5], "min_version": 10 ** 6, "deadline_us": 200000}])
    assert got[0].status == "ok"
    assert got[0].outputs == one.tolist()
    assert got[1].status == "bad_request" and "paper" in got[1].message, got[1].message
    assert got[2].status != "ok", "min_version was dropped from the batch"
    with pytest.raises(ValueError, match="unknown key 'nodetype'"):
        c.infer_gnn_batch([{"seeds": [5], "nodetype": "paper"}])


def test_recommendation_and_admin_calls(server):
    dense = load_npy(os.path.join(GOLDEN, "dense.npy"))
    expected = load_npy(os.path.join(GOLDEN, "expected.npy"))
    rows = [dense[i * 13:(i + 1) * 13] for i in range(6)]
    sparse = []
    for t in range(3):
        idx = load_npy(os.path.join(GOLDEN, "indices%d.npy" % t))
        off = load_npy(os.path.join(GOLDEN, "offsets%d.npy" % t))
        sparse.append([idx[off[b]:off[b + 1]] for b in range(6)])
    sparse = [list(s) for s in zip(*sparse)]  # per sample, then per table

    async def main():
        async with sc.connect(server["endpoint"], token_file=server["token_file"]) as c:
            scores = (await c.infer_rec("ctr", rows, sparse)).scores
            await c.set_tunable("gcn", "routing_policy", "loose")
            tunables = await c.tunables("gcn")
            stats = await c.stats()
            models = await c.models()
        async with sc.connect(server["endpoint"], token="wrong-token-0000") as bad:
            with pytest.raises(sc.SpindleError) as err:
                await bad.stats()
        return scores, tunables, stats, models, err.value

    scores, tunables, stats, models, err = sc.run(main())
    assert scores == pytest.approx(expected, abs=1e-5)
    assert tunables["routing_policy"] == "loose"
    assert stats["models"]["gcn"]["tunables"]["routing_policy"] == "loose"
    assert stats["models"]["ctr"]["ok"] >= 1
    assert {m["name"] for m in models} == {"gcn", "ctr"}
    assert err.status == "unauthorized"


def test_models_load_and_unload_live(server):
    async def main():
        async with sc.connect(server["endpoint"], token_file=server["token_file"]) as c:
            await c.load_model("gcn2", server["model_dir"])
            names = {m["name"] for m in await c.models()}
            same = (await c.infer_gnn("gcn2", [1, 2], sampler_seed=5)).outputs
            ref = (await c.infer_gnn("gcn", [1, 2], sampler_seed=5)).outputs
            with pytest.raises(sc.SpindleError) as missing:
                await c.load_model("ghost", server["model_dir"] + "-missing")
            await c.unload_model("gcn2")
            after = {m["name"] for m in await c.models()}
        return names, same, ref, missing.value, after

    names, same, ref, missing, after = sc.run(main())
    assert "gcn2" in names
    assert same == ref
    assert missing.status == "bad_request" and "-missing" in missing.message
    assert after == {"gcn", "ctr"}


def test_the_blocking_client_returns_numpy_arrays(server):
    import numpy as np
    with sc.Client(server["endpoint"], model="gcn") as c:
        assert c.ready()
        out = c.infer_gnn([5, 6], sampler_seed=3)
        assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (2, 3)

        async def reference():
            async with sc.connect(server["endpoint"]) as a:
                return (await a.infer_gnn("gcn", [5, 6], sampler_seed=3)).outputs

        assert out.tolist() == sc.run(reference())
        assert np.array_equal(c.infer_gnn(ids=["5", "6"], sampler_seed=3), out)
        with pytest.raises(sc.SpindleError) as err:
            c.infer_gnn([10 ** 9])
        assert err.value.status == "bad_request"
        dense = np.array(load_npy(os.path.join(GOLDEN, "dense.npy")), dtype=np.float32).reshape(6, 13)
        sparse = []
        for t in range(3):
            idx = load_npy(os.path.join(GOLDEN, "indices%d.npy" % t))
            off = load_npy(os.path.join(GOLDEN, "offsets%d.npy" % t))
            sparse.append([idx[off[b]:off[b + 1]] for b in range(6)])
        with pytest.raises(ValueError, match="per-table nesting is not accepted"):
            c.infer_rec(dense, sparse, model="ctr")  # 3 tables' lists for 6 samples
        sparse = [list(s) for s in zip(*sparse)]  # per sample, then per table
        scores = c.infer_rec(dense, sparse, model="ctr")
        expected = load_npy(os.path.join(GOLDEN, "expected.npy"))
        assert scores.shape == (6,) and np.allclose(scores, expected, atol=1e-5)
    with pytest.raises(sc.SpindleError):
        c.infer_gnn([1])  # closed


def test_the_blocking_client_spreads_calls_over_several_doors(server):
    """Doors of a cluster: a refused one is skipped, calls go round-robin over the
    others (here the same server twice), and every answer is the same."""
    doors = [server["endpoint"], "127.0.0.1:1", server["endpoint"]]
    with sc.Client(",".join(doors), model="gcn") as c:
        assert c.endpoints == [server["endpoint"], server["endpoint"]]
        first = c.infer_gnn([5, 6], sampler_seed=3)
        for _ in range(3):
            assert c.infer_gnn([5, 6], sampler_seed=3).tolist() == first.tolist()
    with pytest.raises(sc.SpindleError) as err:
        sc.Client("127.0.0.1:1,127.0.0.1:2")
    assert err.value.status == "unavailable" and "no door answered" in err.value.message


def test_pip_install_writes_nothing_into_the_source_tree(tmp_path):
    src = os.path.join(ROOT, "python")

    def listing():
        return sorted(os.path.relpath(os.path.join(d, f), src)
                      for d, _, files in os.walk(src) for f in files if "__pycache__" not in d)

    before = listing()
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(tmp_path), src], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(os.path.join(tmp_path, "spindle_client", "spindle.capnp"))
    assert listing() == before


def test_a_client_left_open_at_exit_ends_the_process_cleanly(server):
    # The docs' first example never calls close(): the kj loop must end before
    # Python tears its threads down, or the process aborts (exit status 134).
    script = ("import sys; sys.path.insert(0, %r)\n"
              "from spindle_client import Client\n"
              "c = Client(%r, model='gcn')\n"
              "print(c.infer_gnn([1, 2]).shape)\n") % (os.path.join(ROOT, "python"), server["endpoint"])
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr[-500:]
        assert r.stdout.strip() == "(2, 3)"
