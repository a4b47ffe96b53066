"""Settings: everything a QueueFlow process is configured with, from `QUEUEFLOW_*` variables and CLI flags.

Flags win over the environment; the environment wins over the defaults. Nothing else reads either.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any, Literal

from queueflow.core.validation import NAME_PATTERN
from queueflow.engine import EngineSettings

Mode = Literal["api", "worker", "all"]
MODES: tuple[Mode, ...] = ("api", "worker", "all")
AccessLog = Literal["all", "errors", "off"]
ACCESS_LOGS: tuple[AccessLog, ...] = ("all", "errors", "off")
ENV_PREFIX = "QUEUEFLOW_"


class SettingsError(ValueError):
    """A configuration value that cannot be used; the message names the variable or flag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    mode: Mode = "all"
    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str | None = None
    api_keys: Mapping[str, str] = field(default_factory=dict)
    """Tenant keys: key → tenant id."""
    worker_keys: Mapping[str, str | None] = field(default_factory=dict)
    """Worker keys: key → the tenant it is scoped to, or None for a key that drains every tenant."""
    janitor_interval: float = 5.0
    scheduler_interval: float = 1.0
    safety_poll: float = 5.0
    retention_hours: float | None = None
    data_dir: str | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    lease_wait_limit: float = 60.0
    """The longest a lease long-polls, whatever its `wait_seconds` asks (e.g. below a proxy's idle timeout)."""
    tasks: str | None = None
    """`module:attribute` naming a `queueflow_client.TaskRegistry` to run in this process (worker and all modes)."""
    task_queues: tuple[str, ...] = ("default",)
    """The queues the in-process tasks drain."""
    task_concurrency: int = 10
    """The most jobs the in-process tasks run at once."""
    pool_size: int = 10
    """PostgreSQL connections this process holds at most; more concurrent operations wait for one."""
    statement_cache_size: int = 100
    """Prepared statements asyncpg keeps per pooled connection. 0 turns the cache off, as a transaction-mode pooler
    without protocol-level prepared statements (PgBouncer before 1.21) requires: each statement is then prepared
    unnamed and run in the same transaction."""
    statement_timeout: float = 10.0
    """The longest one SQL statement may run, in seconds (0: no limit). Past it the statement is cancelled and the
    request answers 503 `unavailable`: statements stuck behind a lock cannot hold every pooled connection, and with
    them every other request, for as long as the lock lasts."""
    listen_database_url: str | None = None
    """Where the notifier LISTENs (default: `database_url`). A transaction-mode pooler cannot keep a LISTEN: point
    this past it, at PostgreSQL itself; without it, wake-ups behind such a pooler come from the safety poll."""
    workers: int = 1
    """Processes serving (`prefork`): N share the port, each with its own pool, notifier and loops."""
    allow_private_endpoints: bool = False
    """Push endpoints may lead to loopback, private and link-local addresses (for a receiver on this machine or
    network). Development mode implies it (`engine_settings`)."""
    access_log: AccessLog = "errors"
    """Which requests get a log line: `all`, `errors` (4xx and 5xx; the default, since metrics count every
    request) or `off`."""
    horizon_warning_seconds: float = 300.0
    """The dashboard warns when one backend has held the database's xmin horizon this long (`core.pressure`): every
    claim steps over the dead rows it pins."""

    def __post_init__(self) -> None:
        # A sequence of bare keys (what worker_keys was before keys could be scoped) still means what it meant.
        if not isinstance(self.worker_keys, Mapping):
            object.__setattr__(self, "worker_keys", dict.fromkeys(self.worker_keys))

    @property
    def development_mode(self) -> bool:
        """No key configured at all: auth is off and every request is tenant `default`."""
        return not self.api_keys and not self.worker_keys

    @property
    def engine_settings(self) -> EngineSettings:
        retention = None if self.retention_hours is None else timedelta(hours=self.retention_hours)
        return EngineSettings(
            retention=retention, allow_private_endpoints=self.allow_private_endpoints or self.development_mode
        )

    @property
    def tenants(self) -> list[str]:
        """The configured tenants (`default` in development mode), for per-tenant metrics."""
        return sorted(set(self.api_keys.values())) if self.api_keys else ["default"]

    @classmethod
    def load(cls, env: Mapping[str, str], **flags: Any) -> Settings:
        """Settings from `QUEUEFLOW_*` variables in `env`, overridden by every flag that is not None."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            raw = flags.get(item.name)
            source = f"--{item.name.replace('_', '-')}"
            if raw is None:
                raw = env.get(ENV_PREFIX + item.name.upper())
                source = ENV_PREFIX + item.name.upper()
            if raw is not None and raw != "":
                values[item.name] = _PARSERS.get(item.name, _text)(raw, source)
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not 0 < self.port < 65536:
            raise SettingsError(f"port must be 1–65535, not {self.port}")
        for name in ("janitor_interval", "scheduler_interval", "safety_poll"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive")
        if self.retention_hours is not None and self.retention_hours <= 0:
            raise SettingsError("retention_hours must be positive")
        if self.max_body_bytes < 1:
            raise SettingsError("max_body_bytes must be positive")
        if self.lease_wait_limit < 0:
            raise SettingsError("lease_wait_limit must not be negative")
        if self.tasks is not None and self.mode == "api":
            raise SettingsError("tasks run in worker or all mode, not api mode")
        if self.pool_size < 1:
            raise SettingsError("pool_size must be at least 1")
        if self.statement_timeout < 0:
            raise SettingsError("statement_timeout must not be negative (0 means no limit)")
        if self.statement_cache_size < 0:
            raise SettingsError("statement_cache_size must not be negative (0 turns the cache off)")
        if self.horizon_warning_seconds <= 0:
            raise SettingsError("horizon_warning_seconds must be positive")
        if self.access_log not in ACCESS_LOGS:
            raise SettingsError(f"access_log must be one of {', '.join(ACCESS_LOGS)}, not {self.access_log!r}")
        if self.workers < 1:
            raise SettingsError("workers must be at least 1")
        if self.workers > 1 and self.database_url == "memory://":
            raise SettingsError("workers above 1 need PostgreSQL: each process would have a memory:// store of its own")
        if self.task_concurrency < 1:
            raise SettingsError("task_concurrency must be at least 1")
        if not self.task_queues or not all(NAME_PATTERN.fullmatch(queue) for queue in self.task_queues):
            raise SettingsError(f"task_queues must be queue names matching {NAME_PATTERN.pattern}")

    def check_bind(self) -> None:
        """Development mode has no auth, so it may only listen where nobody else can reach it."""
        if self.development_mode and not is_loopback(self.host):
            raise SettingsError(
                f"no API or worker keys are configured (development mode), so QueueFlow only binds to loopback, "
                f"not {self.host}: set QUEUEFLOW_API_KEYS / QUEUEFLOW_WORKER_KEYS (or --api-keys / --worker-keys)"
            )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_api_keys(raw: str | Mapping[str, str], source: str = "api_keys") -> dict[str, str]:
    """`"key1=tenant-a,key2=tenant-b"` → {key: tenant}."""
    if isinstance(raw, Mapping):
        return dict(raw)
    keys: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, tenant = (part.strip() for part in entry.partition("="))
        if not sep or not key or not NAME_PATTERN.fullmatch(tenant):
            raise SettingsError(f"{source}: expected key=tenant pairs (tenant matching {NAME_PATTERN.pattern})")
        if key in keys:
            raise SettingsError(f"{source}: a key is listed twice")
        keys[key] = tenant
    return keys


def parse_names(raw: str | tuple[str, ...], source: str = "task_queues") -> tuple[str, ...]:
    """`"a,b"` → ("a", "b"), in order, without repeats."""
    if isinstance(raw, tuple):
        return raw
    return tuple(dict.fromkeys(filter(None, (part.strip() for part in raw.split(",")))))


def parse_worker_keys(
    raw: str | Mapping[str, str | None] | tuple[str, ...], source: str = "worker_keys"
) -> dict[str, str | None]:
    """`"wkey1,wkey2=tenant-a"` → {"wkey1": None, "wkey2": "tenant-a"}: a bare key drains every tenant, a key with
    `=tenant` only that tenant's jobs. A tuple is a list of bare keys."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, tuple):
        return dict.fromkeys(raw)
    keys: dict[str, str | None] = {}
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, tenant = (part.strip() for part in entry.partition("="))
        if not key or (sep and not NAME_PATTERN.fullmatch(tenant)):
            raise SettingsError(
                f"{source}: expected keys, each bare or key=tenant (tenant matching {NAME_PATTERN.pattern})"
            )
        scope = tenant if sep else None
        if keys.get(key, scope) != scope:
            raise SettingsError(f"{source}: a key is listed twice, with different tenants")
        keys[key] = scope
    return keys


def _number(kind: type[int] | type[float]) -> Any:
    def parse(raw: Any, source: str) -> int | float:
        try:
            return kind(raw)
        except (TypeError, ValueError):
            raise SettingsError(f"{source} must be a number, not {raw!r}") from None

    return parse


def _flag(raw: Any, source: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{source} must be true or false, not {raw!r}")


def _text(raw: Any, source: str) -> Any:
    return raw


_PARSERS: dict[str, Any] = {
    "port": _number(int),
    "janitor_interval": _number(float),
    "scheduler_interval": _number(float),
    "safety_poll": _number(float),
    "retention_hours": _number(float),
    "max_body_bytes": _number(int),
    "lease_wait_limit": _number(float),
    "task_concurrency": _number(int),
    "pool_size": _number(int),
    "workers": _number(int),
    "statement_cache_size": _number(int),
    "statement_timeout": _number(float),
    "horizon_warning_seconds": _number(float),
    "task_queues": parse_names,
    "allow_private_endpoints": _flag,
    "api_keys": parse_api_keys,
    "worker_keys": parse_worker_keys,
}
