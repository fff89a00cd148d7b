"""A throwaway ACL user for the client tools of one run.

redis-benchmark (7.0) and memtier_benchmark (2.3) take a password only on their command
line (``-a``, ``--authenticate``): neither reads ``REDISCLI_AUTH``, a file or stdin (checked
on the 7.0.15 binary and in memtier's 2.3.0 source), so every local user could read it in
``ps`` while the tool runs. When the suite's server needs a password, the tools therefore
never get the suite's: before they start, the runner creates an ACL user with a random
name and password and the permissions of the user the suite declared (its commands, keys
and channels; selectors are not copied), on every primary; the tools authenticate as that
user, and it is deleted when the run ends. What ``ps`` showed is worthless afterwards, and
the result says which user it was (``client_credential``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from redis_benchmarks_spec.loadgen.base import ClientTarget

PREFIX = "rbs-run-"
ALL_RULES = ["+@all", "~*", "&*"]


@dataclass
class RunUser:
    """The user made for one run, and the servers that have it."""

    name: str
    password: str = field(repr=False)
    clients: list[redis.Redis] = field(default_factory=list, repr=False)

    def target(self, target: ClientTarget) -> ClientTarget:
        """``target`` authenticating as this user."""
        return replace(target, user=self.name, password=self.password)

    def note(self) -> str:
        return (f"throwaway ACL user {self.name}: the client tools' command lines held its "
                "password, not the suite's; deleted when the run ended")

    def delete(self) -> None:
        """Remove the user from every server that has it (a failure raises after trying all)."""
        failed: list[redis.RedisError] = []
        for client in self.clients:
            try:
                client.execute_command("ACL", "DELUSER", self.name)
            except redis.RedisError as exc:
                failed.append(exc)
        self.clients = []
        if failed:
            raise failed[0]


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _rules(client: redis.Redis, source: str | None) -> list[str]:
    """The permissions of ``source`` (the default user when None) as ACL SETUSER rules."""
    raw: Any = client.execute_command("ACL", "GETUSER", source or "default")
    if not raw:
        return list(ALL_RULES)
    # redis-py parses the reply into a dict; a raw connection gives the flat list
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2])
    info = {_text(k): v for k, v in pairs}
    rules: list[str] = []
    for key in ("commands", "keys", "channels"):  # "-@all +get +ping", "~app:*", "&*"
        value = _text(info.get(key))
        rules += value.split() if isinstance(value, str) else [_text(v) for v in value or []]
    return rules or list(ALL_RULES)


def create(clients: list[redis.Redis], source: str | None) -> RunUser:
    """A new user on every server of ``clients`` with ``source``'s permissions.

    Raises ``redis.ResponseError`` when a server refuses (no ACL before Redis 6), after
    removing it from the servers that had accepted it.
    """
    user = RunUser(PREFIX + secrets.token_hex(6), secrets.token_urlsafe(32))
    rules = _rules(clients[0], source)
    try:
        for client in clients:
            client.execute_command("ACL", "SETUSER", user.name, "reset", "on",
                                   f">{user.password}", *rules)
            user.clients.append(client)
    except redis.ResponseError:
        user.delete()
        raise
    return user


def for_tools(clients: list[redis.Redis],
              target: ClientTarget) -> tuple[ClientTarget, RunUser | None, str]:
    """(the target the tools get, the user to delete after, what the result records).

    No password needed: ``target`` unchanged. A server that refuses ACL SETUSER (before
    Redis 6) leaves the suite's password in the tools' argv, and the record says so.
    """
    if not target.password:
        return target, None, ""
    try:
        user = create(clients, target.user)
    except redis.ResponseError as exc:
        return target, None, ("the suite's password was on the client tools' command lines: "
                              f"the server refused a throwaway ACL user ({exc})")
    return user.target(target), user, user.note()
