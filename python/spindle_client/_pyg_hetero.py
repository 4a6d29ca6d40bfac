"""Translates a typed (heterogeneous) PyG model into Spindle's typed stack: the
module to_hetero returns (its fx graph, walked as it is) or a module whose
forward(x_dict, edge_index_dict) uses HeteroConv (traced with the dicts' keys
fixed). Every value has a node type: "x.<type>" for a type's features, a
message-passing op's target type, a node-wise op its input's. Each
message-passing op names the edge type whose edges it reads ("relation"), with
two inputs (source type's value, target type's value) when they differ."""
import operator

from ._pyg_checks import check_conv_options, check_modules_are_plain
from ._pyg_trace import _in_place, _leaf_types, _strip_none
from ._pyg_translate import Translator
from ._verify import ExportError

_TYPED_CONVS = ("SAGEConv", "GATConv", "GraphConv")


def _get_dict():
    try:
        from torch_geometric.nn.to_hetero_transformer import get_dict
        return get_dict
    except ImportError:
        return None


def is_to_hetero(model):
    import torch.fx
    get_dict = _get_dict()
    return (isinstance(model, torch.fx.GraphModule) and get_dict is not None
            and any(n.target is get_dict for n in model.graph.nodes))


def is_hetero(model):
    """A to_hetero module, or one holding HeteroConv layers."""
    from torch_geometric.nn import HeteroConv
    return is_to_hetero(model) or any(isinstance(m, HeteroConv) for m in model.modules())


