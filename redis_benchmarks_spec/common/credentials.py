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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

MASK = "***"
# options whose next word (or ``=value``) is a secret: client tools' and redis-server's
SECRET_OPTIONS = frozenset({
    "-a", "--authenticate", "--pass", "--user-password", "--requirepass", "--masterauth",
    "requirepass", "masterauth", "--tls-key-file-pass", "--tls-client-key-file-pass",
    "--password", "--secret", "--aclfile-password", "--masteruser-password",
})
# words after which ACL rules follow (redis-server's ``user`` directive, ``ACL SETUSER``):
# ``>pw`` adds a password, ``<pw`` removes one (so shows it), ``#hash``/``!hash`` a hash
ACL_CONTEXT = frozenset({"--user", "user", "setuser"})
_ACL_SECRET = re.compile(r"(^|\s)([<>#!])[^\s'\"]+")
# AUTH <pw> / AUTH <user> <pw> (as a command) and HELLO .. AUTH u p / MIGRATE .. AUTH(2)
AUTH_WORDS = frozenset({"auth", "auth2"})
# query parameters of a URL that carry a credential (redis-py reads ``password``)
QUERY_SECRETS = ("password", "pass", "passwd", "pwd", "auth", "secret", "token",
                 "requirepass", "masterauth", "access_key", "secret_key")
_URL_START = re.compile(r"(?i)^(rediss?|unix|https?|s3|git|ssh|file)://|^(rediss?|unix):")


