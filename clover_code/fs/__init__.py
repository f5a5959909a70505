"""Low-level file-system helpers with no knowledge of tools, sessions or front ends.

``ignore`` decides which files a walk skips (the way ripgrep does),
``atomic`` replaces a file so readers never see a mix, ``binary`` tells
text from binary content, and ``private`` makes files and directories
only their owner may read. The tools, the repository map, the app and the
watcher all use them, so they live below every one of those layers.
"""
