"""The app's widgets, one per module, each with its ``.tcss``."""
