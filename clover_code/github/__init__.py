"""``clover-code github``: answer ``@clover`` mentions inside a GitHub Actions job.

- ``event.py``: the request an Actions event payload carries (issue, issue
  comment, pull-request review comment).
- ``api.py``: the few GitHub REST calls the runner makes (httpx).
- ``git.py``: branch, commit and push, the token handed to git through its
  environment only.
- ``credentials.py``: the job's credentials out of every environment (the
  command starts itself again without them) before the agent starts.
- ``leaks.py``: the secrets the job holds, searched for before a push or a post.
- ``runner.py``: the whole run: trigger and permission checks, the progress
  comment, the headless task in a scrubbed environment, then a pull request,
  a push to the PR branch, or an answer.
- ``main.py``: the command line.
"""
