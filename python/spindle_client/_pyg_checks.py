"""What the PyG exporter refuses before and while it translates a module: model
shapes it does not serve, constructor options of a layer it does not compute
(an allow-list per layer, so a newer release's option is refused unless it holds
its default), hooks and subclasses tracing cannot see, tensors it would not read,
and the GCNConv(improved=True) behaviour of the installed PyG release."""
from ._verify import ExportError


def check_supported_shape(model):
    """Refusals that name the kind of model before tracing says something obscure."""
    import torch
    from torch_geometric.nn import MessagePassing
    name = type(model).__name__
    try:
        from torch_geometric.nn import HeteroConv
    except ImportError:
        HeteroConv = ()
    for path, m in model.named_modules():
        if HeteroConv and isinstance(m, HeteroConv):
            raise ExportError(f"{path or name}: a HeteroConv in a model of one node type; "
                              f"export typed models with metadata= or check=data (a HeteroData)")
        if isinstance(m, torch.nn.ModuleDict) and any("__" in k for k in m.keys()):
            raise ExportError(f"{path or name}: layers kept per edge type in a ModuleDict of your "
                              f"own are not traced; typed models are exported from to_hetero or "
                              f"HeteroConv modules")
    mods = list(model.modules())
    if not any(isinstance(m, MessagePassing) for m in mods):
        if any(isinstance(m, (torch.nn.EmbeddingBag, torch.nn.Embedding)) for m in mods):
            raise ExportError(f"{name} holds embedding tables and no message-passing layer: "
                              f"export recommendation models with export_torch")
        raise ExportError(f"{name} has no message-passing layer (SAGEConv, GCNConv, GATConv, "
                          f"GINConv, ...): nothing for Spindle to sample")
    check_modules_are_plain(model)
    for path, p in model.named_parameters():
        if isinstance(p, torch.nn.parameter.UninitializedParameter):
            raise ExportError(f"{path}: a lazy module (in_channels=-1) without weights yet; pass "
                              f"check=(x, edge_index) to initialise it with a forward on your data")


# The constructor options each served layer computes (read into its op), and
# those that cannot change an answer in inference (dropout is off in eval; the
# cached normalisation is the same one; fill_value only fills edge attributes,
# and with edge_dim only "mean" is let through (_pyg_layers.edge_projection); train_eps only trains eps, which is read as it is). Any
# other option of the layer's signature, including options of PyG releases
# newer than this list, must hold its default, or the export is refused by name.
_HONOURED = {
    "SAGEConv": {"in_channels", "out_channels", "aggr", "normalize", "root_weight", "project",
                 "bias"},
    "GCNConv": {"in_channels", "out_channels", "improved", "add_self_loops", "normalize", "bias"},
    "GATConv": {"in_channels", "out_channels", "heads", "concat", "negative_slope",
                "add_self_loops", "edge_dim", "bias"},
    "GINConv": {"nn", "eps"},
    "GINEConv": {"nn", "eps", "edge_dim"},
    # Served as the ops they equal: GraphConv is SAGEConv's sum (lin_rel on the
    # aggregated neighbours, with bias, plus lin_root on the node); SGConv with
    # K=1 is GCNConv with its Linear after the propagation (both are linear).
    "GraphConv": {"in_channels", "out_channels", "aggr", "bias"},
    "SGConv": {"in_channels", "out_channels", "K", "add_self_loops", "bias"},
    # Served by _pyg_layers: TAGConv as K propagations, a Linear per hop and their sum.
    "GATv2Conv": {"in_channels", "out_channels", "heads", "concat", "negative_slope",
                  "add_self_loops", "edge_dim", "bias", "share_weights"},
    "TransformerConv": {"in_channels", "out_channels", "heads", "concat", "beta", "edge_dim",
                        "bias", "root_weight"},
    "ResGatedGraphConv": {"in_channels", "out_channels", "act", "root_weight", "bias"},
    "TAGConv": {"in_channels", "out_channels", "K", "bias", "normalize"},
}
_NO_EFFECT = {"SAGEConv": set(), "GCNConv": {"cached"}, "GATConv": {"dropout", "fill_value"},
              "GINConv": {"train_eps"}, "GINEConv": {"train_eps"}, "GraphConv": set(), "SGConv": {"cached"},
              "GATv2Conv": {"dropout", "fill_value"}, "TransformerConv": {"dropout"},
              "ResGatedGraphConv": set(), "TAGConv": set()}
_MISSING = object()


def check_conv_options(conv, path):
    """Refuses a message-passing layer built with an option Spindle does not
    compute: every parameter of its constructor outside the honoured and
    no-effect lists must still hold its default (read back from the module),
    and MessagePassing's own options must be those Spindle serves."""
    import inspect
    kind = type(conv).__name__
    known = _HONOURED[kind] | _NO_EFFECT[kind]
    for name, p in inspect.signature(type(conv).__init__).parameters.items():
        if name == "self" or name in known or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        held = getattr(conv, name, _MISSING)
        if held is _MISSING:
            raise ExportError(f"{path}: {kind}'s option '{name}' is not one Spindle serves, and "
                              f"the module does not say what it was given")
        if held != p.default:
            raise ExportError(f"{path}: {kind}({name}={held!r}) is not served (Spindle computes "
                              f"{kind} with {name}={p.default!r})")
    flow = getattr(conv, "flow", "source_to_target")
    if flow != "source_to_target":
        raise ExportError(f"{path}: {kind}(flow='{flow}') is not served (Spindle aggregates "
                          f"along edge_index's direction, source_to_target)")
    if getattr(conv, "node_dim", -2) not in (-2, 0):
        raise ExportError(f"{path}: {kind}(node_dim={conv.node_dim}) is not served")
    if kind not in ("SAGEConv", "GraphConv") and aggregation_of(conv) != "sum":  # see _sage
        shown = getattr(conv, "aggr_module", None) or conv.aggr
        raise ExportError(f"{path}: {kind}(aggr={conv.aggr!r}) computing with {shown!r} is not "
                          f"served ('add' is)")


