"""Hardened git on the host: every git command the harness runs (``safe``) and the
nested repositories it must not follow (``nested``).
"""
