"""The blocking client: plain method calls that return numpy arrays, for
scripts and notebooks that do not use asyncio. Every Client of a process runs
its asyncio client on one shared background thread (pycapnp allows one kj
event loop per process), so Clients may be used from several threads at once.

    from spindle_client import Client
    with Client("127.0.0.1:7400", model="sage") as c:
        out = c.infer_gnn([1, 2, 3])        # numpy float32 array [3, width]

Several doors (a cluster's ranks, each started with --listen) spread the calls:
Client("10.0.0.1:7400,10.0.0.2:7400") or a list connects to every door that
accepts and sends calls round-robin. A call whose door is down (its connection
refused or broken) is sent once more, to another door; a refusal of the request
itself (bad input, overloaded) is raised as it is. A door that went down is
tried again after `retry_after` seconds (doubling while it stays down, up to
30 s) and takes calls again once it answers (see _doors.py).
"""
import asyncio
import atexit
import threading
from typing import Optional, Sequence

import capnp
import numpy as np

from . import _typed_updates
from ._doors import DoorDown, DoorSet
from .client import AsyncClient, SpindleError, UpdateResult


def _door_down(e: Exception) -> bool:
    """Whether pycapnp's or the socket's error `e` says the connection is gone."""
    return isinstance(e, OSError) or "DISCONNECTED" in str(getattr(e, "type", ""))


class GnnOutputs(np.ndarray):
    """A GNN answer: float32 [seeds, width], with `.version`, the graph version it
    was computed on (0 on a graph never updated)."""

    version: int = 0

    def __array_finalize__(self, obj):
        self.version = getattr(obj, "version", 0)


