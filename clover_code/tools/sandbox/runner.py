"""The command runner inside the Docker sandbox: the container's main process.

``DockerSandbox`` starts the container with this file's ``main`` as its
command (``docker_setup.RUNNER_COMMAND [FILTER]``) and talks to it over the
container's attach stream, so running a command costs a fork inside the
container rather than a ``docker exec`` (tens of milliseconds each). It runs
on the image's Python: standard library only, besides ``proc/children.py``
and its own parts, ``runner_procs.py`` (finding and killing a command's
processes) and ``runner_filter.py`` (the setuid filter), which
``docker_setup`` mounts beside it (``python3 -I <this file>`` runs it on the
host, where clover-code is installed).

FILTER, given when commands run as uid 0, is the seccomp program of
``seccomp.py`` (no setuid or setgid modes): before anything else the runner
installs it on itself, so every command inherits it, and checks that a
setuid ``chmod`` is now refused. Running as uid 0 without it installed, the
runner sends one F frame saying why and exits: it never runs commands as
root unfiltered.

Requests arrive on stdin, one JSON object per line:
  {"op": "run", "id": N, "token": "...", "cmd": "...", "cwd": "/ws", "env": {...},
   "timeout": 120}
  ("timeout": null runs it until it ends or is killed: a background job)
  {"op": "kill", "id": N}
Replies go to stdout as frames: a kind byte, the command id and the payload
length (big-endian ``>cII``), then the payload:
  R  ready (JSON: pid)            O  output bytes (stdout and stderr, merged)
  X  finished (JSON: code, cwd, timed_out, killed, held)
  E  could not start (a sentence)
  F  refuses to run any command (a sentence, id 0; then the runner exits)

Each command is ``bash -c`` in a new session (its own process group) with an
``EXIT`` trap that records ``pwd -P``; its environment carries a marker so
that processes which leave the group can still be found and killed. On its
timeout or a kill request the group and every marked process get SIGKILL.
When the main shell exits, output is read for ``DRAIN`` more seconds; then
processes that still hold the output pipe open are killed (they would hold
the call up) and counted in ``held``. Other background processes live on.
When stdin closes (the session ended, or crashed), every command is killed
and the runner exits, which removes the container.

Given ``--kill TOKEN`` instead, it kills the processes of the command with
that token and exits: ``DockerSandbox`` runs that through ``docker exec``
when the runner itself does not answer.

Given ``--exec [FILTER] -- PROGRAM ARGS...`` (through ``docker exec``, for a
long-lived program such as a language server), it installs FILTER as above,
refusing as above when it must and cannot, then replaces itself with the
program, which keeps the exec's stdin and stdout.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import selectors
import shlex
import signal
import struct
import sys
import tempfile
import time
from typing import Any

from clover_code.proc.children import exited_children, signal_group
from clover_code.tools.sandbox.runner_filter import REFUSED, lock_setuid
from clover_code.tools.sandbox.runner_procs import MARKER, kill_holders, kill_marked

FRAME = struct.Struct(">cII")
DRAIN = 0.3
CHUNK = 65536


def send(kind: bytes, cid: int, payload: bytes = b"") -> None:
    data = FRAME.pack(kind, cid, len(payload)) + payload
    while data:
        data = data[os.write(1, data) :]


def send_json(kind: bytes, cid: int, obj: dict[str, Any]) -> None:
    send(kind, cid, json.dumps(obj).encode())


class Command:
    def __init__(
        self, cid: int, pid: int, fd: int, timeout: float, token: str, cwd_file: str
    ) -> None:
        self.cid = cid
        self.pid = pid
        self.fd = fd
        self.inode = os.fstat(fd).st_ino
        self.deadline = time.monotonic() + timeout
        self.token = token
        self.cwd_file = cwd_file
        self.returncode: int | None = None
        self.exited_at = 0.0
        self.eof = False
        self.timed_out = False
        self.killed = False
        self.held = 0


class Runner:
    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.commands: dict[int, Command] = {}
        self.by_pid: dict[int, Command] = {}
        self.inbox = b""
        self.state = tempfile.mkdtemp(prefix="clover-runner-")
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: self.shutdown())
        self.wake = wake_r
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, "stdin")
        self.sel.register(wake_r, selectors.EVENT_READ, "wake")

    def shutdown(self) -> None:
        for cmd in self.commands.values():
            self.stop(cmd)
        sys.exit(0)

    def start(self, req: dict[str, Any]) -> None:
        cid = int(req["id"])
        token = str(req.get("token") or os.urandom(8).hex())
        os.makedirs(self.state, mode=0o700, exist_ok=True)  # a command may have emptied /tmp
        cwd_file = os.path.join(self.state, f"cwd-{cid}")
        script = f"trap 'pwd -P >| {shlex.quote(cwd_file)} 2>/dev/null' EXIT\n{req['cmd']}"
        env = {str(k): str(v) for k, v in req.get("env", {}).items()}
        env[MARKER] = token
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(r)
            os.close(w)
            send(b"E", cid, f"cannot start the command: {exc.strerror}.".encode())
            return
        if pid == 0:
            self.child(w, req.get("cwd") or "/", script, env)
        os.close(w)
        os.set_blocking(r, False)
        limit = req.get("timeout", 120)
        timeout = math.inf if limit is None else float(limit)
        cmd = Command(cid, pid, r, timeout, token, cwd_file)
        self.commands[cid] = cmd
        self.by_pid[pid] = cmd
        self.sel.register(r, selectors.EVENT_READ, cmd)

    @staticmethod
    def child(w: int, cwd: str, script: str, env: dict[str, str]) -> None:
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(w, 1)
            os.dup2(w, 2)
            os.closerange(3, 65536)
            try:
                # Under memory pressure the kernel should pick the command, not the runner.
                with open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write("500")
            except OSError:
                pass
            os.chdir(cwd)
            os.execve("/bin/bash", ["bash", "-c", script], env)
        except BaseException as exc:
            os.write(2, f"clover-runner: cannot start the command: {exc}\n".encode())
        os._exit(127)

    def stop(self, cmd: Command) -> None:
        """Kill the command's process group and everything that carries its marker."""
        signal_group(cmd.pid, signal.SIGKILL)
        kill_marked(cmd.token)

    def on_stdin(self) -> None:
        try:
            data = os.read(0, CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.shutdown()
        self.inbox += data
        while b"\n" in self.inbox:
            line, self.inbox = self.inbox.split(b"\n", 1)
            if line.strip():
                self.handle(json.loads(line))

    def handle(self, req: dict[str, Any]) -> None:
        op = req.get("op")
        if op == "run":
            self.start(req)
        elif op == "kill":
            cmd = self.commands.get(int(req["id"]))
            if cmd is not None:
                cmd.killed = True
                self.stop(cmd)

    def on_output(self, cmd: Command) -> None:
        try:
            data = os.read(cmd.fd, CHUNK)
        except BlockingIOError:
            return
        if data:
            send(b"O", cmd.cid, data)
        else:
            self.sel.unregister(cmd.fd)
            os.close(cmd.fd)
            cmd.eof = True

    def reap(self) -> None:
        for pid, code in exited_children():
            cmd = self.by_pid.pop(pid, None)
            if cmd is not None:
                cmd.returncode = code
                cmd.exited_at = time.monotonic()

    def tick(self) -> None:
        now = time.monotonic()
        for cmd in list(self.commands.values()):
            if cmd.returncode is None:
                if now >= cmd.deadline and not cmd.timed_out:
                    cmd.timed_out = True
                    self.stop(cmd)
                continue
            if not cmd.eof and now < cmd.exited_at + DRAIN and not (cmd.timed_out or cmd.killed):
                continue
            self.finish(cmd)

    def finish(self, cmd: Command) -> None:
        if not cmd.eof:
            if cmd.timed_out or cmd.killed:
                kill_marked(cmd.token)
            cmd.held = kill_holders(cmd.inode)
            self.sel.unregister(cmd.fd)
            self.drain(cmd, time.monotonic() + 0.5)
            os.close(cmd.fd)
        del self.commands[cmd.cid]
        code = cmd.returncode or 0
        cwd = ""
        try:
            with open(cmd.cwd_file, "rb") as fh:
                cwd = fh.read(4096).decode("utf-8", "replace").strip()
            os.unlink(cmd.cwd_file)
        except OSError:
            pass
        result = {
            "code": code if code >= 0 else 128 - code,
            "cwd": cwd,
            "timed_out": cmd.timed_out,
            "killed": cmd.killed,
            "held": cmd.held,
        }
        send_json(b"X", cmd.cid, result)

    @staticmethod
    def drain(cmd: Command, deadline: float) -> None:
        """Forward what is left in the pipe until it closes or ``deadline`` passes."""
        with selectors.DefaultSelector() as sel:
            sel.register(cmd.fd, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not sel.select(left):
                    return
                try:
                    data = os.read(cmd.fd, CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    return
                send(b"O", cmd.cid, data)

    def timeout(self) -> float | None:
        now = time.monotonic()
        waits = []
        for cmd in self.commands.values():
            if cmd.returncode is None:
                if cmd.deadline != math.inf:  # a background job has none
                    waits.append(cmd.deadline - now)
            elif not cmd.eof:
                waits.append(cmd.exited_at + DRAIN - now)
        return max(0.0, min(waits)) if waits else None

    def run(self) -> None:
        send_json(b"R", 0, {"pid": os.getpid()})
        while True:
            for key, _ in self.sel.select(self.timeout()):
                if key.data == "stdin":
                    self.on_stdin()
                elif key.data == "wake":
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wake, 4096)
                elif isinstance(key.data, Command) and not key.data.eof:
                    self.on_output(key.data)
            self.reap()
            self.tick()


def main() -> None:
    """``[FILTER]``: serve requests until stdin closes; ``--kill TOKEN``: kill the
    processes of the command with that token."""
    args = sys.argv[1:]
    if args[:1] == ["--kill"] and len(args) == 2:
        kill_marked(args[1])
        return
    if args[:1] == ["--exec"] and "--" in args:
        split = args.index("--")
        why = lock_setuid(args[1] if split == 2 else None)
        if why is not None:
            os.write(2, (REFUSED.format(why=why) + "\n").encode())
            sys.exit(126)
        program = args[split + 1 :]
        try:
            os.execvp(program[0], program)
        except OSError as exc:
            os.write(2, f"clover-runner: cannot start {program[0]}: {exc.strerror}\n".encode())
            sys.exit(127)
    why = lock_setuid(args[0] if args else None)
    if why is not None:
        send(b"F", 0, REFUSED.format(why=why).encode())
        sys.exit(1)
    Runner().run()


if __name__ == "__main__":
    main()
