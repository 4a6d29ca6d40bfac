"""The asyncio client: one connection per AsyncClient (pycapnp 2 runs RPC on asyncio)."""
import asyncio
import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import capnp

_SCHEMA = capnp.load(os.path.join(os.path.dirname(__file__), "spindle.capnp"))


def _status_name(status) -> str:
    """The server's status as the CLI, the logs and /metrics spell it: snake case
    ("bad_request", "deadline_exceeded"), not Cap'n Proto's enum names."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", str(status)).lower()



# The keys a request of infer_gnn_batch may have.
_BATCH_KEYS = {"model", "seeds", "pairs", "sampler_seed", "deadline_us", "node_type", "outputs",
               "min_version", "ids"}

class SpindleError(Exception):
    """A call the server answered with a status other than ok (status and message kept)."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass
class GnnResult:
    status: str
    message: str
    outputs: List[List[float]] = field(default_factory=list)  # one row per seed
    server_us: int = 0
    version: int = 0  # the graph version the answer was computed on (schema 6)
    named: Dict[str, List[List[float]]] = field(default_factory=dict)  # outputs= asked for


@dataclass
class RecResult:
    status: str
    message: str
    scores: List[float] = field(default_factory=list)
    server_us: int = 0


@dataclass
class UpdateResult:
    version: int          # the graph's version after the batch
    new_ids: list         # the added nodes' ids, in order (numpy int64 from Client)
    nodes: int = 0        # node ids in use (removed ones included)


def _gnn_result(reply, names=()) -> GnnResult:
    flat = list(reply.outputs)
    widths = list(reply.widths)
    if names and widths:  # named outputs: each one's rows, one after another
        n = len(flat) // max(1, sum(widths))
        named, at = {}, 0
        for name, w in zip(names, widths):
            named[name] = [flat[at + i * w:at + (i + 1) * w] for i in range(n)]
            at += n * w
        return GnnResult(_status_name(reply.status), reply.message, [], reply.serverUs,
                         reply.graphVersion, named)
    w = reply.width
    rows = [flat[i:i + w] for i in range(0, len(flat), w)] if w else []
    return GnnResult(_status_name(reply.status), reply.message, rows, reply.serverUs,
                     reply.graphVersion)


def _check(results):
    status = _status_name(results.status)
    if status != "ok":
        raise SpindleError(status, results.message)
    return results


