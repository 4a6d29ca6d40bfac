"""The blocking client: plain method calls that return numpy arrays, for
scripts and notebooks that do not use asyncio. Each Client runs the asyncio
client (and pycapnp's kj event loop) on its own background thread and waits
for each answer.

    from spindle_client import Client
    with Client("127.0.0.1:7400", model="sage") as c:
        out = c.infer_gnn([1, 2, 3])        # numpy float32 array [3, width]
"""
import asyncio
import threading
from typing import Optional, Sequence

import capnp
import numpy as np

from .client import AsyncClient, SpindleError


class Client:
    """A blocking connection to `spindle serve`. `model` is the default model of
    infer calls; `timeout` (seconds) bounds every call."""

    def __init__(self, endpoint: str, model: str = "", token: str = "",
                 token_file: Optional[str] = None, timeout: float = 60.0):
        self.model = model
        self.timeout = timeout
        self._opened = threading.Event()
        self._error: Optional[BaseException] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._client: Optional[AsyncClient] = None
        self._thread = threading.Thread(target=self._serve, args=(endpoint, token, token_file),
                                        name="spindle-client", daemon=True)
        self._thread.start()
        if not self._opened.wait(timeout):
            raise TimeoutError(f"{endpoint}: no connection after {timeout} s")
        if self._error is not None:
            raise self._error

    def _serve(self, endpoint, token, token_file):
        async def main():
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                self._client = await AsyncClient.open(endpoint, token, token_file)
            except BaseException as e:  # reported to the constructor's caller
                self._error = e
                self._opened.set()
                return
            self._opened.set()
            await self._stop.wait()
            await self._client.close()

        asyncio.run(capnp.run(main()))

    def _call(self, coro):
        if self._loop is None or self._client is None:
            raise SpindleError("unavailable", "the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout)

    def _model(self, model: Optional[str]) -> str:
        name = model or self.model
        if not name:
            raise ValueError("no model: pass model= here or to Client(...)")
        return name

    def ready(self) -> bool:
        """The server's models are loaded and warmed."""
        return self._call(self._client.ready())

    def infer_gnn(self, seeds: Sequence[int] = (), model: Optional[str] = None,
                  sampler_seed: int = 0, deadline_us: int = 0,
                  ids: Sequence[str] = ()) -> np.ndarray:
        """Outputs of `seeds` (dataset rows) or `ids` (the data's own node ids) as a
        float32 array [n, width]; raises SpindleError when the server refuses."""
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        r = self._call(self._client.infer_gnn(self._model(model), seeds.tolist(), sampler_seed,
                                              deadline_us, True, [str(i) for i in ids]))
        return np.asarray(r.outputs, dtype=np.float32).reshape(len(r.outputs), -1)

    def infer_rec(self, dense, sparse: Sequence[Sequence[Sequence[int]]],
                  model: Optional[str] = None, deadline_us: int = 0) -> np.ndarray:
        """Click probabilities of a recommendation batch: `dense` [batch, dense_in],
        `sparse` per table, per sample, the keys of its bag. float32 array [batch]."""
        dense = np.asarray(dense, dtype=np.float32)
        if dense.ndim != 2:
            raise ValueError(f"dense must be [batch, features], got shape {dense.shape}")
        r = self._call(self._client.infer_rec(self._model(model), dense.tolist(), sparse,
                                              deadline_us))
        return np.asarray(r.scores, dtype=np.float32)

    def stats(self) -> dict:
        return self._call(self._client.stats())

    def models(self) -> list:
        return self._call(self._client.models())

    def close(self) -> None:
        """Closes the connection and stops the background thread (idempotent)."""
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(self.timeout)
        self._loop = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
