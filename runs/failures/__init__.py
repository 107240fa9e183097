"""Failures by layer: each failed run's first-guess layer (tracing.core.attribution,
stored on the run by runs.launch.run_analysis), a queue where reviewers confirm or
correct it, and the breakdown the dashboard shows (DESIGN.md 1: a failure is
only fixable once it is attributed to a layer)."""
