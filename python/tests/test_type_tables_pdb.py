"""A typed model's featureless node type read through the parameter server
(serve --type-table-pdb): the table's rows are loaded into the RocksDB PDB once
and read per batch through the L1 cache, not held by the model. Answers equal
PyG's on the full graph and are bit-identical to the table held in memory; a
second start reuses the loaded rows (through a VDB too). A PDB folder that
cannot be opened, settings without a folder and a table whose rows are not
model.toml's are refused by name."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric.nn")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import spindle_client as sc  # noqa: E402
from serving import start_server  # noqa: E402
from spindle_client.export import export_pyg, save_graph  # noqa: E402
from test_export_hetero_embedding import answers, build, graph  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPINDLE = os.environ.get("SPINDLE_BINARY", os.path.join(ROOT, "build", "apps", "spindle"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(SPINDLE):
        pytest.skip("no spindle binary")
    tmp = tmp_path_factory.mktemp("pdb")
    data = graph()
    save_graph(data, str(tmp / "graph"))
    subprocess.run([SPINDLE, "prepare", "--input", str(tmp / "graph"), "--out", str(tmp / "ds")],
                   check=True, capture_output=True)
    model = build(data)
    export_pyg(model.gnn, str(tmp / "rec"), name="rec", fanouts=[-1, -1], check=data,
               embeddings={"user": model.user_emb}, spindle=SPINDLE)
    return tmp, data, model


def serve(tmp, model_dir, *extra):
    return [SPINDLE, "serve", "--dataset", str(tmp / "ds"), "--model", str(model_dir),
            "--listen", "127.0.0.1:0", "--device", "host", *extra]


def served_answers(argv, data):
    proc, endpoint = start_server(argv)
    try:
        c = sc.Client(endpoint)
        return {t: np.asarray(c.infer_gnn(list(range(data[t].num_nodes)), model="rec",
                                          node_type=t)) for t in ("user", "item")}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_parameter_server_path_answers_as_pyg_and_as_the_table_in_memory(exported):
    tmp, data, model = exported
    want = {t: v.numpy() for t, v in answers(model, data).items()}
    held = served_answers(serve(tmp, tmp / "rec"), data)
    pdb = tmp / "pdb"
    argv = serve(tmp, tmp / "rec", "--type-table-pdb", str(pdb), "--type-table-min-mb", "0")
    first = served_answers(argv, data)
    # The PDB already holds the rows (reused), now with a VDB between L1 and the PDB.
    again = served_answers(argv + ["--type-table-vdb", "hash_map"], data)
    for t, w in want.items():
        np.testing.assert_allclose(first[t], w, rtol=1e-4, atol=1e-4 * np.abs(w).max(),
                                   err_msg=t)
        np.testing.assert_array_equal(first[t], held[t], err_msg=t)
        np.testing.assert_array_equal(again[t], held[t], err_msg=t)
    assert pdb.is_dir()


def test_a_small_table_stays_in_memory_below_the_threshold(exported):
    tmp, _, _ = exported
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb2"),
                             "--workload", "20"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "read from the parameter server, not held" not in r.stderr, r.stderr
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(tmp / "pdb2"),
                             "--type-table-min-mb", "0", "--workload", "20"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "node type 'user': table embedding.user.weight (50 x 8" in r.stderr, r.stderr


def test_a_pdb_folder_that_cannot_be_opened_or_is_not_named_is_refused(exported):
    tmp, _, _ = exported
    bad = tmp / "not_a_folder"
    bad.write_text("a file\n")
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-pdb", str(bad),
                             "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert f"--type-table-pdb {bad}" in r.stderr, r.stderr
    r = subprocess.run(serve(tmp, tmp / "rec", "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "--type-table-pdb DIR serves typed tables: name the folder" in r.stderr, r.stderr


def test_a_table_whose_rows_are_not_model_toml_s_is_refused_by_name(exported):
    tmp, _, _ = exported
    other = tmp / "rec_rows"
    shutil.copytree(tmp / "rec", other)
    toml = other / "model.toml"
    # The edit unchecked (its [verified] table dropped), as a hand-written model would be.
    kept, skipping = [], False
    for line in toml.read_text().splitlines(keepends=True):
        if line.startswith("["):
            skipping = line.strip() == "[verified]"
        if not skipping:
            kept.append(line.replace("embedding_rows = 50", "embedding_rows = 49"))
    toml.write_text("".join(kept))
    r = subprocess.run(serve(tmp, other, "--type-table-pdb", str(tmp / "pdb3"),
                             "--type-table-min-mb", "0"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert ("node type 'user': " in r.stderr and "tensor embedding.user.weight is [50, 8], "
            "model.toml says [49, 8]" in r.stderr), r.stderr
