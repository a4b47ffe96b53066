"""Settings from the environment and flags, and the CLI's refusal to expose development mode."""

from __future__ import annotations

import pytest
from queueflow.cli import main
from queueflow.settings import Settings, SettingsError


def test_settings_come_from_env_and_flags_win() -> None:
    env = {
        "QUEUEFLOW_API_KEYS": "k1=tenant-a, k2=tenant-b",
        "QUEUEFLOW_WORKER_KEYS": "w1,w2,w1",
        "QUEUEFLOW_PORT": "9000",
        "QUEUEFLOW_RETENTION_HOURS": "48",
        "QUEUEFLOW_MODE": "worker",
    }
    settings = Settings.load(env, port="9100", mode=None, janitor_interval="2.5")

    assert settings.api_keys == {"k1": "tenant-a", "k2": "tenant-b"}
    assert settings.worker_keys == {"w1": None, "w2": None}
    assert (settings.port, settings.mode, settings.retention_hours, settings.janitor_interval) == (
        9100,
        "worker",
        48.0,
        2.5,
    )
    assert settings.tenants == ["tenant-a", "tenant-b"]
    assert not settings.development_mode


def test_behind_a_transaction_pooler_the_statement_cache_is_off_and_listen_goes_around_it() -> None:
    env = {
        "QUEUEFLOW_DATABASE_URL": "postgresql://app@pgbouncer:6432/queue",
        "QUEUEFLOW_STATEMENT_CACHE_SIZE": "0",
        "QUEUEFLOW_LISTEN_DATABASE_URL": "postgresql://app@primary:5432/queue",
    }
    settings = Settings.load(env)
    assert (settings.statement_cache_size, settings.listen_database_url) == (0, "postgresql://app@primary:5432/queue")
    assert Settings.load(env, statement_cache_size="50").statement_cache_size == 50
    assert (Settings.load({}).statement_cache_size, Settings.load({}).listen_database_url) == (100, None)


def test_the_statement_timeout_defaults_to_ten_seconds_and_zero_turns_it_off() -> None:
    assert Settings.load({}).statement_timeout == 10.0
    assert Settings.load({"QUEUEFLOW_STATEMENT_TIMEOUT": "0"}).statement_timeout == 0.0
    assert Settings.load({"QUEUEFLOW_STATEMENT_TIMEOUT": "0"}, statement_timeout="2.5").statement_timeout == 2.5


def test_the_horizon_warning_defaults_to_five_minutes() -> None:
    assert Settings.load({}).horizon_warning_seconds == 300.0
    assert Settings.load({"QUEUEFLOW_HORIZON_WARNING_SECONDS": "60"}).horizon_warning_seconds == 60.0
    env = {"QUEUEFLOW_HORIZON_WARNING_SECONDS": "60"}
    assert Settings.load(env, horizon_warning_seconds="0.5").horizon_warning_seconds == 0.5


def test_defaults_are_development_mode_on_loopback() -> None:
    settings = Settings.load({})
    assert settings.development_mode
    assert (settings.host, settings.port, settings.mode) == ("127.0.0.1", 8000, "all")
    assert settings.tenants == ["default"]
    settings.check_bind()


@pytest.mark.parametrize(
    "env",
    [
        {"QUEUEFLOW_API_KEYS": "just-a-key"},
        {"QUEUEFLOW_API_KEYS": "k=bad tenant"},
        {"QUEUEFLOW_API_KEYS": "k=a,k=b"},
        {"QUEUEFLOW_PORT": "eighty"},
        {"QUEUEFLOW_PORT": "70000"},
        {"QUEUEFLOW_MODE": "both"},
        {"QUEUEFLOW_SAFETY_POLL": "0"},
        {"QUEUEFLOW_STATEMENT_CACHE_SIZE": "-1"},
        {"QUEUEFLOW_STATEMENT_CACHE_SIZE": "off"},
        {"QUEUEFLOW_STATEMENT_TIMEOUT": "-1"},
        {"QUEUEFLOW_HORIZON_WARNING_SECONDS": "0"},
        {"QUEUEFLOW_HORIZON_WARNING_SECONDS": "soon"},
    ],
)
def test_bad_configuration_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        Settings.load(env)


def test_development_mode_refuses_to_bind_beyond_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        Settings(host=host).check_bind()
    with pytest.raises(SettingsError):
        Settings(host="0.0.0.0").check_bind()
    Settings(host="0.0.0.0", api_keys={"k": "t"}).check_bind()

    # Empty key flags override any QUEUEFLOW_*_KEYS in the environment running the tests.
    assert main(["serve", "--host", "0.0.0.0", "--api-keys", "", "--worker-keys", ""]) == 2
    assert "only binds to loopback" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["nope.module:tasks", "json:nothing", "no-colon"])
def test_serve_refuses_an_unloadable_task_registry_in_one_line(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--database-url", "memory://", "--tasks", spec]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"queueflow serve: --tasks {spec}: ")


def test_worker_keys_may_be_scoped_to_a_tenant() -> None:
    settings = Settings.load({"QUEUEFLOW_WORKER_KEYS": "wkey1, wkey2=tenant-a,wkey1"})
    assert settings.worker_keys == {"wkey1": None, "wkey2": "tenant-a"}
    assert not settings.development_mode


@pytest.mark.parametrize("raw", ["w=", "w=bad tenant", "=tenant-a", "w=tenant-a,w=tenant-b", "w,w=tenant-a"])
def test_a_malformed_worker_key_list_is_refused(raw: str) -> None:
    with pytest.raises(SettingsError, match="QUEUEFLOW_WORKER_KEYS"):
        Settings.load({"QUEUEFLOW_WORKER_KEYS": raw})


def test_a_sequence_of_bare_worker_keys_still_drains_every_tenant() -> None:
    assert Settings(worker_keys=("w1", "w2")).worker_keys == {"w1": None, "w2": None}  # type: ignore[arg-type]


def test_private_endpoints_are_allowed_by_the_flag_its_variable_or_development_mode() -> None:
    keys = {"QUEUEFLOW_API_KEYS": "k=acme"}
    assert Settings.load(keys).engine_settings.allow_private_endpoints is False
    assert Settings.load(keys, allow_private_endpoints=True).engine_settings.allow_private_endpoints is True
    env = keys | {"QUEUEFLOW_ALLOW_PRIVATE_ENDPOINTS": "true"}
    assert Settings.load(env).engine_settings.allow_private_endpoints is True
    assert Settings.load({}).engine_settings.allow_private_endpoints is True  # development mode implies it
    with pytest.raises(SettingsError, match="QUEUEFLOW_ALLOW_PRIVATE_ENDPOINTS must be true or false"):
        Settings.load(keys | {"QUEUEFLOW_ALLOW_PRIVATE_ENDPOINTS": "maybe"})
