"""Code review: the diff under review, the findings the model returns, and their output.

It sits above the agent, beside ``outcome`` (the review's answer goes through
``--output-schema``'s validation and retries), and below the front ends,
which reach it for ``/review``, ``clover-code review`` and the pull-request
reviewer. It opens sessions only through the session factory.

- ``findings.py``: a finding (file, lines, severity, title, body), the answer
  the model returns, and the JSON Schema it is checked against.
- ``diff.py``: what is reviewed: the changes since a base (the merge base with
  the default branch unless named), the staged changes, a commit, whole files
  or a given unified diff; and the lines of a diff a comment can sit on.
- ``instructions.py``: the project's review instructions (a ``review`` section
  of ``AGENTS.md``, or ``.clover/review.md``).
- ``prompt.py``: the review task (the prompt is ``prompts/review.md``) and the
  schema check that also holds the findings to the diff's files.
- ``render.py``: the findings as text, as the headless JSON result and as SARIF.
- ``session.py``: a review in a session of its own, always ``read-only``.
"""
