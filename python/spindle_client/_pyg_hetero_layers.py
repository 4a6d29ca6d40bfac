"""The layers a typed model's edge types may use, as typed stack ops: each reads
the edge type `r`'s edges, from the source type's value `src` and, where its
target nodes' own rows count, the target type's value `dst` (the same value on
an edge type within one node type). `t` is the HeteroTranslator; GraphConv is
also the untyped translator's (r None: every edge, no relation)."""
from ._pyg_checks import aggregation_of, check_all_written
from ._verify import ExportError


def _inputs(src, dst):
    return [src] if src == dst else [src, dst]


def _relation(r):
    return {} if r is None else {"relation": r}


def sageconv(t, node, conv, path, src, dst, r, pair):
    aggr = {"add": "sum"}.get(aggregation_of(conv), aggregation_of(conv))
    if aggr not in ("mean", "sum", "max", "min"):
        raise ExportError(f"{path}: SAGEConv(aggr={conv.aggr!r}) is not supported (mean, sum, "
                          f"max, min are)")
    if conv.project:
        raise ExportError(f"{path}: SAGEConv(project=True) on an edge type is not supported")
    out, inw = conv.lin_l.weight.shape
    t._input_width(src, int(inw), path)
    names = ["lin_l.weight"] + (["lin_l.bias"] if conv.lin_l.bias is not None else [])
    if conv.root_weight:
        names.append("lin_r.weight")
        t._input_width(dst, int(conv.lin_r.weight.shape[1]), path)
    t._take(path, conv, names)
    check_all_written(conv, path, names)
    return t._emit(node.name, "sage", _inputs(src, dst), int(out), prefix=path,
                   **{"in": int(inw), "out": int(out), "aggr": aggr,
                      "normalize": bool(conv.normalize), "root_weight": bool(conv.root_weight),
                      "project": False, "bias": conv.lin_l.bias is not None, "relation": r})


def graphconv(t, node, conv, path, src, dst, r, pair):
    """GraphConv: lin_rel(aggr_j x_j) + lin_root(x_i), SAGEConv's op under its names."""
    aggr = {"add": "sum"}.get(aggregation_of(conv), aggregation_of(conv))
    if aggr not in ("sum", "mean", "max", "min"):
        raise ExportError(f"{path}: GraphConv(aggr={conv.aggr!r}) is not supported (add, mean, "
                          f"max, min are)")
    out, inw = conv.lin_rel.weight.shape
    t._input_width(src, int(inw), path)
    t._input_width(dst, int(conv.lin_root.weight.shape[1]), path)
    bias = conv.lin_rel.bias is not None
    names = {"lin_rel.weight": "lin_l.weight", "lin_root.weight": "lin_r.weight"}
    if bias:
        names["lin_rel.bias"] = "lin_l.bias"
    state = conv.state_dict()
    for theirs, ours in names.items():
        t.tensors[f"{path}.{ours}"] = state[theirs].detach().float().cpu()
    check_all_written(conv, path, list(names))
    return t._emit(node.name, "sage", _inputs(src, dst), int(out), prefix=path,
                   **{"in": int(inw), "out": int(out), "aggr": aggr, "normalize": False,
                      "root_weight": True, "project": False, "bias": bias, **_relation(r)})


def _dst_projection_on_one_input(conv):
    """Whether this release's GATConv projects the targets with lin_dst when it is
    called on one tensor (newer releases do; 2.3 uses lin_src for both)."""
    import torch
    lin_dst = getattr(conv, "lin_dst", None)
    if lin_dst is None or lin_dst is getattr(conv, "lin_src", None):
        return False
    calls = []
    handle = lin_dst.register_forward_hook(lambda *a: calls.append(1))
    try:
        width = conv.lin_src.weight.shape[1]
        with torch.no_grad():
            conv(torch.zeros(2, width), torch.tensor([[0], [1]]))
    finally:
        handle.remove()
    return bool(calls)


def gatconv(t, node, conv, path, src, dst, r, pair):
    import torch
    if getattr(conv, "edge_dim", None) is not None:
        raise ExportError(f"{path}: GATConv(edge_dim=...) needs edge attributes; not supported")
    if getattr(conv, "residual", False):
        raise ExportError(f"{path}: GATConv(residual=True) is not served")
    state = conv.state_dict()
    heads, out = int(conv.heads), int(conv.out_channels)
    w_src = state.get("lin.weight", state.get("lin_src.weight"))
    lazy = torch.nn.parameter.UninitializedParameter  # a projection never run (PyG 2.3, one input)
    has_dst = "lin_dst.weight" in state and getattr(conv, "lin_dst", None) is not \
        getattr(conv, "lin_src", None) and not isinstance(state["lin_dst.weight"], lazy)
    if "lin.weight" in state or not has_dst:
        w_dst = w_src
    elif pair or _dst_projection_on_one_input(conv):
        w_dst = state["lin_dst.weight"]
    else:
        w_dst = w_src
    t._input_width(src, int(w_src.shape[1]), path)
    t._input_width(dst, int(w_dst.shape[1]), path)
    t.tensors[f"{path}.lin_src.weight"] = w_src.detach().float().cpu()
    separate = w_dst is not w_src
    inputs = [src, dst] if separate or src != dst else [src]
    if len(inputs) == 2:
        t.tensors[f"{path}.lin_dst.weight"] = w_dst.detach().float().cpu()
    names = ["att_src", "att_dst"] + (["bias"] if conv.bias is not None else [])
    t._take(path, conv, names)
    written = names + [k for k in ("lin.weight", "lin_src.weight", "lin_dst.weight")
                       if k in state and not isinstance(state[k], lazy)]
    check_all_written(conv, path, written)
    width = heads * out if conv.concat else out
    return t._emit(node.name, "gat", inputs, width, prefix=path,
                   **{"in": int(w_src.shape[1]), "out": out, "heads": heads,
                      "concat": bool(conv.concat), "negative_slope": float(conv.negative_slope),
                      "add_self_loops": bool(conv.add_self_loops),
                      "bias": conv.bias is not None, "relation": r})