# environment variables that carry a credential, or name the file that holds one
_SECRET_ENV = re.compile(r"(?i)(PASSWORD|PASSWD|SECRET|TOKEN|_KEY|CREDENTIALS?|_AUTH)(_FILE)?$")
#: the secrets each ``rbs`` daemon reads from its environment (docs/security.md); a
#: daemon's child gets these and no other
DAEMON_SECRETS: dict[str, tuple[str, ...]] = {
    "api": ("RBS_BROKER_PASSWORD", "RBS_WEBHOOK_SECRET", "RBS_GITHUB_TOKEN"),
    "builder": ("RBS_BROKER_PASSWORD", "RBS_ARTIFACT_KEY", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN"),
    "agent": ("RBS_BROKER_PASSWORD", "RBS_DATASINK_PASSWORD", "RBS_ARTIFACT_KEY",
              "RBS_GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    "confirmer": ("RBS_BROKER_PASSWORD", "RBS_DATASINK_PASSWORD", "RBS_GITHUB_TOKEN"),
    # read-only pages over the datasink and the broker; its triage token is a file
    "site": ("RBS_BROKER_PASSWORD", "RBS_DATASINK_PASSWORD"),
}


def secret_env_name(name: str) -> bool:
    """``name`` is an environment variable that holds a credential (``RBS_BROKER_PASSWORD``,
    ``RBS_ARTIFACT_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``, ...) or the name of
    the file holding one (``..._FILE``)."""
    return bool(_SECRET_ENV.search(name))


def without_secrets(environ: Mapping[str, str], keep: Sequence[str] = ()) -> dict[str, str]:
    """``environ`` less every credential variable, except those named in ``keep`` (and
    their ``_FILE`` forms): the environment of a child that needs no secret, or only its
    own."""
    kept = set(keep) | {f"{k}_FILE" for k in keep}
    return {k: v for k, v in environ.items() if k in kept or not secret_env_name(k)}


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


def _secret_name(name: str) -> bool:
    """A query parameter name that carries a credential, however percent-encoded."""
    for _ in range(3):  # %2570assword is %70assword is password
        name = unquote(name)
    return name.strip().lower().startswith(QUERY_SECRETS)


def looks_like_url(word: str) -> bool:
    """``word`` is a URL a client library would read credentials from."""
    return "://" in word or bool(_URL_START.match(word))


def url_secret(url: str) -> str | None:
    """Where ``url`` carries a credential (``"its user part"``, ``"its query parameter
    'password'"``), or None: a password after ``:`` in the user part (``user:pw@``,
    ``:pw@``, percent-encoded ``%3A`` too), or a credential query parameter (``?password=``,
    ``&password=``, percent-encoded names), whatever the scheme (``redis``, ``rediss``,
    ``unix``, ...)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    netloc = parts.netloc if parts else url
    userinfo, at, _ = netloc.rpartition("@")
    if at and unquote(userinfo).partition(":")[2]:
        return "its user part"
    query = parts.query if parts else url.partition("?")[2]
    for pair in re.split(r"[&;]", query):
        name = pair.partition("=")[0]
        if name and _secret_name(name):
            return f"its query parameter {unquote(name)[:40]!r}"
    return None


def redact_url(url: str) -> str:
    """``url`` with its password and credential parameters shown as ``***``."""
    if url_secret(url) is None:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    userinfo, at, host = parts.netloc.rpartition("@")
    if at and unquote(userinfo).partition(":")[2]:
        user = unquote(userinfo).partition(":")[0]
        parts = parts._replace(netloc=f"{quote(user, safe='')}:{MASK}@{host}")
    pairs = [f"{p.partition('=')[0]}={MASK}" if _secret_name(p.partition("=")[0]) else p
             for p in re.split(r"(?<=[^&;])(?=[&;])|(?<=[&;])", parts.query)] \
        if parts.query else []
    return urlunsplit(parts._replace(query="".join(pairs)))


def _acl_masked(word: str) -> str:
    return _ACL_SECRET.sub(lambda m: f"{m[1]}{m[2]}{MASK}", word)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as stored or logged: the one masking of credentials in arguments.

    Values of secret options (``-a``, ``--pass``, ``requirepass``, ...), ACL rules that hold
    a password or its hash after ``--user``/``user``/``SETUSER`` (``>pw``, ``<pw``,
    ``#hash``, ``!hash``), the words after ``AUTH``, and URL credentials are ``***``.
    """
    out: list[str] = []
    hide = 0
    acl = False
    for i, word in enumerate(argv):
        if hide:
            out.append(MASK)
            hide -= 1
            continue
        low = word.lower()
        if word.startswith("--") and low not in ACL_CONTEXT:
            acl = False
        if acl:
            word = _acl_masked(word)
        name, eq, _ = word.partition("=")
        if low in ACL_CONTEXT:
            acl = True
            out.append(word)
        elif low in AUTH_WORDS:
            hide = len(argv) if i == 0 else 2
            out.append(word)
        elif word in SECRET_OPTIONS:
            hide = 1
            out.append(word)
        elif eq and name in SECRET_OPTIONS:
            out.append(f"{name}={MASK}")
        elif eq and name.lower() in ACL_CONTEXT:
            out.append(f"{name}={_acl_masked(word[len(name) + 1:])}")
        elif eq and "://" not in name and looks_like_url(word[len(name) + 1:]):
            out.append(f"{name}={redact_url(word[len(name) + 1:])}")
        elif looks_like_url(word):
            out.append(redact_url(word))
        else:
            out.append(word)
    return out


_SPACES = re.compile(r"(\s+)")


def mask_text(text: str) -> str:
    """Free text (a failure reason, a log tail) with the credentials :func:`redact_argv`
    finds in it masked, word by word, per line; quotes around a word are kept."""
    lines = []
    for line in text.splitlines(keepends=True):
        pieces = _SPACES.split(line)
        words = [w.strip("'\"") for w in pieces[::2]]
        masked = redact_argv(words)
        for k, (orig, bare, new) in enumerate(zip(pieces[::2], words, masked)):
            if new != bare:
                pieces[2 * k] = orig.replace(bare, new, 1) if bare else new
        lines.append("".join(pieces))
    return "".join(lines)


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


# where each flag's password goes instead
PASSWORD_ENV = {"--broker": "RBS_BROKER_PASSWORD", "--datasink": "RBS_DATASINK_PASSWORD",
                "--password": "RBS_DATASINK_PASSWORD",
                "--github-api-url": "RBS_GITHUB_TOKEN"}
# rbs options whose value is itself a password (argparse takes any unambiguous prefix)
PASSWORD_FLAGS = ("--password",)


def argv_secret(argv: Sequence[str]) -> str | None:
    """The one-line refusal when ``argv`` (``rbs``'s arguments, any command) holds a
    credential, else None (see :func:`argv_refusal`)."""
    command = next((w for w in argv if not w.startswith("-")), None)
    return argv_refusal(command or "", argv)


# kept for callers of the daemon-only check: every command is checked now
daemon_argv_secret = argv_secret


def _where(flag: str) -> str:
    env = next((e for f, e in PASSWORD_ENV.items() if flag and f.startswith(flag)), None)
    return (f"${env} or a file named by ${env}_FILE" if env
            else "the environment or a file (see docs/security.md)")


def _password_flag(name: str) -> bool:
    return len(name) >= 6 and any(f.startswith(name) for f in PASSWORD_FLAGS)


def argv_refusal(command: str, argv: Sequence[str]) -> str | None:
    """The refusal for ``rbs <command>`` when any word of ``argv`` carries a credential: a
    URL with a password or a credential query parameter (:func:`url_secret`: every scheme,
    percent-encoded forms too), or a password flag (``--password``).

    Every word is looked at, whatever option it follows (argparse accepts abbreviations
    such as ``--brok``), in both ``--flag URL`` and ``--flag=URL`` forms. The line names
    the variable (or file) to use instead; it is printed before anything connects.
    """
    for i, word in enumerate(argv):
        name, eq, value = word.partition("=")
        if _password_flag(name):
            return (f"rbs {command}: {name} puts a password on the command line, which every "
                    f"local user can read in ps; give it in {_where(name)}")
        url = value if eq and name.startswith("--") and "://" not in name else word
        if not looks_like_url(url):
            continue
        found = url_secret(url)
        if found is None:
            continue
        flag = name if url is value else (argv[i - 1] if i and argv[i - 1][:1] == "-" else "")
        return (f"rbs {command}: {flag or 'an argument'} holds a password in {found} "
                f"({redact_url(url)}), which every local user can read in ps; give the URL "
                f"without it and the password in {_where(flag)}")
    return None


# redis-server parameters that hold a password: given in a config file, never in argv
SERVER_SECRET_PARAMS = frozenset({"requirepass", "masterauth", "user", "tls-key-file-pass",
                                  "tls-client-key-file-pass"})


def _conf_word(word: str) -> str:
    """``word`` as one argument of a redis.conf line (sdssplitargs' double-quoted form)."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def split_server_secrets(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """(redis-server ``--name value...`` arguments without the secret-bearing ones, those as
    redis.conf lines): ``requirepass``, ``masterauth``, the ``user`` directive, ..."""
    public: list[str] = []
    lines: list[str] = []
    i = 0
    while i < len(args):
        j = i + 1
        while j < len(args) and not args[j].startswith("--"):
            j += 1
        name = args[i][2:].lower() if args[i].startswith("--") else ""
        if name in SERVER_SECRET_PARAMS:
            lines.append(" ".join([name, *(_conf_word(w) for w in args[i + 1:j])]) + "\n")
        else:
            public.extend(args[i:j])
        i = j
    return public, lines
