"""save_graph: a PyG graph (Data or HeteroData) written for `spindle prepare`.

    from spindle_client.export import save_graph
    save_graph(data, "graphs/imdb")        # then: spindle prepare --input graphs/imdb --out ds

OUT_DIR gets graph.json ({"format": "spindle-graph", "version": 1, "node_types":
[{"name", "num_nodes", "x", "y"}], "edge_types": [{"src", "rel", "dst",
"edge_index", "edge_attr"}]}) beside one .npy file per array: x float32 [n, d],
y int64 [n], edge_index int64 [2, E] (local ids of the src and dst node types),
edge_attr float32 [E, k]. A Data is one node type "node" and one edge type
("node", "to", "node"). Anything that would not come back the same is refused
with a ValueError naming the node or edge type. Needs numpy and torch_geometric.
"""
import json
import os

FORMAT = "spindle-graph"
VERSION = 1
_NAME_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def save_graph(data, out_dir):
    """Writes `data` (torch_geometric Data or HeteroData) to OUT_DIR as graph.json
    plus .npy files. OUT_DIR must be missing, empty or an earlier save_graph
    output (whose files are replaced). Returns graph.json's path."""
    from torch_geometric.data import Data, HeteroData
    if isinstance(data, HeteroData):
        nodes, edges = _hetero(data)
    elif isinstance(data, Data):
        nodes, edges = _homogeneous(data)
    else:
        raise ValueError(f"save_graph: {type(data).__name__} is neither a torch_geometric "
                         "Data nor a HeteroData")
    _prepare_out_dir(out_dir)
    return _write(out_dir, nodes, edges)


def _numpy(t):
    if t is None:
        return None
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    import numpy as np
    return np.asarray(t)


def _check_name(what, name):
    if not isinstance(name, str) or not name or not set(name) <= _NAME_CHARS:
        raise ValueError(f"save_graph: {what} {name!r}: names are made of the characters "
                         "A-Z a-z 0-9 _ . - (and are not empty)")


def _node_type(name, num_nodes, x, y):
    import numpy as np
    _check_name("node type", name)
    if num_nodes is None:
        raise ValueError(f"save_graph: node type '{name}' has no num_nodes (set it, or give x)")
    num_nodes = int(num_nodes)
    x, y = _numpy(x), _numpy(y)
    if x is not None:
        if x.ndim != 2 or x.shape[0] != num_nodes:
            raise ValueError(f"save_graph: node type '{name}': x has shape {tuple(x.shape)}, "
                             f"expected 2-D [{num_nodes}, features]")
        x = np.ascontiguousarray(x, dtype=np.float32)
        if not np.isfinite(x).all():
            raise ValueError(f"save_graph: node type '{name}': x holds NaN or infinite values")
    if y is not None:
        if y.ndim != 1 or y.shape[0] != num_nodes or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"save_graph: node type '{name}': y has shape {tuple(y.shape)} and "
                             f"dtype {y.dtype}, expected integer class labels [{num_nodes}]")
        y = np.ascontiguousarray(y, dtype=np.int64)
        if (y < -1).any():
            raise ValueError(f"save_graph: node type '{name}': y holds labels below -1")
    return {"name": name, "num_nodes": num_nodes, "x": x, "y": y}


def _edge_type(key, edge_index, edge_attr, nodes):
    import numpy as np
    src, rel, dst = key
    _check_name("relation", rel)
    what = f"edge type ({src}, {rel}, {dst})"
    for side in (src, dst):
        if side not in nodes:
            raise ValueError(f"save_graph: {what}: '{side}' is not a node type")
    ei = _numpy(edge_index)
    if ei is None or ei.ndim != 2 or ei.shape[0] != 2 or not np.issubdtype(ei.dtype, np.integer):
        shape = None if ei is None else tuple(ei.shape)
        raise ValueError(f"save_graph: {what}: edge_index has shape {shape}, expected an "
                         "integer [2, num_edges]")
    ei = np.ascontiguousarray(ei, dtype=np.int64)
    for row, side in ((0, src), (1, dst)):
        n = nodes[side]["num_nodes"]
        bad = np.flatnonzero((ei[row] < 0) | (ei[row] >= n))
        if bad.size:
            raise ValueError(f"save_graph: {what}: edge_index[{row}][{bad[0]}] = "
                             f"{ei[row][bad[0]]} out of range for node type '{side}' "
                             f"({n} nodes)")
    ea = _numpy(edge_attr)
    if ea is not None:
        if ea.ndim == 1:
            ea = ea.reshape(-1, 1)
        if ea.ndim != 2 or ea.shape[0] != ei.shape[1]:
            raise ValueError(f"save_graph: {what}: edge_attr has shape {tuple(ea.shape)}, "
                             f"expected [{ei.shape[1]}, k]")
        ea = np.ascontiguousarray(ea, dtype=np.float32)
        if not np.isfinite(ea).all():
            raise ValueError(f"save_graph: {what}: edge_attr holds NaN or infinite values")
    return {"src": src, "rel": rel, "dst": dst, "edge_index": ei, "edge_attr": ea}


