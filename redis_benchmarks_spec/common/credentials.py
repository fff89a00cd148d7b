"""Credentials: where they come from, and their removal from whatever is stored or shown.

Daemons take passwords from the environment or from files only (``RBS_BROKER_PASSWORD`` /
``RBS_BROKER_PASSWORD_FILE``, ``RBS_DATASINK_PASSWORD`` / ``RBS_DATASINK_PASSWORD_FILE``;
see docs/security.md). A URL given with a password on the command line still works, but
the daemon re-executes itself at once with the password moved into its environment, so it
never stays visible in ``ps`` (:func:`hide_url_passwords`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

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


def hide_url_passwords(flags: Mapping[str, str], argv: Sequence[str] | None = None) -> None:
    """Re-exec this process if any ``flags`` value on its command line holds a password.

    ``flags`` maps an option (``--broker``) to the environment variable that carries its
    password (``RBS_BROKER_PASSWORD``). The new process has the same argv minus the
    passwords and finds them in its environment: a long-running daemon never shows a
    password in ``ps``. Returns only when there was nothing to hide.
    """
    words = list(sys.orig_argv if argv is None else argv)
    env = dict(os.environ)
    changed = False
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if eq and name in flags:
            target, prefix = value, f"{name}="
        elif i > 0 and words[i - 1] in flags:
            name, target, prefix = words[i - 1], word, ""
        else:
            continue
        password = url_password(target)
        if password is None:
            continue
        env[flags[name]] = unquote(password)
        words[i] = prefix + strip_password(target)
        changed = True
    if changed:
        os.execve(sys.executable, [sys.executable, *words[1:]], env)
