"""A fake language server, for what no real one does on command: crash, or be slow.

It speaks LSP over stdin and stdout as a real one does (Content-Length
framing, initialize, didOpen/didChange, shutdown/exit) and publishes, for
each document text, one diagnostic per line that contains ``ERROR`` (an
error) or ``WARN`` (a warning), with the document's version. A text with
``CRASH`` in it makes it exit at once with status 3 after a line on stderr.
Run as ``python3 fake_server.py``; standard library only.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def read() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri: str, version: int, text: str) -> None:
    if "CRASH" in text:
        sys.stderr.write("fake server: told to crash\n")
        sys.stderr.flush()
        sys.exit(3)
    found = []
    for number, line in enumerate(text.splitlines()):
        for word, severity in (("ERROR", 1), ("WARN", 2)):
            column = line.find(word)
            if column >= 0:
                where = {"line": number, "character": column}
                found.append(
                    {
                        "range": {"start": where, "end": where},
                        "severity": severity,
                        "message": f"{word.lower()} here",
                        "source": "fake",
                        "code": f"F{severity}",
                    }
                )
    params = {"uri": uri, "version": version, "diagnostics": found}
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})


def main() -> None:
    while (message := read()) is not None:
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            sync = {"openClose": True, "change": 1, "save": {"includeText": False}}
            result = {"capabilities": {"textDocumentSync": sync}, "serverInfo": {"name": "fake"}}
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/didOpen":
            doc = params["textDocument"]
            publish(doc["uri"], doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            doc = params["textDocument"]
            publish(doc["uri"], doc["version"], params["contentChanges"][-1]["text"])
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return


if __name__ == "__main__":
    main()
