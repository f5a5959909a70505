"""``clover-code acp``: the agent inside an editor, over the Agent Client Protocol.

The editor (Zed, JetBrains, Neovim plugins, ...) starts ``clover-code acp``
and speaks JSON-RPC on its stdin and stdout; the ``agent-client-protocol``
SDK does the protocol. This package is a thin front end like the others: it
turns ACP requests into session calls and ``Op``s, and protocol ``Event``s
into ACP session updates.

    main.py       command line, stdio, start and clean shutdown
    transport.py  newline-delimited JSON framing that answers bad input
    agent.py      the ACP ``Agent``: initialize, sessions, prompt, cancel, modes
    bridge.py     one live session: its event mapper, outbox and client links
    updates.py    protocol events -> ACP session updates (pure)
    tool_cards.py how a tool call shows in the editor: kind, title, content (pure)
    replay.py     a stored transcript -> ACP session updates, for session/load
    sessions.py   stored sessions for session/list
    content.py    ACP prompt content -> the user's text (pure)
    client.py     approvals and file access through the editor
    terminal.py   a ``Sandbox`` that runs commands in the editor's terminal
"""
