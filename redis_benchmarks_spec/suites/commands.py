"""Which Redis commands a client configuration issues, inferred from its arguments.

Used by ``rbs suites lint`` to catch ``tested-commands`` that the benchmark never sends.
"""

from __future__ import annotations

import re

from redis_benchmarks_spec.suites.suite import ToolConfig

# redis-benchmark -t test names and the commands they send
REDIS_BENCHMARK_TESTS: dict[str, set[str]] = {
    "ping_inline": {"ping"}, "ping_mbulk": {"ping"}, "ping": {"ping"},
    "set": {"set"}, "get": {"get"}, "incr": {"incr"}, "lpush": {"lpush"}, "rpush": {"rpush"},
    "lpop": {"lpop"}, "rpop": {"rpop"}, "sadd": {"sadd"}, "hset": {"hset"}, "spop": {"spop"},
    "zadd": {"zadd"}, "zpopmin": {"zpopmin"}, "lrange": {"lrange", "lpush"},
    "lrange_100": {"lrange", "lpush"}, "lrange_300": {"lrange", "lpush"},
    "lrange_500": {"lrange", "lpush"}, "lrange_600": {"lrange", "lpush"},
    "mset": {"mset"}, "xadd": {"xadd"},
}
REDIS_BENCHMARK_VALUE_OPTS = {
    "-h", "-p", "-s", "-a", "--user", "-u", "-c", "-n", "-d", "--dbnum", "--threads", "-k",
    "-r", "-P", "-t", "--precision", "--sni", "--cacert", "--cacertdir", "--cert", "--key",
    "--tls-ciphers", "--tls-ciphersuites", "--seed",
}
_LUA_CALL = re.compile(r"redis\.p?call\(\s*['\"]([A-Za-z]+)['\"]")


def _script_commands(args: list[str]) -> set[str]:
    found: set[str] = set()
    for arg in args:
        found |= {m.lower() for m in _LUA_CALL.findall(arg)}
    return found


def redis_benchmark_command(argv: list[str]) -> list[str]:
    """The custom command after the options (empty when the run uses ``-t`` tests)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in REDIS_BENCHMARK_VALUE_OPTS:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return argv[i:]
    return []


def redis_benchmark_tests(argv: list[str]) -> list[str]:
    """The ``-t`` test names, lower case, or [] when none are given."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-t":
            return [t.strip().lower() for t in argv[i + 1].split(",") if t.strip()]
    return []


def _redis_benchmark_issued(argv: list[str]) -> set[str]:
    command = redis_benchmark_command(argv)
    if command:
        return {command[0].lower()} | _script_commands(command[1:])
    tests = redis_benchmark_tests(argv) or list(REDIS_BENCHMARK_TESTS)
    issued: set[str] = set()
    for test in tests:
        issued |= REDIS_BENCHMARK_TESTS.get(test, {test})
    return issued


def _memtier_issued(argv: list[str]) -> set[str]:
    issued: set[str] = set()
    ratio = "1:10"
    for i, arg in enumerate(argv):
        value = None
        if arg.startswith("--command="):
            value = arg.split("=", 1)[1]
        elif arg == "--command" and i + 1 < len(argv):
            value = argv[i + 1]
        if value:
            words = value.split()
            issued.add(words[0].lower())
            issued |= _script_commands(words[1:] + [value])
        if arg.startswith("--ratio="):
            ratio = arg.split("=", 1)[1]
        elif arg == "--ratio" and i + 1 < len(argv):
            ratio = argv[i + 1]
    if issued:
        return issued
    sets, _, gets = ratio.partition(":")
    if sets.strip() not in ("0", ""):
        issued.add("set")
    if gets.strip() not in ("0", ""):
        issued.add("get")
    return issued


def issued_commands(config: ToolConfig) -> set[str] | None:
    """Commands the config sends, lower case; None when the tool is not understood."""
    argv = config.argv()
    if config.tool == "redis-benchmark":
        return _redis_benchmark_issued(argv)
    if config.tool == "memtier_benchmark":
        return _memtier_issued(argv)
    return None
