"""export_pyg for typed (heterogeneous) models: to_hetero modules and modules
built with HeteroConv, on PyG's HeteroData. Translated by _pyg_hetero, written
as a typed stack ([[node_type]], [[edge_type]], [[output]] beside the ops) and
checked like every export: Spindle's own forward (`spindle model verify
--graph`, every node of every answered type, every neighbour) against the live
module on a generated typed graph and on the user's HeteroData."""
import os
import subprocess
import tempfile

from . import _model_files as files
from . import _verify as verify
from ._graph_save import save_graph
from . import _hetero_link as link
from ._hetero_tables import check_widths, embedding_tables, with_tables
from ._pyg_hetero import HeteroTranslator
from ._verify import ExportError


def typed_metadata(metadata, check):
    """(node types, edge types) from metadata= or the check HeteroData's."""
    if metadata is None and hasattr(check, "metadata") and hasattr(check, "node_types"):
        metadata = check.metadata()
    if metadata is None:
        raise ExportError("a typed model needs metadata=data.metadata() or check=data (a "
                          "HeteroData) to know its node and edge types")
    try:
        node_types, edge_types = metadata
        edge_types = [tuple(e) for e in edge_types]
    except (TypeError, ValueError) as e:
        raise ExportError("metadata: expected (node_types, edge_types) as HeteroData.metadata() "
                          "gives them") from e
    if any(len(e) != 3 for e in edge_types):
        raise ExportError("metadata: every edge type is (src, relation, dst)")
    return list(node_types), edge_types


def export_hetero(model, out_dir, *, name, fanouts, check, spindle, tolerance, metadata,
                  embeddings=None, task="node", decoder="dot", pair_types=None):
    import torch
    _check_task(task, decoder, pair_types)
    node_types, edge_types = typed_metadata(metadata, check)
    tables = embedding_tables(embeddings, node_types, model)
    user = None
    if check is not True and check is not False and check is not None:
        if not (hasattr(check, "x_dict") and hasattr(check, "edge_index_dict")):
            raise ExportError("check: a typed model is checked on a HeteroData (check=data)")
        user = check
    with files.EvalMode(model.modules()):  # each module restored to its own mode after
        if user is not None:
            _module_answers(model, user, "initialising its lazy modules on your check graph",
                            tables)
        ex = HeteroTranslator(model, node_types, edge_types)
        ops, tensors, widths, used, out_width, outputs = ex.run()
        pair = decoder_ops = None
        if task == "link":
            pair = link.check_pair_types(pair_types, node_types, outputs)
            ends = link.PairEnds(pair)
            decoder_ops = ex.run_decoder(decoder, out_width, ends=ends, n_args=2 if isinstance(
                decoder, str) else link.decoder_args(decoder))
            pair = (pair, decoder, "dot" if isinstance(decoder, str) else ends.form)
        check_widths(tables, widths)
        tensors.update({n: w for n, w in tables.values()})
        for t, w in widths.items():
            if w is None:
                w = _graph_width(user, t)
                if w is None:
                    raise ExportError(f"node type '{t}': no layer reads its features directly; "
                                      f"pass check=data so its width is known")
                widths[t] = w
        hops = 1 + max(_depths(ops, widths))
        listed, per_edge = _fanouts(fanouts, used, hops, edge_types)
        text = files.model_toml(name, max(widths.values()), out_width, listed, ops, task=task,
                                decoder="ops" if decoder_ops else "dot",
                                decoder_ops=decoder_ops or (),
                                pair_types=pair[0] if pair else None)
        text += typed_tables(widths, used, per_edge, outputs, tables)
        with files.Staging(out_dir) as stage:
            stage.write(text, tensors)
            if check is False or check is None:
                record = {"checked": False, "reason": "export_pyg(check=False)"}
            else:
                known = {t: _graph_width(user, t) for t in node_types}
                known = {t: w for t, w in known.items() if w is not None}
                known.update(widths)
                unknown = [t for t in node_types if t not in known]
                counts = {t: int(w.shape[0]) for t, (_, w) in tables.items()}
                graphs = [("generated", generated_hetero(node_types, edge_types, known, counts))]
                if unknown:
                    graphs[0] = (f"generated (node types {', '.join(unknown)} 4 wide: no served "
                                 f"layer reads them; pass check=data if the module wants "
                                 f"another width)", graphs[0][1])
                if user is not None:
                    graphs.append((f"yours: {sum(user.num_nodes_dict.values())} nodes", user))
                record = _check(model, stage.path, graphs, outputs, spindle, tolerance, tables,
                                pair)
            from .export import _releases
            record.update(_releases(torch))
            stage.append_verified(record, spindle)
            stage.commit()
    return [op["kind"] for op in ops]


