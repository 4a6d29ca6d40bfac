"""The doors of a blocking Client (a cluster's ranks, each with --listen): calls
go round-robin over the doors that are up; a door whose connection broke is down
until, after a back-off that doubles while it stays down, it accepts a
connection again, and then takes its share of the calls again. Thread-safe.
"""
import threading
import time
from typing import Callable, List, Optional

from .client import SpindleError


class DoorDown(SpindleError):
    """A call failed because its door is down (the connection refused or broke),
    not because the server refused the request: another door may answer it."""

    def __init__(self, message: str):
        super().__init__("unavailable", message)


class _Door:
    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.key: Optional[int] = None  # the open connection's key on the loop; None: down
        self.retry_at = 0.0  # time.monotonic() at which a down door is tried again
        self.backoff = 0.0
        self.probing = False  # one thread at a time tries to reopen it


class DoorSet:
    """`open(endpoint) -> key` connects (raising when the door does not answer);
    `close(key)` drops a connection. A door that went down is tried again
    `retry_after` seconds later, then after twice as long, up to `max_backoff`."""

    def __init__(self, endpoints: List[str], open: Callable[[str], int],
                 close: Callable[[int], None], retry_after: float = 1.0,
                 max_backoff: float = 30.0):
        if retry_after <= 0:
            raise ValueError(f"retry_after={retry_after}: give a positive number of seconds")
        self._open, self._close = open, close
        self._retry_after, self._max_backoff = retry_after, max_backoff
        self._doors = [_Door(e) for e in endpoints]
        self._next = 0
        self._lock = threading.Lock()
        self._closed = False

    def connect_all(self, open: Callable[[str], int]) -> List[str]:
        """Opens every door once with `open`; returns why each door that did not
        answer failed (such doors are down, tried again after the back-off). With
        one door, its error is raised as it is."""
        errors = []
        for d in self._doors:
            try:
                d.key = open(d.endpoint)
            except Exception as err:  # refused or unreachable: down for now
                if len(self._doors) == 1:
                    raise
                errors.append(f"{d.endpoint}: {err}")
                self._went_down(d)
        return errors

    def up(self) -> List[str]:
        with self._lock:
            return [d.endpoint for d in self._doors if d.key is not None]

    def pick(self, avoid: Optional[str] = None):
        """(endpoint, key) of the next door that is up, other than `avoid` when
        another is up; a down door whose back-off has passed is tried first.
        Raises DoorDown when no door is up."""
        self._reopen_due()
        with self._lock:
            if self._closed:
                raise SpindleError("unavailable", "the client is closed")
            live = [d for d in self._doors if d.key is not None]
            others = [d for d in live if d.endpoint != avoid]
            pool = others or live
            if not pool:
                raise DoorDown("no door is up: " + ", ".join(d.endpoint for d in self._doors))
            d = pool[self._next % len(pool)]
            self._next += 1
            return d.endpoint, d.key

    def mark_down(self, endpoint: str, key: int) -> None:
        """The connection `key` to `endpoint` broke: the door is down until it
        answers again after its back-off."""
        with self._lock:
            d = next((d for d in self._doors if d.endpoint == endpoint and d.key == key), None)
            if d is None:
                return  # another thread saw it first (or reopened it since)
            d.key = None
            self._went_down(d)
        try:
            self._close(key)
        except Exception:  # the connection is already gone: nothing left to close
            pass

    def close_all(self) -> List[int]:
        """Marks the set closed; returns the keys of the connections left open."""
        with self._lock:
            self._closed = True
            keys = [d.key for d in self._doors if d.key is not None]
            for d in self._doors:
                d.key = None
            return keys

    def _went_down(self, d: _Door) -> None:
        d.backoff = min(self._max_backoff, d.backoff * 2 if d.backoff else self._retry_after)
        d.retry_at = time.monotonic() + d.backoff

    def _reopen_due(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [d for d in self._doors
                   if d.key is None and not d.probing and d.retry_at <= now and not self._closed]
            for d in due:
                d.probing = True
        for d in due:
            try:
                key = self._open(d.endpoint)
            except Exception:  # still down: wait twice as long
                with self._lock:
                    d.probing = False
                    self._went_down(d)
                continue
            with self._lock:
                d.probing = False
                if self._closed:
                    leftover = key
                else:
                    d.key, d.backoff, leftover = key, 0.0, None
            if leftover is not None:
                self._close(leftover)
