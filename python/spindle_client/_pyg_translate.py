"""Translates a PyTorch Geometric module, as users write it, into Spindle's stack
ops (model.toml [[op]] tables) and the tensors they read.

The module's forward(x, edge_index) is traced with torch.fx through a wrapper
whose forward takes exactly (x, edge_index), so forwards with optional or
keyword-only arguments (PyG's own model classes: edge_weight=None, batch=None)
trace on every torch release, those arguments at their defaults as at serving.
Message-passing layers, Linear, norms, activations, Dropout and
JumpingKnowledge are leaves; in-place calls (h.relu_(), F.relu(h, inplace=True),
nn.ReLU(inplace=True) without assignment) become the ops they are, and the
value they change is the op's output from then on. Anything Spindle cannot
compute raises ExportError naming the module path or operation."""
import operator

from ._pyg_checks import (aggregation_of, check_all_written, check_conv_options,  # noqa: F401
                          check_modules_are_plain, check_supported_shape, gcn_improved_in_effect)
from ._pyg_trace import _PATH, _in_place, _strip_none, takes_edge_attr, trace
from ._pyg_norms import translate_norm
from ._verify import ExportError


MESSAGE_PASSING = {"sage", "gcn", "gat", "gin", "gatv2", "transformer", "res_gated",
                   "gcn_propagate", "gine"}


