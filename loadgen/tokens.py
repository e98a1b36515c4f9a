"""Where `manage.py loadgen` takes its tokens from, keeping them out of `ps`.

`--token`, `--frontend-token` and `--querier-token` put a working token on
the command line, which every user of the host can read in `ps` (and in
/proc/PID/cmdline). Two sources keep it private, as an operator knows them
from other tools:

- `--token-file PATH` (and `--frontend-token-file`, `--querier-token-file`):
  the token as `issue_token` printed it, one line, in a file only the
  operator may read (or a pipe: `--token-file <(pass show qi/loadgen)`);
- with no token option at all, the environment variables `LOADGEN_TOKEN`,
  `LOADGEN_FRONTEND_TOKEN` and `LOADGEN_QUERIER_TOKEN` (a process's
  environment is readable only by its own user and root).

A token option and its `-file` twin together, or any source holding what
is not one token, stop the command before anything starts (no token
issued, no socket opened) with one line naming the option or variable;
the line never repeats what the source holds, as it may be a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandError, CommandParser

__all__ = ["ENVIRONMENT", "add_token_arguments", "loadgen_tokens"]

# What `issue_token` prints, and all an Authorization header may carry here.
_TOKEN = re.compile(r"[\x21-\x7e]+", re.ASCII)
_TOKEN_SHAPE = "a token as issue_token prints it (printable ASCII, no spaces)"
# Options (as `options` keys) and the variable each is read from without any.
ENVIRONMENT = {
    "token": "LOADGEN_TOKEN",
    "frontend_token": "LOADGEN_FRONTEND_TOKEN",
    "querier_token": "LOADGEN_QUERIER_TOKEN",
}
# A token is under a hundred characters: a file far longer is not a token
# file (a log, a key ring), and reading it all would only waste memory.
_MAX_FILE_BYTES = 4096


def add_token_arguments(parser: CommandParser) -> None:
    """`--token`, `--frontend-token`, `--querier-token` and their `-file` twins."""
    sides = {
        "token": "a token for both sides (editor role)",
        "frontend-token": "the frontends' token (frontend or editor role)",
        "querier-token": "the queriers' token (querier or editor role)",
    }
    for option, what in sides.items():
        parser.add_argument(
            f"--{option}",
            help=f"{what}; every user of the host sees it in `ps`: prefer "
            f"--{option}-file or {ENVIRONMENT[option.replace('-', '_')]}",
        )
        parser.add_argument(
            f"--{option}-file",
            metavar="PATH",
            help=f"read --{option} from PATH (one line, as issue_token prints it)",
        )


def loadgen_tokens(
    options: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """(frontend token, querier token) as the options or else the environment give them.

    None for a side given none: the command then issues its own.
    """
    given = {name: _from_options(options, name) for name in ENVIRONMENT}
    if all(token is None for token in given.values()):
        given = {name: _from_environment(environ, var) for name, var in ENVIRONMENT.items()}
    return given["frontend_token"] or given["token"], given["querier_token"] or given["token"]


def _from_options(options: Mapping[str, Any], name: str) -> str | None:
    option = f"--{name.replace('_', '-')}"
    token, path = options[name], options[f"{name}_file"]
    if token is not None and path is not None:
        raise CommandError(f"{option} and {option}-file: give one or the other, not both")
    if token is not None:
        # An empty one (`--token "$UNSET"`) or a pasted line break would
        # otherwise fail at the handshake, in a message over several lines.
        if not _TOKEN.fullmatch(token):
            raise CommandError(f"{option} must be {_TOKEN_SHAPE}")
        return str(token)
    return None if path is None else _read(f"{option}-file", path)


def _read(option: str, path: str) -> str:
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"{option}: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > _MAX_FILE_BYTES:
        raise CommandError(f"{option} {path} is over {_MAX_FILE_BYTES} bytes: not a token file")
    # Only the line breaks are looked at before the shape check, so a token
    # in UTF-16 or with a byte-order mark is refused as not one, not misread.
    lines = data.decode("latin-1").splitlines()
    if not "".join(lines).strip():
        raise CommandError(f"{option} {path} is empty; it must hold {_TOKEN_SHAPE}")
    if len(lines) > 1:
        raise CommandError(
            f"{option} {path} has {len(lines)} lines; it must hold one, {_TOKEN_SHAPE}"
        )
    if not _TOKEN.fullmatch(lines[0]):
        raise CommandError(f"{option} {path} must hold {_TOKEN_SHAPE}")
    return lines[0]


def _from_environment(environ: Mapping[str, str], var: str) -> str | None:
    token = environ.get(var)
    if token is None:
        return None
    if not token:
        raise CommandError(f"{var} is set but empty: set it to a token or unset it")
    if not _TOKEN.fullmatch(token):
        raise CommandError(f"{var} (in the environment) must be {_TOKEN_SHAPE}")
    return token
