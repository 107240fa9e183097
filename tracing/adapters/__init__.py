"""Guards for agent frameworks: each module drives tracing.client's guarded run
from one framework's own hook, and imports that framework (an optional
dependency: the module is only imported by a project that uses it)."""
