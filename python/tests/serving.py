"""Starting a `spindle serve` for a test: the child's stdout is read until its
"listening HOST:PORT" line; the endpoint is returned with the process."""
import subprocess


def start_server(argv):
    """Runs argv (a spindle serve command); returns (process, endpoint)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if line.startswith("listening "):
            return proc, line.split()[1]
    proc.kill()
    raise AssertionError("server did not start: " + " ".join(argv[:4]))
