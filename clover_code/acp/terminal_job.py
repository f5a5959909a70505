"""A background job in the editor's terminal (``EditorTerminal.start_job``).

The job is one terminal the editor runs and shows under the shell call that
started it, for as long as it runs. The editor keeps its output, so it is
read by asking (``terminal/output``, on each ``refresh`` and at the end):
what is new since the last read goes to the job's feed. When the editor has
dropped the start of a long output, what is new is found after the tail read
last time (or, when that is gone too, the whole is passed on with a note).
``stop`` is ``terminal/kill``; the terminal is released once the job ended.
"""

from __future__ import annotations

import asyncio
import contextlib

from acp import Client, RequestError

from clover_code.acp.client import describe_error
from clover_code.tools.sandbox.base import JobEnd, JobFeed

__all__ = ["OutputDiff", "TerminalJob"]

_TAIL = 256
"""Characters of the output read last kept to find where the new output starts."""

_STOP_WAIT = 10.0
"""Seconds to wait for the editor to report a killed terminal's end."""


class OutputDiff:
    """What is new in a terminal's output each time the whole is read again."""

    def __init__(self) -> None:
        self._read = 0
        self._tail = ""

    def new_part(self, text: str, truncated: bool) -> str:
        """The part of ``text`` (the terminal's output now; ``truncated``: its start was
        dropped) that was not in the output read before."""
        if not truncated:
            new = text[self._read :] if len(text) >= self._read else text
        elif self._tail and (at := text.rfind(self._tail)) >= 0:
            new = text[at + len(self._tail) :]
        else:
            new = "[... the editor dropped earlier output ...]\n" + text if self._read else text
        self._read = len(text)
        self._tail = text[-_TAIL:]
        return new


class TerminalJob:
    """One background command in an editor terminal (see the module)."""

    def __init__(self, client: Client, session_id: str, terminal_id: str, feed: JobFeed) -> None:
        self._client = client
        self._session_id = session_id
        self.terminal_id = terminal_id
        self._feed = feed
        self._diff = OutputDiff()
        self._reading = asyncio.Lock()
        self._ended = asyncio.ensure_future(self._follow())

    async def _follow(self) -> JobEnd:
        try:
            status = await self._client.wait_for_terminal_exit(
                session_id=self._session_id, terminal_id=self.terminal_id
            )
            await self.refresh()
        except (ConnectionError, OSError, RequestError) as exc:
            return JobEnd(None, lost=f"the editor's terminal went away ({describe_error(exc)})")
        finally:
            with contextlib.suppress(ConnectionError, OSError, RequestError):
                await self._client.release_terminal(
                    session_id=self._session_id, terminal_id=self.terminal_id
                )
        return JobEnd(status.exit_code)

    async def refresh(self) -> None:
        """Pass on what the terminal printed since the last read."""
        async with self._reading:
            try:
                out = await self._client.terminal_output(
                    session_id=self._session_id, terminal_id=self.terminal_id
                )
            except (ConnectionError, OSError, RequestError):
                return  # the end reports it
            new = self._diff.new_part(out.output, out.truncated)
            if new:
                self._feed(new.encode("utf-8", "surrogatepass"))

    @property
    def running(self) -> bool:
        """Whether the editor has not reported the end yet."""
        return not self._ended.done()

    async def wait(self) -> JobEnd:
        """The job's end, once the editor reported it and its output was read."""
        return await asyncio.shield(self._ended)

    async def stop(self) -> None:
        """Have the editor kill the terminal's command; wait for the end it reports."""
        if self._ended.done():
            return
        with contextlib.suppress(ConnectionError, OSError, RequestError):
            await self._client.kill_terminal(
                session_id=self._session_id, terminal_id=self.terminal_id
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._ended), _STOP_WAIT)
