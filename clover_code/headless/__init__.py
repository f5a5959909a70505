"""The headless front end (``clover-code --task``): the run (``run``), the records it
prints as text, JSON or JSON lines (``render``, ``record``).
"""
