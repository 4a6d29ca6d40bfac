"""spindle_client.export.export_torch on DLRMs written in torch: facebookresearch's
DLRM_Net shape is served exactly, the same model with its interaction pairs in
torch.triu_indices order is served exactly (its top layer's columns permuted,
found by the check), and what Spindle would answer differently is refused by
name with nothing written. Needs torch and the spindle binary ($SPINDLE_BINARY)."""
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")

from spindle_client.export import ExportError, export_torch  # noqa: E402

BINARY = os.environ.get("SPINDLE_BINARY")
pytestmark = pytest.mark.skipif(not BINARY, reason="SPINDLE_BINARY is not set (ctest sets it)")


def mlp(widths, sigmoid_last):
    layers = []
    for k in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[k], widths[k + 1]))
        last = k == len(widths) - 2
        layers.append(torch.nn.Sigmoid() if last and sigmoid_last else torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class DlrmNet(torch.nn.Module):
    """DLRM_Net's structure: bags summed, bottom MLP, dot interaction (i > j), top MLP."""

    def __init__(self, dense_in=5, dim=4, rows=(20, 30, 10), bottom_relu=True, **emb):
        super().__init__()
        self.emb_l = torch.nn.ModuleList([torch.nn.EmbeddingBag(r, dim, mode="sum", **emb)
                                          for r in rows])
        self.bot_l = mlp([dense_in, 8, dim], sigmoid_last=False)
        if not bottom_relu:
            self.bot_l = torch.nn.Sequential(*list(self.bot_l)[:-1], torch.nn.Identity())
        k = len(rows) + 1
        self.top_l = mlp([dim + k * (k - 1) // 2, 6, 1], sigmoid_last=True)
        self.arch_interaction_op, self.arch_interaction_itself = "dot", False

    def pairs(self, k):
        return [i for i in range(k) for j in range(i)], [j for i in range(k) for j in range(i)]

    def forward(self, dense_x, offsets, indices):
        x = self.bot_l(dense_x)
        ly = [e(indices[t], offsets[t]) for t, e in enumerate(self.emb_l)]
        t = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, t.transpose(1, 2))
        li, lj = self.pairs(t.shape[1])
        return self.top_l(torch.cat([x, z[:, li, lj]], dim=1))


class TriuDlrm(DlrmNet):
    def pairs(self, k):
        iu = torch.triu_indices(k, k, offset=1)
        return iu[0].tolist(), iu[1].tolist()


class ScaledDlrm(DlrmNet):  # an interaction Spindle does not compute
    def forward(self, dense_x, offsets, indices):
        return super().forward(dense_x * 2, offsets, indices)


def inputs(batch=16, rows=(20, 30, 10), seed=0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(batch, 5, generator=g)
    offsets, indices = [], []
    for r in rows:
        lengths = torch.randint(1, 4, (batch,), generator=g)
        offsets.append(torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]))
        indices.append(torch.randint(0, r, (int(lengths.sum()),), generator=g))
    return dense, offsets, indices


@pytest.mark.parametrize("cls,order", [(DlrmNet, "DLRM_Net order"),
                                       (TriuDlrm, "torch.triu_indices order")])
def test_a_dlrm_is_served_exactly_in_either_pair_order(tmp_path, cls, order):
    torch.manual_seed(1)
    out = tmp_path / "d"
    assert export_torch(cls(), str(out), name="ctr", example_inputs=inputs(), spindle=BINARY) == "dlrm"
    text = (out / "model.toml").read_text()
    assert 'arch = "dlrm"' in text and order in text and "checked = true" in text
    info = subprocess.run([BINARY, "model", "info", str(out)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr


def test_answers_spindle_would_give_differently_are_refused(tmp_path):
    torch.manual_seed(1)
    with pytest.raises(ExportError, match="differ from ScaledDlrm's on your example_inputs"):
        export_torch(ScaledDlrm(), str(tmp_path / "d"), name="ctr", example_inputs=inputs(),
                     spindle=BINARY)
    assert not (tmp_path / "d").exists()


def test_a_missing_bottom_relu_is_refused_by_name(tmp_path):
    with pytest.raises(ExportError, match="bot_l.3: Identity where Spindle's DLRM"):
        export_torch(DlrmNet(bottom_relu=False), str(tmp_path / "d"), name="ctr",
                     example_inputs=inputs(), spindle=BINARY)


def test_other_models_are_refused_by_name(tmp_path):
    with pytest.raises(ExportError, match="recognises DLRM_Net-shaped models"):
        export_torch(torch.nn.Linear(3, 1), str(tmp_path / "d"), name="x",
                     example_inputs=inputs(), spindle=BINARY)


@pytest.mark.parametrize("make,message", [
    (lambda: DlrmNet(max_norm=1.0), r"emb_l.0: EmbeddingBag\(max_norm=1.0\) is not served"),
    (lambda: DlrmNet(padding_idx=0), r"emb_l.0: EmbeddingBag\(padding_idx=0\) is not served"),
])
def test_embedding_options_spindle_does_not_apply_are_refused(tmp_path, make, message):
    with pytest.raises(ExportError, match=message):
        export_torch(make(), str(tmp_path / "d"), name="ctr", example_inputs=inputs(),
                     spindle=BINARY)


def test_a_score_clamp_is_refused(tmp_path):
    m = DlrmNet()
    m.loss_threshold = 0.45
    with pytest.raises(ExportError, match="loss_threshold=0.45 clamps the scores"):
        export_torch(m, str(tmp_path / "d"), name="ctr", example_inputs=inputs(), spindle=BINARY)


def test_bad_example_inputs_are_refused_by_name(tmp_path):
    dense, offsets, indices = inputs()
    indices[1] = indices[1] + 100  # past table 1's 30 rows
    with pytest.raises(ExportError, match=r"example_inputs\[2\]\[1\]: index .* outside table 1"):
        export_torch(DlrmNet(), str(tmp_path / "d"), name="ctr",
                     example_inputs=(dense, offsets, indices), spindle=BINARY)
