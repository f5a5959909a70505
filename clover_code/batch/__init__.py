"""``clover-code batch``: many headless tasks, each in its own clone, N at a time."""
