"""Local engines: block diffusion on a transformers checkpoint (``hf``, loading
it: ``hf_checkpoint``, and ``diffusion/``), Clover in-process through SGLang
(``sglang``, ``sglang_table``), the worker threads they run in (``worker``),
the one thread that decodes every concurrent response of the hf engine
together (``batching``) and one loaded engine lent to every session of a
process (``shared``).
"""
