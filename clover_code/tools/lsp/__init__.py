"""Language servers: diagnostics for the files an edit changed.

``framing`` (LSP's Content-Length messages), ``client`` (one server over its
stdin and stdout), ``servers`` (which server checks which files), ``manager``
(the session's servers, started when first needed, in the sandbox),
``report`` (diagnostics as the model and front ends see them), ``attach``
(what the edit tools call), ``tool`` (the ``diagnostics`` tool).
"""
