"""Process helpers with no knowledge of sessions: tying a child's life to its parent,
signalling and reaping the processes we started."""
