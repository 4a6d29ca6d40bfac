"""Translations of the PyG layers served as several ops or with attention:
GATv2Conv, TransformerConv, ResGatedGraphConv, SGConv, TAGConv and GINEConv, and
the edge attributes GINEConv and the attention layers' edge_dim read. Each takes
the Translator `t`, the fx node, the layer, its module path, the op name of its
input and the fx value map; it records the tensors the ops read and emits them.
A layer's op (or its last op) carries the fx node's name, so a call's named
outputs find the layer under its module path."""
from ._verify import ExportError


def _tensor(t, name, tensor):
    t.tensors[name] = tensor.detach().float().cpu()


def _plain_widths(conv, path, kind):
    if not isinstance(conv.in_channels, int):
        raise ExportError(f"{path}: {kind} with separate source/target widths is not supported")


_ATTENTION = ("GATConv", "GATv2Conv", "TransformerConv")


def edge_projection(t, conv, path, kind):
    """An attention layer's edge_dim: records lin_edge.weight (and GATConv's
    att_edge) and returns ({"edge_dim": d}, the state keys taken), or ({}, [])
    without it. A self-loop's attributes are the mean of its target's other
    edges' (fill_value="mean"); any other fill_value is refused by name."""
    dim = getattr(conv, "edge_dim", None)
    if dim is None:
        return {}, []
    fill = getattr(conv, "fill_value", "mean")
    if getattr(conv, "add_self_loops", False) and not (isinstance(fill, str) and fill == "mean"):
        raise ExportError(f"{path}: {kind}(fill_value={fill!r}) with edge_dim: Spindle fills a "
                          f"self-loop's attributes with the mean of its target's edges "
                          f"(fill_value='mean', PyG's default)")
    lin = conv.lin_edge
    if lin.bias is not None:
        raise ExportError(f"{path}.lin_edge has a bias; not a layer PyG builds")
    _tensor(t, f"{path}.lin_edge.weight", lin.weight)
    names = ["lin_edge.weight"]
    if kind == "GATConv":
        _tensor(t, f"{path}.att_edge", conv.att_edge)
        names.append("att_edge")
    edge_attr_width(t, path, int(dim))
    return {"edge_dim": int(dim)}, names


def edge_attr_width(t, path, width):
    """Every layer of a model reads edge attributes of one width: the graph's."""
    if t.edge_attr_width not in (None, width):
        raise ExportError(f"{path}: reads edge attributes {width} wide, an earlier layer "
                          f"{t.edge_attr_width}; a graph's edge attributes have one width")
    t.edge_attr_width = width


def gatv2(t, node, conv, path, src, value):
    """GATv2Conv: lin_l, lin_r (a copy of lin_l with share_weights), att, bias."""
    from ._pyg_checks import check_all_written
    _plain_widths(conv, path, "GATv2Conv")
    heads, out = int(conv.heads), int(conv.out_channels)
    inw = int(conv.lin_l.weight.shape[1])
    t._input_width(src, inw, path)
    bias = conv.bias is not None
    if (conv.lin_l.bias is not None) != bias:
        raise ExportError(f"{path}: GATv2Conv's lin_l has {'no ' if bias else ''}bias while the "
                          f"layer has {'one' if bias else 'none'}; not a layer PyG builds")
    for lin in ("lin_l", "lin_r"):
        module = getattr(conv, lin)
        _tensor(t, f"{path}.{lin}.weight", module.weight)
        if bias:
            _tensor(t, f"{path}.{lin}.bias", module.bias)
    _tensor(t, f"{path}.att", conv.att)
    names = ["lin_l.weight", "lin_r.weight", "att"]
    if bias:
        _tensor(t, f"{path}.bias", conv.bias)
        names += ["lin_l.bias", "lin_r.bias", "bias"]
    edge, edge_names = edge_projection(t, conv, path, "GATv2Conv")
    check_all_written(conv, path, names + edge_names)
    width = heads * out if conv.concat else out
    value[node] = t._emit(node.name, "gatv2", [src], width, prefix=path,
                          **{"in": inw, "out": out, "heads": heads, "concat": bool(conv.concat),
                             "negative_slope": float(conv.negative_slope),
                             "add_self_loops": bool(conv.add_self_loops), "bias": bias, **edge})


