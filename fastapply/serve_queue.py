"""The serving queue of ``fastapply serve``: requests admitted up to a bound (503 past it), run one at a
time on the one model thread, and abandoned when their client goes away (at the next forward pass, through
the ticket's cancel flag). ``server.py`` routes the requests into it.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from fastapply.errors import FastapplyError
from fastapply.serve_api import ApiError


class Cancelled(Exception):
    """The client went away; raised between forward passes to abandon its request."""


class Ticket:
    """One admitted request: its place in the queue and its cancel flag."""

    def __init__(self, queue: ModelQueue):
        self.queue = queue
        self.cancel_event = threading.Event()
        self._released = False

    def check(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled

    def release(self, cancel: bool = False) -> None:
        """Give the place back (once); ``cancel`` also abandons the model work."""
        if cancel:
            self.cancel_event.set()
        if not self._released:
            self._released = True
            self.queue.admitted -= 1


class ModelQueue:
    """Admission and the one model thread. ``admitted`` counts requests running or waiting; it is only
    touched on the event loop, so it needs no lock."""

    def __init__(self, queue_size: int):
        self.capacity = queue_size + 1
        self.admitted = 0
        self.running = 0  # 0 or 1, set by the model thread
        self.served = 0
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fastapply-model")

    def admit(self) -> Ticket:
        if self.admitted >= self.capacity:
            raise ApiError(503, f"the server is busy: {self.admitted} requests are running or queued", "server_busy")
        self.admitted += 1
        return Ticket(self)

    async def run(self, ticket: Ticket, work):
        """Run ``work()`` on the model thread after the requests ahead of it."""
        def guarded():
            ticket.check()  # abandoned while it waited
            self.running += 1
            try:
                return work()
            finally:
                self.running -= 1
                self.served += 1

        return await asyncio.get_running_loop().run_in_executor(self.executor, guarded)


async def unless_disconnected(request, ticket: Ticket, work):
    """Await the model ``work``; if the client disconnects first, abandon it and free the ticket."""
    job = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not job.done():
            job.cancel()
            raise ApiError(499, "the client closed the request", "client_closed")
        try:
            return job.result()
        except FastapplyError as exc:
            raise ApiError(400, str(exc)) from None
    finally:
        gone.cancel()
        ticket.release(cancel=not job.done())


async def _disconnected(request) -> None:
    """Returns when the client has gone away (the body has been read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
