"""A page's form post past the server's limits is told why, not "could not read"."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


@override_settings(DATA_UPLOAD_MAX_NUMBER_FIELDS=5)
def test_a_form_with_too_many_fields_is_told_the_limit_and_that_back_keeps_it(
    editor: User,
) -> None:
    client = Client()
    client.force_login(editor)
    post = {f"field{i}": "x" for i in range(10)}
    response = client.post("/tenants/new/", post)
    assert response.status_code == 400
    html = response.content.decode()
    assert "The form sent more than the server reads (at most 5 fields and" in html
    assert "Back returns to the form" in html


def test_any_other_bad_request_page_says_it_could_not_read_it(client: Client) -> None:
    response = client.get("/", HTTP_HOST="not-a-host-we-serve.example")
    assert response.status_code == 400
    assert "The server could not read that request." in response.content.decode()
