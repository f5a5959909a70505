"""What a run produces, shared by every front end that reports one (headless, batch,
the MCP server): the result object and its JSON lines (``result``) and the
validation of an answer against ``--output-schema`` (``output_schema``).
"""
