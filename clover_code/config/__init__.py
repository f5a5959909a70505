"""Configuration: the ``Settings`` model and everything that fills it.

``settings`` is the model, and ``load`` fills it (``load_settings``); ``sections`` its tables;
``engine`` the engine fields; ``sources`` the files, environment and the
sentences for bad values; ``flags`` the command-line flags derived from the
fields (several front ends import it, so it lives here, below them all);
``project_files`` and ``project_definition`` read the project's own config and
sandbox image, and ``trust`` decides which of it applies (``loosening``: which
settings loosen safety); ``managed`` (with
``managed_files``, ``managed_check`` and ``managed_values``) is what an
administrator's managed settings files pin and limit, above every other source.
"""
