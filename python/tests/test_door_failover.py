"""The blocking client over several doors when one goes down and comes back, with
real `spindle serve` processes (the golden DLRM) on fixed free loopback ports:
calls keep succeeding while a door is killed (a call sent to it is sent once more,
to the other door), a refusal of bad input is raised and never sent twice, and the
door restarted on the same port takes calls again. Each door's Prometheus
metrics count the calls it took."""
import os
import re
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import spindle_client as sc  # noqa: E402
from serving import free_port  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))
GOLDEN = os.path.join(ROOT, "tests", "nn", "golden", "dlrm")
DENSE = np.linspace(0, 1, 2 * 13, dtype=np.float32).reshape(2, 13)
SPARSE = [[[1, 2], [3], [4]], [[5], [6, 7], [8]]]


def door(port):
    """A `spindle serve` of the golden DLRM as "ctr" on 127.0.0.1:port; returns
    (process, its metrics URL)."""
    proc = subprocess.Popen([SPINDLE, "serve", "--rec-model", "ctr=" + GOLDEN, "--listen",
                             f"127.0.0.1:{port}", "--metrics", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    metrics = None
    for line in proc.stdout:
        if line.startswith("metrics "):
            metrics = line.split()[1]
        if line.startswith("listening "):
            return proc, metrics
    proc.kill()
    raise AssertionError(f"the door on port {port} did not start")


def calls(metrics_url) -> int:
    """The calls a door took, from its spindle_requests_total."""
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    return sum(int(float(v)) for v in re.findall(r"^spindle_requests_total\{[^}]*\} (\S+)$",
                                                  text, re.M))


@pytest.fixture
def doors():
    ports = {"a": free_port(), "b": free_port()}
    procs, metrics = {}, {}
    for k in ports:
        procs[k], metrics[k] = door(ports[k])
    yield procs, ports, metrics
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=30)


def test_a_door_that_goes_down_is_left_and_taken_back_when_it_answers(doors):
    procs, ports, metrics = doors
    endpoints = [f"127.0.0.1:{ports['a']}", f"127.0.0.1:{ports['b']}"]
    at_start = calls(metrics["b"])  # the server's own warm-up call counts too
    with sc.Client(endpoints, model="ctr", retry_after=0.2) as c:
        want = c.infer_rec(DENSE, SPARSE)
        for _ in range(4):
            assert np.allclose(c.infer_rec(DENSE, SPARSE), want)
        assert calls(metrics["b"]) >= at_start + 2, "b took no calls while both doors were up"

        # b is killed: every call still succeeds (those sent to b go to a).
        procs["b"].kill()
        procs["b"].wait()
        before = calls(metrics["a"])
        for _ in range(10):
            assert np.allclose(c.infer_rec(DENSE, SPARSE), want)
        assert c.endpoints == [endpoints[0]]
        assert calls(metrics["a"]) == before + 10

        # A refusal (a width the model does not take) is raised, not sent again.
        before = calls(metrics["a"])
        with pytest.raises(sc.SpindleError) as err:
            c.infer_rec(np.zeros((1, 5), dtype=np.float32), [[[1], [2], [3]]])
        assert not isinstance(err.value, sc.DoorDown) and err.value.status != "unavailable"
        assert calls(metrics["a"]) == before + 1, "the refused call was sent more than once"

        # b restarted on its port: after its back-off it is taken back and gets calls.
        procs["b"], metrics["b"] = door(ports["b"])
        at_start = calls(metrics["b"])
        deadline = time.monotonic() + 30
        while calls(metrics["b"]) == at_start and time.monotonic() < deadline:
            assert np.allclose(c.infer_rec(DENSE, SPARSE), want)
            time.sleep(0.05)
        assert calls(metrics["b"]) > at_start, "the restarted door got no calls"
        assert sorted(c.endpoints) == sorted(endpoints)


def test_a_door_down_at_the_start_is_tried_again():
    port_a, port_b = free_port(), free_port()
    a, _ = door(port_a)
    b = None
    try:
        with sc.Client(f"127.0.0.1:{port_a},127.0.0.1:{port_b}", model="ctr",
                       retry_after=0.2) as c:
            assert c.endpoints == [f"127.0.0.1:{port_a}"]
            b, metrics_b = door(port_b)
            at_start = calls(metrics_b)
            deadline = time.monotonic() + 30
            while calls(metrics_b) == at_start and time.monotonic() < deadline:
                c.infer_rec(DENSE, SPARSE)
                time.sleep(0.05)
            assert calls(metrics_b) > at_start, "the door that came up later got no calls"
    finally:
        for p in (a, b):
            if p is not None:
                p.terminate()
                p.wait(timeout=30)
