"""Hardened git on the host: every git command the harness runs (``safe``, with the
settings and environment of ``hardening`` and the drivers ``repo_drivers`` switches
off) and the nested repositories it must not follow (``nested``).
"""
