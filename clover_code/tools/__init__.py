"""The tools the model calls."""
