from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.db import transaction

from api.store import config_events, services
from api.store.exceptions import ConfigValidationError, VersionConflict
from api.store.models import ConfigRevision, SchedulerSettings
from api.store.selectors import config_version_get, queue_config_get

pytestmark = pytest.mark.django_db
UI = ConfigRevision.Source.UI
CaptureOnCommit = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture
def published() -> Iterator[list[int]]:
    seen: list[int] = []
    config_events.subscribe(seen.append)
    yield seen
    config_events.unsubscribe(seen.append)


def update(changes: dict[str, Any], expected: int | None = None) -> SchedulerSettings:
    return services.settings_update(
        changes=changes, expected_version=expected, author=None, source=UI
    )


def test_settings_update_stores_the_complete_canonical_settings() -> None:
    row = update({"layout": "component-first", "querier_forget_delay": 90})
    assert row.config["layout"] == "component-first"
    assert row.config["querier_forget_delay"] == "1m30s"
    assert row.config["component_selection"] == "round-robin"
    config = queue_config_get()
    assert (config.layout, config.querier_forget_delay) == ("component-first", 90.0)


def test_settings_update_records_before_and_after() -> None:
    first = update({"layout": "component-first"})
    update({"max_outstanding_requests_per_tenant": 7}, first.version)
    revision = ConfigRevision.objects.order_by("-version").first()
    assert revision is not None
    assert revision.kind == "settings"
    assert revision.before["max_outstanding_requests_per_tenant"] == 100
    assert revision.after["max_outstanding_requests_per_tenant"] == 7
    assert revision.after["layout"] == "component-first"


def test_writing_the_defaults_over_never_written_settings_is_not_a_revision() -> None:
    row = update({"layout": "tenant-first", "stuck_threshold": "1m"})
    assert row.version == 0 and config_version_get() == 0
    assert not ConfigRevision.objects.exists()


def test_the_first_settings_change_diffs_against_the_defaults_that_ran() -> None:
    update({"stuck_threshold": "2m"})
    revision = ConfigRevision.objects.get()
    changed = {k for k in revision.after if revision.before.get(k) != revision.after[k]}
    assert changed == {"stuck_threshold"}
    assert revision.before["stuck_threshold"] == "1m"


def test_invalid_settings_are_rejected_with_paths_and_change_nothing() -> None:
    with pytest.raises(ConfigValidationError) as caught:
        update({"layout": "sideways", "query_store_after": "14h"})
    assert {e.path for e in caught.value.errors} == {"layout", "query_store_after"}
    assert SchedulerSettings.objects.get().config == {}
    assert config_version_get() == 0


def test_a_stale_settings_version_is_a_conflict() -> None:
    update({"layout": "component-first"})
    with pytest.raises(VersionConflict) as caught:
        update({"layout": "tenant-first"}, expected=0)
    assert caught.value.current_version == 1


def test_the_config_event_fires_only_after_commit(
    django_capture_on_commit_callbacks: CaptureOnCommit, published: list[int]
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        update({"layout": "component-first"})
        assert published == []
    assert len(callbacks) == 1
    assert published == [1]


def test_no_event_fires_when_the_transaction_rolls_back(
    django_capture_on_commit_callbacks: CaptureOnCommit, published: list[int]
) -> None:
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        update({"layout": "component-first"})
        raise RuntimeError("abort")
    assert published == []
    assert SchedulerSettings.objects.get().config == {}


def test_a_failing_subscriber_does_not_stop_the_others(published: list[int]) -> None:
    def broken(version: int) -> None:
        raise ValueError(version)

    config_events.subscribe(broken)
    try:
        config_events.publish(5)
    finally:
        config_events.unsubscribe(broken)
    assert published == [5]


def test_subscribing_twice_calls_the_callback_once(published: list[int]) -> None:
    config_events.subscribe(published.append)
    config_events.publish(3)
    assert published == [3]
