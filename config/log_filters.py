"""Log filters named by `settings.LOGGING`.

Django logs a request it refuses as suspicious (a Host not in
`ALLOWED_HOSTS`, a body over `DATA_UPLOAD_MAX_MEMORY_SIZE`, too many form
fields) under `django.security.<Exception>` at ERROR with the whole
traceback: some 30 lines per request, which any anonymous client can send
in a loop to flood the log, about something that is the client's fault and
already answered 400. `ClientFaults` makes each such record one WARNING
line naming the exception.
"""

from __future__ import annotations

import logging

__all__ = ["ClientFaults"]


class ClientFaults(logging.Filter):
    """`django.security.*` records as one WARNING line, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("django.security."):
            record.exc_info = None
            record.exc_text = None
            if record.levelno > logging.WARNING:
                record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = f"{record.name.rsplit('.', 1)[1]}: {record.getMessage()}"
            record.args = None
        return True
