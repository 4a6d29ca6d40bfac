"""Export a PyTorch Geometric model, as users write it, to a Spindle model directory.

    from spindle_client.export import export_pyg
    export_pyg(model, "models/sage", name="sage", fanouts=[25, 10])

The module's forward(x, edge_index) is traced with torch.fx, the message-passing
layers (SAGEConv, GCNConv, GATConv, GINConv), Linear, BatchNorm, LayerNorm,
activations and JumpingKnowledge kept as leaves, and translated into model.toml's
`arch = "stack"` with one `[[op]]` per operation, beside weights.safetensors with
the tensors those ops read. Functional calls are understood too (F.relu, F.elu,
x.relu(), F.dropout, F.log_softmax, torch.cat, x + y, ...). Anything Spindle cannot
compute exactly raises ExportError (a ValueError) naming the first module or
operation, and nothing is written. Needs torch and torch_geometric, not pycapnp.
"""
import json
import operator
import os
import shutil
import struct
import tempfile
import zlib

__all__ = ["ExportError", "export_pyg"]


class ExportError(ValueError):
    """The model holds a module or operation Spindle does not serve; nothing was written."""


def export_pyg(model, out_dir, *, name, fanouts=None):
    """Writes OUT_DIR/model.toml and OUT_DIR/weights.safetensors for `model`.

    fanouts: neighbours sampled per hop when serving (one per message-passing layer,
    -1 = every neighbour); None leaves them to the dataset's. Returns the list of
    op kinds written. Raises ExportError naming what cannot be expressed.
    """
    import torch  # noqa: F401  (the caller has it; imported here to keep the module light)

    ex = _Exporter(model)
    ops, tensors, in_width, out_width = ex.run()
    hops = sum(1 for op in ops if op["kind"] in _MESSAGE_PASSING)
    if fanouts is not None:
        fanouts = [int(f) for f in fanouts]
        if len(fanouts) != hops:
            raise ExportError(f"fanouts {fanouts}: the model has {hops} message-passing layers, "
                              f"one fanout each")
        for f in fanouts:
            if f != -1 and not 1 <= f <= 100000:
                raise ExportError(f"fanouts: {f} must be in 1..100000 or -1 (every neighbour)")
    text = _model_toml(name, in_width, out_width, fanouts, ops)
    _write_dir(out_dir, text, tensors)
    return [op["kind"] for op in ops]


_MESSAGE_PASSING = {"sage", "gcn", "gat", "gin"}


def _leaf_types():
    import torch
    from torch_geometric.nn import MessagePassing
    import torch_geometric.nn as gnn
    leaves = [MessagePassing, torch.nn.Linear, torch.nn.BatchNorm1d, torch.nn.LayerNorm,
              torch.nn.ReLU, torch.nn.ELU, torch.nn.LeakyReLU, torch.nn.GELU, torch.nn.Tanh,
              torch.nn.Sigmoid, torch.nn.PReLU, torch.nn.Dropout, torch.nn.Identity,
              torch.nn.LogSoftmax, torch.nn.Softmax, gnn.JumpingKnowledge]
    for extra in ("BatchNorm", "LayerNorm"):
        if hasattr(gnn, extra):
            leaves.append(getattr(gnn, extra))
    from torch_geometric.nn.dense.linear import Linear as PygLinear
    leaves.append(PygLinear)
    return tuple(leaves)


def _trace(module, what):
    import torch.fx

    leaves = _leaf_types()

    class _Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, leaves) or super().is_leaf_module(m, qualname)

    try:
        graph = _Tracer().trace(module)
    except Exception as e:  # noqa: BLE001  (tracing fails in many ways; say which module)
        raise ExportError(f"{what}: its forward cannot be traced with torch.fx ({type(e).__name__}: "
                          f"{e}); write it as a plain forward(x, edge_index)") from e
    # A layer whose result is unused must not be computed (nor take a sampled hop).
    for node in reversed(list(graph.nodes)):
        if node.op in ("call_module", "call_function", "call_method") and not node.users:
            graph.erase_node(node)
    return graph


