"""Strict checks for every stream-message field that can reach a path, an argv, git or a key.

Stream entries are untrusted (anyone with write access to the broker writes them), so the
message classes of :mod:`.messages` call these from ``__post_init__``: a message that exists
has passed them, whether it was decoded or built by our own code. Each check raises
:class:`ValidationError` (a ``MessageError``) naming the field and the rule.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

from redis_benchmarks_spec.events.errors import MessageError

NAME_PATTERN = r"[A-Za-z0-9._:-]{1,200}"
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}"
_NAME = re.compile(NAME_PATTERN)
_ID = re.compile(ID_PATTERN)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# branch and tag names: git's own rules (`git check-ref-format --branch`), see ref_problem
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")
MAX_REF_BYTES = 1024  # git sets no limit; this bounds keys, labels and comments
MAX_REF_COMPONENT_BYTES = 255  # a loose ref is a file: one component is one file name
# characters git allows in a ref that make it read as another name where it is shown
# (a comment, a dashboard, a terminal): format characters (Cf: the bidirectional overrides
# and isolates U+202A-202E and U+2066-2069 of "Trojan Source", zero-width spaces and joiners,
# U+FEFF, the soft hyphen), other controls (C1), line and paragraph separators and spaces
# other than ASCII's
INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Zs"})
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")
_URL = re.compile(r"(https?|git|ssh|file)://[^\s]{1,2000}|/[^\s]{0,2000}")
_KEY = re.compile(r"[!-~]{1,1024}")  # printable ASCII, no space

MAX_TEXT = 4096
MAX_LOG_TAIL = 64 * 1024
MAX_LIST = 64
MAX_REGEXP = 512
MAX_INT = 2**53
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024
ARTIFACT_CHUNK_BYTES = 4 * 1024 * 1024
MAX_CHUNKS = -(-MAX_ARTIFACT_BYTES // ARTIFACT_CHUNK_BYTES)


class ValidationError(MessageError):
    """A field of a message breaks its rule."""


def _fail(field: str, value: object, rule: str) -> ValidationError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValidationError(f"field {field!r}: {shown} {rule}")


def _match(pattern: re.Pattern[str], field: str, value: object, rule: str) -> None:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _fail(field, value, rule)


def name(field: str, value: object) -> None:
    """A name used in keys and paths: ``[A-Za-z0-9._:-]+``, never ``.`` or ``..``."""
    _match(_NAME, field, value, f"is not a name ({NAME_PATTERN})")
    if value in (".", ".."):
        raise _fail(field, value, "is not a name")


def names(field: str, values: Iterable[object]) -> None:
    items = list(values)
    if len(items) > MAX_LIST:
        raise _fail(field, f"{len(items)} items", f"exceeds {MAX_LIST} items")
    for value in items:
        name(field, value)


def ident(field: str, value: object) -> None:
    """An id of our own format (starts with a letter or digit, then name characters)."""
    _match(_ID, field, value, f"is not an id ({ID_PATTERN})")


def sha(field: str, value: object) -> None:
    """A git commit sha: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits."""
    _match(_SHA, field, value, "is not a 40- or 64-character lowercase hex sha")


def sha256(field: str, value: object) -> None:
    _match(_SHA256, field, value, "is not a 64-character lowercase hex sha256")


def ref_problem(value: str) -> str | None:
    r"""Why ``value`` is not a branch or tag name git accepts, or None when it is one.

    The rules of ``git check-ref-format --branch`` (UTF-8 and any other character allowed
    except ASCII controls, space, ``~ ^ : ? * [ \``; no ``..``, ``@{``, ``//``; no component
    starting with ``.`` or ending in ``.lock``; no leading or trailing ``/``, no trailing
    ``.``; not ``-...``, ``HEAD`` or ``@``), plus bounds: valid UTF-8 (a JSON string can hold
    a lone surrogate), at most :data:`MAX_REF_BYTES` bytes and
    :data:`MAX_REF_COMPONENT_BYTES` per ``/`` component, and no character that makes it
    show as another name (:func:`invisible_character`).
    """
    if not value:
        return "is empty"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if size > MAX_REF_BYTES:
        return f"is longer than {MAX_REF_BYTES} bytes"
    bad = _REF_FORBIDDEN.search(value)
    if bad:
        return f"contains {bad.group()!r}, which git does not allow in a ref"
    hidden = invisible_character(value)
    if hidden is not None:
        return hidden
    if value.startswith(("-", "/")) or value.endswith(("/", ".")) or value in ("HEAD", "@"):
        return "is not a name git accepts for a branch (check-ref-format)"
    for part in value.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return f"has a component {part[:40]!r} starting with '.' or ending in '.lock'"
        if len(part.encode("utf-8")) > MAX_REF_COMPONENT_BYTES:
            return f"has a component longer than {MAX_REF_COMPONENT_BYTES} bytes"
    return None


def invisible_character(value: str) -> str | None:
    """Why ``value`` would not show as what it is (its first bidirectional, invisible or
    control character, named), or None."""
    for char in value:
        if char != " " and unicodedata.category(char) in INVISIBLE_CATEGORIES:
            name = unicodedata.name(char, "unnamed")
            return (f"contains U+{ord(char):04X} ({name}), an invisible or bidirectional "
                    "character that makes a name show as another")
    return None


def ref(field: str, value: object) -> None:
    """A branch, tag or version git accepts (:func:`ref_problem`): never an option."""
    if not isinstance(value, str):
        raise _fail(field, value, "is not a branch/tag name")
    problem = ref_problem(value)
    if problem is not None:
        raise _fail(field, value, f"is not a branch/tag name: {problem}")


def optional_ref(field: str, value: object) -> None:
    if value is not None:
        ref(field, value)


def text(field: str, value: object, limit: int = MAX_TEXT) -> None:
    """Free text (reasons, versions): bounded length, no NUL."""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise _fail(field, value, f"is not text of at most {limit} characters")


def integer(field: str, value: object, low: int = 0, high: int = MAX_INT) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _fail(field, value, f"is not an integer in [{low}, {high}]")


def optional_integer(field: str, value: object, low: int = 0, high: int = MAX_INT) -> None:
    if value is not None:
        integer(field, value, low, high)


def regexp(field: str, value: object) -> None:
    """A Python regular expression that compiles, of bounded length."""
    text(field, value, MAX_REGEXP)
    assert isinstance(value, str)
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError) as exc:
        raise _fail(field, value, f"is not a valid regular expression ({exc})") from exc


def url(field: str, value: object) -> None:
    """A git remote: http(s)/git/ssh/file URL or an absolute path; never an option."""
    _match(_URL, field, value, "is not an http(s)/git/ssh/file URL or absolute path")


def key(field: str, value: object) -> None:
    """A Redis key or S3 URL: printable ASCII without spaces, bounded."""
    _match(_KEY, field, value, "is not a printable key of at most 1024 characters")


def env(field: str, value: Mapping[str, object]) -> None:
    if len(value) > MAX_LIST:
        raise _fail(field, f"{len(value)} entries", f"exceeds {MAX_LIST} entries")
    for k, v in value.items():
        _match(_ENV_NAME, field, k, "is not an environment variable name")
        text(f"{field}.{k}", v)


def artifact_size(size_bytes: object, chunks: object, chunked: bool) -> None:
    """``size_bytes`` bounded; ``chunks`` bounded (one MGET per artifact stays small)."""
    integer("size_bytes", size_bytes, 1, MAX_ARTIFACT_BYTES)
    assert isinstance(size_bytes, int)
    integer("chunks", chunks, 1, min(MAX_CHUNKS, size_bytes) if chunked else 1)
