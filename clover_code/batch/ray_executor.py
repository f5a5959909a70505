"""The Ray executor of ``clover-code batch``: the same tasks, as Ray tasks on an existing cluster.

Each task runs on some worker node, in a scratch folder of its own there (removed
afterwards), through the local executor's ``run_one``; the Ray task sends back the
record and the task's files (transcript, log, prompt), which this driver writes into
``DIR`` and records as each finishes, so results, resume and the summary are the
same as with the local executor.

Every node needs clover-code with the ``ray`` extra, a sandbox (the Docker image or
bubblewrap) and a route to the model server. A task's ``repo`` is resolved here,
on the driver: a path must exist at that same place on every node (a shared
file system), or the task should name a git URL.

Ray is imported only by the functions here that need it, and this module only by
the batch command when ``--executor ray`` is asked for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import logging
import os
import shutil
import socket
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from clover_code.batch.runner import BatchOptions, BatchRecord, record_finished, run_one
from clover_code.batch.tasks import BatchTask
from clover_code.errors import UsageError

RAY_MISSING = "Ray is not installed; install it with pip install 'clover-code[ray]'."

CONNECT_TIMEOUT_S = 5.0
"""How long the cluster's address may take to accept a TCP connection."""

CANCEL_GRACE_S = 60.0
"""How long an interrupted batch waits for its cancelled tasks to stop on their nodes."""

TICK_S = 1.0
"""How often a waiting driver calls its ``tick``."""

_SENT_BACK = ("transcripts", "logs", "tasks")
"""The sub folders of a task's scratch ``DIR`` whose files come back to the driver."""

_T = TypeVar("_T")


class Shipped(NamedTuple):
    """What a Ray task sends back: its record and its files, by path relative to ``DIR``."""

    record: BatchRecord
    files: dict[str, bytes]


def connect(address: str | None) -> None:
    """Connect this process to the Ray cluster at ``address`` (``HOST:PORT``).

    Raises ``UsageError`` (one sentence) when Ray is missing, no address was
    given, nothing answers there, or Ray cannot join the cluster.
    """
    if importlib.util.find_spec("ray") is None:
        raise UsageError(RAY_MISSING)
    if not address:
        raise UsageError(
            "--executor ray needs the cluster's address: pass --ray-address HOST:PORT "
            "or set RAY_ADDRESS."
        )
    host, port = _host_port(address)
    # Ray itself retries an address nobody answers at for many minutes: ask first.
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError:
        raise UsageError(
            f"no Ray cluster answers at {address}; start one with ray start --head "
            "or give its head node's HOST:PORT."
        ) from None
    # Something answers; should it not be Ray, make one try (about 40 s) rather than 20.
    # Read when Ray is first imported, so this must come before the import.
    os.environ.setdefault("RAY_NUM_REDIS_GET_RETRIES", "1")
    import ray

    try:
        ray.init(address=f"{host}:{port}", logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"cannot join the Ray cluster at {address}: {why.rstrip('.')}.") from None


def _host_port(address: str) -> tuple[str, int]:
    parts = urlsplit(f"//{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise UsageError(
            f"the Ray address {address!r} is not HOST:PORT (the head node's, port 6379 by default)."
        )
    return parts.hostname, port


def cluster_cpus() -> int:
    """The connected cluster's CPU count: how many tasks run at a time by default."""
    import ray

    resources: Callable[[], dict[str, float]] = ray.cluster_resources  # untyped in Ray
    return max(1, int(resources().get("CPU", 1)))