def typed_tables(widths, edge_types, per_edge, outputs, tables=None):
    lines = []
    for t, w in widths.items():
        lines += ["", "[[node_type]]", f"name = {files.toml_value(t)}", f"in = {int(w)}"]
        if tables and t in tables:
            lines += [f"embedding = {files.toml_value(tables[t][0])}",
                      f"embedding_rows = {int(tables[t][1].shape[0])}"]
    for e in edge_types:
        lines += ["", "[[edge_type]]", f"src = {files.toml_value(e[0])}",
                  f"rel = {files.toml_value(e[1])}", f"dst = {files.toml_value(e[2])}"]
        if per_edge and e in per_edge:
            lines.append(f"fanouts = {files.toml_value(per_edge[e])}")
    for t, v in outputs.items():
        lines += ["", "[[output]]", f"node_type = {files.toml_value(t)}",
                  f"value = {files.toml_value(v)}"]
    return "\n".join(lines) + "\n"


def _depths(ops, widths):
    depth = {f"x.{t}": 0 for t in widths}
    for op in ops:
        d = max(depth[i] for i in op["inputs"])
        depth[op["name"]] = d + 1 if "relation" in op else d
        if "relation" in op:
            yield d


def _fanouts(fanouts, used, hops, known):
    """(model fanouts or None, {edge type: fanouts} or None) from a list or a dict."""
    def checked(values, what):
        values = list(values)
        if len(values) != hops or any(isinstance(f, bool) or int(f) != f or
                                      not (f == -1 or 1 <= f <= 100000) for f in values):
            raise ExportError(f"fanouts{what}: {values}: the model samples {hops} hops, one "
                              f"fanout each in 1..100000 or -1")
        return [int(f) for f in values]
    if fanouts is None:
        return None, None
    if isinstance(fanouts, dict):
        given = {tuple(k): checked(v, f"[{tuple(k)}]") for k, v in fanouts.items()}
        unknown = [e for e in given if e not in known]
        if unknown:
            raise ExportError(f"fanouts: edge type {unknown[0]} is not in the metadata "
                              f"({', '.join(map(str, known))})")
        missing = [e for e in used if e not in given]
        if missing:
            raise ExportError(f"fanouts: edge type {missing[0]} has none (give every edge type "
                              f"the model reads one list, or one list for all)")
        return None, given
    return checked(fanouts, ""), None


def _graph_width(data, node_type):
    if data is None or node_type not in data.node_types:
        return None
    x = getattr(data[node_type], "x", None)
    return None if x is None else int(x.shape[1])


def generated_hetero(node_types, edge_types, widths, counts=None, seed=0):
    """A small typed graph: 24-40 nodes a type (`counts` for a type read from an
    embedding table: its rows; such a type has no x), random edges per edge type
    with a hub, a node only sending, repeated edges, isolated nodes and self-loops
    on edge types within one type."""
    import numpy as np
    import torch
    from torch_geometric.data import HeteroData
    rng = np.random.default_rng(seed)
    data = HeteroData()
    tables = counts or {}
    counts = {t: int(rng.integers(24, 41)) for t in node_types}
    counts.update(tables)
    for t in node_types:
        if t in tables:
            data[t].num_nodes = counts[t]
            continue
        data[t].x = torch.from_numpy(rng.standard_normal((counts[t], widths.get(t, 4)))
                                     .astype(np.float32))
    for s, r, d in edge_types:
        n = 3 * counts[d]
        src = rng.integers(0, counts[s] - 2, n)
        dst = rng.integers(0, counts[d] - 2, n)
        src[:8], dst[:8] = 0, np.arange(8) % (counts[d] - 2)   # a hub sending to many
        dst[8:14], src[8:14] = 1, np.arange(6) % (counts[s] - 2)  # one receiving from many
        src[14:16], dst[14:16] = 2, 3                          # a repeated edge
        if s == d:
            src[16:18] = dst[16:18]                            # self-loops
        data[s, r, d].edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64))
    return data