def _homogeneous(data):
    x = getattr(data, "x", None)
    node = _node_type("node", data.num_nodes, x, getattr(data, "y", None))
    nodes = {"node": node}
    edge = _edge_type(("node", "to", "node"), data.edge_index,
                      getattr(data, "edge_attr", None), nodes)
    return [node], [edge]


def _hetero(data):
    nodes = {}
    for name in data.node_types:
        store = data[name]
        nodes[name] = _node_type(name, store.num_nodes, getattr(store, "x", None),
                                 getattr(store, "y", None))
    edges = []
    for key in data.edge_types:
        store = data[key]
        if "edge_index" not in store:
            raise ValueError(f"save_graph: edge type {key} has no edge_index")
        edges.append(_edge_type(key, store.edge_index, getattr(store, "edge_attr", None), nodes))
    if not nodes or not edges:
        raise ValueError("save_graph: the graph needs at least one node type and one edge type")
    return list(nodes.values()), edges


def _previous_files(out_dir):
    """The files an earlier save_graph wrote to out_dir, or None when it is not one."""
    path = os.path.join(out_dir, "graph.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None
    files = []
    for entry in meta.get("node_types", []) + meta.get("edge_types", []):
        for key in ("x", "y", "edge_index", "edge_attr"):
            name = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(name, str) and name and "/" not in name and name not in (".", ".."):
                files.append(name)
    return files + ["graph.json"]  # last: a run stopped midway leaves a folder still known


def _prepare_out_dir(out_dir):
    if not isinstance(out_dir, (str, os.PathLike)) or not str(out_dir):
        raise ValueError(f"save_graph: out_dir={out_dir!r}: give a folder's path")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"save_graph: out_dir {out_dir}: exists and is not a folder")
    if not os.path.isdir(out_dir) or not os.listdir(out_dir):
        os.makedirs(out_dir, exist_ok=True)
        return
    previous = _previous_files(out_dir)
    if previous is None:
        raise ValueError(f"save_graph: out_dir {out_dir} is not empty and holds no earlier "
                         "save_graph output (graph.json): give an empty or new folder")
    for name in previous:
        try:
            os.remove(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass


def _save(out_dir, name, array):
    import numpy as np
    if array is None:
        return None
    np.save(os.path.join(out_dir, name), array, allow_pickle=False)
    return name


def _write(out_dir, nodes, edges):
    meta = {"format": FORMAT, "version": VERSION, "node_types": [], "edge_types": []}
    for i, n in enumerate(nodes):
        stem = f"node{i}_{n['name']}"
        meta["node_types"].append({
            "name": n["name"], "num_nodes": n["num_nodes"],
            "x": _save(out_dir, f"{stem}_x.npy", n["x"]),
            "y": _save(out_dir, f"{stem}_y.npy", n["y"])})
    for i, e in enumerate(edges):
        stem = f"edge{i}_{e['rel']}"
        meta["edge_types"].append({
            "src": e["src"], "rel": e["rel"], "dst": e["dst"],
            "edge_index": _save(out_dir, f"{stem}_index.npy", e["edge_index"]),
            "edge_attr": _save(out_dir, f"{stem}_attr.npy", e["edge_attr"])})
    path = os.path.join(out_dir, "graph.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)  # written last: a half-written folder has no graph.json
    return path
