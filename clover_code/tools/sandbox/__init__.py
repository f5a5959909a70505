"""Where shell commands run: the host (explicitly chosen), Docker, bubblewrap."""
