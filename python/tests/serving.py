"""Starting a `spindle serve` for a test: the child's stdout is read until its
"listening HOST:PORT" line; the endpoint is returned with the process."""
import os
import socket
import subprocess


def start_server(argv):
    """Runs argv (a spindle serve command); returns (process, endpoint)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if line.startswith("listening "):
            return proc, line.split()[1]
    proc.kill()
    raise AssertionError("server did not start: " + " ".join(argv[:4]))


def start_server_with_http(argv):
    """Runs argv (a spindle serve command with --http); returns (process, endpoint,
    the HTTP door's base URL without its /v2)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    base = None
    for line in proc.stdout:
        if line.startswith("http "):
            base = line.split()[1][:-len("/v2")]
        if line.startswith("listening "):
            return proc, line.split()[1], base
    proc.kill()
    raise AssertionError("server did not start: " + " ".join(argv[:4]))


_next_port = [20000 + os.getpid() * 2654435761 % 12000]


def free_port():
    """A loopback port free now, below Linux's ephemeral range (32768-60999): a
    server binds it a moment later, and a port from the ephemeral range could
    meanwhile be handed to any socket another test opens on port 0."""
    for _ in range(20000, 32760):
        port = _next_port[0]
        _next_port[0] = 20000 if port + 1 >= 32760 else port + 1
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise AssertionError("no free loopback port in 20000-32759")


def prepare_dataset(spindle, tmp, edges, x):
    """tmp/ds prepared by `spindle prepare` from edge_index [2, E] and features
    x [N, F], saved as numpy saves them (tmp/edge_index.npy, tmp/x.npy)."""
    import numpy as np
    np.save(tmp / "edge_index.npy", edges)
    np.save(tmp / "x.npy", x)
    subprocess.run([spindle, "prepare", "--input", str(tmp / "edge_index.npy"), "--features",
                    str(tmp / "x.npy"), "--out", str(tmp / "ds")], check=True,
                   capture_output=True)
    return tmp / "ds"


def cluster_toml(path, ports, doors=None):
    """Writes a loopback cluster TOML to `path`: one [[server]] per port in
    `ports` (rank order, names s0, s1, ...), and door = "127.0.0.1:PORT" for
    each rank in `doors` (rank -> port). Returns `path`."""
    doors = doors or {}
    path.write_text('coordinator = "s0"\n' + "".join(
        f'[[server]]\nname = "s{r}"\nhost = "127.0.0.1"\nport = {p}\nmemory = 1000000\n'
        + (f'door = "127.0.0.1:{doors[r]}"\n' if r in doors else "")
        for r, p in enumerate(ports)))
    return path
