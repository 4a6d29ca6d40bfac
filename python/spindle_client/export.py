"""Export a model, as users write it, to a Spindle model directory, checked
against the live module before anything is written.

    from spindle_client.export import export_pyg
    export_pyg(model, "models/sage", name="sage", fanouts=[25, 10],
               check=(data.x, data.edge_index))

export_pyg translates a PyTorch Geometric module (its forward(x, edge_index),
PyG's own GCN/GraphSAGE/GAT/GIN classes included) into model.toml's
`arch = "stack"` ops beside weights.safetensors. Then, by default, Spindle's own
C++ forward (`spindle model verify`: the serving path, every neighbour) and the
module run on the same graphs: a generated one with self-loops, repeated edges,
isolated nodes and a hub, and the user's when given as check=(x, edge_index).
A module whose forward(x, edge_index, edge_attr) passes edge_attr to GINEConv is
served with the dataset's edge attributes: check=(x, edge_index, edge_attr) or a
Data with edge_attr (the generated graph gets random ones).
A difference over `tolerance` (relative to the answer's largest value) refuses
the export, naming the first op that differs; nothing is written. check=False
writes it unchecked; model.toml's [verified] table says which was done.
export_torch does the same for a DLRM written as facebookresearch's DLRM_Net,
checked on the user's example inputs. save_graph writes a graph (Data or
HeteroData, typed node and edge types) for `spindle prepare --input DIR`. Needs torch (and torch_geometric for
export_pyg), not pycapnp, and, to check, the spindle binary.
"""
from . import _model_files as files
from . import _verify as verify
from ._pyg_norms import HeldStatistics, freeze_statistics, graph_statistic_norms
from ._pyg_trace import check_signature, takes_edge_attr
from ._pyg_translate import MESSAGE_PASSING, ExportError, Translator
from ._graph_save import save_graph
from ._rec_export import export_torch

__all__ = ["ExportError", "export_pyg", "export_torch", "save_graph"]