class AsyncClient:
    """A connection to `spindle serve`. Create with `await AsyncClient.open(...)` inside a
    running kj loop (see `run`, `start` and `connect`); `spindle_client.Client` is the
    blocking form."""

    def __init__(self, client, root, token: str):
        self._client = client
        self._inference = root.inference().inference
        self._admin = root.admin().admin
        self._token = token

    @classmethod
    async def open(cls, endpoint: str, token: str = "", token_file: Optional[str] = None) -> "AsyncClient":
        host, _, port = endpoint.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"endpoint {endpoint!r}: expected HOST:PORT")
        if token_file:
            with open(token_file) as f:
                token = f.readline().strip()
        stream = await capnp.AsyncIoStream.create_connection(host=host, port=int(port))
        client = capnp.TwoPartyClient(stream)
        root = client.bootstrap().cast_as(_SCHEMA.Spindle)
        self = cls(client, root, token)
        version = (await self._inference.version()).version
        if version < 1:
            raise SpindleError("unsupported", f"server speaks schema version {version}")
        return self

    async def ready(self) -> bool:
        """The server's models are loaded and warmed (as KServe's /v2/health/ready; schema 4)."""
        return bool((await self._inference.version()).ready)

    async def infer_gnn(self, model: str, seeds: Sequence[int] = (), sampler_seed: int = 0,
                        deadline_us: int = 0, check: bool = True,
                        ids: Sequence[str] = (), min_version: int = 0,
                        outputs: Sequence[str] = (), node_type: str = "") -> GnnResult:
        """seeds: dataset rows; or ids: the nodes as the input data names them
        (e.g. CiteSeer's "100157"), resolved by the server. node_type: on a typed
        graph, the seeds' node type (seeds numbered within it). min_version: the graph
        version the answer must include (a server behind it answers unavailable).
        outputs: the model's values to answer instead of its output (op names of
        an exported model, "conv1"; "output" is its output): result.named maps
        each to its rows."""
        if int(min_version) < 0:
            raise ValueError(f"min_version {min_version}: a graph version is >= 0")
        if isinstance(outputs, str):
            raise ValueError(f"outputs={outputs!r}: give a list of names")
        r = await self._inference.inferGnn(request={
            "model": model, "seeds": [int(s) for s in seeds], "samplerSeed": sampler_seed,
            "deadlineUs": deadline_us, "seedIds": [str(i) for i in ids],
            "minVersion": int(min_version), "outputs": [str(o) for o in outputs],
            "nodeType": "" if node_type is None else str(node_type)})
        result = _gnn_result(r.reply, list(outputs))
        if check and result.status != "ok":
            raise SpindleError(result.status, result.message)
        return result

    async def infer_links(self, model: str, pairs: Sequence[Sequence[int]] = (),
                          sampler_seed: int = 0, deadline_us: int = 0, check: bool = True,
                          min_version: int = 0,
                          ids: Sequence[Sequence[str]] = ()) -> GnnResult:
        """Scores of node pairs [(u, v), ...] (dataset rows; or `ids`, the data's
        own node ids, resolved by the server) from a model exported with
        task="link": result.outputs holds one [score] row per pair."""
        if len(pairs) and len(ids):
            raise ValueError("give pairs or ids, not both")
        flat, names = [], []
        for i, p in enumerate(ids):
            if len(p) != 2:
                raise ValueError(f"ids[{i}] has {len(p)} ids; each pair is (u, v)")
            names += [str(p[0]), str(p[1])]
        for i, p in enumerate(pairs):
            if len(p) != 2:
                raise ValueError(f"pairs[{i}] has {len(p)} ids; each pair is (u, v)")
            if any(isinstance(e, float) or not float(e).is_integer() for e in p):
                raise ValueError(f"pairs[{i}] = {tuple(p)}: node ids are integers")
            flat += [int(p[0]), int(p[1])]
        r = await self._inference.inferGnn(request={
            "model": model, "seeds": flat, "samplerSeed": sampler_seed,
            "deadlineUs": deadline_us, "minVersion": int(min_version), "pairs": True,
            "seedIds": names})
        result = _gnn_result(r.reply)
        if check and result.status != "ok":
            raise SpindleError(result.status, result.message)
        return result

    async def infer_gnn_batch(self, requests: Sequence[dict]) -> List[GnnResult]:
        """requests: dicts with model and seeds (or pairs: [(u, v), ...] for a link
        model), and optionally sampler_seed, deadline_us, node_type, outputs,
        min_version, ids; any other key is refused by name. Each result has its
        own status: one bad request never fails the others."""
        wire, names = [], []
        for i, q in enumerate(requests):
            unknown = sorted(set(q) - _BATCH_KEYS)
            if unknown:
                raise ValueError(f"requests[{i}]: unknown key {unknown[0]!r} "
                                 f"(known: {', '.join(sorted(_BATCH_KEYS))})")
            if "seeds" in q and "pairs" in q:
                raise ValueError(f"requests[{i}]: give seeds or pairs, not both")
            outputs = q.get("outputs", ())
            if isinstance(outputs, str):
                raise ValueError(f"requests[{i}]: outputs={outputs!r}: give a list of names")
            pairs = [[int(e) for e in p] for p in q.get("pairs", ())]
            if any(len(p) != 2 for p in pairs):
                raise ValueError(f"requests[{i}]: each pair is (u, v)")
            wire.append({"model": q["model"],
                         "seeds": [e for p in pairs for e in p] or [int(s) for s in q.get("seeds", ())],
                         "pairs": bool(pairs), "samplerSeed": q.get("sampler_seed", 0),
                         "deadlineUs": q.get("deadline_us", 0),
                         "nodeType": str(q.get("node_type") or ""),
                         "outputs": [str(o) for o in outputs],
                         "minVersion": int(q.get("min_version", 0)),
                         "seedIds": [str(x) for x in q.get("ids", ())]})
            names.append(list(outputs))
        r = await self._inference.inferGnnBatch(requests=wire)
        if len(r.replies) != len(wire):  # refused whole (over the server's limits): one reply
            first = _gnn_result(r.replies[0]) if len(r.replies) else None
            raise SpindleError(first.status if first else "bad_request",
                               first.message if first else "no replies")
        return [_gnn_result(x, n) for x, n in zip(r.replies, names)]

    async def infer_rec(self, model: str, dense: Sequence[Sequence[float]],
                        sparse: Sequence[Sequence[Sequence[int]]], deadline_us: int = 0,
                        check: bool = True) -> RecResult:
        """dense: one row per sample; sparse: per sample, then per table, the keys
        of its bag (as a batch is, and as `spindle client rec --input` takes it)."""
        batch = len(dense)
        if len(sparse) != batch:
            raise ValueError(
                f"sparse has {len(sparse)} entries for {batch} samples: give one per sample, "
                "each a list of bags (one per table); the per-table nesting is not accepted")
        tables = len(sparse[0]) if batch else 0
        for i, sample in enumerate(sparse):
            if len(sample) != tables:
                raise ValueError(f"sparse[{i}] has {len(sample)} bags, sparse[0] has {tables}: "
                                 "every sample has one bag per table")
        bags = []
        for t in range(tables):
            offsets, indices = [0], []
            for sample in sparse:
                indices.extend(int(k) for k in sample[t])
                offsets.append(len(indices))
            bags.append({"indices": indices, "offsets": offsets})
        r = await self._inference.inferRec(request={
            "model": model, "batch": batch, "dense": [float(x) for row in dense for x in row],
            "sparse": bags, "deadlineUs": deadline_us})
        result = RecResult(_status_name(r.reply.status), r.reply.message, list(r.reply.scores), r.reply.serverUs)
        if check and result.status != "ok":
            raise SpindleError(result.status, result.message)
        return result

    async def stats(self) -> dict:
        return json.loads(_check(await self._admin.stats(token=self._token)).json)

    async def models(self) -> List[dict]:
        r = _check(await self._admin.listModels(token=self._token))
        return [{"name": m.name, "kind": m.kind, "arch": m.arch, "input_width": m.inputWidth,
                 "output_width": m.outputWidth} for m in r.models]

    async def update_graph(self, update: dict) -> "UpdateResult":
        """Applies one batch of graph changes (GraphUpdate's fields: addSrc, addDst,
        addWeight, removeSrc, removeDst, addNodes, addNodeFeatures, setIds, setRows,
        removeNodes), whole or not at all."""
        r = _check(await self._admin.updateGraph(token=self._token, update=update))
        return UpdateResult(int(r.version), [int(i) for i in r.newIds], int(r.nodes))

    async def graph_version(self) -> "UpdateResult":
        r = _check(await self._admin.graphVersion(token=self._token))
        return UpdateResult(int(r.version), [], int(r.nodes))

    async def close(self) -> None:
        """Ends the connection (the server sees it closed)."""
        self._client.close()

    async def tunables(self, model: str) -> dict:
        r = _check(await self._admin.getTunables(token=self._token, model=model))
        return {t.name: t.value for t in r.tunables}

    async def set_tunable(self, model: str, name: str, value) -> None:
        # A request builder: pycapnp's keyword form reserves the parameter name `name`.
        req = self._admin.setTunable_request()
        req.token, req.model, req.name, req.value = self._token, model, name, str(value)
        _check(await req.send())

    async def load_model(self, name: str, path: str) -> None:
        """Serves the model directory `path` (on the server) as `name`: a GNN, or a
        recommendation model (dlrm, ncf, wnd, din) with its own worker pool (schema 3)."""
        req = self._admin.loadModel_request()
        req.token, req.name, req.path = self._token, name, path
        _check(await req.send())

    async def unload_model(self, name: str) -> None:
        """Stops serving `name` once its calls in flight finished (schema 3)."""
        req = self._admin.unloadModel_request()
        req.token, req.name = self._token, name
        _check(await req.send())


@contextlib.asynccontextmanager
async def connect(endpoint: str, token: str = "", token_file: Optional[str] = None):
    """`async with connect(...) as c:` inside `run`/`start`."""
    yield await AsyncClient.open(endpoint, token, token_file)


def run(coro):
    """Runs `coro` with the kj event loop pycapnp needs (scripts)."""
    return asyncio.run(capnp.run(coro))


async def start(coro):
    """Awaitable form of `run` for code already inside asyncio (notebooks)."""
    return await capnp.run(coro)
