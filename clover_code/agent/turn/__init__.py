"""One user turn: the loop (``loop``) over the conversation (``conversation``) asks
the model (``respond``), runs the tools it calls (``dispatch``, ``tool_call``) once
they pass their checks (``call_checks``) within the context budget (``context``,
``compaction``), with the system prompt (``instructions``, ``nested``) and plan mode
(``plan``).
"""
