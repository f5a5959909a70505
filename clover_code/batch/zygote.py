"""The warm start of batch runs: a process that has loaded clover-code once and forks a
copy of itself for each task's run.

Starting ``python -m clover_code`` costs each task the interpreter's start
and loading clover-code's modules (most of a second of CPU on a small box);
a fork of a process that has done both costs a few milliseconds. The batch
starts this process once (``python -P -m clover_code.batch.zygote FD``) and
asks it over a Unix socket: a request is a JSON message ``{"argv", "cwd",
"env"}`` with three file descriptors (stdin, stdout, stderr) passed along;
the answer is ``{"pid": N}`` as soon as the copy runs, then ``{"exit": N,
"code": C}`` when it ends (``C`` as ``Popen.returncode`` has it: negative for
a signal). A copy starts its own session (its process group is its pid, so
the batch can signal it and everything it starts), takes the descriptors as
its stdio, and runs ``clover-code ARGV`` exactly as the command would.

This process runs no threads and no event loop (a fork must not copy them
half-way), and starts nothing but its copies. It ends when the batch closes
the socket or dies (``parent_tie``); its copies, tied to it the same way,
then stop as on Ctrl+C.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import sys

from clover_code.proc.children import exited_children
from clover_code.proc.parent_tie import ENV, tie_to_parent

MAX_MESSAGE = 1 << 20

PRELOAD = (
    "clover_code.cli.main",
    "clover_code.config.flags",
    "clover_code.headless.run",
    "clover_code.headless.render",
    "clover_code.headless.record",
    "clover_code.agent.open",
    "clover_code.agent.session",
    "clover_code.engine.remote.backend",
    "clover_code.tools.registry",
    "clover_code.cli.sandbox",
    "clover_code.cli.sandbox_run",
    "clover_code.tools.sandbox.select",
    "clover_code.tools.sandbox.host",
    "clover_code.tools.sandbox.bwrap",
    "clover_code.tools.sandbox.docker",
    "clover_code.telemetry.spans",
)
"""What every run loads anyway; loaded once here, shared by every copy."""


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # an optional part missing here
            importlib.import_module(name)


def _child(
    sock: socket.socket,
    wake: tuple[int, int],
    request: dict[str, object],
    fds: list[int],
    started: int,
) -> None:
    """In the fork: become ``clover-code ARGV`` with the given stdio; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
        os.setsid()
        os.write(started, b"1")  # the batch may signal the group from now on
        os.close(started)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        env = request["env"]
        argv = request["argv"]
        assert isinstance(env, dict) and isinstance(argv, list)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        os.environ[ENV] = str(os.getppid())  # stop with this process, as the batch asked
        sys.argv = ["clover-code", *map(str, argv)]
        from clover_code.cli.main import main

        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException as exc:  # never let a copy return into the server loop
        with contextlib.suppress(Exception):
            sys.stderr.write(f"clover-code: the warm start failed: {exc!r}\n")
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what a normal exit of the command would run
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def serve(sock: socket.socket) -> None:
    """Answer requests until the batch closes the socket."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    sock.send(b'{"ready": true}')
    while True:
        try:
            ready = select.select([sock.fileno(), wake_r], [], [])[0]
        except InterruptedError:
            continue
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            for pid, code in exited_children():
                sock.send(json.dumps({"exit": pid, "code": code}).encode())
        if sock.fileno() not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        if not message:
            return  # the batch is done
        request = json.loads(message)
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(started_r)
            _child(sock, (wake_r, wake_w), request, fds, started_w)
        os.close(started_w)
        for fd in fds:
            os.close(fd)
        # Answer once the copy has its own session (or has died): its group exists.
        with contextlib.suppress(OSError):
            os.read(started_r, 1)
        os.close(started_r)
        sock.send(json.dumps({"pid": pid}).encode())


def main() -> None:
    """``python -P -m clover_code.batch.zygote FD``: serve on the socket ``FD``."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        tie_to_parent()
        _preload()
        serve(sock)
    except (KeyboardInterrupt, BrokenPipeError, ConnectionError):
        pass


if __name__ == "__main__":
    main()
