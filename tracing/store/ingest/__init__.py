"""Trace any agent: OTLP spans and the JSON step API into runs and steps.

The parsing is pure (tracing.core.formats); ``services`` drives a request and
``writes`` is the only module here that talks to the database.
"""
