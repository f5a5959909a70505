"""``clover-code doctor``: what a run needs, what is missing, and the command that fixes it."""
