"""QueueFlow: a durable job queue and workflow engine whose only moving part is PostgreSQL."""

__version__ = "0.1.0"
