"""Typed link prediction for export_pyg: a typed encoder (to_hetero or HeteroConv)
gives each node type its embeddings, and a decoder scores (src type, dst type)
pairs from them. The decoder may be "dot", a module forward(z_src, z_dst), a
module written as PyG's typed link examples write it, forward(z_dict,
edge_label_index) reading z_dict[src][edge_label_index[0]] and
z_dict[dst][edge_label_index[1]], or forward(z_src_all, z_dst_all,
edge_label_index) indexing them the same way. The indexing is resolved to the
pair's two ends (a (z_u * z_v).sum(-1) body is the dot decoder); everything else
is translated as a pair decoder's ops. The check scores pairs of each check graph
with the live modules and with `spindle model verify --graph --pairs`."""
import operator

from ._verify import ExportError


class PairEnds:
    """Resolves a decoder's fx graph to the ends of a pair: which nodes are
    z_src and z_dst, which nodes are only indexing (skipped), whether it is
    the dot product. Records the decoder's form: pair, dict or tables."""

    def __init__(self, pair_types):
        self.pair = list(pair_types)
        self.form = None

    def __call__(self, graph, placeholders):
        ph = placeholders
        if len(ph) == 3:
            self.form = "tables"
            tables, index = {ph[0]: self.pair[0], ph[1]: self.pair[1]}, ph[2]
        elif any(_getitem(u) and isinstance(u.args[1], str) for u in ph[0].users):
            self.form = "dict"
            tables, index = {}, ph[1]
        else:
            self.form = "pair"
            value = {ph[0]: "z_src", ph[1]: "z_dst"}
            return value, set(), is_dot(graph, value, set())
        value, skip, ends = {}, set(ph), {}
        for n in graph.nodes:
            if not _getitem(n):
                continue
            base, key = n.args
            if self.form == "dict" and base is ph[0]:
                if key not in self.pair:
                    raise ExportError(f"decoder reads z_dict[{key!r}]; its pairs are "
                                      f"({self.pair[0]!r}, {self.pair[1]!r}) (pair_types=)")
                tables[n] = key
            elif base is index:
                if key not in (0, 1):
                    raise ExportError(f"decoder reads edge_label_index[{key!r}]; a pair has two "
                                      f"ends, edge_label_index[0] and [1]")
                ends[n] = key
            elif base in tables and key in ends:
                end = ends[key]
                if tables[base] != self.pair[end]:
                    raise ExportError(
                        f"decoder indexes the {tables[base]!r} embeddings with "
                        f"edge_label_index[{end}]; a pair's {('first', 'second')[end]} end is a "
                        f"{self.pair[end]!r} node (pair_types=({self.pair[0]!r}, "
                        f"{self.pair[1]!r}))")
                value[n] = ("z_src", "z_dst")[end]
            else:
                continue
            skip.add(n)
        return value, skip, is_dot(graph, value, skip)


def _getitem(node):
    return node.op == "call_function" and node.target is operator.getitem


def is_dot(graph, value, skip):
    """Whether the decoder's only work is (z_src * z_dst).sum(-1) (then a view)."""
    ends = {n for n, v in value.items() if v in ("z_src", "z_dst")}
    work = [n for n in graph.nodes
            if n.op not in ("placeholder", "output") and n not in skip and n not in ends]
    if len(work) < 2:
        return False
    mul, total, *rest = work
    name = lambda n: n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    if name(mul) not in ("mul", "__mul__") or {value.get(a) for a in mul.args} != {"z_src", "z_dst"}:
        return False
    dim = total.args[1] if len(total.args) > 1 else total.kwargs.get("dim")
    if name(total) != "sum" or total.args[0] is not mul or dim not in (-1, 1, (-1,), [-1]):
        return False
    return all(name(n) in ("view", "reshape", "squeeze", "flatten") for n in rest)


def decoder_args(decoder):
    """How many tensors the decoder module's forward takes (2 or 3): its
    positional arguments without a default."""
    import inspect
    params = list(inspect.signature(type(decoder).forward).parameters.values())[1:]
    needed = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
              and p.default is inspect.Parameter.empty]
    if len(needed) not in (2, 3):
        raise ExportError(f"decoder: {type(decoder).__name__}.forward takes {len(needed)} "
                          f"arguments without defaults; a decoder takes (z_src, z_dst), (z_dict, "
                          f"edge_label_index) or (z_src, z_dst, edge_label_index)")
    return len(needed)


def module_scores(decoder, form, pair, z, pairs):
    """The live decoder's scores of `pairs` ([k, 2] within the pair types) from the
    encoder's answers `z` ({node type: tensor})."""
    import torch
    u, v = torch.from_numpy(pairs[:, 0].copy()), torch.from_numpy(pairs[:, 1].copy())
    zu, zv = z[pair[0]], z[pair[1]]
    index = torch.from_numpy(pairs.T.copy())
    calls = {"dot": ("(z_src * z_dst).sum(-1)", lambda: (zu[u] * zv[v]).sum(-1)),
             "pair": ("forward(z_src, z_dst)", lambda: decoder(zu[u], zv[v])),
             "dict": ("forward(z_dict, edge_label_index)", lambda: decoder(z, index)),
             "tables": ("forward(z_src, z_dst, edge_label_index)",
                        lambda: decoder(zu, zv, index))}
    what, call = calls[form]
    what = what if form == "dot" else f"{type(decoder).__name__}.{what}"
    try:
        with torch.no_grad():
            want = call()
    except Exception as e:  # noqa: BLE001  (the user's decoder may raise anything)
        raise ExportError(f"{what} failed on {len(pairs)} pairs ({type(e).__name__}: "
                          f"{str(e)[:200]})") from e
    if not isinstance(want, torch.Tensor) or want.numel() != len(pairs):
        raise ExportError(f"{what} does not return one score per pair")
    return what, want.detach().float().reshape(-1).numpy()


def check_pairs_of(data, pair):
    """64 pairs of `data`'s (src, dst) nodes to check, numbered within their types
    (the first a node with the same number at both ends)."""
    import numpy as np
    rng = np.random.default_rng(1)
    counts = [int(data[t].num_nodes) for t in pair]
    pairs = np.stack([rng.integers(0, counts[0], 64), rng.integers(0, counts[1], 64)], 1)
    pairs[0] = [0, 0]
    return pairs.astype(np.int64)


def check_pairs(decoder, form, pair, z, pairs, got, tolerance, label):
    """Spindle's scores `got` of `pairs` (check_pairs_of) against the live
    decoder's. Says what was checked."""
    from ._verify import relative_difference
    what, want = module_scores(decoder, form, pair, z, pairs)
    d = relative_difference(got, want)
    if d > tolerance:
        raise ExportError(f"{what} differs from what Spindle serves by {d:.3g} (relative) on 64 "
                          f"({pair[0]}, {pair[1]}) pairs of the {label} graph; nothing was "
                          f"written")
    return d, f"equal to {what} on 64 pairs of {label}"


def check_pair_types(pair_types, node_types, outputs):
    """pair_types as a (src, dst) tuple of answered node types."""
    try:
        src, dst = pair_types
    except (TypeError, ValueError) as e:
        raise ExportError("pair_types: give the node types of a pair's two ends, "
                          "pair_types=(\"user\", \"movie\")") from e
    for t in (src, dst):
        if t not in node_types:
            raise ExportError(f"pair_types: {t!r} is not a node type ({', '.join(node_types)})")
        if t not in outputs:
            raise ExportError(f"pair_types: the encoder gives no embeddings of {t!r} (it answers "
                              f"{', '.join(outputs)})")
    return [src, dst]
