"""GNNs loaded into a running `spindle serve --calibrate-loads N` are timed on
themselves as they load, as the server timed its routing at start (before:
they always routed by the calibration of the model the server started with);
without it they still do (a load stays quick). Real servers on free loopback
ports, the server's log read for what it did."""
import os
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))


@pytest.fixture(scope="module")
def data():
    tmp = tempfile.mkdtemp(prefix="spindle-cal-")
    subprocess.run([SPINDLE, "generate", "--scale", "10", "--feature-dim", "8", "--seed", "1",
                    "--out", tmp + "/g"], check=True, capture_output=True)
    for name, arch in (("m", "gcn"), ("late", "graphsage")):
        subprocess.run([SPINDLE, "model", "init", "--arch", arch, "--in", "8", "--hidden", "16",
                        "--classes", "3", "--seed", "2", "--name", name, "--out-dir",
                        f"{tmp}/{name}"], check=True, capture_output=True)
    return tmp


def serve(data, *extra):
    """A server of model m; returns (process, endpoint, its log file)."""
    log = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False).name
    with open(log, "w") as out:
        proc = subprocess.Popen([SPINDLE, "serve", "--dataset", data + "/g", "--model", data + "/m",
                                 "--listen", "127.0.0.1:0", "--admin-token-file",
                                 data + "/token", *extra], stdout=out, stderr=subprocess.STDOUT)
    for _ in range(600):
        with open(log) as f:
            for line in f:
                if line.startswith("listening "):
                    return proc, line.split()[1], log
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the server did not start: " + open(log).read())


def load_and_read_log(data, endpoint, log):
    with sc.Client(endpoint, token_file=data + "/token") as c:
        c.load_model("late", data + "/late")
        assert c.infer_gnn([1, 2], model="late").shape == (2, 3)
    with open(log) as f:
        return f.read()


def test_a_model_loaded_at_run_time_is_calibrated_as_it_loads(data):
    proc, endpoint, log = serve(data, "--calibrate-loads", "40")
    try:
        text = load_and_read_log(data, endpoint, log)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "no --calibration: calibrating PSGS routing now" in text  # at start, on m
    assert "calibrating PSGS routing for 'late' as it loads (40 batches" in text, text
    assert "PSGS routing of 'late' calibrated:" in text, text


def test_without_calibrate_loads_a_loaded_model_routes_by_the_start_s_calibration(data):
    proc, endpoint, log = serve(data)
    try:
        text = load_and_read_log(data, endpoint, log)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "no --calibration: calibrating PSGS routing now" in text
    assert "as it loads" not in text, text
