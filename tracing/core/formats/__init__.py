"""The pure ingest formats: OTLP spans and the JSON step API parsed,
validated and mapped to steps, framework payloads unwrapped, OpenAPI specs
read. No database: tracing.store.ingest writes what these return."""