def transformer(t, node, conv, path, src, value):
    """TransformerConv: lin_query, lin_key, lin_value; lin_skip and lin_beta with
    root_weight (without it lin_skip is built but never read)."""
    from ._pyg_checks import check_all_written
    _plain_widths(conv, path, "TransformerConv")
    heads, out = int(conv.heads), int(conv.out_channels)
    inw = int(conv.lin_query.weight.shape[1])
    t._input_width(src, inw, path)
    qkv_bias, names = _projections(t, conv, path, ("lin_query", "lin_key", "lin_value"))
    root, beta = bool(conv.root_weight), bool(conv.beta)
    bias = conv.lin_skip.bias is not None
    unread = []
    if root:
        _tensor(t, f"{path}.lin_skip.weight", conv.lin_skip.weight)
        names.append("lin_skip.weight")
        if bias:
            _tensor(t, f"{path}.lin_skip.bias", conv.lin_skip.bias)
            names.append("lin_skip.bias")
        if beta:
            _tensor(t, f"{path}.lin_beta.weight", conv.lin_beta.weight)
            names.append("lin_beta.weight")
    else:
        unread = [k for k in conv.state_dict() if k.startswith("lin_skip.")]
    edge, edge_names = edge_projection(t, conv, path, "TransformerConv")
    check_all_written(conv, path, names + unread + edge_names)
    width = heads * out if conv.concat else out
    value[node] = t._emit(node.name, "transformer", [src], width, prefix=path,
                          **{"in": inw, "out": out, "heads": heads, "concat": bool(conv.concat),
                             "beta": beta, "root_weight": root, "bias": bias,
                             "qkv_bias": qkv_bias, **edge})


def res_gated(t, node, conv, path, src, value):
    """ResGatedGraphConv with PyG's default gate, torch.nn.Sigmoid."""
    import torch
    from ._pyg_checks import check_all_written
    _plain_widths(conv, path, "ResGatedGraphConv")
    if type(conv.act) is not torch.nn.Sigmoid:
        raise ExportError(f"{path}: ResGatedGraphConv(act={conv.act!r}) is not served (Spindle "
                          f"computes its default gate, Sigmoid())")
    out, inw = (int(d) for d in conv.lin_value.weight.shape)
    t._input_width(src, inw, path)
    qkv_bias, names = _projections(t, conv, path, ("lin_key", "lin_query", "lin_value"))
    root = conv.lin_skip is not None
    if root:
        _tensor(t, f"{path}.lin_skip.weight", conv.lin_skip.weight)
        names.append("lin_skip.weight")
    bias = conv.bias is not None
    if bias:
        _tensor(t, f"{path}.bias", conv.bias)
        names.append("bias")
    check_all_written(conv, path, names)
    value[node] = t._emit(node.name, "res_gated", [src], out, prefix=path,
                          **{"in": inw, "out": out, "root_weight": root, "bias": bias,
                             "qkv_bias": qkv_bias})


def _projections(t, conv, path, lins):
    """Records the key/query/value Linears' tensors: (whether they have biases, the
    state keys taken). PyG 2.3 always builds the biases; newer releases follow the
    layer's bias; all or none, as PyG builds them."""
    has = [getattr(conv, lin).bias is not None for lin in lins]
    if any(has) != all(has):
        raise ExportError(f"{path}: some of {', '.join(lins)} have a bias and some not; not a "
                          f"layer PyG builds")
    names = []
    for lin in lins:
        module = getattr(conv, lin)
        _tensor(t, f"{path}.{lin}.weight", module.weight)
        names.append(f"{lin}.weight")
        if all(has):
            _tensor(t, f"{path}.{lin}.bias", module.bias)
            names.append(f"{lin}.bias")
    return all(has), names


def _propagate(t, name, src, add_self_loops, normalize):
    return t._emit(name, "gcn_propagate", [src], t.width[src],
                   **{"add_self_loops": bool(add_self_loops), "normalize": bool(normalize),
                      "norm": "graph"})


def sg_conv(t, node, conv, path, src, value):
    """SGConv: lin(S^K x) with S = D^-1/2 (A + I) D^-1/2. Its first K - 1 hops
    propagate the features; the last is a GCNConv's op (project, propagate, bias:
    the Linear commutes with S) with SGConv's tensors under GCNConv's names."""
    from ._pyg_checks import check_all_written
    if conv.K < 1:
        raise ExportError(f"{path}: SGConv(K={conv.K}) passes no message; K >= 1 is served")
    out, inw = conv.lin.weight.shape
    t._input_width(src, int(inw), path)
    for k in range(1, conv.K):
        src = _propagate(t, f"{node.name}_hop{k}", src, conv.add_self_loops, True)
    bias = conv.lin.bias is not None
    _tensor(t, f"{path}.lin.weight", conv.lin.weight)
    if bias:
        _tensor(t, f"{path}.bias", conv.lin.bias)
    check_all_written(conv, path, ["lin.weight"] + (["lin.bias"] if bias else []))
    value[node] = t._emit(node.name, "gcn", [src], int(out), prefix=path,
                          **{"in": int(inw), "out": int(out),
                             "add_self_loops": bool(conv.add_self_loops), "normalize": True,
                             "improved": False, "bias": bias, "norm": "graph"})


