"""The wire shapes of the API (spec/openapi.json): msgspec Structs, apart from the domain types they convert to,
one module per resource (`jobs`, `queues`, `workflows`, `worker`, `schedules`) and what they share (`common`).

The `Meta` constraints mirror the rules in `core.validation` (from the same constants) so the spec documents
them; the engine still checks every rule, so an embedder who bypasses HTTP gets the same answers.
"""
