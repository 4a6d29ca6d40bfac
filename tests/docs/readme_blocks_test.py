#!/usr/bin/env python3
"""Runs README.md's runnable shell blocks, in order and in one shell, against a
live build, in a scratch folder laid out as the README expects (build/ and
python/ of this checkout; the graph and the exported model of the Python step).

A block preceded by `<!-- runnable -->` must succeed; one preceded by
`<!-- runnable: network -->` needs the package index (pip) and is skipped, with
a message, when it cannot be reached. The user docs are also checked for what
they must not carry: issue numbers, links outside the repository, paths of
this repository that no longer exist, and history ("Before: ...").

usage: readme_blocks_test.py SOURCE_DIR BUILD_DIR [SHARED_DATA_DIR]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BLOCK = re.compile(r"<!-- runnable(?::\s*(\w+))? -->\s*\n```sh\n(.*?)```", re.S)


def blocks(readme):
    """[(requirement or '', text)] of every runnable block, in order."""
    return [(m.group(1) or "", m.group(2)) for m in BLOCK.finditer(readme)]


def index_reachable():
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                            tempfile.mkdtemp(), "flit_core"], capture_output=True, timeout=60)
        return r.returncode == 0
    except (subprocess.TimeoutExpired, OSError):
        return False


def cora_arrays(shared):
    """Cora's edge_index [2, E] and features, from the development data folder's
    raw files, or a small generated graph when that folder is absent."""
    content = os.path.join(shared or "", "cora", "cora.content.gz")
    if shared and os.path.exists(content):
        import gzip
        ids, feats = {}, []
        with gzip.open(content, "rt") as f:
            for line in f:
                parts = line.split()
                ids[parts[0]] = len(ids)
                feats.append([float(v) for v in parts[1:-1]])
        src, dst = [], []
        with open(os.path.join(shared, "cora", "cora.cites")) as f:
            for line in f:
                a, b = line.split()
                if a in ids and b in ids:
                    src += [ids[b], ids[a]]
                    dst += [ids[a], ids[b]]
        return np.array([src, dst], dtype=np.int64), np.array(feats, dtype=np.float32)
    rng = np.random.default_rng(1)
    n = 2708
    e = rng.integers(0, n, size=(2, 10000), dtype=np.int64)
    return e, rng.standard_normal((n, 1433)).astype(np.float32)


def make_model(spindle, out, x, edges):
    """The README's exported model: PyG's, checked on the README's graph as the
    README's call does, when torch_geometric is here; else one made by `spindle
    model init` with the same name."""
    in_dim = x.shape[1]
    try:
        import torch
        from torch_geometric.nn import SAGEConv
        sys.path.insert(0, os.path.join(os.environ["SRC"], "python"))
        from spindle_client.export import export_pyg

        class Sage(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1, self.conv2 = SAGEConv(in_dim, 64), SAGEConv(64, 7)

            def forward(self, x, edge_index):
                return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

        torch.manual_seed(0)
        export_pyg(Sage().eval(), out, name="cora", fanouts=[25, 10],
                   check=(torch.from_numpy(x), torch.from_numpy(edges)), spindle=spindle)
        print("model: exported from PyG")
    except ImportError:
        subprocess.run([spindle, "model", "init", "--arch", "graphsage", "--name", "cora",
                        "--in", str(in_dim), "--hidden", "64", "--classes", "7", "--out-dir", out],
                       check=True, capture_output=True)
        print("model: torch_geometric absent, made by spindle model init")


ROOTS = ("apps|actors|core|config|graph|features|serving|colocation|splitrpc|hps|nn|gpu|node|"
         "transport|tests|bench|python|scripts|examples|docs|cmake|demo-data")
REPO_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*{}-]*[\w*}])" % ROOTS)
LINK = re.compile(r"\]\(([^)#:]+)(?:#[^)]*)?\)")


def path_exists(src, base, path):
    """A path the docs name: as written, or a source named without its extension."""
    if "*" in path or "{" in path:
        return True  # a pattern, not one file
    return any(os.path.exists(os.path.join(root, path + ext)) for root in (src, base)
               for ext in ("", ".hpp", ".cpp", ".py", ".sh", ".md", ".toml", ".cu"))


def missing_paths(src, name, text):
    """Repository paths and relative links in `text` (the file `name`) that do not exist."""
    base = os.path.dirname(os.path.join(src, name))
    bad = [m.group(1).rstrip(".") for m in REPO_PATH.finditer(text)]
    bad += [m.group(1).strip() for m in LINK.finditer(text) if not m.group(1).startswith("http")]
    return [f"{name}: no such path '{p}'" for p in bad if not path_exists(src, base, p)]


def check_docs(src):
    bad = []
    docs = ["docs/" + f for f in sorted(os.listdir(os.path.join(src, "docs")))]
    for name in ["README.md", "CONTRIBUTING.md"] + docs:
        text = open(os.path.join(src, name)).read()
        bad += missing_paths(src, name, text)
        # Also history ("Before: ...", "(before: ...)"): user docs keep current
        # figures; earlier designs' figures belong in CHANGELOG.md.
        for pattern in (r"[Ii]ssues? #\d+", r"\.\./shared", r"\]\(\.\./", r"\b[Bb]efore[:,] ",
                        r"\([Bb]efore[: ]"):
            for m in re.finditer(pattern, text):
                bad.append(f"{name}: '{m.group(0)}' at offset {m.start()}")
    return bad


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shared = sys.argv[3] if len(sys.argv) > 3 else ""
    os.environ["SRC"] = src
    bad = check_docs(src)
    if bad:
        print("user docs carry what they must not:\n  " + "\n  ".join(bad))
        return 1
    readme = open(os.path.join(src, "README.md")).read()
    found = blocks(readme)
    if len(found) < 2:
        print(f"README.md: {len(found)} runnable blocks found; expected the first-use steps")
        return 1
    work = tempfile.mkdtemp(prefix="spindle-readme-")
    try:
        os.symlink(build, os.path.join(work, "build"))
        os.symlink(os.path.join(src, "python"), os.path.join(work, "python"))
        edges, x = cora_arrays(shared)
        np.save(os.path.join(work, "edge_index.npy"), edges)
        np.save(os.path.join(work, "x.npy"), x)
        make_model(os.path.join(build, "apps", "spindle"), os.path.join(work, "my-model"), x, edges)
        network = index_reachable()
        script = ["set -euo pipefail"]
        for i, (need, text) in enumerate(found):
            if need == "network" and not network:
                print(f"block {i + 1}: skipped (needs the package index, unreachable here)")
                continue
            script += [f"echo '--- block {i + 1}'", text]
        script.append("wait")
        r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, text=True,
                           capture_output=True, timeout=900)
        print(r.stdout[-6000:])
        if r.returncode != 0:
            print(r.stderr[-6000:])
            log = os.path.join(work, "serve.log")
            if os.path.exists(log):
                print("serve.log:\n" + open(log).read()[-3000:])
            print(f"README blocks failed with exit {r.returncode}")
            return 1
        if '"status":"ok"' not in r.stdout.replace(" ", "") and "outputs" not in r.stdout:
            print("no answer seen in the blocks' output")
            return 1
        print(f"README: {len(found)} runnable blocks ran")
        return 0
    finally:
        subprocess.run(["pkill", "-f", "--", "--dataset cora-graph --model my-model"], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
