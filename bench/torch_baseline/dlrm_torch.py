#!/usr/bin/env python3
"""The PyTorch peer of a Spindle DLRM: the same model directory (model.toml and
weights.safetensors, read here without the safetensors package) as a plain
PyTorch DLRM (EmbeddingBag sum, bottom MLP, dot interaction, top MLP), fed the
same kind of batches as `spindle client load` draws (dense N(0, 1), one
Zipf-1.2 key per table per sample), run back to back at each batch size.

Set it up fairly: Debian's PyTorch on OpenBLAS, OMP_WAIT_POLICY=PASSIVE, the
threads given (2 on the 2-core VM). Prints one JSON line per batch size:
{"batch": B, "samples_per_s": ..., "p50_ms": ..., "p99_ms": ...}.

usage: dlrm_torch.py MODEL_DIR [--batches 64,256,1024] [--seconds 3] [--threads 2]
       dlrm_torch.py MODEL_DIR --write [--tables 26 --rows 10000]   (a DLRM of the shape
       bench/dlrm_vs_torch.sh uses: 13 dense, bottom 512-256-128, top 1024-1024-512-256-1,
       embedding 128; random weights, written as Spindle reads them)
"""
import argparse
import json
import os
import struct
import time
import tomllib

import numpy as np
import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32", (name, meta["dtype"])
        a, b = meta["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(meta["shape"]).copy())
    return out


class DLRM(torch.nn.Module):
    """The reference DLRM: the golden fixtures (scripts/make_golden_fixtures.py) use it too."""

    def __init__(self, dense_in, bottom, top, rows, dim):
        super().__init__()
        self.bot_l = self.mlp([dense_in] + bottom, sigmoid=False)
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(n, dim, mode="sum") for n in rows])
        k = len(rows) + 1
        self.top_l = self.mlp([dim + k * (k - 1) // 2] + top, sigmoid=True)

    @staticmethod
    def mlp(widths, sigmoid):
        layers = []
        for i in range(1, len(widths)):
            layers.append(torch.nn.Linear(widths[i - 1], widths[i]))
            layers.append(torch.nn.Sigmoid() if sigmoid and i == len(widths) - 1 else torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    def forward(self, dense, indices, offsets):
        x = self.bot_l(dense)
        ly = [emb(i, o) for emb, i, o in zip(self.emb_l, indices, offsets)]
        t = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, torch.transpose(t, 1, 2))
        n = t.shape[1]
        li = [i for i in range(n) for j in range(i)]
        lj = [j for i in range(n) for j in range(i)]
        return self.top_l(torch.cat([x, z[:, li, lj]], dim=1))


def write_model(out_dir, tables, rows):
    """Writes model.toml (with weights_crc32) and weights.safetensors for a random DLRM."""
    import zlib
    torch.manual_seed(1)
    bottom, top, dim = [512, 256, 128], [1024, 1024, 512, 256, 1], 128
    model = DLRM(13, bottom, top, [rows] * tables, dim)
    tensors = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        b = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    data = struct.pack("<Q", len(h)) + h + b"".join(blobs)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "weights.safetensors"), "wb") as f:
        f.write(data)
    with open(os.path.join(out_dir, "model.toml"), "w") as f:
        f.write(f"""[model]
name = "dlrm"
arch = "dlrm"
weights = "weights.safetensors"
weights_crc32 = "{zlib.crc32(data) & 0xffffffff:08x}"
dense_in = 13
bottom = {bottom}
top = {top}
embedding_dim = {dim}
table_rows = {[rows] * tables}
""")


def zipf_keys(rng, n, rows, s=1.2):
    u = rng.random(n)
    e = 1.0 - s
    x = np.power(u * (np.power(rows + 1.0, e) - 1) + 1, 1.0 / e) - 1
    return np.clip(x.astype(np.int64), 0, rows - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--tables", type=int, default=26)
    ap.add_argument("--rows", type=int, default=10000)
    a = ap.parse_args()
    if a.write:
        return write_model(a.model_dir, a.tables, a.rows)
    torch.set_num_threads(a.threads)
    m = tomllib.load(open(os.path.join(a.model_dir, "model.toml"), "rb"))["model"]
    rows = m["table_rows"]
    model = DLRM(m["dense_in"], m["bottom"], m["top"], rows, m["embedding_dim"]).eval()
    model.load_state_dict(load_safetensors(os.path.join(a.model_dir, m.get("weights", "weights.safetensors"))))
    rng = np.random.default_rng(1)
    for batch in [int(b) for b in a.batches.split(",")]:
        inputs = []
        for _ in range(8):  # a few batches, sent in turn (as the load generator does)
            dense = torch.from_numpy(rng.standard_normal((batch, m["dense_in"]), dtype=np.float32))
            idx = [torch.from_numpy(zipf_keys(rng, batch, r)) for r in rows]
            off = [torch.arange(batch, dtype=torch.int64) for _ in rows]
            inputs.append((dense, idx, off))
        lat = []
        with torch.no_grad():
            for x in inputs[:2]:
                model(*x)  # warm-up
            t_end = time.perf_counter() + a.seconds
            i = 0
            while time.perf_counter() < t_end:
                t0 = time.perf_counter()
                model(*inputs[i % len(inputs)])
                lat.append(time.perf_counter() - t0)
                i += 1
        lat.sort()
        print(json.dumps({"batch": batch, "samples_per_s": batch * len(lat) / sum(lat),
                          "p50_ms": lat[len(lat) // 2] * 1e3,
                          "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1e3}), flush=True)


if __name__ == "__main__":
    main()
