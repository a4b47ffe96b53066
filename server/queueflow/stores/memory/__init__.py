"""The in-memory store: `InMemoryJobStore`."""

from queueflow.stores.memory.store import InMemoryJobStore

__all__ = ["InMemoryJobStore"]