def export_pyg(model, out_dir, *, name, fanouts=None, check=True, spindle=None,
               tolerance=verify.TOLERANCE, task="node", decoder="dot", metadata=None,
               embeddings=None, pair_types=None):
    """Writes OUT_DIR/model.toml and OUT_DIR/weights.safetensors for `model`.

    task: "node" (serve forward(x, edge_index): a row per seed) or "link" (serve
    the model's encode(x, edge_index), node embeddings, and score node pairs with
    `decoder`: "dot", z_u . z_v, checked against the model's decode(z,
    edge_label_index) when it has one; or a module whose forward(z_src, z_dst)
    scores pairs from supported ops, an MLP on their concatenation, say).
    fanouts: neighbours sampled per hop when serving (one per message-passing layer,
    -1 = every neighbour); None leaves them to the dataset's. check: True (the
    generated graph), (x, edge_index) (yours as well; (x, edge_index, edge_attr) or
    a Data for a model reading edge attributes), or False or None (no check).
    spindle: the spindle executable (default $SPINDLE_BINARY, then PATH).
    Typed models (the module to_hetero returns, or one using HeteroConv, whose
    forward takes (x_dict, edge_index_dict)): check=data (a HeteroData) or
    metadata=data.metadata(); fanouts may be a dict {edge type: list}; embeddings=
    {node type: nn.Embedding} gives a featureless type its learnt table (x_dict[type]
    is the table, one row per node: Spindle stores it and reads a node's row).
    A typed link model: `model` is the typed encoder (its forward gives {node type:
    embeddings}), pair_types=("user", "movie") the node types of a pair's ends, and
    decoder "dot", a module forward(z_src, z_dst), or one written as PyG's typed
    link examples write it: forward(z_dict, edge_label_index) or forward(z_src_all,
    z_dst_all, edge_label_index), indexing z_dict[src][edge_label_index[0]]. Returns
    the list of op kinds written. Raises ExportError naming what cannot be
    expressed or the first op whose answer differs from the module's.
    """
    import torch
    from . import _pyg_hetero

    files.check_out_dir(out_dir)
    if _pyg_hetero.is_hetero(model) or metadata is not None or hasattr(check, "edge_index_dict"):
        from ._hetero_export import export_hetero
        return export_hetero(model, out_dir, name=name, fanouts=fanouts, check=check,
                             spindle=spindle, tolerance=tolerance, metadata=metadata,
                             embeddings=embeddings, task=task, decoder=decoder,
                             pair_types=pair_types)
    if pair_types is not None:
        raise ExportError("pair_types= names the node types of a typed link model's pairs; "
                          "this model reads one node type")
    if embeddings is not None:
        raise ExportError("embeddings= gives node types of a typed model their tables; this "
                          "model reads one node type (its x is the table: store it as features)")
    fanouts = _fanout_list(fanouts)
    graphs = _check_graphs(check)
    user = model
    model = _served_module(model, task, decoder)
    modules = list(model.modules())
    if not isinstance(decoder, str):
        modules += list(decoder.modules())
    with files.EvalMode(modules):  # each module restored to its own mode after
        if graphs and graphs[-1][0].startswith("yours"):
            _initialise_lazy(model, graphs[-1])
        ex = Translator(model, _frozen_statistics(model, graphs))
        ops, tensors, in_width, out_width = ex.run()
        decoder_ops = ex.run_decoder(decoder, out_width) if task == "link" else []
        _check_fanouts(ops, fanouts)
        graphs = _edge_attr_graphs(ex, graphs, task)
        for label, x, *_ in graphs or []:
            if x.shape[1] != in_width:
                raise ExportError(f"check: x has {x.shape[1]} columns; the model reads {in_width}")
        text = files.model_toml(name, in_width, out_width, fanouts, ops, task=task,
                                decoder="ops" if decoder_ops else "dot",
                                decoder_ops=decoder_ops)
        with files.Staging(out_dir) as stage:
            stage.write(text, tensors)
            if graphs is None:
                record = {"checked": False, "reason": "export_pyg(check=False)"}
            else:
                loops = not any(op["kind"] in ("gcn", "gcn_propagate") and op["normalize"] and
                                not op["add_self_loops"] for op in ops)
                graphs.insert(0, verify.with_edge_attr(
                    verify.generated_graph(in_width, self_loops=loops), ex.edge_attr_width))
                record = _check(model, ex, ops, stage.path, graphs, spindle, tolerance)
                if task == "link":
                    record["decoder"] = "; ".join(
                        _check_decoder(user, model, decoder, stage.path, g, spindle, tolerance, ex)
                        for g in graphs)
            record.update(_releases(torch))
            stage.append_verified(record, spindle)
            stage.commit()
    return [op["kind"] for op in ops]


def _served_module(model, task, decoder):
    """The module whose forward Spindle serves: `model`, or for task="link" a view
    whose forward(x, edge_index) is model.encode (same submodules, same paths)."""
    import torch
    if task == "node":
        if not (isinstance(decoder, str) and decoder == "dot"):
            raise ExportError("decoder= is for task='link' (a node model's answer is its forward)")
        return model
    if task != "link":
        raise ExportError(f"task={task!r}: expected 'node' or 'link'")
    if not (decoder == "dot" or isinstance(decoder, torch.nn.Module)):
        raise ExportError(f"decoder={decoder!r}: give 'dot' (z_u . z_v) or a module whose "
                          f"forward(z_src, z_dst) scores a pair")
    encode = getattr(model, "encode", None)
    if not callable(encode):
        raise ExportError(f"task='link': {type(model).__name__} has no encode(x, edge_index) "
                          f"method giving node embeddings")

    class _Encode(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for n, child in model.named_children():
                self.add_module(n, child)

        def forward(self, x, edge_index):
            return encode(x, edge_index)

    _Encode.__name__ = f"{type(model).__name__}.encode"
    return _Encode()


def _check_decoder(user, encoder, decoder, model_dir, graph, spindle, tolerance, ex):
    """Spindle's scores of 64 pairs of the check graph (one a node with itself)
    against the module's: the decoder module's forward(z_src, z_dst), or for
    decoder="dot" the model's own decode(z, edge_label_index) when it has one
    (else the dot product itself). Says what was checked."""
    import numpy as np
    import torch
    _, x, ei, _ = graph
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, x.shape[0], (64, 2)).astype(np.int64)
    pairs[0] = [0, 0]
    with _held(encoder, ex, graph[0]):
        z = _run_fresh(encoder, x, ei)
    u, v = torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1])
    decode = getattr(user, "decode", None)
    if isinstance(decoder, torch.nn.Module):
        what, call = f"{type(decoder).__name__}(z_src, z_dst)", lambda: decoder(z[u], z[v])
    elif callable(decode):
        what, call = f"{type(user).__name__}.decode(z, edge_label_index)", \
            lambda: decode(z, torch.from_numpy(pairs.T.copy()))
    else:
        what, call = "(z[u] * z[v]).sum(-1)", lambda: (z[u] * z[v]).sum(-1)
    try:
        with torch.no_grad():
            want = call()
    except Exception as e:  # noqa: BLE001  (the user's decoder may raise anything)
        raise ExportError(f"{what} failed on 64 pairs ({type(e).__name__}: {str(e)[:200]})") from e
    if not isinstance(want, torch.Tensor) or want.numel() != len(pairs):
        raise ExportError(f"{what} does not return one score per pair")
    got = verify.spindle_scores(verify.spindle_binary(spindle), model_dir, x, ei, pairs)
    d = verify.relative_difference(got, want.detach().float().reshape(-1).numpy())
    if d > tolerance:
        served = "decoder='dot' ((z[u] * z[v]).sum(-1))" if decoder == "dot" else "its decoder ops"
        raise ExportError(f"{what} differs from what Spindle serves, {served}, by {d:.3g} "
                          f"(relative) on 64 pairs of the {graph[0]} graph; nothing was written")
    return f"{'dot' if decoder == 'dot' else 'ops'}, equal to {what} on 64 pairs of {graph[0]}"


