"""The headless front end (``clover-code --task``): the run (``run``), how it ends
(``ending``: the result and exit code; ``termination``: SIGTERM), the records it
prints as text, JSON or JSON lines (``render``, ``record``).
"""
