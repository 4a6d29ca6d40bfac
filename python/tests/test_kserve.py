"""KServe v2 over HTTP/REST and gRPC, called with the clients Triton users
have (tritonclient[http], tritonclient[grpc]) and with raw HTTP for the bad
inputs, against a real `spindle serve --http --grpc`. Answers must equal the
Cap'n Proto path's; every bad input gets the right status and message and the
server keeps serving."""
import http.client
import json
import os
import subprocess
import tempfile
import urllib.request

import numpy as np
import pytest

tritonhttp = pytest.importorskip("tritonclient.http")
tritongrpc = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
GOLDEN = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")


@pytest.fixture(scope="module")
def server():
    tmp = tempfile.mkdtemp(prefix="spindle-kserve-")
    subprocess.run([SPINDLE, "generate", "--scale", "10", "--feature-dim", "8", "--seed", "1",
                    "--out", tmp + "/g"], check=True, capture_output=True)
    subprocess.run([SPINDLE, "model", "init", "--arch", "gcn", "--in", "8", "--hidden", "16",
                    "--classes", "3", "--seed", "1", "--out-dir", tmp + "/m"],
                   check=True, capture_output=True)
    proc = subprocess.Popen([SPINDLE, "serve", "--dataset", tmp + "/g", "--model", tmp + "/m",
                             "--name", "gcn", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                             "--grpc", "127.0.0.1:0", "--http-max-body-mb", "1",
                             "--admin-token-file", tmp + "/token", "--dlrm-model", GOLDEN,
                             "--dlrm-name", "ctr", "--pdb", tmp + "/pdb",
                             "--hit-rate-threshold", "1.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    where = {}
    for line in proc.stdout:
        if line.startswith("http "):
            where["http"] = line.split()[1].replace("http://", "").replace("/v2", "")
        elif line.startswith("grpc "):
            where["grpc"] = line.split()[1]
        elif line.startswith("listening "):
            where["capnp"] = line.split()[1]
            break
    assert set(where) == {"http", "grpc", "capnp"}, where
    where["token"] = open(tmp + "/token").read().strip()
    where["dir"] = tmp
    yield where
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def capnp_answer(server, seeds, sampler_seed):
    out = subprocess.run([SPINDLE, "client", "--connect", server["capnp"], "--model", "gcn", "infer",
                          "--seeds", ",".join(map(str, seeds)), "--sampler-seed", str(sampler_seed),
                          "--json"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return np.array(r["outputs"], dtype=np.float32).reshape(len(seeds), r["width"])


def gnn_inputs(module, seeds, sampler_seed, binary=True):
    s = module.InferInput("seeds", [len(seeds)], "INT64")
    t = module.InferInput("sampler_seed", [1], "UINT64")
    if module is tritonhttp:
        s.set_data_from_numpy(np.array(seeds, dtype=np.int64), binary_data=binary)
        t.set_data_from_numpy(np.array([sampler_seed], dtype=np.uint64), binary_data=binary)
    else:
        s.set_data_from_numpy(np.array(seeds, dtype=np.int64))
        t.set_data_from_numpy(np.array([sampler_seed], dtype=np.uint64))
    return [s, t]


def test_health_and_metadata_over_http_and_grpc(server):
    for client in (tritonhttp.InferenceServerClient(server["http"]),
                   tritongrpc.InferenceServerClient(server["grpc"])):
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("gcn") and client.is_model_ready("ctr")
        md = client.get_model_metadata("gcn")
        if not isinstance(md, dict):  # gRPC: a protobuf message
            from google.protobuf.json_format import MessageToDict
            md = MessageToDict(md, preserving_proto_field_name=True)
        assert [i["name"] for i in md["inputs"]][:1] == ["seeds"]
        assert md["outputs"][0]["datatype"] == "FP32"
        assert [int(d) for d in md["outputs"][0]["shape"]] == [-1, 3]
    # The Cap'n Proto door says the same (Inference.version's ready).
    import sys
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import spindle_client as sc
    with sc.Client(server["capnp"]) as c:
        assert c.ready() is True


def test_gnn_answers_equal_the_capnp_path(server):
    seeds, seed = [5, 6, 77], 3
    want = capnp_answer(server, seeds, seed)
    http_client = tritonhttp.InferenceServerClient(server["http"])
    for binary in (True, False):  # Triton's binary-tensor extension, then JSON lists
        outputs = [tritonhttp.InferRequestedOutput("output", binary_data=binary)]
        r = http_client.infer("gcn", gnn_inputs(tritonhttp, seeds, seed, binary), outputs=outputs)
        assert np.array_equal(r.as_numpy("output"), want), binary
    g = tritongrpc.InferenceServerClient(server["grpc"]).infer("gcn", gnn_inputs(tritongrpc, seeds, seed))
    assert np.array_equal(g.as_numpy("output"), want)


def dlrm_inputs(module):
    dense = np.load(os.path.join(GOLDEN, "dense.npy")).astype(np.float32).reshape(6, 13)
    inputs = [module.InferInput("dense", list(dense.shape), "FP32")]
    inputs[0].set_data_from_numpy(dense)
    for t in range(3):
        for what in ("indices", "offsets"):
            a = np.load(os.path.join(GOLDEN, "%s%d.npy" % (what, t))).astype(np.int64)
            x = module.InferInput("%s_%d" % (what, t), [len(a)], "INT64")
            x.set_data_from_numpy(a)
            inputs.append(x)
    return inputs


def test_a_recommendation_model_answers_the_golden_batch(server):
    expected = np.load(os.path.join(GOLDEN, "expected.npy")).reshape(-1)
    for module, where in ((tritonhttp, server["http"]), (tritongrpc, server["grpc"])):
        r = module.InferenceServerClient(where).infer("ctr", dlrm_inputs(module))
        assert np.allclose(r.as_numpy("scores"), expected, rtol=0, atol=1e-5), module.__name__


def test_model_config_and_statistics_for_tritonclient_and_perf_analyzer(server):
    h = tritonhttp.InferenceServerClient(server["http"])
    g = tritongrpc.InferenceServerClient(server["grpc"])
    h.infer("gcn", gnn_inputs(tritonhttp, [1, 2], 5))
    for cfg in (h.get_model_config("gcn"), g.get_model_config("gcn", as_json=True)["config"]):
        assert cfg["name"] == "gcn"
        assert cfg["input"][0]["name"] == "seeds" and cfg["input"][0]["data_type"] == "TYPE_INT64"
        assert cfg["output"][0]["name"] == "output" and cfg["output"][0]["data_type"] == "TYPE_FP32"
    stats = h.get_inference_statistics("gcn")["model_stats"]
    assert stats[0]["name"] == "gcn"
    assert int(stats[0]["inference_count"]) >= 2
    success = stats[0]["inference_stats"]["success"]
    assert int(success["count"]) >= 1 and int(success["ns"]) > 0
    gstats = g.get_inference_statistics("gcn", as_json=True)["model_stats"]
    assert int(gstats[0]["inference_count"]) >= int(stats[0]["inference_count"])
    names = {m["name"] for m in h.get_inference_statistics()["model_stats"]}
    assert {"gcn", "ctr"} <= names
    with pytest.raises(InferenceServerException):
        h.get_model_config("nope")
    with pytest.raises(InferenceServerException):
        g.get_inference_statistics("nope")


def raw_post(server, path, body, headers=None):
    host, port = server["http"].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request("POST", path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


SEEDS_JSON = {"name": "seeds", "datatype": "INT64", "shape": [2], "data": [1, 2]}


@pytest.mark.parametrize("path,body,headers,status,message", [
    ("/v2/models/nope/infer", {"inputs": [SEEDS_JSON]}, None, 404, "unknown model 'nope'"),
    ("/v2/models/gcn/versions/7/infer", {"inputs": [SEEDS_JSON]}, None, 404, "version '7'"),
    ("/v2/models/gcn/infer", {"inputs": [dict(SEEDS_JSON, datatype="FP32")]}, None, 400,
     "input 'seeds': datatype FP32, expected INT64"),
    ("/v2/models/gcn/infer", {"inputs": [dict(SEEDS_JSON, shape=[3])]}, None, 400,
     "shape [3] holds 3 elements, 2 were sent"),
    ("/v2/models/gcn/infer", {"inputs": [dict(SEEDS_JSON, data=[1, 10 ** 9])]}, None, 400,
     "seeds[1]=1000000000 out of range"),
    ("/v2/models/gcn/infer", b'{"inputs": [', None, 400, "not a JSON object"),
    ("/v2/models/gcn/infer", {"inputs": [{"name": "seeds", "datatype": "INT64", "shape": [2],
                                          "parameters": {"binary_data_size": 16}}]},
     {"Inference-Header-Content-Length": "9999"}, 400, "past the body"),
    ("/v2/models/gcn/infer", {"inputs": [{"name": "seeds", "datatype": "INT64", "shape": [2],
                                          "parameters": {"binary_data_size": 16}}]},
     None, 400, "only 0 binary bytes remain"),
    ("/v2/models/ctr/infer", {"inputs": [{"name": "dense", "datatype": "FP32", "shape": [1, 2],
                                          "data": [1, 2]}]}, None, 400,
     "input 'dense': shape [1, 2], expected [batch, 13]"),
])
def test_bad_http_input_gets_the_right_status_and_the_server_keeps_serving(
        server, path, body, headers, status, message):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    code, data = raw_post(server, path, raw, headers)
    assert code == status, data
    assert message in json.loads(data)["error"], data
    ok, _ = raw_post(server, "/v2/models/gcn/infer", json.dumps({"inputs": [SEEDS_JSON]}).encode())
    assert ok == 200


def test_a_body_past_the_limit_is_refused(server):
    code, data = raw_post(server, "/v2/models/gcn/infer", b"x" * (2 << 20))
    assert code == 413, data
    assert "larger than the limit" in json.loads(data)["error"]


def test_bad_grpc_input_gets_the_right_code(server):
    import grpc
    client = tritongrpc.InferenceServerClient(server["grpc"])
    cases = [("nope", gnn_inputs(tritongrpc, [1], 0), "StatusCode.NOT_FOUND", "unknown model"),
             ("gcn", gnn_inputs(tritongrpc, [10 ** 9], 0), "StatusCode.INVALID_ARGUMENT", "out of range")]
    bad_type = tritongrpc.InferInput("seeds", [2], "FP32")
    bad_type.set_data_from_numpy(np.array([1, 2], dtype=np.float32))
    cases.append(("gcn", [bad_type], "StatusCode.INVALID_ARGUMENT", "datatype FP32"))
    for model, inputs, code, message in cases:
        with pytest.raises(InferenceServerException) as e:
            client.infer(model, inputs)
        assert e.value.status() == code, str(e.value)
        assert message in e.value.message(), str(e.value)
    assert client.infer("gcn", gnn_inputs(tritongrpc, [1], 0)).as_numpy("output").shape == (1, 3)
    del grpc


def test_repository_calls_need_the_token(server):
    client = tritonhttp.InferenceServerClient(server["http"])
    index = client.get_model_repository_index()
    assert {m["name"] for m in index} == {"gcn", "ctr"}
    with pytest.raises(InferenceServerException) as e:
        client.unload_model("gcn")
    assert "admin token" in e.value.message()
    g = tritongrpc.InferenceServerClient(server["grpc"])
    with pytest.raises(InferenceServerException):
        g.unload_model("gcn", headers={"authorization": "Bearer wrong"})
    assert client.is_model_ready("gcn")


def test_a_version_roll_loses_no_request(tmp_path):
    """Version 2 loads while a client hammers the model; every answer is ok,
    version 1 drains, and the answers change to version 2's."""
    import threading
    repo = tmp_path / "repo"
    subprocess.run([SPINDLE, "generate", "--scale", "10", "--feature-dim", "8", "--seed", "1",
                    "--out", str(tmp_path / "g")], check=True, capture_output=True)

    def init(version, seed):
        subprocess.run([SPINDLE, "model", "init", "--arch", "graphsage", "--in", "8", "--hidden", "16",
                        "--classes", "3", "--seed", str(seed), "--out-dir", str(repo / "sage" / str(version))],
                       check=True, capture_output=True)

    init(1, 1)
    proc = subprocess.Popen([SPINDLE, "serve", "--dataset", str(tmp_path / "g"), "--model-repository",
                             str(repo), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                             "--admin-token-file", str(tmp_path / "token")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        where = None
        for line in proc.stdout:
            if line.startswith("http "):
                where = line.split()[1].replace("http://", "").replace("/v2", "")
            if line.startswith("listening "):
                break
        assert where
        token = (tmp_path / "token").read_text().strip()
        client = tritonhttp.InferenceServerClient(where)
        assert client.get_model_metadata("sage")["versions"] == ["1"]
        v1 = client.infer("sage", gnn_inputs(tritonhttp, [3], 9)).as_numpy("output")
        stop, seen, errors = threading.Event(), [], []

        def hammer():
            c = tritonhttp.InferenceServerClient(where)
            while not stop.is_set():
                try:
                    seen.append(c.infer("sage", gnn_inputs(tritonhttp, [3], 9)).as_numpy("output"))
                except Exception as e:  # any refusal fails the test
                    errors.append(str(e))

        t = threading.Thread(target=hammer)
        t.start()
        init(2, 2)
        client.load_model("sage", headers={"Authorization": "Bearer " + token})
        after = len(seen)
        import time
        time.sleep(0.3)
        stop.set()
        t.join()
        assert not errors, errors[:3]
        assert len(seen) > after  # answered after the roll too
        assert client.get_model_metadata("sage")["versions"] == ["2"]
        v2 = client.infer("sage", gnn_inputs(tritonhttp, [3], 9)).as_numpy("output")
        assert not np.array_equal(v1, v2)
        assert all(np.array_equal(x, v1) or np.array_equal(x, v2) for x in seen)
        assert np.array_equal(seen[-1], v2)
        with pytest.raises(InferenceServerException) as e:  # version 1 is gone
            client.infer("sage", gnn_inputs(tritonhttp, [3], 9), model_version="1")
        assert "version '1'" in e.value.message()
        # latest:2 in the newest model.toml: versions 3 and 2 are served side by side.
        init(3, 3)
        with open(repo / "sage" / "3" / "model.toml", "a") as f:
            f.write('version_policy = "latest:2"\n')
        client.load_model("sage", headers={"Authorization": "Bearer " + token})
        assert client.get_model_metadata("sage")["versions"] == ["3", "2"]
        assert client.is_model_ready("sage", "2") and client.is_model_ready("sage", "3")
        v3 = client.infer("sage", gnn_inputs(tritonhttp, [3], 9)).as_numpy("output")
        assert not np.array_equal(v3, v2)
        pinned = client.infer("sage", gnn_inputs(tritonhttp, [3], 9), model_version="2")
        assert np.array_equal(pinned.as_numpy("output"), v2)
        assert pinned.get_response()["model_version"] == "2"
        assert np.array_equal(
            client.infer("sage", gnn_inputs(tritonhttp, [3], 9), model_version="3").as_numpy("output"), v3)
        # Loading again with nothing new is a no-op; a missing model is named.
        client.load_model("sage", headers={"Authorization": "Bearer " + token})
        with pytest.raises(InferenceServerException) as e:
            client.load_model("nope", headers={"Authorization": "Bearer " + token})
        assert "no model 'nope'" in e.value.message()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_the_readme_curl_examples_work(server):
    text = open(os.path.join(ROOT, "docs", "kserve.md")).read()
    block = text.split("<!-- kserve-curl:start -->")[1].split("<!-- kserve-curl:end -->")[0]
    commands = block.replace("\\\n", " ").replace("```", "").strip().splitlines()
    assert len(commands) >= 4
    for cmd in commands:
        cmd = cmd.replace("localhost:8000", server["http"]).replace("/models/sage", "/models/gcn")
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (cmd, r.stderr)
        out = r.stdout.strip()
        assert out, cmd
        if out.startswith(("{", "[")):
            assert "error" not in json.loads(out), (cmd, out)
        else:
            assert out == "200", (cmd, out)


def test_the_load_generator_drives_both_kserve_doors_for_both_model_kinds(server):
    # `client load --door http|grpc` learns a recommendation model from Triton's
    # model configuration (its table_rows parameter) and draws valid keys.
    config = json.loads(urllib.request.urlopen(
        f"http://{server['http']}/v2/models/ctr/config").read())
    rows = config["parameters"]["table_rows"]["string_value"].split(",")
    assert len(rows) == sum(1 for t in config["input"] if t["name"].startswith("indices_"))
    for door in ("http", "grpc"):
        for model, extra in (("ctr", ["--batch", "8"]), ("gcn", ["--seeds", "uniform:1024"])):
            out = subprocess.run([SPINDLE, "client", "--connect", server[door], "--model", model,
                                  "load", "--door", door, "--requests", "60", "--warmup", "5",
                                  "--clients", "3", "--json"] + extra,
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            assert r["status"] == {"ok": 60}, (door, model, r)
            if model == "ctr":
                assert r["samples_per_call"] == 8
    # A sweep, level by level, on a KServe door with a recommendation model.
    out = subprocess.run([SPINDLE, "client", "--connect", server["grpc"], "--model", "ctr", "load",
                          "--door", "grpc", "--batch", "8", "--requests", "30", "--warmup", "2",
                          "--concurrency-range", "1:2:1", "--json"],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    assert [r["concurrency"] for r in rows] == [1, 2], rows
    assert all(r["ok"] == 30 and r["refused"] == 0 for r in rows), rows
    bad = subprocess.run([SPINDLE, "client", "--connect", server["http"], "--model", "nosuch",
                          "load", "--door", "http"], capture_output=True, text=True)
    assert bad.returncode != 0 and "nosuch" in bad.stderr + bad.stdout


def graph_messages():
    """GraphUpdateRequest/GraphVersionRequest/GraphUpdateResponse as the door's
    proto declares them, built at run time (no generated code needed)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    f = descriptor_pb2.FileDescriptorProto(name="spindle_graph_test.proto", package="inference",
                                           syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    fields = {"GraphUpdateRequest": [("add_src", T.TYPE_INT64, True), ("add_dst", T.TYPE_INT64, True),
                                     ("add_weight", T.TYPE_FLOAT, True),
                                     ("remove_src", T.TYPE_INT64, True),
                                     ("remove_dst", T.TYPE_INT64, True),
                                     ("add_nodes", T.TYPE_INT64, False),
                                     ("add_node_features", T.TYPE_FLOAT, True),
                                     ("set_ids", T.TYPE_INT64, True), ("set_rows", T.TYPE_FLOAT, True),
                                     ("remove_nodes", T.TYPE_INT64, True)],
              "GraphVersionRequest": [],
              "GraphUpdateResponse": [("version", T.TYPE_UINT64, False), ("nodes", T.TYPE_INT64, False),
                                      ("new_ids", T.TYPE_INT64, True)]}
    for name, fs in fields.items():
        m = f.message_type.add(name=name)
        for i, (fname, ftype, repeated) in enumerate(fs, 1):
            m.field.add(name=fname, number=i, type=ftype,
                        label=T.LABEL_REPEATED if repeated else T.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    make = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.21
    if make is None:
        make = message_factory.MessageFactory(pool).GetPrototype
    return {n: make(pool.FindMessageTypeByName("inference." + n)) for n in fields}


def test_graph_updates_over_grpc(tmp_path):
    import grpc
    subprocess.run([SPINDLE, "generate", "--scale", "8", "--feature-dim", "4", "--seed", "2",
                    "--out", str(tmp_path / "g")], check=True, capture_output=True)
    subprocess.run([SPINDLE, "model", "init", "--arch", "graphsage", "--in", "4", "--hidden", "8",
                    "--classes", "3", "--seed", "1", "--out-dir", str(tmp_path / "m")],
                   check=True, capture_output=True)
    proc = subprocess.Popen([SPINDLE, "serve", "--dataset", str(tmp_path / "g"), "--model",
                             str(tmp_path / "m"), "--name", "sage", "--listen", "127.0.0.1:0",
                             "--grpc", "127.0.0.1:0", "--admin-token-file", str(tmp_path / "token"),
                             "--graph-updates", "--device", "host"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        where = None
        for line in proc.stdout:
            if line.startswith("grpc "):
                where = line.split()[1]
            elif line.startswith("listening "):
                capnp = line.split()[1]
                break
        token = (tmp_path / "token").read_text().strip()
        msg = graph_messages()
        channel = grpc.insecure_channel(where)
        call = lambda method, req_type: channel.unary_unary(  # noqa: E731
            "/inference.SpindleGraphService/" + method,
            request_serializer=req_type.SerializeToString,
            response_deserializer=msg["GraphUpdateResponse"].FromString)
        update = call("GraphUpdate", msg["GraphUpdateRequest"])
        version = call("GraphVersion", msg["GraphVersionRequest"])
        auth = [("authorization", "Bearer " + token)]
        nodes = version(msg["GraphVersionRequest"](), metadata=auth).nodes
        r = update(msg["GraphUpdateRequest"](add_nodes=1, add_node_features=[0.5] * 4,
                                             add_src=[nodes], add_dst=[0]), metadata=auth)
        assert r.version == 1 and list(r.new_ids) == [nodes]
        # The new node is a seed at once, and the answer says its graph version.
        client = tritongrpc.InferenceServerClient(where)
        s = tritongrpc.InferInput("seeds", [1], "INT64")
        s.set_data_from_numpy(np.array([nodes], dtype=np.int64))
        out = client.infer("sage", [s], parameters={"min_version": 1})
        assert out.get_response().parameters["graph_version"].uint64_param == 1
        with pytest.raises(grpc.RpcError) as bad:
            update(msg["GraphUpdateRequest"](add_src=[1], add_dst=[10 ** 9]), metadata=auth)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "out of range" in bad.value.details()
        with pytest.raises(grpc.RpcError) as anon:
            update(msg["GraphUpdateRequest"](add_src=[1], add_dst=[2]))
        assert anon.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert version(msg["GraphVersionRequest"](), metadata=auth).version == 1
        stats = subprocess.run([SPINDLE, "client", "--connect", capnp, "--token-file",
                                str(tmp_path / "token"), "admin", "stats"], check=True,
                               capture_output=True, text=True).stdout
        by_door = json.loads(stats)["graph"]["updates_by_door"]
        assert by_door["grpc"] == {"applied": 1, "refused": 1}, by_door
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
