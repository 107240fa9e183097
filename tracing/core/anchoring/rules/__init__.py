"""The break patterns, one module each (the order the pass consults them is
``tracing.core.anchoring.registry``)."""
