"""The pure core of tracing: steps, normalising, the detectors and the
watchdog, anchoring, results, alignment, metrics, summaries, replay, the
ingest formats. Nothing under it imports Django (tests/test_architecture.py
runs it in a bare interpreter; pyproject.toml's contracts say the same)."""
