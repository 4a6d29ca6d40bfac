"""Every export is checked before it is written: the user's live module and
Spindle's own C++ forward (`spindle model verify`, the serving path with every
neighbour) run on the same graphs, and a difference beyond the tolerance
refuses the export, naming the first op whose output differs.

The generated check graph exercises what aggregation depends on: self-loops (a
node with two), repeated edges, isolated nodes, a node that only sends, and a
hub with a high in-degree. The user's own graph is checked too when given.
A check graph is (label, x, edge_index, edge_attr), edge_attr None unless the
model reads edge attributes (GINEConv, attention layers with edge_dim); with them, Spindle reads the graph as
save_graph writes it (`spindle model verify --graph`)."""
import os
import shutil
import subprocess
import tempfile

TOLERANCE = 1e-4


class ExportError(ValueError):
    """The model holds a module or operation Spindle does not serve, or its check
    against the module failed, or an argument is wrong; nothing was written."""




def spindle_binary(given):
    """The `spindle` executable the check runs: `given`, $SPINDLE_BINARY, or PATH's."""
    path = given or os.environ.get("SPINDLE_BINARY") or shutil.which("spindle")
    if not path or not os.access(path, os.X_OK):
        raise ExportError("cannot check the export against your module: no spindle binary found "
                         "(pass spindle='path/to/spindle' or set SPINDLE_BINARY; check=False "
                         "writes it unchecked)")
    return path


