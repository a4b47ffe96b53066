"""The wake-up hub: a watch armed before its holder claims keeps every notification until the next wait."""

from __future__ import annotations

from queueflow.runtime.wakeups import ECHO_WINDOW, Wakeups


async def test_a_notification_while_the_watcher_is_busy_is_kept() -> None:
    hub = Wakeups()
    with hub.watching(["mail"]) as watch:
        hub.notify("mail")  # arrives while the holder is still claiming, before it waits
        assert await watch.wait(0) is True
        assert await watch.wait(0) is False  # kept once, not forever


async def test_a_watch_hears_only_its_queues_and_is_gone_after() -> None:
    hub = Wakeups()
    with hub.watching(["mail", "sms"]) as watch:
        assert hub.waiting == 1
        hub.notify("push")
        assert await watch.wait(0) is False
        hub.notify("sms")
        assert await watch.wait(0) is True
    assert hub.waiting == 0


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_echo_of_an_own_commit_is_known_once_and_nothing_else_is() -> None:
    hub = Wakeups()
    hub.own_backends.add(7)
    hub.expect_echoes(["mail", "mail", "sms"])  # once per queue: PostgreSQL folds a transaction's notifications
    assert not hub.is_echo("mail", 8)  # another session's (another process's) notification is never an echo
    assert hub.is_echo("mail", 7)
    assert not hub.is_echo("mail", 7)  # a second one from this process is not: it announced something else
    assert hub.is_echo("sms", 7)
    assert not hub.is_echo("push", 7)


def test_an_echo_not_heard_in_time_or_withdrawn_is_forgotten() -> None:
    ticks = Ticks()
    hub = Wakeups(monotonic=ticks)
    hub.own_backends.add(7)
    hub.expect_echoes(["mail"])
    ticks.now = ECHO_WINDOW + 0.1
    assert not hub.is_echo("mail", 7)  # lost on its way: a later notification of this process wakes
    hub.expect_echoes(["mail"])
    hub.withdraw_echoes(["mail"])  # its commit failed
    assert not hub.is_echo("mail", 7)
    hub.expect_echoes(["mail"])
    hub.notify_all()  # a reconnect: whatever was on its way is gone
    assert not hub.is_echo("mail", 7)


def test_behind_a_pooler_no_notification_is_taken_for_an_echo() -> None:
    hub = Wakeups(own_echoes=False)
    hub.own_backends.add(7)
    hub.expect_echoes(["mail"])
    assert not hub.is_echo("mail", 7)
