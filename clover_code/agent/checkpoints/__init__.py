"""Checkpoints of the workspace in a shadow git store outside it, for undo, rewind,
diff and a run's patch: the store (``store``, ``shadow_store``, ``shadow_git``,
``git_objects``), the session's use of it (``session``), whether a folder may be
a workspace or is too big to snapshot (``workspace_check``) and the patch a
headless result reports (``run_patch``).
"""
