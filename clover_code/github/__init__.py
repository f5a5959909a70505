"""``clover-code github``: answer ``@clover`` mentions inside a GitHub Actions job.

- ``event.py``: the request an Actions event payload carries (issue, issue
  comment, pull-request review comment).
- ``api.py``: the few GitHub REST calls the runner makes (httpx).
- ``git.py``: branch, commit and push, the token handed to git through its
  environment only.
- ``runner.py``: the whole run: trigger and permission checks, the progress
  comment, the headless task in a scrubbed environment, then a pull request,
  a push to the PR branch, or an answer.
- ``main.py``: the command line.
"""
