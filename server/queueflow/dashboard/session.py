"""Who is looking: the signed session cookie, the CSRF token, and one-shot flash messages.

The session cookie holds the tenant id and an expiry, signed with HMAC-SHA256. The signing key is derived from
every configured key, so every process with the same keys accepts the same cookies, and changing any key signs
everyone out. The tenant key itself never leaves the sign-in request.

CSRF: each browser gets a random `qf_csrf` cookie; every form carries `HMAC(secret, that cookie)`, which a
cross-site page can neither read nor compute. Together with `SameSite=Lax` this covers sign-in too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from queueflow.settings import Settings

SESSION_COOKIE = "qf_session"
CSRF_COOKIE = "qf_csrf"
FLASH_COOKIE = "qf_flash"
CSRF_FIELD = "_csrf"
CSRF_HEADER = "x-csrf-token"
SESSION_LIFETIME = timedelta(hours=12)


@dataclass(frozen=True, slots=True)
class Flash:
    level: str
    """"ok" or "error"."""
    text: str


class Signer:
    def __init__(self, settings: Settings) -> None:
        if settings.development_mode:
            # Nothing to sign in with; the key only protects forms, for this process's life.
            self._key = secrets.token_bytes(32)
        else:
            material = json.dumps(
                [
                    sorted(settings.api_keys.items()),
                    sorted((key, tenant or "") for key, tenant in settings.worker_keys.items()),
                ]
            )
            self._key = hashlib.sha256(b"queueflow-dashboard/v1\0" + material.encode("utf-8", "surrogatepass")).digest()

    def sign(self, payload: dict[str, Any]) -> str:
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{body}.{_b64(self._mac(body))}"

    def verify(self, token: str | None) -> dict[str, Any] | None:
        if not token or token.count(".") != 1:
            return None
        body, mac = token.split(".")
        if not hmac.compare_digest(_b64(self._mac(body)), mac):
            return None
        try:
            payload = json.loads(_unb64(body))
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None

    def session(self, tenant: str, now: datetime) -> str:
        return self.sign({"t": tenant, "exp": int((now + SESSION_LIFETIME).timestamp())})

    def tenant(self, token: str | None, now: datetime) -> str | None:
        """The tenant of a valid, unexpired session cookie."""
        payload = self.verify(token)
        if payload is None or not isinstance(payload.get("t"), str) or not isinstance(payload.get("exp"), int):
            return None
        return payload["t"] if payload["exp"] > now.timestamp() else None

    def csrf_token(self, browser: str) -> str:
        return self._mac("csrf:" + browser).hex()

    def csrf_ok(self, browser: str | None, submitted: str | None) -> bool:
        return bool(browser and submitted) and hmac.compare_digest(self.csrf_token(browser or ""), submitted or "")

    def flash(self, flash: Flash) -> str:
        return self.sign({"l": flash.level, "m": flash.text})

    def read_flash(self, token: str | None) -> Flash | None:
        payload = self.verify(token)
        if payload is None or not isinstance(payload.get("m"), str):
            return None
        return Flash(str(payload.get("l", "ok")), payload["m"])

    def _mac(self, text: str) -> bytes:
        return hmac.new(self._key, text.encode(), hashlib.sha256).digest()


def new_browser_id() -> str:
    return secrets.token_urlsafe(24)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