class _Loop:
    """The background thread running pycapnp's kj event loop for every Client."""

    _lock = threading.Lock()
    _instance: Optional["_Loop"] = None

    @classmethod
    def get(cls) -> "_Loop":
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def __init__(self):
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        started = threading.Event()

        async def main():
            self.loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            started.set()
            await self._stop.wait()  # until shutdown(): at the latest, at interpreter exit
            for key in list(self.clients):
                try:
                    await self.close(key)
                except Exception:  # a connection already gone: nothing left to close
                    pass

        self.thread = threading.Thread(target=lambda: asyncio.run(capnp.run(main())),
                                       name="spindle-client", daemon=True)
        self.thread.start()
        started.wait()

    def shutdown(self) -> None:
        """Closes every connection left open and ends the loop's thread. Runs at
        interpreter exit: a kj loop still running while Python tears its threads
        down aborts the process ("FATAL: exception not rethrown")."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
            self.thread.join(timeout=10)

    @classmethod
    def _at_exit(cls) -> None:
        with cls._lock:
            instance = cls._instance
        if instance is not None:
            instance.shutdown()

    def call(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # The AsyncClients live here and are only touched on the loop's thread: a
    # pycapnp object freed on another thread aborts the process.
    clients: dict = {}

    async def open(self, endpoint, token, token_file) -> int:
        c = await AsyncClient.open(endpoint, token, token_file)
        key = id(c)
        self.clients[key] = c
        return key

    async def run(self, key: int, fn):
        c = self.clients.get(key)
        if c is None:  # closed since the door was picked (it went down)
            raise DoorDown("the connection was closed")
        try:
            return await fn(c)
        except (SpindleError, ValueError, TypeError) as e:
            fresh = SpindleError(e.status, e.message) if isinstance(e, SpindleError) else type(e)(str(e))
        except Exception as e:  # pycapnp's errors: a dropped connection, or the server's failure
            fresh = DoorDown(str(e)) if _door_down(e) else SpindleError("unavailable", str(e))
        # Raised outside the handler: the caller's thread gets an exception that
        # holds none of this thread's frames (nor the capnp replies in them).
        raise fresh

    async def close(self, key: int) -> None:
        c = self.clients.pop(key, None)
        if c is not None:
            await c.close()


atexit.register(_Loop._at_exit)


class Client:
    """A blocking connection to `spindle serve`, or to several doors of a cluster
    ("HOST:PORT,HOST:PORT" or a list: calls round-robin over those that are up).
    `model` is the default model of infer calls; `timeout` (seconds) bounds every
    call; `retry_after` (seconds) is how long a door that went down waits before
    it is tried again (doubling while it stays down, up to 30 s). Calls that
    change the server (update_graph, load/unload, set_tunable) are never sent
    twice. Thread-safe."""

    def __init__(self, endpoint, model: str = "", token: str = "",
                 token_file: Optional[str] = None, timeout: float = 60.0,
                 retry_after: float = 1.0):
        self.model = model
        self.timeout = timeout
        self._runner = _Loop.get()
        endpoints = endpoint.split(",") if isinstance(endpoint, str) else list(endpoint)
        endpoints = [e.strip() for e in endpoints if e.strip()]
        if not endpoints:
            raise ValueError("endpoint: no HOST:PORT given")
        def open_door(e: str, wait: float = timeout) -> int:
            try:
                return self._runner.call(self._runner.open(e, token, token_file), wait)
            except TimeoutError:
                raise TimeoutError(f"{e}: no connection after {wait} s") from None

        # Reopening a door that went down waits at most 5 s for it.
        self._doors = DoorSet(endpoints, lambda e: open_door(e, min(timeout, 5.0)),
                              lambda key: self._runner.call(self._runner.close(key), timeout),
                              retry_after)
        errors = self._doors.connect_all(open_door)
        if not self._doors.up():
            raise SpindleError("unavailable", "no door answered: " + "; ".join(errors))

    @property
    def endpoints(self) -> list:
        """The doors this client sends calls to now (those that are up)."""
        return self._doors.up()

    def _call(self, fn, retry: bool = True):
        """fn(AsyncClient) -> coroutine, run on the loop's thread, on the next door
        that is up. When the door is down (its connection broke), the door is left
        until its back-off passes and, with `retry`, the call is sent once more, to
        another door; a refusal of the request is raised as it is."""
        endpoint, key = self._doors.pick()
        try:
            return self._runner.call(self._runner.run(key, fn), self.timeout)
        except DoorDown:
            self._doors.mark_down(endpoint, key)
            if not retry:
                raise
        endpoint, key = self._doors.pick(avoid=endpoint)
        try:
            return self._runner.call(self._runner.run(key, fn), self.timeout)
        except DoorDown:
            self._doors.mark_down(endpoint, key)
            raise

    def _model(self, model: Optional[str]) -> str:
        name = model or self.model
        if not name:
            raise ValueError("no model: pass model= here or to Client(...)")
        return name

    def ready(self) -> bool:
        """The server's models are loaded and warmed."""
        return self._call(lambda c: c.ready())

    def infer_gnn(self, seeds: Sequence[int] = (), model: Optional[str] = None,
                  sampler_seed: int = 0, deadline_us: int = 0,
                  ids: Sequence[str] = (), min_version: int = 0,
                  outputs: Optional[Sequence[str]] = None, node_type: str = ""):
        """Outputs of `seeds` (dataset rows) or `ids` (the data's own node ids) as a
        float32 array [n, width] whose `.version` is the graph version it was
        computed on; `min_version`: the version it must include (see update_graph).
        outputs: the model's values by name instead (op names of an exported
        model, e.g. ["conv1", "output"]): a dict name -> float32 [n, width].
        node_type: a typed graph's node type of the seeds ("paper"), the seeds
        numbered within it (HeteroData's ids). Raises SpindleError when the server refuses."""
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        names = [] if outputs is None else list(outputs)
        if outputs is not None and (isinstance(outputs, str) or not names):
            raise ValueError(f"outputs={outputs!r}: give a non-empty list of names")
        r = self._call(lambda c: c.infer_gnn(self._model(model), seeds.tolist(), sampler_seed,
                                              deadline_us, True, [str(i) for i in ids],
                                              min_version, names,
                                              "" if node_type is None else str(node_type)))
        if names:
            return {k: np.asarray(v, dtype=np.float32).reshape(len(v), -1)
                    for k, v in r.named.items()}
        out = np.asarray(r.outputs, dtype=np.float32).reshape(len(r.outputs), -1).view(GnnOutputs)
        out.version = r.version
        return out

    def infer_links(self, pairs=None, model: Optional[str] = None, sampler_seed: int = 0,
                    deadline_us: int = 0, min_version: int = 0, ids=None) -> "GnnOutputs":
        """Scores of node pairs (int array [k, 2], rows u, v; or `ids`, [k, 2] of the
        data's own node ids) from a model exported with task="link" (its decoder
        over both ends' embeddings), as float32 [k] with `.version`. Raises
        SpindleError when the server refuses."""
        if (pairs is None) == (ids is None):
            raise ValueError("give pairs or ids (one of them)")
        rows, names = [], []
        if ids is not None:
            names = [[str(a) for a in p] for p in ids]
        else:
            given = np.asarray(pairs)
            if given.size and given.dtype.kind not in "iu":
                raise ValueError(f"pairs hold {given.dtype} values; node ids are integers")
            if given.ndim != 2 or given.shape[1] != 2:
                raise ValueError(f"pairs has shape {list(given.shape)}; expected [k, 2]")
            rows = given.astype(np.int64).tolist()
        r = self._call(lambda c: c.infer_links(self._model(model), rows, sampler_seed,
                                                deadline_us, True, min_version, names))
        out = np.asarray([row[0] for row in r.outputs], dtype=np.float32).view(GnnOutputs)
        out.version = r.version
        return out

    def infer_gnn_batch(self, requests):
        """Several GNN calls in one round trip: `requests` as AsyncClient.infer_gnn_batch
        takes them (dicts with model, seeds or pairs, and optionally sampler_seed,
        deadline_us, node_type, outputs, min_version, ids; model defaults to this
        client's). Returns one GnnResult per request, each with its own status (a
        bad request never fails the others)."""
        reqs = [dict(q, model=self._model(q.get("model"))) for q in requests]
        return self._call(lambda c: c.infer_gnn_batch(reqs))

    def update_graph(self, *, add_edges=None, remove_edges=None, add_nodes=None,
                     set_features=None, remove_nodes=None) -> UpdateResult:
        """Applies one batch of changes to the served graph, whole or not at all
        (needs the admin token and a server started with --graph-updates).
        add_edges / remove_edges: (src, dst) int64 arrays (add_edges may carry a
        third array, the new edges' float32 weights, on a weighted graph); add_nodes: float32
        [n, width] feature rows of new nodes (their ids come back in `new_ids`,
        numpy int64); set_features: (ids, rows); remove_nodes: int64 array. Every
        call made after this returns sees the change.
        On a typed graph every field is a dict keyed by type, ids local to it, as
        HeteroData holds them: add_edges={("user", "pays", "merchant"): (src, dst)},
        add_nodes={"tx": rows} (a count for a featureless type), set_features=
        {"user": (ids, rows)}, remove_nodes={"user": ids}; rows have the type's
        width, and `new_ids` is {node type: local ids}."""
        if _typed_updates.is_typed(add_edges=add_edges, remove_edges=remove_edges,
                                   add_nodes=add_nodes, set_features=set_features,
                                   remove_nodes=remove_nodes):
            u, added = _typed_updates.typed_update(add_edges, remove_edges, add_nodes,
                                                   set_features, remove_nodes)
            r = self._call(lambda c: c.update_graph(u), retry=False)
            r.new_ids = _typed_updates.new_ids_by_type(r.new_ids, added)
            return r
        u = {}
        for name, pair in (("add", add_edges), ("remove", remove_edges)):
            if pair is not None:
                if len(pair) not in ((2, 3) if name == "add" else (2,)):
                    raise ValueError(f"{name}_edges: expected (src, dst)"
                                     + (" or (src, dst, weight)" if name == "add" else ""))
                src, dst = (np.asarray(a, dtype=np.int64).reshape(-1) for a in pair[:2])
                u[name + "Src"], u[name + "Dst"] = src.tolist(), dst.tolist()
                if len(pair) == 3:
                    u["addWeight"] = np.asarray(pair[2], dtype=np.float32).reshape(-1).tolist()
        if add_nodes is not None:
            rows = np.asarray(add_nodes, dtype=np.float32)
            if rows.ndim != 2:
                raise ValueError(f"add_nodes must be [n, width] feature rows, got shape {rows.shape}")
            u["addNodes"], u["addNodeFeatures"] = rows.shape[0], rows.reshape(-1).tolist()
        if set_features is not None:
            ids, rows = set_features
            u["setIds"] = np.asarray(ids, dtype=np.int64).reshape(-1).tolist()
            u["setRows"] = np.asarray(rows, dtype=np.float32).reshape(-1).tolist()
        if remove_nodes is not None:
            u["removeNodes"] = np.asarray(remove_nodes, dtype=np.int64).reshape(-1).tolist()
        # Not sent again: a broken connection may have come after the change was applied.
        r = self._call(lambda c: c.update_graph(u), retry=False)
        r.new_ids = np.asarray(r.new_ids, dtype=np.int64)
        return r

    def graph_version(self) -> int:
        """The served graph's current version (0: never updated)."""
        return self._call(lambda c: c.graph_version()).version

    def infer_rec(self, dense, sparse: Sequence[Sequence[Sequence[int]]],
                  model: Optional[str] = None, deadline_us: int = 0) -> np.ndarray:
        """Click probabilities of a recommendation batch: `dense` [batch, dense_in],
        `sparse` per sample, then per table, the keys of its bag. float32 array [batch]."""
        dense = np.asarray(dense, dtype=np.float32)
        if dense.ndim != 2:
            raise ValueError(f"dense must be [batch, features], got shape {dense.shape}")
        r = self._call(lambda c: c.infer_rec(self._model(model), dense.tolist(), sparse,
                                              deadline_us))
        return np.asarray(r.scores, dtype=np.float32)

    def stats(self) -> dict:
        return self._call(lambda c: c.stats())

    def models(self) -> list:
        return self._call(lambda c: c.models())

    def tunables(self, model: Optional[str] = None) -> dict:
        return self._call(lambda c: c.tunables(self._model(model)))

    def set_tunable(self, name: str, value, model: Optional[str] = None) -> None:
        self._call(lambda c: c.set_tunable(self._model(model), name, value), retry=False)

    def load_model(self, name: str, path: str) -> None:
        """Serves the model directory `path` (on the server) as `name`: a GNN, or a
        recommendation model (dlrm, ncf, wnd, din) with its own worker pool."""
        self._call(lambda c: c.load_model(name, path), retry=False)

    def unload_model(self, name: str) -> None:
        """Stops serving `name` once its calls in flight have finished."""
        self._call(lambda c: c.unload_model(name), retry=False)

    def close(self) -> None:
        """Closes every connection (idempotent)."""
        for key in self._doors.close_all():
            self._runner.call(self._runner.close(key), self.timeout)

    def __del__(self):
        # Not closed by its user: closed on the loop's thread, without waiting.
        doors = getattr(self, "_doors", None)
        if doors is None:
            return
        for key in doors.close_all():
            if self._runner.thread.is_alive():
                asyncio.run_coroutine_threadsafe(self._runner.close(key), self._runner.loop)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
