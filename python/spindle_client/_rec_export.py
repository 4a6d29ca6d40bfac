"""export_torch: recommendation models written in torch, mapped to Spindle's
descriptions and checked against the live module before anything is written.

Recognised: a DLRM shaped as facebookresearch's DLRM_Net (emb_l: EmbeddingBags
summing, bot_l: Linear+ReLU pairs ending in ReLU, top_l: Linear+ReLU pairs
ending in Linear+Sigmoid, dot interaction without self pairs). Its interaction
pairs are taken in DLRM_Net's order (i > j, row-major) first; a module that
orders them as torch.triu_indices does (i < j, row-major) matches Spindle once
the first top layer's columns are permuted, which is done only when the check
shows that order is the module's. Anything else is refused by name."""
import json

from . import _model_files as files
from . import _verify as verify
from ._pyg_translate import ExportError


def export_torch(model, out_dir, *, name, example_inputs, check=True, spindle=None,
                 tolerance=verify.TOLERANCE):
    """Writes OUT_DIR/model.toml and weights.safetensors for a DLRM_Net-shaped `model`.

    example_inputs: (dense_x [B, dense_in], offsets [T, B], indices: one tensor per
    table), DLRM_Net.forward's arguments; the module is run on them and Spindle's
    answer must equal its output within `tolerance` (check=False skips that).
    Returns "dlrm". Raises ExportError naming what is not served.
    """
    import warnings

    import torch
    files.check_out_dir(out_dir)
    desc, tensors = _dlrm(model)  # copies: the check's forward cannot change them
    dense, bags = _dlrm_inputs(example_inputs, desc)
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        try:
            with torch.no_grad():
                want = model(*example_inputs)
            want = want.detach().float().reshape(-1, 1).numpy()
        except Exception as e:  # noqa: BLE001  (the user's forward may raise anything)
            raise ExportError(f"{type(model).__name__} failed on example_inputs "
                              f"({type(e).__name__}: {str(e)[:300]})") from e
        if want.shape[0] != dense.shape[0]:
            raise ExportError(f"{type(model).__name__} returned {want.shape[0]} scores for a "
                              f"batch of {dense.shape[0]}")
        if check is False:
            warnings.warn("export_torch(check=False): the interaction's pair order is assumed to be "
                          "DLRM_Net's (i > j); a module in torch.triu_indices order is served wrong")
        orders = ["tril", "triu"] if check is not False else ["tril"]
        tried = []
        for order in orders:
            t = tensors if order == "tril" else _permute_top(tensors, desc)
            with files.Staging(out_dir) as stage:
                stage.write(_toml(name, desc), t)
                if check is False:
                    record = {"checked": False, "reason": "export_torch(check=False)",
                              "interaction_pairs": _ORDER_NAMES["tril"] + ", assumed"}
                else:
                    got = _run(verify.spindle_binary(spindle), stage.path, dense, bags)
                    d = verify.relative_difference(got, want)
                    tried.append(f"{_ORDER_NAMES[order]}: {d:.3g}")
                    if d > tolerance:
                        continue
                    record = {"checked": True, "by": "spindle model verify --rec-inputs",
                              "graphs": [f"your example_inputs: batch {dense.shape[0]}"],
                              "max_relative_difference": float(f"{d:.3g}"),
                              "tolerance": float(tolerance),
                              "interaction_pairs": _ORDER_NAMES[order]}
                record["torch"] = torch.__version__
                stage.append_verified(record, spindle)
                stage.commit()
                return "dlrm"
    finally:
        for m, training in modes:
            m.training = training
    raise ExportError(
        f"check failed: Spindle's DLRM answers differ from {type(model).__name__}'s on your "
        f"example_inputs for every interaction order tried ({'; '.join(tried)}; tolerance "
        f"{tolerance:g}). Spindle serves DLRM_Net's forward: ReLU after every bottom layer, "
        f"dot interaction of [bottom, table 0, ...] without self pairs, sigmoid at the end; "
        f"nothing was written")


_ORDER_NAMES = {"tril": "DLRM_Net order (i > j, row-major)",
                "triu": "torch.triu_indices order (i < j, row-major), top_l's first columns "
                        "permuted to Spindle's"}


