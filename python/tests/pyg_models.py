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
