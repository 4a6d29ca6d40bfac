"""Traces a user's PyG module with torch.fx for the exporter (_pyg_translate):
a wrapper whose forward takes exactly (x, edge_index), or (x, edge_index,
edge_attr) when the module's takes edge_attr third, PyG's layers and torch's
norms and activations kept as leaves, and the helpers that read in-place calls
and drop arguments left at None."""
import inspect
import operator

from ._verify import ExportError


_PATH = "m."  # the user's module inside the tracing wrapper


def _leaf_types():
    import torch
    import torch_geometric.nn as gnn
    from torch_geometric.nn import MessagePassing
    from torch_geometric.nn.dense.linear import Linear as PygLinear
    leaves = [MessagePassing, torch.nn.Linear, PygLinear, torch.nn.ReLU, torch.nn.ELU,
              torch.nn.LeakyReLU, torch.nn.GELU, torch.nn.Tanh, torch.nn.Sigmoid,
              torch.nn.PReLU, torch.nn.Dropout, torch.nn.Identity, torch.nn.LogSoftmax,
              torch.nn.Softmax, gnn.JumpingKnowledge, torch.nn.modules.batchnorm._NormBase,
              torch.nn.LayerNorm, torch.nn.GroupNorm]
    # Every PyG norm is a leaf, so one Spindle lacks is refused by its own name.
    try:
        import torch_geometric.nn.norm as pyg_norm
        leaves += [c for c in vars(pyg_norm).values()
                   if isinstance(c, type) and issubclass(c, torch.nn.Module)]
    except ImportError:
        pass
    return tuple(leaves)


def edge_attr_mode(module):
    """How module's forward takes edge attributes: "positional" (its third
    positional argument is edge_attr), "keyword" (an edge_attr argument elsewhere,
    as PyG's basic models have, and a layer that reads them: GINEConv, or an
    attention layer built with edge_dim), else None."""
    forward = getattr(type(module), "forward", None)
    if forward is None:
        return None
    params = list(inspect.signature(forward).parameters.values())[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 3 and positional[2].name == "edge_attr":
        return "positional"
    named = any(p.name == "edge_attr" and p.kind != p.POSITIONAL_ONLY for p in params)
    return "keyword" if named and _reads_edge_attr(module) else None


def _reads_edge_attr(module):
    for m in module.modules():
        kind = type(m).__name__
        if kind == "GINEConv" or (kind in ("GATConv", "GATv2Conv", "TransformerConv")
                                  and getattr(m, "edge_dim", None) is not None):
            return True
    return False


def check_signature(module, what):
    """Refuses by name a forward Spindle cannot call as it serves it, before any
    run of the module (a statistics run would fail with the forward's own error)."""
    _positional_wrapper(module, 3 if takes_edge_attr(module) else 2, what)


def takes_edge_attr(module):
    """Whether module's forward takes edge attributes (edge_attr_mode)."""
    return edge_attr_mode(module) is not None


def call_module(model, x, edge_index, edge_attr=None):
    """model(x, edge_index[, edge_attr]), edge_attr passed as its forward takes it."""
    if edge_attr is None:
        return model(x, edge_index)
    if edge_attr_mode(model) == "keyword":
        return model(x, edge_index, edge_attr=edge_attr)
    return model(x, edge_index, edge_attr)


def _positional_wrapper(module, n_args, what):
    """A module whose forward takes exactly n_args tensors and calls `module` with
    them: (x), (x, edge_index) or (x, edge_index, edge_attr)."""
    import torch
    forward = getattr(type(module), "forward", None)
    if forward is None or forward is torch.nn.Module.forward:
        raise ExportError(f"{what} has no forward: export the submodule whose "
                          f"forward(x, edge_index) you call (its encoder, say)")
    params = list(inspect.signature(forward).parameters.values())[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    n_positional = 2 if n_args == 3 and edge_attr_mode(module) == "keyword" else n_args
    if len(positional) < n_positional and not has_varargs:
        names = ", ".join(p.name for p in params)
        want = {1: "(x)", 2: "(x, edge_index)"}.get(n_args, "(x, edge_index, edge_attr)")
        raise ExportError(f"{what}.forward({names}) is not forward{want}; Spindle serves node "
                          f"features and edge_index (recommendation models: export_torch)")
    extra = positional[n_positional:] + [p for p in params if p.kind == p.KEYWORD_ONLY]
    named = any(p.name == "edge_attr" for p in params)
    for p in extra:
        if p.default is inspect.Parameter.empty and not (n_args == 3 and p.name == "edge_attr"):
            if p is (positional[2:3] or [None])[0] and not named and _reads_edge_attr(module):
                raise ExportError(f"{what}.forward's third argument is '{p.name}' and a layer "
                                  f"reads edge attributes: Spindle passes them as edge_attr; "
                                  f"name it edge_attr (forward(x, edge_index, edge_attr))")
            if p.kind == p.KEYWORD_ONLY and not named and _reads_edge_attr(module):
                raise ExportError(f"{what}.forward needs '{p.name}' and a layer reads edge "
                                  f"attributes: Spindle passes them as edge_attr; name it "
                                  f"edge_attr")
            raise ExportError(f"{what}.forward needs '{p.name}', which Spindle does not pass "
                              f"(it serves forward(x, edge_index); give it a default of None)")

    class _Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = module

    if n_args == 3:
        _Wrapper.forward = lambda self, x, edge_index, edge_attr: call_module(
            self.m, x, edge_index, edge_attr)
    elif n_args == 2:
        _Wrapper.forward = lambda self, x, edge_index: self.m(x, edge_index)
    else:
        _Wrapper.forward = lambda self, x: self.m(x)
    return _Wrapper()


def trace(module, what, n_args=2):
    """(graph, GraphModule) of module's forward, traced through the positional wrapper."""
    import torch.fx
    leaves = _leaf_types()

    class _Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, leaves) or super().is_leaf_module(m, qualname)

    root = _positional_wrapper(module, n_args, what)
    try:
        graph = _Tracer().trace(root)
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001  (tracing fails in many ways; say which module)
        raise ExportError(f"{what}: its forward cannot be traced with torch.fx "
                          f"({type(e).__name__}: {e})") from e
    # A layer whose result is unused must not be computed (nor take a sampled hop);
    # an in-place call has no users but changes a value that others read.
    for node in reversed(list(graph.nodes)):
        if (node.op in ("call_module", "call_function", "call_method") and not node.users
                and not _in_place(node, root)):
            graph.erase_node(node)
    return graph, torch.fx.GraphModule(root, graph)


def _in_place(node, root):
    if node.kwargs.get("inplace") is True:
        return True
    if node.op == "call_module":
        return bool(getattr(root.get_submodule(node.target), "inplace", False))
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return node.target in (operator.iadd,) or (name.endswith("_") and not name.startswith("__"))


def _strip_none(args, kwargs):
    """Trailing None positional arguments and None keywords: optional inputs unused."""
    args = list(args)
    while args and args[-1] is None:
        args.pop()
    return args, {k: v for k, v in kwargs.items() if v is not None}
