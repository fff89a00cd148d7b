"""Credentials: where they come from, and their removal from whatever is stored or shown.

Daemons take passwords from the environment or from files only (``RBS_BROKER_PASSWORD`` /
``RBS_BROKER_PASSWORD_FILE``, ``RBS_DATASINK_PASSWORD`` / ``RBS_DATASINK_PASSWORD_FILE``;
see docs/security.md). A daemon (``rbs agent|builder|api``) given a URL with a password on
its command line refuses to start, with one line naming the flag and those alternatives
(:func:`daemon_argv_secret`): a password in argv is readable by every local user through
``ps`` and ``/proc/<pid>/cmdline`` from the moment of exec, which no re-exec can undo. The
``rbs`` console script checks before it imports anything else (``cli/entry.py``).

This module imports the standard library only, so that check costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

MASK = "***"
# options whose next word (or ``=value``) is a secret: client tools' and redis-server's
SECRET_OPTIONS = frozenset({
    "-a", "--authenticate", "--pass", "--user-password", "--requirepass", "--masterauth",
    "requirepass", "masterauth", "--tls-key-file-pass", "--tls-client-key-file-pass",
    "--password", "--secret", "--aclfile-password",
})


class CredentialError(ValueError):
    """A password file that cannot be read."""


def url_password(url: str) -> str | None:
    """The password in ``url`` (``redis://[user]:pw@host``) as written (percent-encoded)."""
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _split(url: str) -> tuple[SplitResult, str, str]:
    """(parts, user, host[:port]) of ``url``."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    return parts, userinfo.partition(":")[0], host


def strip_password(url: str) -> str:
    """``url`` without its password (user, host, port, path kept)."""
    if url_password(url) is None:
        return url
    parts, user, host = _split(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host))


def redact_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (for logs and messages)."""
    if url_password(url) is None:
        return url
    parts, user, host = _split(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as stored or logged: values of secret options and URL passwords masked."""
    out: list[str] = []
    hide_next = False
    for word in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        name, eq, _ = word.partition("=")
        if word in SECRET_OPTIONS:
            hide_next = True
            out.append(word)
        elif eq and name in SECRET_OPTIONS:
            out.append(f"{name}={MASK}")
        elif "://" in word:
            out.append(f"{name}={redact_url(word[len(name) + 1:])}" if eq and "://" not in name
                       else redact_url(word))
        else:
            out.append(word)
    return out


def password_from_env(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``$NAME``, else the contents of the file ``$NAME_FILE`` (one line), else None."""
    env = os.environ if environ is None else environ
    if env.get(name):
        return env[name]
    path = env.get(f"{name}_FILE")
    if not path:
        return None
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise CredentialError(f"${name}_FILE {path}: {exc.strerror or exc}") from exc


def with_password(url: str, env_name: str, environ: Mapping[str, str] | None = None) -> str:
    """``url`` with the password from ``$env_name`` / ``$env_name_FILE`` when it has none."""
    password = password_from_env(env_name, environ)
    if password is None or url_password(url) is not None:
        return url
    parts, user, host = _split(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


# the commands that run for a long time as services, and where each flag's password goes
DAEMON_COMMANDS = ("agent", "builder", "api")
PASSWORD_ENV = {"--broker": "RBS_BROKER_PASSWORD", "--datasink": "RBS_DATASINK_PASSWORD"}


def daemon_argv_secret(argv: Sequence[str]) -> str | None:
    """The one-line refusal when ``argv`` (``rbs``'s arguments) starts a daemon with a
    password in a URL on its command line, else None (see :func:`argv_refusal`)."""
    command = next((w for w in argv if not w.startswith("-")), None)
    return argv_refusal(command, argv) if command in DAEMON_COMMANDS else None


def argv_refusal(command: str, argv: Sequence[str]) -> str | None:
    """The refusal for ``rbs <command>`` when any word of ``argv`` is a URL with a password.

    Every word is looked at, whatever option it follows (argparse accepts abbreviations
    such as ``--brok``), in both ``--flag URL`` and ``--flag=URL`` forms.
    """
    for i, word in enumerate(argv):
        name, eq, value = word.partition("=")
        url = value if eq and name.startswith("--") and "://" not in name else word
        if "://" not in url or url_password(url) is None:
            continue
        flag = name if url is value else (argv[i - 1] if i and argv[i - 1][:1] == "-" else "")
        env = next((e for f, e in PASSWORD_ENV.items() if flag and f.startswith(flag)), None)
        where = (f"${env} or a file named by ${env}_FILE" if env
                 else "the environment or a file (see docs/security.md)")
        return (f"rbs {command}: {flag or 'an argument'} holds a password in its URL "
                f"({redact_url(url)}), which every local user can read in ps; give the URL "
                f"without it and the password in {where}")
    return None
