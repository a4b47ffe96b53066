"""The HTTP API: a Litestar app over the engine (see `create_app`)."""

from queueflow.api.app import create_app

__all__ = ["create_app"]
