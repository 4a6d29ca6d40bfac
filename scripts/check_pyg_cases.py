"""PyG users' models as a newcomer writes them (in-place activations, PyG's
examples/gcn.py, GCNConv(improved=True), PyG's model classes, lazy modules, the
attention and multi-hop layers), on Cora
and on a directed graph with self-loops and repeated edges, each exported with
export_pyg(check=(x, edge_index)): prints the largest difference from PyG that the
check measured, or the refusal.

usage: scripts/check_pyg_cases.py CORA_DIR [BUILD_DIR]   (needs torch, torch_geometric)"""
import os, re, sys, warnings, gzip
warnings.filterwarnings("ignore")
import tempfile
import numpy as np, torch, torch.nn.functional as F
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
from torch_geometric.nn import (GCNConv, SAGEConv, GATConv, GATv2Conv, TransformerConv,
                                ResGatedGraphConv, SGConv, TAGConv)
from torch_geometric.nn.models import GCN, GraphSAGE, GAT, GIN
from spindle_client.export import export_pyg, ExportError
B = os.path.join(ROOT, sys.argv[2] if len(sys.argv) > 2 else "build", "apps", "spindle")
D = sys.argv[1]  # the LINQS Cora folder (cora.content.gz, cora.cites)
ids, feats = {}, []
with gzip.open(f"{D}/cora.content.gz", "rt") as f:
    for line in f:
        p = line.split(); ids[p[0]] = len(ids); feats.append([float(v) for v in p[1:-1]])
src, dst = [], []
for line in open(f"{D}/cora.cites"):
    a, b = line.split()
    if a in ids and b in ids: src += [ids[b], ids[a]]; dst += [ids[a], ids[b]]
x = torch.tensor(feats); ei = torch.tensor([src, dst])
# a directed graph with self-loops and repeats
g = torch.Generator().manual_seed(0)
n = 400; dei = torch.randint(0, n, (2, 1438), generator=g)
dei = torch.cat([dei, torch.arange(46).repeat(2, 1), dei[:, :116]], 1); dx = torch.randn(n, 32, generator=g)
class InPlace(torch.nn.Module):
    def __init__(s, i): super().__init__(); s.conv1 = SAGEConv(i, 16); s.conv2 = SAGEConv(16, 7)
    def forward(s, x, ei):
        h = s.conv1(x, ei); h.relu_(); return s.conv2(h, ei)
class ExampleGcn(torch.nn.Module):
    def __init__(s, i): super().__init__(); s.conv1 = GCNConv(i, 16, cached=True); s.conv2 = GCNConv(16, 7, cached=True)
    def forward(s, x, edge_index, edge_weight=None):
        x = F.dropout(x, p=0.5, training=s.training)
        x = s.conv1(x, edge_index, edge_weight).relu()
        x = F.dropout(x, p=0.5, training=s.training)
        return s.conv2(x, edge_index, edge_weight)
class Improved(torch.nn.Module):
    def __init__(s, i): super().__init__(); s.conv1 = GCNConv(i, 16, improved=True); s.conv2 = GCNConv(16, 7, improved=True)
    def forward(s, x, ei): return s.conv2(s.conv1(x, ei).relu(), ei)
class GatEx(torch.nn.Module):
    def __init__(s, i): super().__init__(); s.c1 = GATConv(i, 8, heads=8); s.c2 = GATConv(64, 7, heads=1, concat=False)
    def forward(s, x, ei): return s.c2(F.elu(s.c1(x, ei)), ei)
class Two(torch.nn.Module):  # conv1 -> ELU -> conv2, as PyG's examples stack a layer
    def __init__(s, c1, c2): super().__init__(); s.conv1 = c1; s.conv2 = c2
    def forward(s, x, ei): return s.conv2(F.elu(s.conv1(x, ei)), ei)
OUT = os.path.join(tempfile.mkdtemp(prefix="spindle-cases-"), "m")
cases = [("in-place relu_", InPlace), ("examples/gcn.py", ExampleGcn), ("GCNConv(improved=True)", Improved),
         ("GAT example", GatEx),
         ("models.GCN", lambda i: GCN(i, 16, 2, 7)), ("models.GraphSAGE jk=cat bn", lambda i: GraphSAGE(i, 16, 2, 7, norm="batch_norm", jk="cat")),
         ("models.GAT", lambda i: GAT(i, 8, 2, 7, heads=4)), ("models.GIN", lambda i: GIN(i, 16, 2, 7)),
         ("models.GAT v2", lambda i: GAT(i, 8, 2, 7, v2=True)), ("models.GCN instance_norm", lambda i: GCN(i, 16, 2, 7, norm="instance_norm")),
         ("models.GCN graph_norm", lambda i: GCN(i, 16, 2, 7, norm="graph_norm")),
         ("lazy GraphSAGE(-1)", lambda i: GraphSAGE(-1, 16, 2, 7)),
         ("GATv2Conv heads=4", lambda i: Two(GATv2Conv(i, 8, heads=4), GATv2Conv(32, 7))),
         ("TransformerConv beta", lambda i: Two(TransformerConv(i, 8, heads=2, beta=True), TransformerConv(16, 7))),
         ("ResGatedGraphConv", lambda i: Two(ResGatedGraphConv(i, 16), ResGatedGraphConv(16, 7))),
         ("SGConv K=2", lambda i: SGConv(i, 7, K=2)),
         ("TAGConv K=3", lambda i: Two(TAGConv(i, 16), TAGConv(16, 7)))]
for gname, (gx, gei) in [("Cora", (x, ei)), ("directed+loops+repeats", (dx, dei))]:
    for label, make in cases:
        torch.manual_seed(0); m = make(gx.shape[1])
        try:
            export_pyg(m, OUT, name="nc", check=(gx, gei), spindle=B)
            t = open(os.path.join(OUT, "model.toml")).read()
            d = re.search(r"max_relative_difference = (\S+)", t).group(1)
            print(f"{gname:24s} {label:30s} served: max relative difference {d}")
        except ExportError as e:
            print(f"{gname:24s} {label:30s} refused: {str(e)[:110]}")