class _Exporter:
    def __init__(self, model):
        self.model = model
        self.ops = []
        self.tensors = {}        # name -> tensor, in the order written
        self.width = {"x": None}  # value -> width
        self.names = set()

    # --- the top-level module -------------------------------------------------
    def run(self):
        model = self.model
        was_training = model.training
        model.eval()
        try:
            graph = _trace(model, type(model).__name__)
            value = {}
            placeholders = [n for n in graph.nodes if n.op == "placeholder"]
            if len(placeholders) < 2:
                raise ExportError(f"{type(model).__name__}.forward takes {len(placeholders)} "
                                  f"argument(s); Spindle serves forward(x, edge_index)")
            x_node, self.edge_index = placeholders[0], placeholders[1]
            for extra in placeholders[2:]:
                if extra.users:
                    raise ExportError(f"forward argument '{extra.name}' is used; Spindle passes "
                                      f"only x and edge_index (no edge weights or batch vector)")
            value[x_node] = "x"
            result = self._walk(graph, value, model, prefix="")
        finally:
            model.train(was_training)
        if self.width["x"] is None:
            raise ExportError("the input width is unknown: no layer reads x directly")
        if not self.ops or result != self.ops[-1]["name"]:
            raise ExportError("the model's output is not the result of its last operation")
        return self.ops, self.tensors, self.width["x"], self.width[result]

    def _walk(self, graph, value, root, prefix):
        """Translates `graph`'s nodes (module paths relative to `root`, tensor names
        under `prefix`); returns the value name of its output."""
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                out = node.args[0]
                if isinstance(out, (tuple, list)):
                    raise ExportError("forward returns several values; Spindle serves one tensor")
                return self._value(value, out, "output")
            if node.op == "call_module":
                module = root.get_submodule(node.target)
                self._module(node, module, prefix + node.target, value)
            elif node.op in ("call_function", "call_method"):
                self._function(node, value)
            elif node.op == "get_attr":
                raise ExportError(f"{node.target}: a tensor read directly in forward is not "
                                  f"supported (use a module)")
            else:
                raise ExportError(f"{node.name}: unsupported graph node {node.op}")
        raise ExportError("the traced forward has no output")

    # --- helpers ---------------------------------------------------------------
    def _value(self, value, arg, where):
        import torch.fx
        if not isinstance(arg, torch.fx.Node) or arg not in value:
            raise ExportError(f"{where}: reads {arg!r}, which is not a tensor Spindle computes")
        return value[arg]

    def _emit(self, node_name, kind, inputs, width, **fields):
        name = node_name.replace(".", "_")
        while name in self.names or name == "x":
            name += "_"
        self.names.add(name)
        op = {"kind": kind, "name": name, "inputs": list(inputs)}
        op.update(fields)
        self.ops.append(op)
        self.width[name] = width
        return name

    def _take(self, prefix, module, names):
        """Records module's tensors `names` under `prefix`."""
        state = module.state_dict()
        for n in names:
            if n not in state:
                raise ExportError(f"{prefix}: has no tensor '{n}'")
            self.tensors[f"{prefix}.{n}"] = state[n].detach().float().cpu()

    def _input_width(self, name, want, where):
        have = self.width[name]
        if have is None:
            self.width[name] = want
        elif want != have:
            raise ExportError(f"{where}: expects {want} input columns, its input has {have}")

    # --- modules ---------------------------------------------------------------
    def _module(self, node, module, path, value):
        import torch
        import torch_geometric.nn as gnn
        from torch_geometric.nn import MessagePassing
        kind = type(module).__name__
        if isinstance(module, MessagePassing):
            return self._conv(node, module, path, value)
        args = [a for a in node.args]
        if isinstance(module, gnn.JumpingKnowledge):
            if module.mode not in ("cat", "max"):
                raise ExportError(f"{path}: JumpingKnowledge(mode='{module.mode}') is not "
                                  f"supported (cat and max are)")
            xs = args[0]
            if not isinstance(xs, (list, tuple)):
                raise ExportError(f"{path}: JumpingKnowledge must get a list of layer outputs")
            ins = [self._value(value, a, path) for a in xs]
            widths = [self.width[i] for i in ins]
            w = sum(widths) if module.mode == "cat" else widths[0]
            value[node] = self._emit(node.name, module.mode, ins, w)
            return
        if len(args) != 1 or node.kwargs:
            raise ExportError(f"{path}: {kind} called with {len(args)} arguments")
        src = self._value(value, args[0], path)
        if isinstance(module, (torch.nn.Dropout, torch.nn.Identity)):
            value[node] = src  # identity at inference
            return
        w = self.width[src]
        simple = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh", torch.nn.Sigmoid: "sigmoid"}
        for t, k in simple.items():
            if type(module) is t:
                value[node] = self._emit(node.name, k, [src], w)
                return
        if isinstance(module, torch.nn.ELU):
            value[node] = self._emit(node.name, "elu", [src], w, alpha=float(module.alpha))
        elif isinstance(module, torch.nn.LeakyReLU):
            value[node] = self._emit(node.name, "leaky_relu", [src], w,
                                     negative_slope=float(module.negative_slope))
        elif isinstance(module, torch.nn.GELU):
            value[node] = self._emit(node.name, "gelu", [src], w,
                                     approximate=getattr(module, "approximate", "none"))
        elif isinstance(module, torch.nn.PReLU):
            self._take(path, module, ["weight"])
            value[node] = self._emit(node.name, "prelu", [src], w, prefix=path,
                                     channels=int(module.num_parameters))
        elif isinstance(module, (torch.nn.LogSoftmax, torch.nn.Softmax)):
            if module.dim not in (-1, 1):
                raise ExportError(f"{path}: {kind}(dim={module.dim}); Spindle takes it over classes")
            k = "log_softmax" if isinstance(module, torch.nn.LogSoftmax) else "softmax"
            value[node] = self._emit(node.name, k, [src], w)
        elif _is_linear(module):
            weight = module.weight
            if weight.dim() != 2 or isinstance(weight, torch.nn.parameter.UninitializedParameter):
                raise ExportError(f"{path}: lazy Linear without weights; run the model once first")
            out, inw = weight.shape
            self._input_width(src, int(inw), path)
            names = ["weight"] + (["bias"] if module.bias is not None else [])
            self._take(path, module, names)
            value[node] = self._emit(node.name, "linear", [src], int(out), prefix=path,
                                     **{"in": int(inw), "out": int(out),
                                        "bias": module.bias is not None})
        else:
            self._norm(node, module, path, src, value)

    def _norm(self, node, module, path, src, value):
        import torch
        import torch_geometric.nn as gnn
        kind = type(module).__name__
        if hasattr(gnn, "BatchNorm") and isinstance(module, gnn.BatchNorm):
            module, path = module.module, path + ".module"
        if hasattr(gnn, "LayerNorm") and isinstance(module, gnn.LayerNorm):
            if getattr(module, "mode", "graph") != "node":
                raise ExportError(f"{path}: torch_geometric LayerNorm(mode='graph') normalises over "
                                  f"the whole graph; Spindle serves mode='node' or torch.nn.LayerNorm")
            width = int(module.in_channels)
            affine = module.weight is not None
            self._input_width(src, width, path)
            if affine:
                self._take(path, module, ["weight", "bias"])
            value[node] = self._emit(node.name, "layer_norm", [src], width, prefix=path,
                                     **{"in": width, "eps": float(module.eps), "affine": affine})
            return
        if isinstance(module, torch.nn.BatchNorm1d):
            if not module.track_running_stats:
                raise ExportError(f"{path}: BatchNorm1d(track_running_stats=False) uses batch "
                                  f"statistics at inference; Spindle serves running statistics")
            width = int(module.num_features)
            self._input_width(src, width, path)
            names = (["weight", "bias"] if module.affine else []) + ["running_mean", "running_var"]
            self._take(path, module, names)
            value[node] = self._emit(node.name, "batch_norm", [src], width, prefix=path,
                                     **{"in": width, "eps": float(module.eps),
                                        "affine": bool(module.affine)})
            return
        if isinstance(module, torch.nn.LayerNorm):
            shape = tuple(module.normalized_shape)
            if len(shape) != 1:
                raise ExportError(f"{path}: LayerNorm over {shape}; Spindle normalises one dimension")
            width = int(shape[0])
            self._input_width(src, width, path)
            affine = module.elementwise_affine
            if affine:
                self._take(path, module, ["weight", "bias"])
            value[node] = self._emit(node.name, "layer_norm", [src], width, prefix=path,
                                     **{"in": width, "eps": float(module.eps), "affine": affine})
            return
        raise ExportError(f"{path}: {kind} is not supported")

    # --- message passing --------------------------------------------------------
    def _conv(self, node, conv, path, value):
        from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv
        kind = type(conv).__name__
        if type(conv) not in (SAGEConv, GCNConv, GATConv, GINConv):
            raise ExportError(f"{path}: {kind} is not supported (Spindle serves SAGEConv, GCNConv, "
                              f"GATConv and GINConv)")
        args = list(node.args)
        if len(args) < 2 or node.kwargs or len(args) > 2:
            raise ExportError(f"{path}: {kind} must be called as conv(x, edge_index) (edge weights, "
                              f"attributes and sizes are not supported)")
        if args[1] is not self.edge_index:
            raise ExportError(f"{path}: {kind}'s second argument must be forward's edge_index")
        src = self._value(value, args[0], path)
        if isinstance(conv, SAGEConv):
            return self._sage(node, conv, path, src, value)
        if isinstance(conv, GCNConv):
            return self._gcn(node, conv, path, src, value)
        if isinstance(conv, GATConv):
            return self._gat(node, conv, path, src, value)
        return self._gin(node, conv, path, src, value)

    def _sage(self, node, conv, path, src, value):
        aggr = conv.aggr if isinstance(conv.aggr, str) else None
        aggr = {"add": "sum"}.get(aggr, aggr)
        if aggr not in ("mean", "sum", "max", "min"):
            raise ExportError(f"{path}: SAGEConv(aggr={conv.aggr!r}) is not supported (mean, sum, "
                              f"max, min are)")
        out, inw = conv.lin_l.weight.shape
        self._input_width(src, int(inw), path)
        names = []
        if conv.project:
            names += ["lin.weight", "lin.bias"]
        names += ["lin_l.weight"] + (["lin_l.bias"] if conv.lin_l.bias is not None else [])
        if conv.root_weight:
            names.append("lin_r.weight")
        self._take(path, conv, names)
        value[node] = self._emit(node.name, "sage", [src], int(out), prefix=path,
                                 **{"in": int(inw), "out": int(out), "aggr": aggr,
                                    "normalize": bool(conv.normalize),
                                    "root_weight": bool(conv.root_weight),
                                    "project": bool(conv.project),
                                    "bias": conv.lin_l.bias is not None})

    def _gcn(self, node, conv, path, src, value):
        if getattr(conv, "cached", False):
            pass  # caching the normalisation does not change the answer
        out, inw = conv.lin.weight.shape
        self._input_width(src, int(inw), path)
        has_bias = conv.bias is not None
        self._take(path, conv, ["lin.weight"] + (["bias"] if has_bias else []))
        value[node] = self._emit(node.name, "gcn", [src], int(out), prefix=path,
                                 **{"in": int(inw), "out": int(out),
                                    "add_self_loops": bool(conv.add_self_loops),
                                    "normalize": bool(conv.normalize),
                                    "improved": bool(conv.improved), "bias": has_bias,
                                    "norm": "graph"})

    def _gat(self, node, conv, path, src, value):
        if getattr(conv, "edge_dim", None) is not None:
            raise ExportError(f"{path}: GATConv(edge_dim=...) needs edge attributes; not supported")
        if not isinstance(conv.in_channels, int):
            raise ExportError(f"{path}: GATConv with separate source/target widths is not supported")
        if getattr(conv, "fill_value", "mean") != "mean" and conv.add_self_loops:
            pass  # fill_value only matters with edge attributes
        state = conv.state_dict()
        weight = state.get("lin_src.weight", state.get("lin.weight"))
        heads, out = int(conv.heads), int(conv.out_channels)
        inw = int(weight.shape[1])
        self._input_width(src, inw, path)
        self.tensors[f"{path}.lin_src.weight"] = weight.detach().float().cpu()
        names = ["att_src", "att_dst"] + (["bias"] if conv.bias is not None else [])
        self._take(path, conv, names)
        width = heads * out if conv.concat else out
        value[node] = self._emit(node.name, "gat", [src], width, prefix=path,
                                 **{"in": inw, "out": out, "heads": heads,
                                    "concat": bool(conv.concat),
                                    "negative_slope": float(conv.negative_slope),
                                    "add_self_loops": bool(conv.add_self_loops),
                                    "bias": conv.bias is not None})

    def _gin(self, node, conv, path, src, value):
        eps = float(conv.eps.detach().reshape(-1)[0])
        self.tensors[f"{path}.eps"] = conv.eps.detach().float().cpu().reshape(1)
        w = self.width[src]
        agg = self._emit(node.name + "_aggregate", "gin", [src], w, prefix=path, eps=eps)
        # GINConv's nn, translated into ops on the aggregated value.
        graph = _trace(conv.nn, f"{path}.nn")
        inner = {}
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        inner[placeholders[0]] = agg
        for extra in placeholders[1:]:
            if extra.users:
                raise ExportError(f"{path}.nn: forward argument '{extra.name}' is used")
        for n in graph.nodes:  # keep inner names apart from the outer graph's
            if n.op != "placeholder":
                n.name = f"{node.name}_{n.name}"
        value[node] = self._walk(graph, inner, conv.nn, prefix=f"{path}.nn.")
        if self.width[src] is None:  # x's width, learnt from the nn's first Linear
            self.width[src] = self.width[agg]
        if self.width[agg] != self.width[src]:
            raise ExportError(f"{path}.nn: reads {self.width[agg]} columns, GINConv's input has "
                              f"{self.width[src]}")

    # --- functions and methods ------------------------------------------------------
    def _function(self, node, value):
        import torch
        import torch.nn.functional as F
        t = node.target
        name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
        args, kw = list(node.args), dict(node.kwargs)
        kw.pop("inplace", None)  # in place or not, the same values
        where = f"{node.name} ({name})"
        if t in (operator.getitem,):
            raise ExportError(f"{where}: indexing a tensor is not supported")
        if t in (F.dropout, torch.dropout) or name in ("dropout", "feature_alpha_dropout"):
            value[node] = self._value(value, args[0], where)
            return
        if t in (torch.cat, torch.concat) or name == "cat":
            parts = args[0]
            dim = args[1] if len(args) > 1 else kw.get("dim", 0)
            if dim not in (-1, 1):
                raise ExportError(f"{where}: torch.cat(dim={dim}); Spindle joins columns (dim=-1)")
            ins = [self._value(value, a, where) for a in parts]
            value[node] = self._emit(node.name, "cat", ins, sum(self.width[i] for i in ins))
            return
        if t in (operator.add, torch.add, operator.iadd) or name in ("add", "add_", "__add__"):
            if len(args) != 2 or kw:
                raise ExportError(f"{where}: only the sum of two tensors is supported")
            ins = [self._value(value, a, where) for a in args]
            if self.width[ins[0]] != self.width[ins[1]]:
                raise ExportError(f"{where}: adds widths {self.width[ins[0]]} and {self.width[ins[1]]}")
            value[node] = self._emit(node.name, "add", ins, self.width[ins[0]])
            return
        src = self._value(value, args[0], where)
        w = self.width[src]
        simple = {"relu": "relu", "relu_": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}
        if name in simple and (len(args) == 1 or (len(args) == 2 and args[1] is False)) and not kw:
            value[node] = self._emit(node.name, simple[name], [src], w)
        elif name in ("elu", "elu_"):
            alpha = args[1] if len(args) > 1 else kw.get("alpha", 1.0)
            value[node] = self._emit(node.name, "elu", [src], w, alpha=float(alpha))
        elif name in ("leaky_relu", "leaky_relu_"):
            slope = args[1] if len(args) > 1 else kw.get("negative_slope", 0.01)
            value[node] = self._emit(node.name, "leaky_relu", [src], w, negative_slope=float(slope))
        elif name == "gelu":
            value[node] = self._emit(node.name, "gelu", [src], w,
                                     approximate=kw.get("approximate", "none"))
        elif name in ("log_softmax", "softmax"):
            dim = args[1] if len(args) > 1 else kw.get("dim")
            if dim not in (-1, 1):
                raise ExportError(f"{where}: {name}(dim={dim}); Spindle takes it over the classes "
                                  f"(dim=-1)")
            value[node] = self._emit(node.name, name, [src], w)
        else:
            raise ExportError(f"{where}: {name} is not supported")


