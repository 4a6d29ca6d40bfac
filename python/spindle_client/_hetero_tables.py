"""Learnt tables of featureless node types (PyG's torch.nn.Embedding, one row per
node of the type): export_pyg(..., embeddings={"author": model.author_emb}) says
that x_dict["author"] is the table itself, every node's row in id order, as a
full-graph PyG forward passes it. Spindle stores the table with the model and
reads a sampled node's row by its id within its type, instead of the graph's
features."""
from ._verify import ExportError


def embedding_tables(embeddings, node_types, model):
    """{node type: (tensor name, float32 weight [rows, dim])} from embeddings=, each
    an nn.Embedding (its module path names the tensor when it is the model's) or a
    2-D tensor; refused by name when the type is unknown or the lookup would not
    return the stored rows (max_norm renormalises them)."""
    import torch
    if embeddings is None:
        return {}
    if not isinstance(embeddings, dict):
        raise ExportError("embeddings: expected {node type: torch.nn.Embedding}")
    paths = {id(m): p for p, m in model.named_modules() if p}
    out = {}
    for t, table in embeddings.items():
        if t not in node_types:
            raise ExportError(f"embeddings: '{t}' is not a node type of the metadata "
                              f"({', '.join(node_types)})")
        if isinstance(table, torch.nn.Embedding):
            if table.max_norm is not None:
                raise ExportError(f"embeddings['{t}']: nn.Embedding(max_norm=...) renormalises "
                                  f"the rows it returns; Spindle serves the stored rows")
            name = f"{paths[id(table)]}.weight" if id(table) in paths else f"embedding.{t}.weight"
            weight = table.weight
        elif isinstance(table, torch.Tensor) and table.dim() == 2:
            name, weight = f"embedding.{t}.weight", table
        else:
            raise ExportError(f"embeddings['{t}']: expected a torch.nn.Embedding or a 2-D tensor, "
                              f"got {type(table).__name__}")
        if weight.shape[0] < 1 or weight.shape[1] < 1:
            raise ExportError(f"embeddings['{t}']: an empty table {list(weight.shape)}")
        out[t] = (name, weight.detach().float().cpu().contiguous())
    return out


def with_tables(x_dict, tables, data):
    """x_dict with each table as its node type's x; a graph holding another count of
    the type's nodes is refused by name."""
    x = dict(x_dict)
    for t, (_, weight) in tables.items():
        have = data[t].num_nodes if t in data.node_types else None
        if have is not None and have != weight.shape[0]:
            raise ExportError(f"embeddings['{t}'] has {weight.shape[0]} rows; the graph has "
                              f"{have} nodes of type '{t}' (one row per node)")
        x[t] = weight
    return x


def check_widths(tables, widths):
    """The translated model's width for each table's type must be the table's."""
    for t, (_, weight) in tables.items():
        w = widths.get(t)
        if w is not None and w != weight.shape[1]:
            raise ExportError(f"embeddings['{t}'] is {weight.shape[1]} wide; the model reads "
                              f"{w} columns of node type '{t}'")
        widths[t] = int(weight.shape[1])
