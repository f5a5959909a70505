"""``clover-code web``: the Textual app served as a web page (textual-serve)."""

CHECK = "--check-flags"
"""Given first to the tab's app process (``webapp.child``): only check the flags
(``clover-code web`` does, before serving)."""
