"""``clover-code batch``: many headless tasks, each in its own clone, N at a time, with the
warm start that forks a loaded process for each (``zygote``)."""
