"""A conversation as one self-contained HTML page: inline styles, no scripts, nothing
fetched from anywhere (a Content-Security-Policy says so to the browser too), every
text escaped. It opens offline in any browser."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from clover_code.agent.export.conversation import Call, Conversation, Note, Prompt, grouped

__all__ = ["to_html"]

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem;
       padding: 1rem 1.5rem 4rem; color: #1d2125; background: #fdfdfc; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
header dt { color: #5c6670; } header dd { margin: 0; font-family: monospace; }
section { border-left: 4px solid #c9d1d9; padding: .2rem 0 .2rem 1rem; margin: 1.5rem 0; }
section.user { border-color: #3b82f6; } section.assistant { border-color: #16a34a; }
section.note { border-color: #a3a3a3; color: #4b5563; }
section.error { border-color: #dc2626; color: #991b1b; }
h2 { font-size: 1rem; margin: 0 0 .4rem; text-transform: uppercase; letter-spacing: .05em; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
details.reasoning { color: #4b5563; font-style: italic; margin-bottom: .6rem; }
.call { border: 1px solid #d0d7de; border-radius: 6px; margin: .8rem 0; padding: .4rem .8rem; }
.call-head { font-family: monospace; font-weight: 600; }
.status { font-weight: normal; border-radius: 4px; padding: 0 .4rem; margin-left: .5rem; }
.status.ok { background: #dcfce7; } .status.none, .status.interrupted { background: #fef9c3; }
.status.error, .status.denied, .status.cancelled { background: #fee2e2; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; white-space: pre-wrap;
      overflow-wrap: anywhere; font-size: 13px; margin: .3rem 0; }
.add { color: #116329; background: #e6ffec; } .del { color: #82071e; background: #ffebe9; }
.hunk { color: #6639ba; }
@media (prefers-color-scheme: dark) {
  body { color: #e6edf3; background: #0d1117; } pre { background: #161b22; }
  header dt, section.note, details.reasoning { color: #9ca3af; } section.error { color: #fca5a5; }
  .call { border-color: #30363d; } .add { color: #7ee787; background: #12261e; }
  .del { color: #ffa198; background: #25171c; } .status { color: #0d1117; }
}
"""

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'"


def _pre(text: str, css: str = "") -> str:
    return f'<pre class="{css}">{escape(text)}</pre>' if css else f"<pre>{escape(text)}</pre>"


def _diff(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        css = ""
        if line.startswith(("+++", "---")):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        elif line.startswith("@@"):
            css = "hunk"
        lines.append(f'<span class="{css}">{escape(line)}</span>' if css else escape(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        return _pre(arguments)
    return _pre(json.dumps(arguments, indent=2, ensure_ascii=False))


def _call(call: Call) -> str:
    status = call.status or "none"
    label = call.status or "no result recorded"
    summary = f" {escape(call.summary)}" if call.summary else ""
    parts = [
        '<div class="call">',
        f'<div class="call-head">{escape(call.name)}{summary}'
        f'<span class="status {escape(status)}">{escape(label)}</span></div>',
        f"<details><summary>Arguments</summary>{_arguments(call.arguments)}</details>",
    ]
    if call.output is not None:
        shown = " open" if call.output.count("\n") < 40 else ""  # a long one starts folded
        parts.append(f"<details{shown}><summary>Result</summary>{_pre(call.output)}</details>")
    if call.diff:
        parts.append(f"<details open><summary>Diff</summary>{_diff(call.diff)}</details>")
    parts.append("</div>")
    return "".join(parts)


def _section(css: str, title: str, body: str) -> str:
    return f'<section class="{css}"><h2>{escape(title)}</h2>{body}</section>'


def to_html(conversation: Conversation) -> str:
    """``conversation`` as one HTML document."""
    c = conversation
    facts = [("Session", c.session_id), ("Directory", c.cwd), ("Model", c.model)]
    facts += [("Started", c.started)] if c.started else []
    facts += [("Forked from", c.forked_from)] if c.forked_from else []
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    body = []
    for item in grouped(c.items):
        if isinstance(item, Prompt):
            body.append(_section("user", "User", f'<div class="text">{escape(item.text)}</div>'))
        elif isinstance(item, list):
            inner = ""
            for reply in item:
                if reply.reasoning:
                    inner += (
                        '<details class="reasoning"><summary>Reasoning</summary>'
                        f'<div class="text">{escape(reply.reasoning)}</div></details>'
                    )
                if reply.text:
                    inner += f'<div class="text">{escape(reply.text)}</div>'
                inner += "".join(_call(call) for call in reply.calls)
            body.append(_section("assistant", "Assistant", inner))
        elif isinstance(item, Note):
            title = "Error" if item.level == "error" else "Note"
            text = f'<div class="text">{escape(item.text)}</div>'
            body.append(_section("error" if item.level == "error" else "note", title, text))
    title = escape(f"clover-code session {c.session_id}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{_STYLE}</style></head>\n"
        f"<body><header><h1>{title}</h1><dl>{rows}</dl></header>\n<main>\n"
        + "\n".join(body)
        + "\n</main></body></html>\n"
    )
