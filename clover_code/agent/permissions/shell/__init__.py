"""The shell command check: a bash line parsed into the programs it runs
(``parse``, ``syntax``, ``wrappers``), what known programs write
(``programs``), the verdict on where it writes (``verdict``) and the
allow/deny rules matched word by word (``rules``).
"""