def tag_conv(t, node, conv, path, src, value):
    """TAGConv: sum_k lins[k](S^k x) + bias with S = D^-1/2 A D^-1/2 (no self-loops;
    with normalize=False the plain sum over edges): K propagations of the
    features, a Linear on each hop's value (the bias on the last), their sum."""
    from ._pyg_checks import check_all_written
    if conv.K < 1:
        raise ExportError(f"{path}: TAGConv(K={conv.K}) passes no message; K >= 1 is served")
    out, inw = (int(d) for d in conv.lins[0].weight.shape)
    t._input_width(src, inw, path)
    hops = [src]
    for k in range(1, conv.K + 1):
        hops.append(_propagate(t, f"{node.name}_hop{k}", hops[-1], False, conv.normalize))
    parts, names = [], []
    for k, h in enumerate(hops):
        lin = conv.lins[k]
        if lin.bias is not None:
            raise ExportError(f"{path}.lins.{k}: a bias inside TAGConv's Linear is not one PyG "
                              f"builds")
        _tensor(t, f"{path}.lins.{k}.weight", lin.weight)
        names.append(f"lins.{k}.weight")
        bias = k == conv.K and conv.bias is not None
        if bias:
            _tensor(t, f"{path}.lins.{k}.bias", conv.bias)
            names.append("bias")
        parts.append(t._emit(f"{node.name}_lin{k}", "linear", [h], out, prefix=f"{path}.lins.{k}",
                             **{"in": inw, "out": out, "bias": bias}))
    check_all_written(conv, path, names)
    value[node] = t._emit(node.name, "add", parts, out)


def check_edge_attr_arg(t, kind, conv, path, attr):
    """A conv's edge_attr argument: GINEConv's, and an attention layer's built with
    edge_dim, must be forward's edge_attr; an attention layer without edge_dim
    given attributes, or one with edge_dim called without, and any other layer
    given attributes are refused by name."""
    reads = kind == "GINEConv" or (kind in _ATTENTION
                                   and getattr(conv, "edge_dim", None) is not None)
    if attr is None:
        if reads:
            raise ExportError(f"{path}: {kind}{'(edge_dim=...)' if kind != 'GINEConv' else ''} "
                              f"must be called as conv(x, edge_index, edge_attr) with forward's "
                              f"edge_attr (PyG's basic models, GAT say, take it by keyword: "
                              f"model(x, edge_index, edge_attr=edge_attr))")
        return
    if kind in _ATTENTION and not reads:
        raise ExportError(f"{path}: {kind} without edge_dim given edge attributes (PyG ignores "
                          f"or adds them unprojected); build it with edge_dim or drop them")
    if not reads:
        raise ExportError(f"{path}: {kind} with edge attributes is not served (Spindle serves "
                          f"them for GINEConv, GATConv, GATv2Conv and TransformerConv)")
    if attr is not t.edge_attr:
        raise ExportError(f"{path}: {kind}'s edge_attr must be forward's edge_attr as given "
                          f"(attributes computed in forward are not served)")


def gine(t, node, conv, path, src, value):
    """GINEConv: the gine op (eps; lin.weight and lin.bias with edge_dim) and its nn
    as ops, as GINConv's. Every gine op of a model reads attributes of one width."""
    import torch
    lin, written, fields = getattr(conv, "lin", None), [], {}
    if lin is not None:
        if isinstance(lin.weight, torch.nn.parameter.UninitializedParameter) or lin.bias is None:
            raise ExportError(f"{path}.lin: a lazy or bias-free edge projection is not served")
        fields["edge_dim"] = int(lin.weight.shape[1])
        written = ["lin.weight", "lin.bias"]
        for n in written:
            _tensor(t, f"{path}.{n}", getattr(lin, n.split(".")[1]))
    t._gin(node, conv, path, src, value, "gine", written, **fields)
    edge_attr_width(t, path, fields.get("edge_dim", t.width[src]))