def _fanout_list(fanouts):
    """fanouts as a list of ints, or None; anything else refused by name."""
    if fanouts is None:
        return None
    if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__iter__"):
        raise ExportError(f"fanouts={fanouts!r}: give a list, one int per message-passing layer")
    out = []
    for f in fanouts:
        if isinstance(f, bool) or not float(f).is_integer():
            raise ExportError(f"fanouts: {f!r} is not a whole number")
        out.append(int(f))
    return out


def _check_graphs(check):
    if check is False or check is None:
        return None
    if check is True:
        return []
    return [verify.user_graph(check)]


def _edge_attr_graphs(ex, graphs, task):
    """The check graphs with the edge attributes the model reads (ex.edge_attr_width
    wide; the generated graph gets random ones), refused by name where missing;
    without them for a model whose forward takes none."""
    width = ex.edge_attr_width
    if width is not None and task != "node":
        raise ExportError(f"task={task!r}: a model reading edge attributes (GINEConv) is served "
                          f"for node answers")
    out = []
    for label, x, ei, ea in graphs or []:
        if ex.edge_attr is None:
            ea = None
        elif width is not None and ea is None:
            raise ExportError(f"check: the model reads edge attributes ({width} wide): give "
                              f"check=(x, edge_index, edge_attr) or a Data with edge_attr")
        elif width is not None and ea.shape[1] != width:
            raise ExportError(f"check: edge_attr has {ea.shape[1]} columns; the model reads "
                              f"{width}")
        out.append((label, x, ei, ea))
    return out if graphs is not None else None


def _initialise_lazy(model, graph):
    """Lazy modules get their weights from a forward on the user's check graph."""
    import torch
    if not any(isinstance(p, torch.nn.parameter.UninitializedParameter)
               for p in model.parameters()):
        return
    _, x, ei, ea = graph
    with torch.no_grad():
        _call(model, x, ei, "initialising its lazy modules on your check graph", ea)


def _call(model, x, ei, what, ea=None):
    """model(x, edge_index[, edge_attr]) on numpy arrays; its own failure becomes an
    ExportError."""
    import torch
    from ._pyg_trace import call_module
    try:
        return call_module(model, *(torch.from_numpy(a) if a is not None else None
                                    for a in (x, ei, ea)))
    except ExportError:  # the exporter's own refusal, raised from a hook in the forward
        raise
    except Exception as e:  # noqa: BLE001  (the user's forward may raise anything)
        raise ExportError(f"{type(model).__name__} failed {what} ({type(e).__name__}: "
                          f"{str(e)[:300]}); is it float32, and x as wide as it reads?") from e


def _check_fanouts(ops, fanouts):
    if fanouts is None:
        return
    hops = sum(1 for op in ops if op["kind"] in MESSAGE_PASSING)
    if len(fanouts) != hops:
        raise ExportError(f"fanouts {fanouts}: the model has {hops} message-passing layers, "
                          f"one fanout each")
    for f in fanouts:
        if f != -1 and not 1 <= f <= 100000:
            raise ExportError(f"fanouts: {f} must be in 1..100000 or -1 (every neighbour)")


