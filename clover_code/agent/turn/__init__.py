"""One user turn: the loop (``loop``) asks the model (``respond``), runs the tools
it calls (``dispatch``) within the context budget (``context``, ``compaction``),
with the system prompt (``instructions``, ``nested``) and plan mode (``plan``).
"""
