"""``clover-code serve``: an OpenAI-compatible server over a local engine, for one box."""
