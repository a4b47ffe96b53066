"""What the bench drives QueueFlow with: the no-op task registry (`noop`, which the in-process runner loads with
`--tasks`), and the Python and TypeScript SDK worker programs the drains start, one process each, default
settings."""
