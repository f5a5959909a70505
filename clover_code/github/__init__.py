"""``clover-code github``: answer ``@clover`` mentions and review pull requests inside a
GitHub Actions job.

- ``event.py``: the request an Actions event payload carries (issue, issue
  comment, pull-request review comment).
- ``api.py``: the few GitHub REST calls the runner makes (httpx).
- ``git.py``: branch, commit and push, the token handed to git through its
  environment only.
- ``credentials.py``: the job's credentials out of every environment (the
  command starts itself again without them) before the agent starts.
- ``leaks.py``: the secrets the job holds, searched for before a push or a post.
- ``review.py``: the pull-request reviewer (a ``pull_request`` event or a
  ``@clover review`` comment): the diff from the API, ``clover-code review`` in a
  scrubbed environment, one review posted; ``review_post.py``: the diff built
  from the API's files, the findings posted before (hidden markers) and the
  review's summary and inline comments.
- ``runner.py``: the whole run: trigger and permission checks, the progress
  comment, the headless task in a scrubbed environment, then a pull request,
  a push to the PR branch, or an answer.
- ``main.py``: the command line.
"""
