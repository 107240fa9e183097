"""Anchoring: did the step after an observation use it? (issue 4, DESIGN.md section 1).

Django-free. ``anchor_report(steps, task)`` is the entry point; see
``tracing.core.anchoring.report`` for the patterns and thresholds.
"""

from __future__ import annotations

from tracing.core.anchoring.report import (
    FINDINGS,
    PATTERNS,
    AnchorReport,
    Break,
    Similarity,
    anchor_report,
    is_failure,
    lexical_score,
)

__all__ = ["FINDINGS", "PATTERNS", "AnchorReport", "Break", "Similarity", "anchor_report", "is_failure", "lexical_score"]
