"""``clover-code web``: the Textual app served as a web page (textual-serve)."""