def _layers(seq, path, last_act):
    """Widths of a Sequential of Linear + activation pairs; the last pair's activation
    must be `last_act`, every other ReLU. Returns (widths, [(index, linear)])."""
    import torch
    if not isinstance(seq, torch.nn.Sequential):
        raise ExportError(f"{path}: expected a torch.nn.Sequential of Linear + activation "
                          f"layers, found {type(seq).__name__}")
    mods = list(seq)
    if len(mods) % 2 or not mods:
        raise ExportError(f"{path}: expected Linear + activation pairs, found {len(mods)} layers")
    widths, linears = [], []
    for k in range(0, len(mods), 2):
        lin, act = mods[k], mods[k + 1]
        want = last_act if k + 2 == len(mods) else torch.nn.ReLU
        if not isinstance(lin, torch.nn.Linear) or lin.bias is None:
            raise ExportError(f"{path}.{k}: expected Linear with bias, found {type(lin).__name__}")
        if type(act) is not want:
            raise ExportError(f"{path}.{k + 1}: {type(act).__name__} where Spindle's DLRM (as "
                              f"DLRM_Net) applies {want.__name__}")
        widths.append(int(lin.out_features))
        linears.append((k, lin))
    return widths, linears


def _dlrm(model):
    import torch
    cls = type(model).__name__
    missing = [a for a in ("emb_l", "bot_l", "top_l") if not hasattr(model, a)]
    if missing:
        raise ExportError(f"{cls}: export_torch recognises DLRM_Net-shaped models (emb_l, bot_l, "
                          f"top_l); this one lacks {', '.join(missing)}. NCF, Wide & Deep and DIN "
                          f"are served from a hand-written model.toml (docs/recommendation.md)")
    if getattr(model, "arch_interaction_op", "dot") != "dot":
        raise ExportError(f"{cls}: arch_interaction_op='{model.arch_interaction_op}'; Spindle "
                          f"serves the dot interaction")
    if getattr(model, "arch_interaction_itself", False):
        raise ExportError(f"{cls}: arch_interaction_itself=True (self pairs) is not served")
    if getattr(model, "loss_threshold", 0.0):
        raise ExportError(f"{cls}: loss_threshold={model.loss_threshold} clamps the scores; "
                          f"Spindle serves them unclamped (set it to 0.0)")
    tables = list(model.emb_l)
    for t, e in enumerate(tables):
        if not isinstance(e, torch.nn.EmbeddingBag) or e.mode != "sum":
            raise ExportError(f"emb_l.{t}: {type(e).__name__}(mode={getattr(e, 'mode', None)!r}); "
                              f"Spindle pools bags by sum (EmbeddingBag(mode='sum'))")
        for option in ("max_norm", "padding_idx"):
            if getattr(e, option, None) is not None:
                raise ExportError(f"emb_l.{t}: EmbeddingBag({option}={getattr(e, option)}) is not "
                                  f"served (Spindle sums the rows as stored)")
    dims = {int(e.embedding_dim) for e in tables}
    if len(dims) != 1:
        raise ExportError(f"emb_l: tables of widths {sorted(dims)}; DLRM's tables share one width")
    dim = dims.pop()
    bottom, bot = _layers(model.bot_l, "bot_l", torch.nn.ReLU)
    top, tp = _layers(model.top_l, "top_l", torch.nn.Sigmoid)
    if bottom[-1] != dim:
        raise ExportError(f"bot_l: ends {bottom[-1]} wide, the tables are {dim} wide")
    k = len(tables) + 1
    if tp[0][1].in_features != dim + k * (k - 1) // 2:
        raise ExportError(f"top_l.0: reads {tp[0][1].in_features} columns; the dot interaction "
                          f"of {k} vectors gives {dim} + {k * (k - 1) // 2}")
    if top[-1] != 1:
        raise ExportError(f"top_l: ends {top[-1]} wide; Spindle serves one click probability")
    tensors = {}
    for prefix, layers in (("bot_l", bot), ("top_l", tp)):
        for i, (_, lin) in enumerate(layers):
            tensors[f"{prefix}.{2 * i}.weight"] = lin.weight.detach().float().cpu().clone()
            tensors[f"{prefix}.{2 * i}.bias"] = lin.bias.detach().float().cpu().clone()
    for t, e in enumerate(tables):
        tensors[f"emb_l.{t}.weight"] = e.weight.detach().float().cpu().clone()
    desc = {"dense_in": int(bot[0][1].in_features), "bottom": bottom, "top": top,
            "embedding_dim": dim, "table_rows": [int(e.num_embeddings) for e in tables]}
    return desc, tensors


