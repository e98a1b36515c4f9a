"""The project's settings with Django's quick MD5 password hasher, for the browser
tests' servers (DJANGO_SETTINGS_MODULE in `module_server`).

Every browser module logs in at least once, and the real hasher (PBKDF2, a
million rounds) costs about a second a module between making the user and
checking the login. What these tests check is the pages, not the hashing;
the service tests (tests/service) keep the real hasher, which the login
throttle's tests rely on.
"""

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