def generated_graph(in_width, seed=0, self_loops=True):
    """(label, x, edge_index) of the generated check graph, as numpy arrays (without
    self-loops for a model served exactly only on graphs without them)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    n = 48
    src = list(rng.integers(0, n - 2, 120))
    dst = list(rng.integers(0, n - 2, 120))
    src += list(range(1, 31))          # a hub: node 0 has in-degree 30+
    dst += [0] * 30
    src += [3, 3, 5, 7, 7, 7]          # self-loops (node 3 twice) and a triple edge
    dst += [3, 3, 5, 9, 9, 9]
    src += [n - 2] * 3                 # n-2 only sends; n-1 is isolated
    dst += [1, 2, 4]
    x = rng.standard_normal((n, in_width)).astype(np.float32)
    ei = np.array([src, dst], dtype=np.int64)
    if not self_loops:
        ei = ei[:, ei[0] != ei[1]]
    label = (f"generated: {n} nodes, {ei.shape[1]} edges with "
             f"{'self-loops, ' if self_loops else ''}repeated edges, isolated nodes and a hub")
    return label, x, ei


def with_edge_attr(graph, width, seed=0):
    """A generated (label, x, edge_index) with random edge attributes `width` wide
    (or None without a width)."""
    import numpy as np
    label, x, ei = graph
    if width is None:
        return label, x, ei, None
    ea = np.random.default_rng(seed + 1).standard_normal((ei.shape[1], width)).astype(np.float32)
    return f"{label}, edge attributes {width} wide", x, ei, ea


def _arrays(check):
    """(x, edge_index, edge_attr or None) of check=(x, edge_index[, edge_attr]) or a Data."""
    import numpy as np
    if hasattr(check, "edge_index") and hasattr(check, "x"):
        check = (check.x, check.edge_index, getattr(check, "edge_attr", None))
    if not (isinstance(check, (tuple, list)) and len(check) in (2, 3)):
        raise ExportError("check must be True, False, (x, edge_index), (x, edge_index, "
                          "edge_attr) or a Data")
    check = tuple(check) + (None,) * (3 - len(check))
    return tuple(None if t is None else
                 np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t) for t in check)


def user_graph(check):
    """(label, x, edge_index, edge_attr) from check (tensors or arrays; see _arrays)."""
    import numpy as np
    x, ei, ea = _arrays(check)
    if x.ndim != 2:
        raise ExportError(f"check: x has shape {list(x.shape)}; expected [nodes, features]")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ExportError(f"check: edge_index has shape {list(ei.shape)}; expected [2, edges]")
    if not np.issubdtype(ei.dtype, np.integer):
        raise ExportError(f"check: edge_index has dtype {ei.dtype}; expected integers")
    if ei.size and ei.min() < 0:
        raise ExportError(f"check: edge_index holds node {int(ei.min())}; ids start at 0")
    if ei.size and ei.max() >= x.shape[0]:
        raise ExportError(f"check: edge_index holds node {int(ei.max())}, x has {x.shape[0]} rows")
    x, ei = x.astype(np.float32), ei.astype(np.int64)
    if ea is not None and ea.ndim == 1:  # one attribute per edge, as PyG's layers take it
        ea = ea.reshape(-1, 1)
    if ea is not None and (ea.ndim != 2 or ea.shape[0] != ei.shape[1]):
        raise ExportError(f"check: edge_attr has shape {list(ea.shape)}; expected [edges, k] "
                          f"with {ei.shape[1]} edges")
    ea = None if ea is None else ea.astype(np.float32)
    return f"yours: {x.shape[0]} nodes, {ei.shape[1]} edges", x, ei, ea


def relative_difference(got, want):
    """max |got - want| over max |want| (1 when the shapes differ or values are not finite)."""
    import numpy as np
    if got.shape != want.shape:
        return float("inf")
    if not (np.isfinite(got).all() and np.isfinite(want).all()):
        same = np.array_equal(np.isfinite(got), np.isfinite(want))
        got, want = np.nan_to_num(got), np.nan_to_num(want)
        if not same:
            return float("inf")
    scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-6)
    return float(np.abs(got - want).max()) / scale if want.size else 0.0


def _graph_args(tmp, x, ei, ea):
    """`model verify`'s graph: --x and --edge-index, or with edge attributes a
    save_graph folder (--graph)."""
    import numpy as np
    if ea is not None:
        import torch
        from torch_geometric.data import Data
        from ._graph_save import save_graph
        data = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei),
                    edge_attr=torch.from_numpy(ea))
        save_graph(data, os.path.join(tmp, "graph"))
        return ["--graph", os.path.join(tmp, "graph")]
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "edge_index.npy"), ei)
    return ["--x", os.path.join(tmp, "x.npy"), "--edge-index", os.path.join(tmp, "edge_index.npy")]


def run_spindle(binary, model_dir, x, ei, n_ops, ea=None):
    """Each op's output of Spindle's forward over every node of (x, edge_index[, edge_attr])."""
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="spindle-check-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [binary, "--log-level", "warn", "model", "verify", model_dir,
               *_graph_args(tmp, x, ei, ea), "--out", out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise ExportError(f"Spindle could not run the exported model (`{binary} model verify` "
                             f"exited {r.returncode}): {r.stderr.strip()[-2000:] or 'no message'}")
        missing = [i for i in range(n_ops) if not os.path.exists(os.path.join(out, f"op-{i}.npy"))]
        if missing:
            raise ExportError(f"`{binary} model verify` wrote no op-{missing[0]}.npy: is {binary} "
                             f"Spindle's binary (build/apps/spindle)?")
        return [np.load(os.path.join(out, f"op-{i}.npy")) for i in range(n_ops)]


def spindle_scores(binary, model_dir, x, ei, pairs):
    """A link model's scores of `pairs` ([k, 2] int64) over (x, edge_index), as
    Spindle serves them (`spindle model verify --pairs`)."""
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="spindle-check-") as tmp:
        paths = {n: os.path.join(tmp, n + ".npy") for n in ("x", "edge_index", "pairs")}
        np.save(paths["x"], x)
        np.save(paths["edge_index"], ei)
        np.save(paths["pairs"], np.ascontiguousarray(pairs, dtype=np.int64))
        out = os.path.join(tmp, "out")
        cmd = [binary, "--log-level", "warn", "model", "verify", model_dir, "--x", paths["x"],
               "--edge-index", paths["edge_index"], "--pairs", paths["pairs"], "--out", out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise ExportError(f"Spindle could not score pairs with the exported model (`{binary} "
                             f"model verify --pairs` exited {r.returncode}): "
                             f"{r.stderr.strip()[-2000:] or 'no message'}")
        return np.load(os.path.join(out, "scores.npy"))


def module_values(gm, x, ei, ea=None):
    """The traced module's value at every top-level fx node (cloned when made)."""
    import torch
    import torch.fx
    values = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if isinstance(out, torch.Tensor):
                values[n] = out.detach().clone()
            return out

    caches = ("_cached_edge_index", "_cached_adj_t")
    saved = [(m, a, getattr(m, a)) for m in gm.modules() for a in caches if hasattr(m, a)]
    try:
        for m, a, _ in saved:
            setattr(m, a, None)
        with torch.no_grad():
            _Recorder(gm).run(*(torch.from_numpy(a) for a in (x, ei, ea) if a is not None))
    finally:
        for m, a, v in saved:
            setattr(m, a, v)
    return values


def first_difference(ops, produced_by, spindle_ops, values, tolerance):
    """(op index, difference) of the first op whose output parts from the module's."""
    for i, op in enumerate(ops):
        node = produced_by.get(op["name"])
        if node is None or node not in values:
            continue
        want = values[node].float().numpy()
        if want.ndim != 2:
            continue
        d = relative_difference(spindle_ops[i], want)
        if d > tolerance:
            return i, d, node
    return None
