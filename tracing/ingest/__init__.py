"""Trace any agent: OTLP spans and the JSON step API into runs and steps.

``otlp`` and ``jsonapi`` are pure (parse, validate, map); ``writes`` is the
only module here that talks to the database.
"""
