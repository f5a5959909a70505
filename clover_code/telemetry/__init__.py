"""Telemetry: the spans and counters of a run (``spans``) and their OpenTelemetry export (``otel``).

Sits beside ``outcome`` above the agent: front ends feed it the protocol's
events; nothing in the core imports it.
"""
