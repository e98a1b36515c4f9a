"""The process's traffic recorder records actor paths under the live config's header."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from channels.db import database_sync_to_async

from api.store.models import ConfigRevision
from api.store.services import settings_update
from api.wire.traffic_recording import capture_on_loop
from scheduler_core.model import INGESTER, Request
from scheduler_core.traffic_record import recording_of
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_request_is_recorded_with_its_path_under_the_header_the_config_names(
    host: Any,
) -> None:
    def rename() -> None:
        settings_update(
            changes={"actor_path_header": "X-Team-Actor"},
            expected_version=None,
            author=None,
            source=ConfigRevision.Source.CLI,
        )

    await database_sync_to_async(rename)()
    await until(lambda: host.runtime.config.actor_path_header == "X-Team-Actor")
    host.runtime.enqueue(
        Request(
            id="recorded-actor",
            tenant_id="recorded-actor-tenant",
            component=INGESTER,
            query="up",
            actor_path=("users", "joe"),
        )
    )
    capture = await capture_on_loop(60)
    assert capture is not None
    (key,) = [
        k for k in recording_of(capture.capture)["keys"] if k["tenant"] == "recorded-actor-tenant"
    ]
    assert [s["headers"] for s in key["samples"]] == [{"X-Team-Actor": "users|joe"}]


def test_the_recordings_sampled_text_is_held_to_the_traffic_sample_byte_cap() -> None:
    # A process of its own: the recorder is made as the module is imported.
    code = (
        "import django; django.setup()\n"
        "from api.wire.traffic_recording import recorder\n"
        "print(recorder()._samples.max_bytes)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env["TRAFFIC_SAMPLE_MAX_BYTES"] = "1048576"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1048576"]
