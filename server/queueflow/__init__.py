"""QueueFlow: a durable job queue and workflow engine whose only moving part is PostgreSQL."""

__version__ = "0.2.0"
