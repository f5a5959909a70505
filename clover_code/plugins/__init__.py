"""Plugins: folders (or Python packages) that bundle commands, skills, agents, hooks,
MCP servers and a status-line command under one name.

``manifest`` reads and checks a ``plugin.toml``; ``store`` keeps the installed
plugins (the user's, in clover-code's data folder) and their record;
``install`` fetches one from a folder, a git URL or a package; ``active``
decides which a session uses, each checked before anything of it runs.
docs/plugins.md is the user's guide.
"""
