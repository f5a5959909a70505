"""Local engines: block diffusion on a transformers checkpoint (``hf`` and
``diffusion/``), Clover in-process through SGLang (``sglang``,
``sglang_table``), the worker thread they run in (``worker``) and one loaded
engine lent to every session of a process (``shared``).
"""
