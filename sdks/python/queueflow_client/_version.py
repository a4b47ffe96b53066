"""The SDK's version: one per release, shared with the server and `@queueflow/client` (`make release` sets all)."""

__version__ = "0.2.0"

USER_AGENT = f"queueflow-python/{__version__}"
"""Sent with every request; the server's access log records it, so an operator sees which SDKs call it."""
