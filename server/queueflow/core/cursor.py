"""Opaque list cursors: the (created_at, id) of the last row served, base64url-encoded."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.types import Cursor


def encode_cursor(cursor: Cursor) -> str:
    raw = f"{cursor.created_at.isoformat()}|{cursor.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str) -> Cursor:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        created_at, _, row_id = raw.partition("|")
        when = datetime.fromisoformat(created_at)
        if when.utcoffset() is None or not row_id or "\x00" in row_id:
            raise ValueError(token)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationError.of([FieldError(("cursor",), "is not a cursor this server issued")]) from None
    return Cursor(when, row_id)
