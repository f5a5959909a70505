"""Model access: backends that stream engine events, and output parsers."""
