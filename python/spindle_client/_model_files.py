"""Writing a Spindle model directory (model.toml + weights.safetensors) the way
the C++ loader reads it: staged in a folder beside the target, checked there,
then moved into place whole, so a refused export leaves nothing behind."""
import json
import os
import subprocess
import shutil
import struct
import tempfile
import zlib


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def model_toml(name, in_width, out_width, fanouts, ops, producer="export_pyg", task="node",
               decoder="dot", decoder_ops=(), pair_types=None):
    lines = [f"# Written by spindle_client.export.{producer}", "[model]",
             f"name = {json.dumps(name)}", 'arch = "stack"', 'weights = "weights.safetensors"',
             f"in = {in_width}", f"out = {out_width}"]
    if task != "node":
        lines += [f"task = {json.dumps(task)}", f"decoder = {json.dumps(decoder)}"]
    if pair_types:
        lines.append(f"pair_types = {toml_value(list(pair_types))}")
    if fanouts is not None:
        lines.append(f"fanouts = {toml_value(fanouts)}")
    for table, chain in (("op", ops), ("decoder_op", decoder_ops)):
        for op in chain:
            lines.append("")
            lines.append(f"[[{table}]]")
            for k, v in op.items():
                lines.append(f"{k} = {toml_value(v)}")
    return "\n".join(lines) + "\n"


def verified_table(record):
    """model.toml's [verified] table: how (and whether) the export was checked."""
    lines = ["", "[verified]"]
    for k, v in record.items():
        lines.append(f"{k} = {toml_value(v)}")
    return "\n".join(lines) + "\n"


def description_digest(spindle, model_dir):
    """What `spindle model info` gives as the description's digest."""
    from ._verify import ExportError
    r = subprocess.run([spindle, "--log-level", "warn", "model", "info", model_dir],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("description_xxh3_64: "):
            return line.split(": ", 1)[1].strip()
    raise ExportError(f"{spindle} model info {model_dir}: no description digest "
                      f"(exit {r.returncode}: {r.stderr.strip()[-300:]})")


def safetensors_bytes(tensors, producer="spindle export"):
    header, blobs, offset = {"__metadata__": {"format": "pt", "producer": producer}}, [], 0
    for name, t in tensors.items():
        values = t.contiguous().reshape(-1).tolist()
        data = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def check_out_dir(out_dir):
    """Refuses, before any work, an out_dir that cannot become a model folder."""
    from ._verify import ExportError
    if not isinstance(out_dir, (str, os.PathLike)) or not str(out_dir):
        raise ExportError(f"out_dir={out_dir!r}: give the model folder's path")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ExportError(f"out_dir {out_dir}: exists and is not a folder")


class Staging:
    """A folder beside out_dir holding the files until commit(); removed on exit."""

    def __init__(self, out_dir):
        self.out_dir = os.path.abspath(out_dir)
        parent = os.path.dirname(self.out_dir)
        os.makedirs(parent, exist_ok=True)
        self.path = tempfile.mkdtemp(prefix=".export-", dir=parent)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)

    def write(self, toml_text, tensors):
        weights = safetensors_bytes(tensors)
        with open(os.path.join(self.path, "weights.safetensors"), "wb") as f:
            f.write(weights)
        # The loader refuses weights that no longer match (damaged, replaced).
        crc = f'weights_crc32 = "{zlib.crc32(weights) & 0xffffffff:08x}"\n'
        self.toml = toml_text.replace('weights = "weights.safetensors"\n',
                                      'weights = "weights.safetensors"\n' + crc, 1)
        self._write_toml()

    def append_toml(self, text):
        self.toml += text
        self._write_toml()

    def append_verified(self, record, spindle):
        """Appends the [verified] table; a checked record gets the digest of what
        the model computes (`spindle model info`'s description_xxh3_64), so a
        later hand edit of it is refused on load instead of served as checked."""
        if record.get("checked"):
            from ._verify import spindle_binary
            record = dict(record)
            record["description_xxh3_64"] = description_digest(spindle_binary(spindle),
                                                               self.path)
        self.append_toml(verified_table(record))

    def _write_toml(self):
        with open(os.path.join(self.path, "model.toml"), "w") as f:
            f.write(self.toml)

    def commit(self):
        os.makedirs(self.out_dir, exist_ok=True)
        for fname in ("weights.safetensors", "model.toml"):
            os.replace(os.path.join(self.path, fname), os.path.join(self.out_dir, fname))


class EvalMode:
    """Every module in eval mode inside the block, each restored to its own mode after."""

    def __init__(self, modules):
        self.modes = [(m, m.training) for m in modules]

    def __enter__(self):
        for m, _ in self.modes:
            m.eval()
        return self

    def __exit__(self, *exc):
        for m, training in self.modes:
            m.training = training
