"""The credentials a suite declares for its server, so the runner connects the way the suite
set the server up.

A suite can protect its server with ``configuration-parameters: {requirepass: pw}`` (or the
``user`` directive), or from ``init_commands`` with ``CONFIG SET requirepass pw`` and
``ACL SETUSER name on >pw ~* +@all`` (``ACL SETUSER default off`` included). The runner's own
connections and the client tools then authenticate as:

- the default user, with its password, while the default user is enabled;
- otherwise the first enabled ACL user the suite gave a clear-text password (in the order
  declared), since nothing else could connect.

Two moments matter: the server as started (configuration parameters only: the runner's
PING and the replicas' ``masterauth``), and the server once the init commands ran (the
preload, the clients and the telemetry). A declaration that leaves no way in (the default
user disabled, no enabled user with a password) is an error naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.words import split_words
from redis_benchmarks_spec.suites.reader import SpecReader

DEFAULT_USER = "default"


@dataclass(frozen=True)
class Credentials:
    """Who to authenticate as: ``user`` None is the default user (AUTH <password>)."""

    password: str
    user: str | None = None

    def __repr__(self) -> str:  # never print the password
        return f"Credentials(user={self.user!r}, password='***')"


@dataclass
class _User:
    enabled: bool
    passwords: list[str] = field(default_factory=list)
    nopass: bool = False


@dataclass
class _Acl:
    """The server's users as the declarations so far leave them."""

    users: dict[str, _User] = field(
        default_factory=lambda: {DEFAULT_USER: _User(enabled=True, nopass=True)})

    def requirepass(self, password: str) -> None:
        default = self.users[DEFAULT_USER]
        default.passwords, default.nopass = ([password], False) if password else ([], True)

    def setuser(self, name: str, rules: list[str]) -> None:
        user = self.users.setdefault(name, _User(enabled=False))
        for rule in rules:
            low = rule.lower()
            if low in ("on", "off"):
                user.enabled = low == "on"
            elif rule.startswith(">"):
                user.passwords.append(rule[1:])
                user.nopass = False
            elif rule.startswith("#"):
                user.nopass = False  # a hashed password: required, but not one we know
            elif rule.startswith("<") and rule[1:] in user.passwords:
                user.passwords.remove(rule[1:])
            elif low == "nopass":
                user.passwords, user.nopass = [], True
            elif low in ("resetpass", "reset"):
                user.passwords, user.nopass = [], False
                user.enabled = user.enabled and low != "reset"

    def identity(self) -> Credentials | None | str:
        """Who connects: Credentials, None (no AUTH needed), or why nobody can."""
        default = self.users[DEFAULT_USER]
        if default.enabled and default.nopass:
            return None
        if default.enabled and default.passwords:
            return Credentials(default.passwords[0])
        for name, user in self.users.items():
            if name != DEFAULT_USER and user.enabled and (user.passwords or user.nopass):
                # a nopass user takes any password
                return Credentials(user.passwords[0] if user.passwords else "nopass", name)
        return ("no enabled user has a password the suite shows (the default user is "
                "disabled or has none; a #<hash> password cannot be used to connect)")


def _config(acl: _Acl, params: dict[str, Any]) -> None:
    for name, value in params.items():
        key = str(name).lower()
        try:
            words = split_words("" if value is None else str(value))
        except ValueError:
            continue  # reported by the configuration-parameters reader
        if key == "requirepass":
            acl.requirepass(words[0] if words else "")
        elif key == "user" and words:
            acl.setuser(words[0], words[1:])


def _command(acl: _Acl, argv: list[str]) -> None:
    words = [w.lower() for w in argv[:3]]
    if words[:3] == ["config", "set", "requirepass"] and len(argv) >= 4:
        acl.requirepass(argv[3])
    elif words[:2] == ["acl", "setuser"] and len(argv) >= 3:
        acl.setuser(argv[2], argv[3:])


def declared(reader: SpecReader, params: dict[str, Any],
             init_commands: list[list[str]]) -> tuple[Credentials | None, Credentials | None]:
    """(credentials as the server starts, credentials once the init commands ran)."""
    acl = _Acl()
    _config(acl, params)
    at_start = acl.identity()
    if isinstance(at_start, str):
        reader.problem("dbconfig.configuration-parameters", f"no way to connect: {at_start}")
        at_start = None
    for argv in init_commands:
        _command(acl, argv)
    after_init = acl.identity()
    if isinstance(after_init, str):
        reader.problem("dbconfig.init_commands", f"no way to connect: {after_init}")
        after_init = None
    return at_start, after_init
