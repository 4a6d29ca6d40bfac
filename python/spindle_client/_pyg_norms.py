"""Norm layers for the exporter (_pyg_translate): BatchNorm, LayerNorm and
InstanceNorm with running statistics map to Spindle's batch_norm and layer_norm
ops; InstanceNorm and GraphNorm that normalise with the statistics of every node
of the graph they are given are served with those statistics frozen from the
user's graph (held_statistics), since a sampled neighbourhood does not hold them."""
from ._verify import ExportError


def graph_statistic_norms(model):
    """The modules of `model` that normalise with the whole graph's statistics at
    inference: PyG's InstanceNorm without running statistics, and GraphNorm."""
    return [(p, m) for p, m in model.named_modules() if _graph_statistics(m)]


def _graph_statistics(module):
    kind = type(module).__name__
    if kind == "GraphNorm" and hasattr(module, "mean_scale"):
        return True
    return kind == "InstanceNorm" and not getattr(module, "track_running_stats", True)


def freeze_statistics(model, run, graph):
    """{id(module): (mean, var)} of each graph-statistics norm of `model`, as its
    forward computes them on `graph` (label, x, edge_index, edge_attr): the mean it
    subtracts (GraphNorm's scaled by mean_scale) and the biased variance it divides
    by. `run(model, x, ei, ea)` runs the module. A norm called twice in one forward
    is refused (its statistics would differ per call)."""
    import torch
    norms = graph_statistic_norms(model)
    stats, handles = {}, []

    def hook(path):
        def record(module, inputs, _out):
            if id(module) in stats:
                raise ExportError(f"{path}: {type(module).__name__} is called twice in one "
                                  f"forward; Spindle freezes one set of statistics per module")
            x = inputs[0].detach().float()
            mean = x.mean(0)
            if type(module).__name__ == "GraphNorm":
                mean = mean * module.mean_scale.detach().float()
            stats[id(module)] = (mean, (x - mean).pow(2).mean(0))
        return record

    try:
        for path, m in norms:
            handles.append(m.register_forward_hook(hook(path)))
        with torch.no_grad():
            run(model, graph[1], graph[2], graph[3])
    finally:
        for h in handles:
            h.remove()
    missing = [p for p, m in norms if id(m) not in stats]
    if missing:
        raise ExportError(f"{missing[0]}: not called in forward on your graph; its statistics "
                          f"cannot be frozen")
    return stats


class HeldStatistics:
    """While open, each graph-statistics norm of `model` answers with `stats`
    (freeze_statistics) instead of its input's: the module Spindle serves, run on
    another graph (the generated check graph) for the check."""

    def __init__(self, model, stats):
        self.model, self.stats, self.handles = model, stats, []

    def __enter__(self):
        for _, m in graph_statistic_norms(self.model):
            self.handles.append(m.register_forward_hook(self._held))
        return self

    def _held(self, module, inputs, _out):
        mean, var = self.stats[id(module)]
        y = (inputs[0] - mean) / (var + module.eps).sqrt()
        if getattr(module, "weight", None) is not None:
            y = y * module.weight + module.bias
        return y

    def __exit__(self, *_):
        for h in self.handles:
            h.remove()


def translate_norm(tr, node, module, path, src, value, frozen):
    """Emits the op for norm `module` at fx `node` into translator `tr`; `frozen`
    holds the statistics freeze_statistics gave (empty: no graph to freeze from)."""
    import torch
    import torch_geometric.nn as gnn
    kind = type(module).__name__
    if hasattr(gnn, "BatchNorm") and isinstance(module, gnn.BatchNorm):
        module, path = module.module, path + ".module"
    if hasattr(gnn, "LayerNorm") and isinstance(module, gnn.LayerNorm):
        if getattr(module, "mode", "graph") != "node":
            raise ExportError(f"{path}: torch_geometric LayerNorm(mode='graph') normalises over "
                              f"the whole graph; Spindle serves mode='node' or torch.nn.LayerNorm")
        return _layer_norm(tr, node, module, path, src, value, int(module.in_channels),
                           module.weight is not None)
    if isinstance(module, torch.nn.LayerNorm):
        shape = tuple(module.normalized_shape)
        if len(shape) != 1:
            raise ExportError(f"{path}: LayerNorm over {shape}; Spindle normalises one dimension")
        return _layer_norm(tr, node, module, path, src, value, int(shape[0]),
                           module.elementwise_affine)
    if isinstance(module, torch.nn.BatchNorm1d):
        if not module.track_running_stats:
            raise ExportError(f"{path}: BatchNorm1d(track_running_stats=False) uses batch "
                              f"statistics at inference; Spindle serves running statistics")
        return _batch_norm(tr, node, module, path, src, value, int(module.num_features),
                           bool(module.affine))
    if kind == "InstanceNorm" and getattr(module, "track_running_stats", False):
        return _batch_norm(tr, node, module, path, src, value, _channels(module),
                           bool(module.affine))
    if _graph_statistics(module):
        return _frozen_norm(tr, node, module, path, src, value, frozen)
    raise ExportError(f"{path}: {kind} is not supported")


def _channels(module):
    """A norm's width: GraphNorm's in_channels, InstanceNorm's num_features."""
    return int(getattr(module, "in_channels", None) or module.num_features)


def _layer_norm(tr, node, module, path, src, value, width, affine):
    tr._input_width(src, width, path)
    if affine:
        tr._take(path, module, ["weight", "bias"])
    value[node] = tr._emit(node.name, "layer_norm", [src], width, prefix=path,
                           **{"in": width, "eps": float(module.eps), "affine": affine})


def _batch_norm(tr, node, module, path, src, value, width, affine):
    tr._input_width(src, width, path)
    tr._take(path, module, (["weight", "bias"] if affine else []) +
             ["running_mean", "running_var"])
    value[node] = tr._emit(node.name, "batch_norm", [src], width, prefix=path,
                           **{"in": width, "eps": float(module.eps), "affine": affine})


def _frozen_norm(tr, node, module, path, src, value, frozen):
    """InstanceNorm or GraphNorm over the whole graph, as batch_norm with the
    statistics frozen from the user's graph (GraphNorm is always affine)."""
    kind = type(module).__name__
    if hasattr(tr, "node_types"):
        raise ExportError(f"{path}: {kind} normalises with the statistics of every node of the "
                          f"graph; typed models are served without such norms (InstanceNorm("
                          f"track_running_stats=True) or BatchNorm use running statistics)")
    if path.startswith("decoder"):
        raise ExportError(f"{path}: {kind} in a decoder normalises over the call's pairs, which "
                          f"differ per call; Spindle serves decoders without such norms")
    if id(module) not in frozen:
        raise ExportError(
            f"{path}: {kind} normalises with the statistics of every node of the graph it is "
            f"given, which a sampled neighbourhood does not hold; give check=(x, edge_index) "
            f"(your graph) to serve it with the statistics frozen from that graph"
            + (", or build it with track_running_stats=True" if kind == "InstanceNorm" else ""))
    width = _channels(module)
    tr._input_width(src, width, path)
    affine = getattr(module, "weight", None) is not None
    if affine:
        tr._take(path, module, ["weight", "bias"])
    mean, var = frozen[id(module)]
    tr.tensors[f"{path}.running_mean"] = mean.cpu()
    tr.tensors[f"{path}.running_var"] = var.cpu()
    value[node] = tr._emit(node.name, "batch_norm", [src], width, prefix=path,
                           **{"in": width, "eps": float(module.eps), "affine": affine})
