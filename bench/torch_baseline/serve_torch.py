#!/usr/bin/env python3
"""The plain-script baseline for bench/batch_breakdown and bench/serving_sweep:
a NumPy neighbour sampler plus a PyTorch GraphSAGE (mean aggregator), the
script a user would write before reaching for a serving system.

It reads a Spindle dataset directory (indptr.npy, indices.npy, features.npy),
builds the sweep's model shape (128-256-47, 2 layers, fanouts [25, 10]),
draws single seeds by out-degree, and serves fixed batches back to back
(closed loop, one batch in flight): per batch size, seeds/s and the p50/p99
batch latency (sample + gather + forward).

Set up fairly: Debian's python3-torch (OpenBLAS), torch threads = cores,
OMP_WAIT_POLICY=PASSIVE (set by the caller), inference_mode, the sampler
vectorised with NumPy (one frontier at a time, each node expanded once, the
batch's seeds sampled jointly as NeighborLoader does; neighbours drawn with
replacement where a row has more than the fanout, cheaper than PyG's default).
With --device cuda (the GPU peer): the graph, the features and the model on
the GPU, and the sampler written in torch ops on the device (the same draw,
each hop's new nodes found with a node-indexed table on the device); each
batch's seeds go up and its answers come back to the host, as a served call's.
   OMP_WAIT_POLICY=PASSIVE python3 serve_torch.py DATASET_DIR [--batches 40] [--device cuda]
"""
import argparse
import os
import time

import numpy as np
import torch


