from django.test import Client


def test_healthz_answers_ok_without_login_or_database(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_refuses_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