_CACHES = ("_cached_edge_index", "_cached_adj_t")  # GCNConv(cached=True) and kin


def _run_fresh(model, x, ei, ea=None):
    """model(x, edge_index) with the layers' normalisation caches cleared (a cached
    GCNConv would reuse another graph's), then restored as the user had them."""
    import torch
    saved = [(m, a, getattr(m, a)) for m in model.modules() for a in _CACHES if hasattr(m, a)]
    try:
        for m, a, _ in saved:
            setattr(m, a, None)
        with torch.no_grad():
            return _call(model, x, ei, "on the check graph", ea)
    finally:
        for m, a, v in saved:
            setattr(m, a, v)


def _check(model, ex, ops, model_dir, graphs, spindle, tolerance):
    """Runs the module and Spindle on each graph; refuses on the first difference."""
    binary = verify.spindle_binary(spindle)
    worst = 0.0
    for label, x, ei, ea in graphs:
        with _held(model, ex, label):
            d = _check_graph(model, ex, ops, binary, model_dir, (label, x, ei, ea), tolerance)
        worst = max(worst, d)
    record = {"checked": True, "by": "spindle model verify (every node, every neighbour)",
              "graphs": [g[0] for g in graphs], "max_relative_difference": float(f"{worst:.3g}"),
              "tolerance": float(tolerance)}
    if ex.frozen:
        record["statistics"] = (f"{len(ex.frozen)} InstanceNorm/GraphNorm frozen from your graph; "
                                f"the generated graph compared with your module holding them")
    return record


def _held(model, ex, label):
    """While checking on a graph other than the user's, the whole-graph norms of
    `model` answer with the statistics frozen from the user's graph (as served)."""
    import contextlib
    if not ex.frozen or label.startswith("yours"):
        return contextlib.nullcontext()
    return HeldStatistics(model, ex.frozen)


def _frozen_statistics(model, graphs):
    """Statistics of the model's whole-graph norms on the user's graph (the last of
    `graphs` when given); {} without such norms or without the user's graph (the
    translator then refuses those norms by name)."""
    if not graphs or not graphs[-1][0].startswith("yours") or not graph_statistic_norms(model):
        return {}
    check_signature(model, type(model).__name__)
    label, x, ei, ea = graphs[-1]
    return freeze_statistics(model, _run_fresh,
                             (label, x, ei, ea if takes_edge_attr(model) else None))


def _check_graph(model, ex, ops, binary, model_dir, graph, tolerance):
    """The relative difference of Spindle's answer from the module's on `graph`;
    refuses naming the first op that differs beyond `tolerance`."""
    import torch
    label, x, ei, ea = graph
    want = _run_fresh(model, x, ei, ea)
    if not isinstance(want, torch.Tensor):
        raise ExportError(f"{type(model).__name__} returned {type(want).__name__}; Spindle "
                          f"serves one tensor")
    got = verify.run_spindle(binary, model_dir, x, ei, len(ops), ea)
    d = verify.relative_difference(got[-1], want.detach().float().numpy())
    if d <= tolerance:
        return d
    values = verify.module_values(ex.gm, x, ei, ea)
    first = verify.first_difference(ops, ex.produced_by, got, values, tolerance)
    if first is None:
        raise ExportError(
            f"check failed on the {label} graph: Spindle's answer differs from your module's "
            f"by {d:.3g} (relative; tolerance {tolerance:g}) though every op matches the traced "
            f"forward: the module's forward does something torch.fx did not record (Python "
            f"control flow on values, a global); nothing was written")
    i, di, node = first
    op = ops[i]
    where = op.get("prefix") or node.name
    raise ExportError(
        f"check failed on the {label} graph: op {i} ({op['kind']}, {where}) differs from "
        f"your module by {di:.3g} (relative; tolerance {tolerance:g}); the answer by "
        f"{d:.3g}. Spindle would serve it differently from PyG; nothing was written")


def _releases(torch):
    out = {"torch": torch.__version__}
    try:
        import torch_geometric
        out["torch_geometric"] = torch_geometric.__version__
    except ImportError:
        pass
    return out