class Sage(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.lin_l = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.lin_r = torch.nn.ModuleList(
            torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

    def forward(self, blocks, x):
        for i, (dst_n, src, dst) in enumerate(blocks):
            agg = torch.zeros(dst_n, x.shape[1], device=x.device).index_add_(0, dst, x[src])
            deg = torch.bincount(dst, minlength=dst_n).clamp(min=1).unsqueeze(1)
            x = self.lin_l[i](agg / deg) + self.lin_r[i](x[:dst_n])
            if i + 1 < len(self.lin_l):
                x = torch.relu(x)
        return x


def layer_blocks(edges, hop_end, as_tensor):
    """The model's blocks from a sample's hops: layer l (input side first) uses the
    edges of hop K - l, as (dst rows, src, dst) with src and dst as_tensor'ed."""
    k = len(edges)
    return [(hop_end[k - 1 - l], as_tensor(edges[k - 1 - l][1]), as_tensor(edges[k - 1 - l][0]))
            for l in range(k)]


class Sampler:
    def __init__(self, indptr, indices, fanouts, rng):
        self.indptr, self.indices, self.fanouts, self.rng = indptr, indices, fanouts, rng
        self.local = np.full(len(indptr) - 1, -1, np.int64)

    def sample(self, seeds):
        nodes = list(dict.fromkeys(seeds.tolist()))
        nodes = np.array(nodes, np.int64)
        self.local[nodes] = np.arange(len(nodes))
        hop_end, edges = [len(nodes)], []
        begin = 0
        for k in self.fanouts:
            frontier = nodes[begin:]
            start, deg = self.indptr[frontier], self.indptr[frontier + 1] - self.indptr[frontier]
            take = np.minimum(deg, k)
            rows = np.repeat(np.arange(begin, len(nodes)), take)
            first = np.repeat(start, take)
            within = np.arange(take.sum()) - np.repeat(np.cumsum(take) - take, take)
            full = np.repeat(deg <= k, take)
            rand = (self.rng.random(len(rows)) * np.repeat(deg, take)).astype(np.int64)
            nbrs = self.indices[first + np.where(full, within, rand)].astype(np.int64)
            new = np.unique(nbrs[self.local[nbrs] < 0])
            self.local[new] = np.arange(len(nodes), len(nodes) + len(new))
            nodes = np.concatenate([nodes, new])
            edges.append((rows, self.local[nbrs]))
            begin = hop_end[-1]
            hop_end.append(len(nodes))
        self.local[nodes] = -1
        return nodes, layer_blocks(edges, hop_end, torch.from_numpy)


class TorchSampler:
    """Sampler's draw in torch ops, on the tensors' device (the GPU peer)."""

    def __init__(self, indptr, indices, fanouts, device):
        self.indptr = torch.from_numpy(indptr).to(device)
        self.indices = torch.from_numpy(indices.astype(np.int64)).to(device)
        self.fanouts, self.device = fanouts, device
        self.local = torch.full((len(indptr) - 1,), -1, dtype=torch.int64, device=device)

    def sample(self, seeds):
        nodes = torch.unique(seeds)
        self.local[nodes] = torch.arange(len(nodes), device=self.device)
        hop_end, edges, begin = [len(nodes)], [], 0
        for k in self.fanouts:
            frontier = nodes[begin:]
            start = self.indptr[frontier]
            deg = self.indptr[frontier + 1] - start
            take = torch.clamp(deg, max=k)
            rows = torch.repeat_interleave(torch.arange(begin, len(nodes), device=self.device), take)
            total = len(rows)
            first = torch.repeat_interleave(start, take)
            within = torch.arange(total, device=self.device) - torch.repeat_interleave(
                torch.cumsum(take, 0) - take, take)
            full = torch.repeat_interleave(deg <= k, take)
            rand = (torch.rand(total, device=self.device) * torch.repeat_interleave(deg, take)).long()
            nbrs = self.indices[first + torch.where(full, within, rand)]
            new = torch.unique(nbrs[self.local[nbrs] < 0])
            self.local[new] = torch.arange(len(nodes), len(nodes) + len(new), device=self.device)
            nodes = torch.cat([nodes, new])
            edges.append((rows, self.local[nbrs]))
            begin = hop_end[-1]
            hop_end.append(len(nodes))
        self.local[nodes] = -1
        return nodes, layer_blocks(edges, hop_end, lambda t: t)


def blas_library():
    """The BLAS this process loaded (Debian's torch links libblas.so.3, an alternative)."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    return ", ".join(sorted(os.path.realpath(p) for p in libs)) or "none found"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = ap.parse_args()
    cuda = a.device == "cuda"
    torch.set_num_threads(os.cpu_count())
    indptr = np.load(os.path.join(a.dataset, "indptr.npy")).astype(np.int64)
    indices = np.load(os.path.join(a.dataset, "indices.npy"))
    feats = torch.from_numpy(np.ascontiguousarray(np.load(os.path.join(a.dataset, "features.npy"))))
    deg = np.diff(indptr).astype(np.float64)
    p0 = deg / deg.sum()
    rng = np.random.default_rng(1)
    model = Sage([feats.shape[1], 256, 47]).eval()
    if cuda:
        feats, model = feats.to("cuda"), model.to("cuda")
        sampler = TorchSampler(indptr, indices, [25, 10], "cuda")
        print(f"{a.dataset}: torch sampler + PyTorch {torch.__version__} GraphSAGE "
              f"{feats.shape[1]}-256-47 [25,10] on {torch.cuda.get_device_name()}")
    else:
        sampler = Sampler(indptr, indices, [25, 10], rng)
        print(f"{a.dataset}: NumPy sampler + PyTorch {torch.__version__} GraphSAGE "
              f"{feats.shape[1]}-256-47 [25,10], {torch.get_num_threads()} torch threads, "
              f"BLAS {blas_library()}")
    print(f"{'batch':>6} | {'seeds/s':>9} | {'p50 ms':>8} {'p99 ms':>8}")
    with torch.inference_mode():
        for batch in (1, 16, 64, 256) + ((1024,) if cuda else ()):
            lat = []
            count = a.batches * (4 if batch == 1 else 1)
            seeds = rng.choice(len(p0), size=(count + 3) * batch, p=p0)
            t0 = None
            for i in range(count + 3):
                if i == 3:
                    t0 = time.perf_counter()
                s = time.perf_counter()
                if cuda:  # the call's seeds up, its answers down
                    nodes, blocks = sampler.sample(
                        torch.from_numpy(seeds[i * batch:(i + 1) * batch]).to("cuda"))
                    model(blocks, feats[nodes]).cpu()
                else:
                    nodes, blocks = sampler.sample(seeds[i * batch:(i + 1) * batch])
                    model(blocks, feats[torch.from_numpy(nodes)])
                lat.append(time.perf_counter() - s)
            wall = time.perf_counter() - t0
            lat = np.array(lat[3:]) * 1e3
            print(f"{batch:>6} | {count * batch / wall:>9.0f} | {np.percentile(lat, 50):>8.2f} "
                  f"{np.percentile(lat, 99):>8.2f}")


if __name__ == "__main__":
    main()
