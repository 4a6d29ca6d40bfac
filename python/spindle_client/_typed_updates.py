"""Update batches for a typed (heterogeneous) graph, in the shapes HeteroData uses:
add_edges={("user", "pays", "merchant"): (src, dst)}, add_nodes={"tx": rows},
set_features={"user": (ids, rows)}, remove_nodes={"user": ids},
remove_edges={...}; ids are local to their types. Turned into GraphUpdate's
typed fields (addTyped, removeTyped, nodeChanges) for Admin.updateGraph."""
import numpy as np

_FIELDS = ("add_edges", "remove_edges", "add_nodes", "set_features", "remove_nodes")


def is_typed(**fields):
    """True when the batch is given per type (dicts); a mix of dicts and untyped
    arrays is refused by name."""
    given = {k: v for k, v in fields.items() if v is not None}
    typed = [k for k, v in given.items() if isinstance(v, dict)]
    if typed and len(typed) != len(given):
        flat = sorted(set(given) - set(typed))
        raise ValueError(f"{', '.join(flat)}: give every field per type (a dict) when "
                         f"{typed[0]} is: the batch names types or none")
    return bool(typed)


def _edge_type(key):
    if isinstance(key, tuple):
        if len(key) != 3 or not all(isinstance(k, str) for k in key):
            raise ValueError(f"edge type {key!r}: expected (src, rel, dst) names")
        return ",".join(key)
    if isinstance(key, str):
        return key
    raise ValueError(f"edge type {key!r}: expected (src, rel, dst) or a relation name")


def _edges(name, groups, weights_allowed):
    out = []
    for key, pair in groups.items():
        if not isinstance(pair, (tuple, list)) or len(pair) not in ((2, 3) if weights_allowed
                                                                   else (2,)):
            raise ValueError(f"{name}[{key!r}]: expected (src, dst)"
                             + (" or (src, dst, weight)" if weights_allowed else ""))
        src, dst = (np.asarray(a, dtype=np.int64).reshape(-1) for a in pair[:2])
        g = {"edgeType": _edge_type(key), "src": src.tolist(), "dst": dst.tolist()}
        if len(pair) == 3:
            g["weight"] = np.asarray(pair[2], dtype=np.float32).reshape(-1).tolist()
        out.append(g)
    return out


def _node_group(groups, order, node_type):
    if not isinstance(node_type, str):
        raise ValueError(f"node type {node_type!r}: expected a name")
    if node_type not in groups:
        groups[node_type] = {"nodeType": node_type}
        order.append(node_type)
    return groups[node_type]


def typed_update(add_edges=None, remove_edges=None, add_nodes=None, set_features=None,
                 remove_nodes=None):
    """GraphUpdate's typed fields, and each node type's count of added nodes in
    the order the server numbers them."""
    u, groups, order = {}, {}, []
    if add_edges:
        u["addTyped"] = _edges("add_edges", add_edges, True)
    if remove_edges:
        u["removeTyped"] = _edges("remove_edges", remove_edges, False)
    for t, rows in (add_nodes or {}).items():
        g = _node_group(groups, order, t)
        if isinstance(rows, (int, np.integer)):  # a featureless type: a count
            g["add"] = int(rows)
            continue
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim != 2:
            raise ValueError(f"add_nodes[{t!r}] must be [n, width] feature rows (or a count), "
                             f"got shape {rows.shape}")
        g["add"], g["addFeatures"] = rows.shape[0], rows.reshape(-1).tolist()
    for t, pair in (set_features or {}).items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"set_features[{t!r}]: expected (ids, rows)")
        g = _node_group(groups, order, t)
        g["setIds"] = np.asarray(pair[0], dtype=np.int64).reshape(-1).tolist()
        g["setRows"] = np.asarray(pair[1], dtype=np.float32).reshape(-1).tolist()
    for t, ids in (remove_nodes or {}).items():
        _node_group(groups, order, t)["remove"] = \
            np.asarray(ids, dtype=np.int64).reshape(-1).tolist()
    if order:
        u["nodeChanges"] = [groups[t] for t in order]
    return u, [(t, groups[t].get("add", 0)) for t in order]


def new_ids_by_type(new_ids, added):
    """{node type: int64 local ids} from the answer's ids (in the batch's order)."""
    out, at = {}, 0
    for t, n in added:
        if n:
            out[t] = np.asarray(new_ids[at:at + n], dtype=np.int64)
            at += n
    return out