def _permute_top(tensors, desc):
    """top_l.0's pair columns from triu order (i < j) into Spindle's (i > j)."""
    k, dim = len(desc["table_rows"]) + 1, desc["embedding_dim"]
    triu = [(i, j) for i in range(k) for j in range(i + 1, k)]
    spindle = [(i, j) for i in range(k) for j in range(i)]
    pos = {pair: n for n, pair in enumerate(triu)}
    w = tensors["top_l.0.weight"]
    cols = list(range(dim)) + [dim + pos[(j, i)] for i, j in spindle]
    out = dict(tensors)
    out["top_l.0.weight"] = w[:, cols].contiguous()
    return out


def _toml(name, d):
    lines = ["# Written by spindle_client.export.export_torch", "[model]",
             f"name = {json.dumps(name)}", 'arch = "dlrm"', 'weights = "weights.safetensors"']
    for k in ("dense_in", "bottom", "top", "embedding_dim", "table_rows"):
        lines.append(f"{k} = {files.toml_value(d[k])}")
    return "\n".join(lines) + "\n"


def _dlrm_inputs(example_inputs, desc):
    """(dense, [(indices, offsets with B + 1 entries)]) from DLRM_Net's forward arguments."""
    import numpy as np
    if not isinstance(example_inputs, (tuple, list)) or len(example_inputs) != 3:
        raise ExportError("example_inputs: expected (dense_x, offsets, indices), DLRM_Net.forward's "
                          "arguments")
    dense_x, offs, idx = example_inputs
    if not hasattr(dense_x, "detach"):
        raise ExportError("example_inputs[0]: dense_x must be a torch tensor")
    dense = dense_x.detach().float().cpu().numpy()
    if dense.ndim != 2 or dense.shape[1] != desc["dense_in"]:
        raise ExportError(f"example_inputs[0]: dense_x is {list(dense.shape)}, expected "
                          f"[batch, {desc['dense_in']}]")
    tables = len(desc["table_rows"])
    if len(offs) != tables or len(idx) != tables:
        raise ExportError(f"example_inputs: {len(offs)} offset and {len(idx)} index lists for "
                          f"{tables} tables")
    def array(v):
        return np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v).reshape(-1)

    bags = []
    for t in range(tables):
        i, o = array(idx[t]), array(offs[t])
        if not (np.issubdtype(i.dtype, np.integer) and np.issubdtype(o.dtype, np.integer)):
            raise ExportError(f"example_inputs: table {t}'s indices and offsets must be integers")
        i, o = i.astype(np.int64), o.astype(np.int64)
        if i.size and (i.min() < 0 or i.max() >= desc["table_rows"][t]):
            raise ExportError(f"example_inputs[2][{t}]: index {int(i.max() if i.max() >= 0 else i.min())} "
                              f"outside table {t}'s {desc['table_rows'][t]} rows")
        if o.shape[0] != dense.shape[0]:
            raise ExportError(f"example_inputs[1][{t}]: {o.shape[0]} offsets for a batch of "
                              f"{dense.shape[0]} (one per bag, DLRM_Net's lS_o)")
        o = np.append(o, i.shape[0])
        if o[0] != 0 or (np.diff(o) < 0).any():
            raise ExportError(f"example_inputs[1][{t}]: offsets must start at 0 and never "
                              f"decrease (EmbeddingBag's offsets)")
        bags.append((i, o))
    return dense.astype(np.float32), bags


def _run(binary, model_dir, dense, bags):
    import os
    import subprocess
    import tempfile

    import numpy as np
    with tempfile.TemporaryDirectory(prefix="spindle-check-") as tmp:
        np.save(os.path.join(tmp, "dense.npy"), dense)
        for t, (i, o) in enumerate(bags):
            np.save(os.path.join(tmp, f"indices-{t}.npy"), i)
            np.save(os.path.join(tmp, f"offsets-{t}.npy"), o)
        out = os.path.join(tmp, "out")
        r = subprocess.run([binary, "--log-level", "warn", "model", "verify", model_dir,
                            "--rec-inputs", tmp, "--out", out],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise ExportError(f"Spindle could not run the exported DLRM: {r.stderr.strip()[-2000:]}")
        return np.load(os.path.join(out, "output.npy"))