def run_batch_ray(
    tasks: list[BatchTask],
    options: BatchOptions,
    progress: Callable[[BatchRecord], None],
    tick: Callable[[], None] = lambda: None,
) -> list[BatchRecord]:
    """Run ``tasks`` on the connected cluster, ``options.jobs`` in flight, spread over
    the nodes; records each as it finishes, and calls ``tick`` every second meanwhile
    (to redraw a progress bar).

    On ``KeyboardInterrupt`` the tasks in flight are cancelled (each kills its
    headless process on its node), those that finished meanwhile are recorded,
    and the interrupt goes on up.
    """
    import ray

    for sub in _SENT_BACK:
        (options.out / sub).mkdir(parents=True, exist_ok=True)
    remote = ray.remote(_run_on_node).options(
        num_cpus=1, max_retries=0, scheduling_strategy="SPREAD"
    )
    waiting = deque(tasks)
    flying: dict[Any, tuple[BatchTask, float]] = {}
    records: list[BatchRecord] = []

    def finish(ref: Any) -> None:
        task, started = flying.pop(ref)
        record = _collect(ref, task, started, options)
        if record is not None:
            record_finished(options, task, record)
            records.append(record)
            progress(record)

    try:
        while waiting or flying:
            while waiting and len(flying) < max(1, options.jobs):
                task = waiting.popleft()
                # A relative path means the task file's folder on this machine.
                resolved = task.model_copy(update={"repo": task.source(options.base)})
                flying[remote.remote(resolved, options)] = (task, time.monotonic())
            ready, _ = ray.wait(list(flying), num_returns=1, timeout=TICK_S)
            for ref in ready:
                finish(ref)
            if not ready:
                tick()
    except KeyboardInterrupt:
        for ref in flying:
            ray.cancel(ref)
        ray.wait(list(flying), num_returns=len(flying), timeout=CANCEL_GRACE_S)
        for ref in list(flying):
            finish(ref)
        raise
    finally:
        ray.shutdown()
    return records


def _collect(
    ref: Any, task: BatchTask, started: float, options: BatchOptions
) -> BatchRecord | None:
    """A finished Ray task's record, its files written into ``DIR``; a crash when its
    worker died; None when it was cancelled (or is still stopping after an interrupt)."""
    import ray
    from ray.exceptions import GetTimeoutError, RayError, RayTaskError, TaskCancelledError

    try:
        shipped: Shipped = ray.get(ref, timeout=0)
    except (TaskCancelledError, GetTimeoutError):
        return None
    except RayError as exc:
        cause = exc.cause if isinstance(exc, RayTaskError) else None
        if isinstance(cause, TaskCancelledError | KeyboardInterrupt):
            return None
        if cause is not None and not isinstance(cause, RayError):
            error = f"it raised {type(cause).__name__} on its Ray node: {cause}."
        else:
            error = f"its Ray worker died before it finished ({type(exc).__name__})."
        return BatchRecord(
            id=task.id,
            outcome="crashed",
            tests_passed=None,
            duration_s=round(time.monotonic() - started, 3),
            error=error,
            transcript=f"transcripts/{task.slug}.jsonl",
            result=None,
        )
    for relative, data in shipped.files.items():
        (options.out / relative).write_bytes(data)
    return shipped.record


def _run_on_node(task: BatchTask, options: BatchOptions) -> Shipped:
    """The body of each Ray task: ``run_one`` in a scratch ``DIR`` on this node."""
    import ray

    scratch = Path(tempfile.mkdtemp(prefix="clover-batch-"))
    try:
        here = dataclasses.replace(options, out=scratch)
        for sub in ("workspaces", *_SENT_BACK):
            (scratch / sub).mkdir()
        record = asyncio.run(_awake(run_one(task, here)))
        files = {
            f"{sub}/{path.name}": path.read_bytes()
            for sub in _SENT_BACK
            for path in (scratch / sub).iterdir()
            if path.is_file()
        }
        node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"
        return Shipped(record.model_copy(update={"node": node}), files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _awake(work: Awaitable[_T]) -> _T:
    """Await ``work`` with the event loop waking often.

    Ray cancels a running task by raising KeyboardInterrupt in its main thread,
    which only happens once that thread runs Python again; a loop asleep in
    ``select`` (waiting on the agent's process) would never notice. Woken, the
    loop's SIGINT handler cancels ``run_one``, which kills its process group.
    """

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.2)

    ticker = asyncio.create_task(tick())
    try:
        return await work
    finally:
        ticker.cancel()