def _is_linear(module):
    import torch
    from torch_geometric.nn.dense.linear import Linear as PygLinear
    return isinstance(module, (torch.nn.Linear, PygLinear))


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def _model_toml(name, in_width, out_width, fanouts, ops):
    lines = ["# Written by spindle_client.export.export_pyg", "[model]",
             f"name = {json.dumps(name)}", 'arch = "stack"', 'weights = "weights.safetensors"',
             f"in = {in_width}", f"out = {out_width}"]
    if fanouts is not None:
        lines.append(f"fanouts = {_toml_value(fanouts)}")
    for op in ops:
        lines.append("")
        lines.append("[[op]]")
        for k, v in op.items():
            lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _safetensors_bytes(tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt", "producer": "spindle export_pyg"}}, [], 0
    for name, t in tensors.items():
        values = t.contiguous().reshape(-1).tolist()
        data = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def _write_dir(out_dir, toml_text, tensors):
    """Both files into a temporary folder beside out_dir, then moved in place."""
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".export-", dir=parent)
    try:
        weights = _safetensors_bytes(tensors)
        with open(os.path.join(staging, "weights.safetensors"), "wb") as f:
            f.write(weights)
        # The loader refuses weights that no longer match (damaged, replaced).
        crc = f'weights_crc32 = "{zlib.crc32(weights) & 0xffffffff:08x}"\n'
        toml_text = toml_text.replace('weights = "weights.safetensors"\n',
                                      'weights = "weights.safetensors"\n' + crc, 1)
        with open(os.path.join(staging, "model.toml"), "w") as f:
            f.write(toml_text)
        os.makedirs(out_dir, exist_ok=True)
        for fname in ("weights.safetensors", "model.toml"):
            os.replace(os.path.join(staging, fname), os.path.join(out_dir, fname))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
