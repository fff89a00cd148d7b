"""common.words.split_words is shlex.split, on every shape of command line suites carry."""

from __future__ import annotations

import shlex

import pytest

from redis_benchmarks_spec.common.words import split_words

LINES = [
    "", "   ", "SET key value", "  SET  key\tvalue \n", "HSET h f1 v1 f2 v2",
    "EVAL \"for i=1,10 do redis.call('SET', i, i) end\" 0", "SET 'a b' c", "SET a\\ b c",
    "SET k #notacomment", "ZADD z 1.5 m -- --x", "SET k \"\"", "SET k ''", "a\u00a0b c",
    "SET\x0bk v",
]


@pytest.mark.parametrize("line", LINES)
def test_same_words_as_shlex(line: str) -> None:
    assert split_words(line) == shlex.split(line)


def test_unbalanced_quote_raises_like_shlex() -> None:
    with pytest.raises(ValueError):
        split_words("SET 'a b")
