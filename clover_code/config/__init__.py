"""Configuration: the ``Settings`` model and everything that fills it.

``settings`` is the model and ``load_settings``; ``sections`` its tables;
``engine`` the engine fields; ``sources`` the files, environment and the
sentences for bad values; ``flags`` the command-line flags derived from the
fields (several front ends import it, so it lives here, below them all);
``project_files`` and ``project_definition`` read the project's own config and
sandbox image, and ``trust`` decides which of it applies.
"""