def _module_answers(model, data, what, tables=None):
    import torch
    x_dict = with_tables(data.x_dict, tables or {}, data)
    try:
        with torch.no_grad():
            out = model(x_dict, data.edge_index_dict)
    except Exception as e:  # noqa: BLE001  (the user's forward may raise anything)
        raise ExportError(f"{type(model).__name__} failed {what} ({type(e).__name__}: "
                          f"{str(e)[:300]})") from e
    return out


def _check_task(task, decoder, pair_types):
    if task not in ("node", "link"):
        raise ExportError(f"task={task!r}: expected 'node' or 'link'")
    if task == "node" and (pair_types is not None or not isinstance(decoder, str) or
                           decoder != "dot"):
        raise ExportError("decoder= and pair_types= are for task='link' (a node model's answer "
                          "is its forward)")
    import torch
    if task == "link" and not (decoder == "dot" or isinstance(decoder, torch.nn.Module)):
        raise ExportError(f"decoder={decoder!r}: give 'dot' (z_u . z_v) or a module scoring a "
                          f"pair")


def _check(model, model_dir, graphs, outputs, spindle, tolerance, tables=None, pair=None):
    """Spindle's answers for every node of each answered type (and a link model's
    scores of 64 pairs) on each graph, against the live modules'."""
    import torch
    binary = verify.spindle_binary(spindle)
    worst, checked = 0.0, []
    for label, data in graphs:
        want = _module_answers(model, data, f"on the {label} graph", tables)
        if isinstance(want, torch.Tensor):
            want = {next(iter(outputs)): want}
        pairs = link.check_pairs_of(data, pair[0]) if pair is not None else None
        got = spindle_typed_outputs(binary, model_dir, data, list(outputs), pairs)
        for t in outputs:
            d = verify.relative_difference(got[t], want[t].detach().float().numpy())
            worst = max(worst, d)
            if d > tolerance:
                raise ExportError(
                    f"check failed on the {label} graph: node type '{t}' differs from your "
                    f"module by {d:.3g} (relative; tolerance {tolerance:g}). Spindle would serve "
                    f"it differently from PyG; nothing was written")
        if pair is not None:  # the same run of `model verify` scored the pairs
            d, what = link.check_pairs(pair[1], pair[2], pair[0], want, pairs, got["(scores)"],
                                       tolerance, label)
            worst = max(worst, d)
            checked.append(what)
    record = {"checked": True, "by": "spindle model verify --graph (every node, every neighbour)",
              "graphs": [g[0] for g in graphs], "max_relative_difference": float(f"{worst:.3g}"),
              "tolerance": float(tolerance), "node_types": list(outputs)}
    if checked:
        record["decoder"] = "; ".join(checked)
    return record


def spindle_typed_outputs(binary, model_dir, data, node_types, pairs=None):
    """Spindle's answer for every node of each of `node_types` on `data`; with
    `pairs` ([k, 2] within the pair types), a typed link model's scores of them
    too, under "(scores)", from the same run."""
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="spindle-check-") as tmp:
        graph = os.path.join(tmp, "graph")
        save_graph(data, graph)
        out = os.path.join(tmp, "out")
        cmd = [binary, "--log-level", "warn", "model", "verify", model_dir, "--graph", graph,
               "--out", out]
        if pairs is not None:
            np.save(os.path.join(tmp, "pairs.npy"), np.ascontiguousarray(pairs, dtype=np.int64))
            cmd += ["--pairs", os.path.join(tmp, "pairs.npy")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise ExportError(f"Spindle could not run the exported model (`{binary} model verify` "
                              f"exited {r.returncode}): {r.stderr.strip()[-2000:] or 'no message'}")
        got = {t: np.load(os.path.join(out, f"output-{t}.npy")) for t in node_types}
        if pairs is not None:
            got["(scores)"] = np.load(os.path.join(out, "scores.npy"))
        return got
