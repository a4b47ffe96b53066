"""Opaque list cursors: the (created_at, id) of the last row served, base64url-encoded."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Protocol, TypeVar

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.types import Cursor, Page
from queueflow.core.validation import check, int_errors

MAX_PAGE = 500


class Listed(Protocol):
    """A row of a newest-first listing: it is ordered, and resumed after, by (created_at, id)."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> str: ...


R = TypeVar("R", bound=Listed)


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


def page(rows: list[R], limit: int) -> Page[R]:
    """A page of at most `limit` rows out of `rows`, which the store fetched with `limit + 1`: the extra row only
    tells that there is a next page."""
    if len(rows) <= limit:
        return Page(rows, None)
    last = rows[limit - 1]
    return Page(rows[:limit], encode_cursor(Cursor(last.created_at, last.id)))


def page_after(limit: int, cursor: str | None) -> Cursor | None:
    """Check a list request's `limit` (1–MAX_PAGE) and decode its `cursor`: where its page starts."""
    check(int_errors(limit, ("limit",), 1, MAX_PAGE))
    return decode_cursor(cursor) if cursor is not None else None
