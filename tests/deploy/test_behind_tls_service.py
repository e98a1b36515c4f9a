"""A real Daphne behind a real nginx ending TLS, with deploy/nginx/queue-inspector.conf.

The server runs with docs/operations.md's "Behind TLS" settings; nginx runs
the deploy file with only its marked lines changed (Daphne's address, the
listening port, the certificate). Through it a person logs in over HTTPS
(cookies Secure, HSTS sent), opens the inspector's live socket over wss,
and posts a form past nginx's default 1 MB body limit; a socket from a
foreign origin is refused, and plain HTTP to Daphne is sent to HTTPS.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import re
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess, free_port
from tests.api.wire.grpc.certs import make_pki

DEPLOY_FILE = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "queue-inspector.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PASSWORD = "pw-tessa-behind-tls-1"


@dataclass
class Site:
    """The HTTPS address nginx serves, the CA that signed it, and Daphne behind it."""

    base: str
    context: ssl.SSLContext
    server: DaphneProcess
    log: Path


def _site_config(text: str, *, upstream: int, listen: int, cert: Path, key: str, log: Path) -> str:
    """The deploy file with its marked lines changed, each found exactly once."""
    changes = [
        (r"server 127\.0\.0\.1:8000;", f"server 127.0.0.1:{upstream};"),
        (r"listen 443 ssl;", f"listen 127.0.0.1:{listen} ssl;"),
        (r"server_name inspector\.example\.com;", "server_name 127.0.0.1;"),
        (r"ssl_certificate     \S+;", f"ssl_certificate     {cert};"),
        (r"ssl_certificate_key \S+;", f"ssl_certificate_key {key};"),
        (r"access_log \S+ queue_inspector;", f"access_log {log} queue_inspector;"),
    ]
    for pattern, replacement in changes:
        text, found = re.subn(pattern, replacement, text)
        assert found == 1, f"deploy/nginx/queue-inspector.conf: {pattern!r} found {found} times"
    return text


def _main_config(prefix: Path, site: Path) -> str:
    # Everything nginx writes stays in the test's directory; as root its
    # workers would otherwise run as nobody, who cannot write there.
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\npid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'} info;\nevents {{ worker_connections 64; }}\n"
        f"http {{\n    access_log {prefix / 'access.log'};\n{temps}\n    include {site};\n}}\n"
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not Path(NGINX).exists():
        pytest.fail("this test needs nginx (Debian: nginx-light; make test installs it)")
    prefix = tmp_path_factory.mktemp("nginx")
    pki = make_pki(prefix)
    listen = free_port()
    base = f"https://127.0.0.1:{listen}"
    settings = {
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
        "SECURE_SSL_REDIRECT": "1",
        "SECURE_HSTS_SECONDS": "3600",
        "CSRF_TRUSTED_ORIGINS": base,
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOGIN_TRUSTED_PROXIES": "127.0.0.1",
    }
    with DaphneProcess(extra_env=settings, grpc=False) as server:
        site_file = prefix / "queue-inspector.conf"
        site_file.write_text(
            _site_config(
                DEPLOY_FILE.read_text(),
                upstream=server.port,
                listen=listen,
                cert=pki.server.cert_path,
                key=str(pki.server.key_path),
                log=prefix / "site.log",
            )
        )
        main = prefix / "nginx.conf"
        main.write_text(_main_config(prefix, site_file))
        command = [NGINX, "-p", str(prefix), "-c", str(main), "-g", "daemon off;"]
        check = subprocess.run([*command[:-2], "-t"], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        nginx = subprocess.Popen(command, stderr=subprocess.PIPE, start_new_session=True)
        try:
            context = ssl.create_default_context(cafile=str(pki.ca.cert_path))
            _wait_for(base, context, nginx)
            server.create_user("tessa", PASSWORD, "editor")
            yield Site(base, context, server, prefix / "site.log")
        finally:
            nginx.terminate()
            try:
                nginx.wait(10)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait(10)


def _wait_for(base: str, context: ssl.SSLContext, nginx: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while True:
        if nginx.poll() is not None:
            pytest.fail(f"nginx exited: {nginx.stderr.read().decode() if nginx.stderr else ''}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", context=context, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class _Browser:
    """A person's HTTPS session through nginx: cookies kept, Origin sent as a browser does."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=site.context),
            urllib.request.HTTPCookieProcessor(self.jar),
        )

    def open(self, path: str, form: dict[str, str] | None = None) -> tuple[int, str, dict]:
        body = None if form is None else urlencode(form).encode()
        request = urllib.request.Request(f"{self.site.base}{path}", body)
        if body is not None:
            request.add_header("Origin", self.site.base)
        try:
            with self.opener.open(request, timeout=20) as response:
                return response.status, response.read().decode(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace"), dict(exc.headers)

    def csrf(self, page: str) -> str:
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert found is not None, "the page has no CSRF token"
        return found[1]

    def log_in(self) -> dict:
        _, page, _ = self.open("/login/")
        form = {"username": "tessa", "password": PASSWORD, "csrfmiddlewaretoken": self.csrf(page)}
        status, page, headers = self.open("/login/", form)
        assert status == 200 and "Log out" in page, page[:500]
        return headers

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def test_a_person_logs_in_over_https_and_every_cookie_is_secure(site: Site) -> None:
    browser = _Browser(site)
    status, _, headers = browser.open("/login/")
    assert status == 200 and headers["Strict-Transport-Security"] == "max-age=3600"
    browser.log_in()
    cookies = {c.name: c for c in browser.jar}
    assert {"sessionid", "csrftoken"} <= set(cookies)
    assert all(c.secure for c in cookies.values())


def test_plain_http_to_daphne_is_sent_to_https_but_the_health_probe_answers(site: Site) -> None:
    daphne = site.server.base_url
    opener = urllib.request.build_opener(_NoRedirect())
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(f"{daphne}/login/", timeout=10)
    assert refused.value.code == 301
    location = refused.value.headers["Location"]
    assert location.startswith("https://127.0.0.1:") and location.endswith("/login/")
    with urllib.request.urlopen(f"{daphne}/healthz", timeout=10) as health:
        assert health.status == 200


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_the_inspector_socket_opens_over_wss_and_refuses_a_foreign_origin(site: Site) -> None:
    browser = _Browser(site)
    browser.log_in()
    url = site.base.replace("https", "wss", 1) + "/ws/inspector/"

    async def first_frame(origin: str) -> dict:
        async with websockets.connect(
            url,
            ssl=site.context,
            additional_headers={"Cookie": browser.cookie_header(), "Origin": origin},
            max_size=2**24,
        ) as ws:
            await ws.send(json.dumps({"type": "subscribe"}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if frame["type"] == "snapshot":
                    return frame

    snapshot = asyncio.run(first_frame(site.base))
    assert snapshot["seq"] == 1 and "params" in snapshot
    with pytest.raises(websockets.InvalidStatus) as refused:
        asyncio.run(first_frame("https://evil.example"))
    assert refused.value.response.status_code == 403


def test_a_form_past_nginxs_default_body_limit_reaches_django(site: Site) -> None:
    browser = _Browser(site)
    browser.log_in()
    _, page, _ = browser.open("/tenants/new/")
    # 3 MB of boxes, as a large tenant's form posts: nginx's default 1 MB was a 413.
    form = {"csrfmiddlewaretoken": browser.csrf(page), "tenant_id": "big-post"}
    form.update({f"unused.{n}": "x" * 1000 for n in range(3000)})
    status, answer, _ = browser.open("/tenants/new/", form)
    assert status != 413, answer[:300]
    assert status in (200, 400) and "big-post" in answer


def test_a_token_in_a_query_string_reaches_neither_log(site: Site) -> None:
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(
            f"{site.base}/api/v1/tenants/?token=qi_in_the_query", context=site.context, timeout=10
        )
    deadline = time.monotonic() + 10
    while "/api/v1/tenants/" not in site.log.read_text():
        assert time.monotonic() < deadline, "nginx logged nothing"
        time.sleep(0.05)
    assert "qi_in_the_query" not in site.log.read_text()
    assert "qi_in_the_query" not in site.server.log_path.read_text()


def test_a_runtime_config_import_up_to_the_apis_own_limit_gets_past_nginx(site: Site) -> None:
    # 20 MiB, under the API's 32 MiB for runtime-config/: the shipped 16m
    # answered nginx's HTML 413 instead.
    token = site.server.issue_token("editor", "big-import")
    body = b"# " + b"x" * (20 * 1024 * 1024) + b"\noverrides: {}\n"
    request = urllib.request.Request(
        f"{site.base}/api/v1/runtime-config/?dry_run=1",
        body,
        method="PUT",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/yaml"},
    )
    with urllib.request.urlopen(request, context=site.context, timeout=60) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
