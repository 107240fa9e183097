"""The Django side of tracing (app label `tracing`): models, the recorder,
the call store, the timeline, signals, the Celery tasks, admin, the step and
ingestion API, the guard, step deletion. It builds on tracing.core and never
imports runs."""