class Translator:
    def __init__(self, model, frozen=None):
        self.model = model
        self.frozen = frozen or {}  # id(norm) -> statistics frozen from the user's graph
        self.ops = []
        self.tensors = {}        # name -> tensor, in the order written
        self.width = {"x": None}  # value -> width
        self.names = set()
        self.produced_by = {}    # op name -> the top-level fx node whose value it is
        self.gm = None           # the traced wrapper (for the check's per-node values)
        self.edge_attr = None    # forward's edge_attr placeholder, when it takes one
        self.edge_attr_width = None  # the edge attributes' width its layers read

    # --- the top-level module -------------------------------------------------
    def run(self):
        model = self.model  # in eval mode (the caller's, who restores each module's)
        check_supported_shape(model)
        graph, self.gm = trace(model, type(model).__name__, 3 if takes_edge_attr(model) else 2)
        value = {}
        x_node, self.edge_index, *attr = [n for n in graph.nodes if n.op == "placeholder"]
        self.edge_attr = attr[0] if attr else None
        value[x_node] = "x"
        result = self._walk(graph, value, self.gm, prefix="", top=True)
        if self.width["x"] is None:
            raise ExportError("the input width is unknown: no layer reads x directly")
        if not self.ops or result != self.ops[-1]["name"]:
            raise ExportError("the model's output is not the result of its last operation")
        return self.ops, self.tensors, self.width["x"], self.width[result]

    def run_decoder(self, decoder, width, ends=None, n_args=2):
        """A link model's decoder module, forward(z_src, z_dst), as [[decoder_op]]s
        on the values "z_src" and "z_dst" (`width` wide each), its tensors under
        "decoder."; [] for decoder="dot". Its last value must be one column (a
        trailing view(-1) or squeeze(-1) is taken as it). `ends(graph,
        placeholders)` may say which nodes are the pair's ends instead: ({node:
        "z_src" | "z_dst"}, nodes to skip, whether it is the dot product)."""
        if isinstance(decoder, str):
            return []
        check_modules_are_plain(decoder)
        graph, gm = trace(decoder, type(decoder).__name__, n_args=n_args)
        encoder_ops, self.ops = self.ops, []
        saved_edge_index, self.edge_index = self.edge_index, None
        try:
            placeholders = [n for n in graph.nodes if n.op == "placeholder"]
            value, skip, dot = (dict(zip(placeholders, ("z_src", "z_dst"))), set(), False) \
                if ends is None else ends(graph, placeholders)
            if dot:
                return []
            for name in ("z_src", "z_dst"):
                self.width[name] = width
            self.names.update(("z_src", "z_dst"))
            result = self._walk(graph, value, gm, prefix="decoder.", skip=skip)
            if not self.ops or result != self.ops[-1]["name"]:
                raise ExportError("decoder: its output is not the result of its last operation")
            if self.width[result] != 1:
                raise ExportError(f"decoder: its output is {self.width[result]} wide; a pair's "
                                  f"score is one column")
            return self.ops
        finally:
            self.ops, self.edge_index = encoder_ops, saved_edge_index

    def _walk(self, graph, value, root, prefix, top=False, skip=()):
        """Translates `graph`'s nodes (module paths relative to `root`, the tracing
        wrapper, tensor names under `prefix`; `skip`: nodes already resolved);
        returns the value name of its output."""
        for node in graph.nodes:
            if node.op == "placeholder" or node in skip:
                continue
            if node.op == "output":
                out = node.args[0]
                if isinstance(out, (tuple, list)):
                    raise ExportError("forward returns several values; Spindle serves one tensor")
                return self._value(value, out, "output")
            if node.op == "call_module":
                module = root.get_submodule(node.target)
                self._module(node, module, prefix + _user_path(node.target), value)
            elif node.op in ("call_function", "call_method"):
                self._function(node, value)
            elif node.op == "get_attr":
                raise ExportError(f"{_user_path(node.target)}: a tensor read directly in forward "
                                  f"is not supported (use a module)")
            else:
                raise ExportError(f"{node.name}: unsupported graph node {node.op}")
            made = value.get(node)
            if top and made not in (None, "x") and made not in self.produced_by:
                self.produced_by[made] = node
            # An in-place call changes its input: readers after it see the op's output.
            if _in_place(node, root) and node.args and node.args[0] in value and node in value:
                value[node.args[0]] = value[node]
        raise ExportError("the traced forward has no output")

    # --- helpers ---------------------------------------------------------------
    def _value(self, value, arg, where):
        import torch.fx
        if not isinstance(arg, torch.fx.Node) or arg not in value:
            raise ExportError(f"{where}: reads {arg!r}, which is not a tensor Spindle computes")
        return value[arg]

    def _emit(self, node_name, kind, inputs, width, **fields):
        # A module's op is named after its path in the user's model ("conv1",
        # "convs_0"), which a call's named outputs use; fx names it under the
        # tracing wrapper's attribute.
        name = node_name.replace(".", "_")
        if name.startswith(_PATH.replace(".", "_")):
            name = name[len(_PATH):]
        # "output" names the model's output in a call, "x" and "z_*" the inputs.
        while name in self.names or name in ("x", "output", "scores", "z_src", "z_dst"):
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
        args, kwargs = _strip_none(node.args, node.kwargs)
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
        if len(args) != 1 or kwargs:
            raise ExportError(f"{path}: {kind} called with {len(args) + len(kwargs)} inputs; "
                              f"Spindle serves it on one (no batch vector)")
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
        translate_norm(self, node, module, path, src, value, self.frozen)

    # --- message passing --------------------------------------------------------
    def _conv(self, node, conv, path, value):
        from . import _pyg_layers as layers
        kind = type(conv).__name__
        if self.edge_index is None:
            raise ExportError(f"{path}: {kind} in the decoder; a decoder scores a pair from its "
                              f"two embeddings, with no graph to pass messages over")
        served = {"SAGEConv": self._sage, "GCNConv": self._gcn, "GATConv": self._gat,
                  "GINConv": self._gin, "GraphConv": self._graph_conv,
                  "GINEConv": lambda *a: layers.gine(self, *a),
                  "SGConv": lambda *a: layers.sg_conv(self, *a),
                  "GATv2Conv": lambda *a: layers.gatv2(self, *a),
                  "TransformerConv": lambda *a: layers.transformer(self, *a),
                  "ResGatedGraphConv": lambda *a: layers.res_gated(self, *a),
                  "TAGConv": lambda *a: layers.tag_conv(self, *a)}
        if kind not in served or not type(conv).__module__.startswith("torch_geometric."):
            raise ExportError(f"{path}: {kind} is not supported (Spindle serves "
                              f"{', '.join(sorted(served))})")
        args, kwargs = _strip_none(node.args, node.kwargs)
        for i, key in enumerate(("x", "edge_index")):  # conv(x, edge_index=...) and the like
            if key in kwargs and len(args) == i:
                args.append(kwargs.pop(key))
        attr = args.pop(2) if len(args) == 3 else kwargs.pop("edge_attr", None)
        layers.check_edge_attr_arg(self, kind, conv, path, attr)
        if len(args) != 2 or kwargs:
            extra = ", ".join(list(kwargs)) or f"{len(args)} arguments"
            raise ExportError(f"{path}: {kind} must be called as conv(x, edge_index) ({extra}: "
                              f"edge weights, attributes and sizes are not served)")
        if args[1] is not self.edge_index:
            raise ExportError(f"{path}: {kind}'s second argument must be forward's edge_index")
        src = self._value(value, args[0], path)
        check_conv_options(conv, path)
        return served[kind](node, conv, path, src, value)

    def _sage(self, node, conv, path, src, value):
        aggr = aggregation_of(conv)
        aggr = {"add": "sum"}.get(aggr, aggr)
        if aggr not in ("mean", "sum", "max", "min") or (
                isinstance(conv.aggr, str) and {"add": "sum"}.get(conv.aggr, conv.aggr) != aggr):
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
        check_all_written(conv, path, names)
        value[node] = self._emit(node.name, "sage", [src], int(out), prefix=path,
                                 **{"in": int(inw), "out": int(out), "aggr": aggr,
                                    "normalize": bool(conv.normalize),
                                    "root_weight": bool(conv.root_weight),
                                    "project": bool(conv.project),
                                    "bias": conv.lin_l.bias is not None})

    def _graph_conv(self, node, conv, path, src, value):
        """GraphConv: lin_rel(aggr_j x_j) + lin_root(x_i), a SAGEConv's op with its
        tensors under SAGEConv's names."""
        from . import _pyg_hetero_layers as layers
        if not isinstance(conv.in_channels, int):
            raise ExportError(f"{path}: GraphConv with separate source/target widths is not "
                              f"supported")
        value[node] = layers.graphconv(self, node, conv, path, src, src, None, False)

    def _gcn(self, node, conv, path, src, value):
        if getattr(conv, "cached", False):
            pass  # caching the normalisation does not change the answer
        out, inw = conv.lin.weight.shape
        self._input_width(src, int(inw), path)
        has_bias = conv.bias is not None
        self._take(path, conv, ["lin.weight"] + (["bias"] if has_bias else []))
        check_all_written(conv, path, ["lin.weight"] + (["bias"] if has_bias else []))
        value[node] = self._emit(node.name, "gcn", [src], int(out), prefix=path,
                                 **{"in": int(inw), "out": int(out),
                                    "add_self_loops": bool(conv.add_self_loops),
                                    "normalize": bool(conv.normalize),
                                    "improved": gcn_improved_in_effect(conv), "bias": has_bias,
                                    "norm": "graph"})

    def _gat(self, node, conv, path, src, value):
        from . import _pyg_layers as layers
        if not isinstance(conv.in_channels, int):
            raise ExportError(f"{path}: GATConv with separate source/target widths is not supported")
        edge, edge_names = layers.edge_projection(self, conv, path, "GATConv")
        state = conv.state_dict()
        weight = state.get("lin_src.weight", state.get("lin.weight"))
        heads, out = int(conv.heads), int(conv.out_channels)
        inw = int(weight.shape[1])
        self._input_width(src, inw, path)
        self.tensors[f"{path}.lin_src.weight"] = weight.detach().float().cpu()
        names = ["att_src", "att_dst"] + (["bias"] if conv.bias is not None else [])
        self._take(path, conv, names)
        check_all_written(conv, path, names + edge_names + [
            k for k in ("lin_src.weight", "lin.weight") if k in state][:1])
        width = heads * out if conv.concat else out
        value[node] = self._emit(node.name, "gat", [src], width, prefix=path,
                                 **{"in": inw, "out": out, "heads": heads,
                                    "concat": bool(conv.concat),
                                    "negative_slope": float(conv.negative_slope),
                                    "add_self_loops": bool(conv.add_self_loops),
                                    "bias": conv.bias is not None, **edge})

    def _gin(self, node, conv, path, src, value, kind="gin", written=(), **fields):
        """GINConv (and GINEConv, _pyg_layers.gine): its aggregation op, then its nn."""
        check_all_written(conv, path, ["eps", *written], inner_prefix="nn.")
        eps = float(conv.eps.detach().reshape(-1)[0])
        self.tensors[f"{path}.eps"] = conv.eps.detach().float().cpu().reshape(1)
        w = self.width[src]
        agg = self._emit(node.name + "_aggregate", kind, [src], w, prefix=path, eps=eps, **fields)
        # GINConv's nn, translated into ops on the aggregated value.
        graph, gm = trace(conv.nn, f"{path}.nn", n_args=1)
        inner = {}
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        inner[placeholders[0]] = agg
        for n in graph.nodes:  # keep inner names apart from the outer graph's
            if n.op != "placeholder":
                n.name = f"{node.name}_{n.name}"
        value[node] = self._walk(graph, inner, gm, prefix=f"{path}.nn.")
        if self.width[src] is None:  # x's width, learnt from the nn's first Linear
            self.width[src] = self.width[agg]
        if self.width[agg] != self.width[src]:
            raise ExportError(f"{path}.nn: reads {self.width[agg]} columns, "
                              f"{type(conv).__name__}'s input has {self.width[src]}")

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
            if not args and "tensors" in kw:
                args = [kw.pop("tensors")]
            parts = args[0]
            dim = args[1] if len(args) > 1 else kw.get("dim", 0)
            if dim not in (-1, 1):
                raise ExportError(f"{where}: torch.cat(dim={dim}); Spindle joins columns (dim=-1)")
            ins = [self._value(value, a, where) for a in parts]
            value[node] = self._emit(node.name, "cat", ins, sum(self.width[i] for i in ins))
            return
        if t in (operator.mul, torch.mul) or name in ("mul", "__mul__"):
            import torch.fx
            if len(args) != 2 or kw or not all(isinstance(a, torch.fx.Node) for a in args):
                raise ExportError(f"{where}: only the elementwise product of two tensors is "
                                  f"supported (not a scalar factor)")
            ins = [self._value(value, a, where) for a in args]
            if self.width[ins[0]] != self.width[ins[1]]:
                raise ExportError(f"{where}: multiplies widths {self.width[ins[0]]} and "
                                  f"{self.width[ins[1]]}")
            value[node] = self._emit(node.name, "mul", ins, self.width[ins[0]])
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
        if name in ("view", "reshape", "squeeze", "flatten"):
            if w != 1:
                raise ExportError(f"{where}: reshaping a {w}-wide value is not supported")
            value[node] = src  # one column: [k, 1] and [k] hold the same scores
            return
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
            hint = (" (a decoder that is exactly (z_src * z_dst).sum(-1) is decoder='dot'; a "
                    "sum inside a larger decoder is not)"
                    if self.edge_index is None and name == "sum" else "")
            raise ExportError(f"{where}: {name} is not supported{hint}")




def _user_path(target):
    """A module path as the user's model names it (without the tracing wrapper's)."""
    return target[len(_PATH):] if target.startswith(_PATH) else target


def _is_linear(module):
    import torch
    from torch_geometric.nn.dense.linear import Linear as PygLinear
    return isinstance(module, (torch.nn.Linear, PygLinear))