# The hooks lazy modules (in_channels=-1) use to size their weights on the first
# forward: not a computation (a lazy module without weights is refused anyway).
_LAZY_INIT_HOOKS = ("_lazy_hook", "initialize_parameters", "_infer_parameters")
_OVERRIDABLE = ("forward", "message", "aggregate", "update", "propagate",
                "message_and_aggregate", "edge_update")


def check_modules_are_plain(model):
    """Refuses what tracing cannot see and Spindle would not compute: forward
    hooks (torch's, a module's, PyG's propagate/message/aggregate hooks), a
    method replaced on one instance, and subclasses (with code of their own)
    of the modules Spindle computes itself (the leaves: convs, Linear,
    activations, norms, dropout)."""
    import torch
    from torch.nn.modules import module as torch_module
    from ._pyg_trace import _leaf_types
    for hooks in ("_global_forward_hooks", "_global_forward_pre_hooks"):
        if getattr(torch_module, hooks, None):
            raise ExportError(f"a global forward hook is registered (torch.nn.modules.module."
                              f"{hooks}): Spindle does not run hooks")
    leaves = _leaf_types()
    for path, m in model.named_modules():
        where = path or type(model).__name__
        for attr, held in vars(m).items():
            if "hook" not in attr or "forward" not in attr or not held:
                continue
            hooks = held.values() if isinstance(held, dict) else [held]
            if any(getattr(h, "__name__", "") not in _LAZY_INIT_HOOKS for h in hooks):
                raise ExportError(f"{where}: has a forward hook ({attr}); Spindle does not run "
                                  f"hooks")
        for method in _OVERRIDABLE:
            if method in vars(m):
                raise ExportError(f"{where}: its {method}() is replaced on the instance; Spindle "
                                  f"computes {type(m).__name__} as its class defines it")
        if isinstance(m, leaves):
            cls = type(m)
            if not cls.__module__.startswith(("torch.", "torch_geometric.")):
                base = next(b for b in cls.__mro__[1:]
                            if b.__module__.startswith(("torch.", "torch_geometric.")))
                own = _own_code(cls, base)
                if not own:
                    raise ExportError(f"{where}: {cls.__name__} subclasses {base.__name__} and "
                                      f"adds no code; Spindle recognises the modules it "
                                      f"computes by their own class: build it as "
                                      f"{base.__name__} itself")
                raise ExportError(f"{where}: {cls.__name__} is a subclass of {base.__name__} "
                                  f"with code of its own ({', '.join(own[:4])}); Spindle computes "
                                  f"{base.__name__} as {base.__module__.split('.')[0]} defines it")


_CLASS_METADATA = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                   "__annotations__", "__firstlineno__", "__static_attributes__"}


def _own_code(cls, base):
    """What the classes between cls and base define beyond class metadata and
    what the libraries put there (PyG's compiled propagate and collect, made
    from its templates in a module named after the class)."""
    own, between = [], cls.__mro__[:cls.__mro__.index(base)]
    made = ("torch.", "torch_geometric.") + tuple(f"{c.__module__}_{c.__name__}"
                                                  for c in between)
    for c in between:
        for k, v in vars(c).items():
            module = getattr(v, "__module__", None) or ""
            if k in _CLASS_METADATA or module.startswith(made):
                continue
            own.append(f"{c.__name__}.{k}")
    return own


_AGGREGATIONS = {"MeanAggregation": "mean", "SumAggregation": "sum", "MaxAggregation": "max",
                 "MinAggregation": "min"}


def aggregation_of(conv):
    """The aggregation a layer computes with: its aggr_module, which PyG runs
    (the aggr string is only what it was built with)."""
    module = getattr(conv, "aggr_module", None)
    if module is None:
        return conv.aggr if isinstance(conv.aggr, str) else None
    return _AGGREGATIONS.get(type(module).__name__)


def check_all_written(conv, path, written, inner_prefix=None):
    """Refuses a layer holding a tensor Spindle does not read (a sub-module
    replaced by one with a bias, a learnable aggregation): `written` are the
    state keys taken; a key sharing a written tensor's storage is the same one."""
    import torch
    state = conv.state_dict()
    lazy = torch.nn.parameter.UninitializedParameter  # never run: it computes nothing
    taken = {state[k].data_ptr() for k in written if k in state and not isinstance(state[k], lazy)}
    for key, t in state.items():
        if isinstance(t, lazy) or key in written or t.numel() == 0 or t.data_ptr() in taken:
            continue
        if inner_prefix and key.startswith(inner_prefix):
            continue
        raise ExportError(f"{path}.{key}: a tensor Spindle does not compute with (a sub-module "
                          f"replaced, or an option it does not serve)")


def gcn_improved_in_effect(conv):
    """Whether GCNConv(improved=True) weighs self-loops 2 in the installed PyG without
    edge weights (as Spindle serves it). PyG 2.3.1 and 2.8.1 do not: their
    add_remaining_self_loops ignores the fill value when there are no weights.
    Asked of PyG's own gcn_norm on a two-node graph, so the export follows
    whichever release the module comes from."""
    if not conv.improved:
        return False
    import torch
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    ei = torch.tensor([[0], [1]])
    out = gcn_norm(ei, None, 2, True, True)
    ei2, w = out[0], out[1]
    for k in range(ei2.shape[1]):
        if int(ei2[0, k]) == 1 and int(ei2[1, k]) == 1:
            return abs(float(w[k]) - 2.0 / 3.0) < 1e-6
    return True
