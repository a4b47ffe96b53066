"""The wake-up hub: a watch armed before its holder claims keeps every notification until the next wait."""

from __future__ import annotations

from queueflow.runtime.wakeups import Wakeups


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
