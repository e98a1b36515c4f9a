"""Editor memory soak: does a Daphne keep what it spent on the largest tenant's form?

Starts a real Daphne (`python -m config.serve`) from each project given
(this checkout by default; `--project DIR` adds another, e.g. a `git
archive` of an older commit with `.venv` linked in), stores the largest
tenant the validator allows (100 rules of 50 attributes), logs in as an
editor and asks for its editor's Form view `--renders` times, as a browser
does (the YAML view posted back with `action=view-form`: a 24 MB page). It
prints the server's RSS after each page and, per project, the peak after
the first two pages above what it was then, in pages' worth: about one
when the server frees each page as it is sent, several (a saw-tooth up to
the next full collection) when pages wait for the cyclic collector
(config/http_cycles.py).

A benchmark, not a test: about two seconds a page.

    .venv/bin/python -m tests.load.editor_memory_bench --renders 12 --project /tmp/old
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from tests.load.bench_processes import (
    Processes,
    free_port,
    http_ok,
    manage,
    project_python,
    wait_until,
)
from tests.load.tenant_churn import rss_mib
from tests.tenant_form_inputs import inputs

HERE = Path(__file__).resolve().parents[2]
USER, PASSWORD = "bench-editor", "bench-editor-password-1"
SETUP = f"""
from django.contrib.auth.models import Group, User
from api.store import services
user = User.objects.create_user({USER!r}, password={PASSWORD!r})
user.groups.add(Group.objects.get(name="editor"))
rules = [
    {{"priority": i + 1, "query_attributes": [{{"regex": f"q{{i}}_{{j}}"}} for j in range(50)]}}
    for i in range(100)
]
config = {{"query_priority": {{"enabled": True, "default_priority": 0, "priorities": rules}}}}
services.tenant_put(
    tenant_id="big", config=config, expected_version=None, author=None, source="cli"
)
"""


def server_env(project: Path, folder: Path) -> dict[str, str]:
    """The environment of a server of `project` keeping everything in `folder`."""
    return {
        **{k: v for k, v in os.environ.items() if k not in ("DEBUG", "DATABASE_URL")},
        "PYTHONPATH": str(project),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "VAR_DIR": str(folder / "var"),
        "SECRET_KEY": "editor-memory-bench-" + "k" * 40,
        "GRPC_PORT": "0",
    }


def _post(opener: urllib.request.OpenerDirector, url: str, fields: dict[str, str]) -> bytes:
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, headers={"Referer": url})
    with opener.open(request, timeout=300) as response:
        return bytes(response.read())


def soak(project: Path, renders: int) -> list[tuple[int, float]]:
    """(page bytes, server RSS in MiB after it) for each Form page served."""
    folder = Path(tempfile.mkdtemp(prefix="qi-editor-memory-"))
    env = server_env(project, folder)
    python = project_python(project)
    manage(python, project, env, "migrate", "--noinput", "-v0")
    manage(python, project, env, "shell", "--no-imports", "-c", SETUP)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    processes = Processes()
    argv = [python, "-m", "config.serve"]
    server = processes.start(
        [*argv, "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
        folder / "daphne.log",
        cwd=project,
        env=env,
    )
    try:
        wait_until("Daphne answering /healthz", lambda: http_ok(f"{base}/healthz"), server, 60)
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        login = opener.open(f"{base}/login/", timeout=30).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login)
        assert token, "no CSRF token on the login page"
        fields = {"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token[1]}
        _post(opener, f"{base}/login/", fields)
        url = f"{base}/tenants/big/"
        form = {**inputs(opener.open(url, timeout=300).read().decode()), "action": "view-form"}
        pages = []
        for n in range(renders):
            size = len(_post(opener, url, form))
            pages.append((size, rss_mib(server.pid)))
            print(f"  page {n + 1}: {size / 1e6:.1f} MB, server RSS {pages[-1][1]:.0f} MiB")
        return pages
    finally:
        processes.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--renders", type=int, default=12, help="Form pages per project")
    parser.add_argument(
        "--project", type=Path, action="append", default=[], help="another checkout to run too"
    )
    opts = parser.parse_args()
    if opts.renders < 4:
        parser.error("--renders must be at least 4 (the first two warm up)")
    for project in [HERE, *opts.project]:
        print(f"{project}:")
        pages = soak(project.resolve(), opts.renders)
        (size, warm), peak = pages[1], max(rss for _, rss in pages[2:])
        print(
            f"  peak RSS over pages 3-{len(pages)}: {peak:.0f} MiB, {peak - warm:.0f} MiB above "
            f"page 2's ({(peak - warm) * 2**20 / size:.1f} pages' worth)"
        )


if __name__ == "__main__":
    main()
