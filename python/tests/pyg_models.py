"""Small PyG models the exporter tests share. torch is imported when a model is
made: the tests that use them skip first where torch is not installed."""


def one_conv(conv):
    """A model of one message-passing layer, called as conv(x, edge_index)."""
    import torch

    class One(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = conv

        def forward(self, x, edge_index):
            return self.conv1(x, edge_index)
    return One()


def two_sage(hidden, out, head=None):
    """conv1 -> relu -> conv2, SAGEConv((-1, -1)) with lazy widths (as to_hetero
    takes them), then relu -> Linear(-1, head) when `head` is given."""
    import torch
    import torch_geometric.nn as pyg_nn

    class TwoSage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = pyg_nn.SAGEConv((-1, -1), hidden)
            self.conv2 = pyg_nn.SAGEConv((-1, -1), out)
            if head is not None:
                self.lin = pyg_nn.Linear(-1, head)

        def forward(self, x, edge_index):
            x = self.conv2(self.conv1(x, edge_index).relu(), edge_index)
            return self.lin(x.relu()) if head is not None else x
    return TwoSage()