class HeteroTranslator(Translator):
    def __init__(self, model, node_types, edge_types):
        super().__init__(model)
        self.node_types = list(node_types)
        self.edge_types = [tuple(e) for e in edge_types]
        self.width = {f"x.{t}": None for t in self.node_types}
        self.names.update(self.width)
        self.value_type = {f"x.{t}": t for t in self.node_types}
        self.relation_of = {}  # fx node -> edge type index
        self.dicts = {}        # fx node -> "x" or "edge_index" (to_hetero's get_dict)
        self.stacks = {}       # fx node of torch.stack -> its input values
        self.pairs = {}        # fx node of torch.max(stack, dim) -> its value (getitem 0)
        self.edge_index = object()  # typed convs read relation markers instead

    def run(self):
        """(ops, tensors, {node type: width}, out width, {node type: output value})."""
        from torch.utils._pytree import tree_unflatten
        check_modules_are_plain(self.model)
        graph, root = self._graph()
        value = {}
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        if not is_to_hetero(self.model):
            for i, node in enumerate(placeholders):
                if i < len(self.node_types):
                    value[node] = f"x.{self.node_types[i]}"
                else:
                    self.relation_of[node] = i - len(self.node_types)
        else:
            for node, kind in zip(placeholders, ("x", "edge_index")):
                self.dicts[node] = kind
        result = None
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                result = node.args[0]
                spec = getattr(getattr(graph, "_codegen", None), "pytree_info", None)
                if spec is not None and spec.out_spec is not None and isinstance(result, (list, tuple)):
                    result = tree_unflatten(list(result), spec.out_spec)
                break
            self._node(node, root, value)
            if _in_place(node, root) and node.args and node.args[0] in value and node in value:
                value[node.args[0]] = value[node]
        outputs = self._outputs(result, value)
        return self._finish(outputs)

    def _graph(self):
        import torch.fx
        if is_to_hetero(self.model):
            return self.model.graph, self.model
        import inspect
        signature = inspect.signature(type(self.model).forward).parameters
        params = list(signature)[1:]
        if len(params) < 2:
            raise ExportError(f"{type(self.model).__name__}.forward takes ({', '.join(params)}); a "
                              f"typed model's is forward(x_dict, edge_index_dict)")
        for p in params[2:]:
            q = signature[p]
            if q.default is inspect.Parameter.empty and q.kind not in (q.VAR_POSITIONAL,
                                                                      q.VAR_KEYWORD):
                raise ExportError(f"{type(self.model).__name__}.forward needs '{p}', which Spindle "
                                  f"does not pass (it serves forward(x_dict, edge_index_dict); "
                                  f"edge attributes are not served on typed graphs)")
        leaves = _leaf_types()

        class _Tracer(torch.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return isinstance(m, leaves) or super().is_leaf_module(m, qualname)

        concrete = {params[0]: {t: torch.fx.PH for t in self.node_types},
                    params[1]: {e: torch.fx.PH for e in self.edge_types}}
        try:
            graph = _Tracer().trace(self.model, concrete_args=concrete)
        except Exception as e:  # noqa: BLE001  (tracing fails in many ways; say which module)
            raise ExportError(f"{type(self.model).__name__}: its forward(x_dict, edge_index_dict) "
                              f"cannot be traced with torch.fx ({type(e).__name__}: {e})") from e
        for node in reversed(list(graph.nodes)):  # unused layers take no hop
            if node.op in ("call_module", "call_function", "call_method") and not node.users \
                    and not _in_place(node, self.model):
                graph.erase_node(node)
        return graph, self.model

    def _node(self, node, root, value):
        if node.op == "call_module":
            module = root.get_submodule(node.target)
            self._module(node, module, node.target, value)
        elif node.op == "call_function" and node.target is _get_dict():
            self.dicts[node] = self.dicts.get(node.args[0], "x")
        elif node.op == "call_method" and node.target == "get" and node.args[0] in self.dicts:
            key = node.args[1]
            if self.dicts[node.args[0]] == "x":
                if key not in self.node_types:
                    raise ExportError(f"{node.name}: node type {key!r} is not in the metadata")
                value[node] = f"x.{key}"
            else:
                self.relation_of[node] = self._relation(tuple(key), node.name)
        elif node.op in ("call_function", "call_method"):
            self._typed_function(node, value)
        elif node.op == "get_attr":
            raise ExportError(f"{node.target}: a tensor read directly in forward is not supported")
        else:
            raise ExportError(f"{node.name}: unsupported graph node {node.op}")

    def _relation(self, key, where):
        if key not in self.edge_types:
            raise ExportError(f"{where}: edge type {key} is not in the metadata")
        return self.edge_types.index(key)

    def run_decoder(self, decoder, width, ends=None, n_args=2):
        # A pair's decoder joins both ends' embeddings: its values are of no node type.
        self.value_type.update({"z_src": "(pair)", "z_dst": "(pair)"})
        return super().run_decoder(decoder, width, ends, n_args)

    def _emit(self, node_name, kind, inputs, width, **fields):
        if "relation" in fields:
            vtype = self.edge_types[fields["relation"]][2]
        else:
            types = {self.value_type[i] for i in inputs}
            if len(types) != 1:
                raise ExportError(f"{node_name} ({kind}) joins node types {sorted(types)}")
            vtype = types.pop()
        name = super()._emit(node_name, kind, inputs, width, **fields)
        self.value_type[name] = vtype
        return name

    # --- aggregation over edge types and the functions to_hetero writes --------------
    def _typed_function(self, node, value):
        import torch
        t, args = node.target, list(node.args)
        name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
        where = f"{node.name} ({name})"
        if t is torch.stack:
            parts = args[0] if args else node.kwargs.get("tensors")
            dim = args[1] if len(args) > 1 else node.kwargs.get("dim", 0)
            if dim != 0:
                raise ExportError(f"{where}: HeteroConv(aggr=None) stacks edge types; Spindle "
                                  f"serves sum, mean, max and cat")
            self.stacks[node] = [self._value(value, a, where) for a in parts]
            return
        import torch.fx
        if args and isinstance(args[0], torch.fx.Node) and args[0] in self.stacks:
            ins = self.stacks[args[0]]
            kinds = {"sum": "add", "mean": "mean", "max": "max"}
            if name not in kinds:
                raise ExportError(f"{where}: HeteroConv(aggr={name!r}) is not served (sum, mean, "
                                  f"max and cat are)")
            made = self._emit(node.name, kinds[name], ins, self.width[ins[0]])
            # torch.max(dim=0) gives (values, indices): PyG takes [0], which tracing
            # may drop (its isinstance(out, tuple) sees a proxy); both read the values.
            value[node] = made
            if name == "max":
                self.pairs[node] = made
            return
        if t is operator.getitem and isinstance(args[0], torch.fx.Node) and \
                args[0] in self.pairs and args[1] == 0:
            value[node] = self.pairs[args[0]]
            return
        if t in (torch.div, operator.truediv) and len(args) == 2 and isinstance(args[1], (int, float)):
            src = self._value(value, args[0], where)
            value[node] = self._emit(node.name, "scale", [src], self.width[src],
                                     alpha=1.0 / float(args[1]))
            return
        if t in (torch.max,) and len(args) == 2 and all(a in value for a in args):
            ins = [self._value(value, a, where) for a in args]
            value[node] = self._emit(node.name, "max", ins, self.width[ins[0]])
            return
        if t in (torch.min, torch.mul):
            raise ExportError(f"{where}: to_hetero(aggr={name!r}) is not served (sum, mean, max "
                              f"are)")
        self._function(node, value)

    # --- message passing on one edge type ----------------------------------------------
    def _conv(self, node, conv, path, value):
        kind = type(conv).__name__
        args, kwargs = _strip_none(node.args, node.kwargs)
        if len(args) != 2 or kwargs or args[1] not in self.relation_of:
            raise ExportError(f"{path}: {kind} must be called as conv(x, edge_index) with an edge "
                              f"type's edge_index (edge attributes are not served)")
        r = self.relation_of[args[1]]
        if kind not in _TYPED_CONVS or not type(conv).__module__.startswith("torch_geometric."):
            raise ExportError(f"{path}: {kind} on an edge type is not supported (Spindle serves "
                              f"{', '.join(_TYPED_CONVS)} there)")
        x = args[0]
        if isinstance(x, (tuple, list)):
            if len(x) != 2 or x[1] is None:
                raise ExportError(f"{path}: {kind} needs its target nodes' features")
            src, dst = (self._value(value, a, path) for a in x)
        else:
            src = dst = self._value(value, x, path)
        check_conv_options(conv, path)
        from . import _pyg_hetero_layers as layers
        value[node] = getattr(layers, kind.lower())(self, node, conv, path, src, dst, r,
                                                    isinstance(x, (tuple, list)))

    # --- outputs ---------------------------------------------------------------------------
    def _outputs(self, result, value):
        import torch.fx
        if isinstance(result, dict):
            return {k: self._value(value, v, f"output[{k!r}]") for k, v in result.items()}
        if isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        if isinstance(result, torch.fx.Node):
            made = self._value(value, result, "output")
            return {self.value_type[made]: made}
        raise ExportError("forward returns neither one tensor nor a dict of node types' tensors")

    def _finish(self, outputs):
        used = sorted({op["relation"] for op in self.ops if "relation" in op})
        remap = {r: i for i, r in enumerate(used)}
        for op in self.ops:
            if "relation" in op:
                op["relation"] = remap[op["relation"]]
        edge_types = [self.edge_types[r] for r in used]
        widths = {}
        for t in self.node_types:
            if self.width[f"x.{t}"] is not None or any(t in (e[0], e[2]) for e in edge_types):
                widths[t] = self.width[f"x.{t}"]
        outs = {t: v for t, v in outputs.items()}
        out_widths = {self.width[v] for v in outs.values()}
        if len(out_widths) != 1:
            raise ExportError(f"the outputs differ in width ({out_widths}); Spindle answers every "
                              f"node type with one width")
        return self.ops, self.tensors, widths, edge_types, out_widths.pop(), outs
