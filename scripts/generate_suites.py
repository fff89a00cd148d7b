#!/usr/bin/env python3
"""Writes the redis-benchmark suites of test-suites/ from one table, so every suite follows
the same conventions (exact Lua preloads, keyspace checks, request counts, naming).

Run it after editing the table; the YAML files are what the tools read and what reviewers
diff. Conventions:
- redis-benchmark replaces ``__rand_int__`` with a 12-digit zero-padded number in [0, -r),
  so preloads name keys ``<kind>:%012d`` for i in [0, N) and reads always hit.
- Preloads are one ``EVAL`` Lua loop sent by the runner (``preload_tool.tool: redis-cli``):
  an exact keyspace, checked with ``dbconfig.check.keyspacelen``.
- ``-n`` is sized for roughly 10-30 s on a laptop; ``rbs run --test-time`` shortens it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "test-suites"
VARIANTS = ["gcc:12.2.0-amd64-debian-bookworm-default", "dockerhub"]


@dataclass
class S:
    name: str
    group: str
    commands: list[str]
    args: str
    description: str
    priority: int = 3
    preload: str | None = None  # Lua body producing an exact keyspace
    keys: int | None = None  # keyspacelen after the preload (0 for write suites)
    init: list[str] = field(default_factory=list)


def lua(keys: int, body: str) -> str:
    return f"for i=0,{keys - 1} do {body} end return 1"


def strings(n: int, size: int) -> str:
    return lua(n, f"redis.call('SET', string.format('key:%012d', i), string.rep('x', {size}))")


def members(kind: str, n: int, m: int, call: str) -> str:
    """n keys ``<kind>:%012d``, each filled with m members by one variadic call."""
    return (f"local t = {{}} for j=0,{m - 1} do {call} end "
            f"for i=0,{n - 1} do redis.call(unpack(t, 1, 0)) "
            f"redis.call('{{cmd}}', string.format('{kind}:%012d', i), unpack(t)) end return 1")


def filled(kind: str, cmd: str, n: int, m: int, item: str) -> str:
    """Lua: n keys of ``kind`` each receiving m items from ``item`` (Lua expr list per j)."""
    return (f"local t = {{}} for j=0,{m - 1} do {item} end "
            f"for i=0,{n - 1} do redis.call('{cmd}', string.format('{kind}:%012d', i), "
            f"unpack(t)) end return 1")


EVAL_GET = "return redis.call('GET', KEYS[1])"
EVAL_GET_SHA = hashlib.sha1(EVAL_GET.encode()).hexdigest()
V100 = "x" * 100

SUITES = [
    # strings
    S("redis-benchmark-1Kkeys-string-get-100B", "string", ["get"],
      "-c 50 -n 1000000 -r 1000 GET key:__rand_int__",
      "GET of 100 B values over 1K keys", 1, strings(1000, 100), 1000),
    S("redis-benchmark-1Kkeys-string-get-10B-pipeline-10", "string", ["get"],
      "-c 50 -n 5000000 -P 10 -r 1000 GET key:__rand_int__",
      "GET of 10 B values over 1K keys, pipeline 10", 2, strings(1000, 10), 1000),
    S("redis-benchmark-1Kkeys-string-get-1000B-pipeline-100", "string", ["get"],
      "-c 50 -n 10000000 -P 100 -r 1000 GET key:__rand_int__",
      "GET of 1000 B values over 1K keys, pipeline 100", 2, strings(1000, 1000), 1000),
    S("redis-benchmark-string-set-100B", "string", ["set"],
      "-c 50 -n 1000000 -r 100000 -d 100 -t set",
      "SET of 100 B values over up to 100K keys, from an empty keyspace", 1, None, 0),
    S("redis-benchmark-string-set-10B-pipeline-10", "string", ["set"],
      "-c 50 -n 5000000 -P 10 -r 100000 -d 10 -t set",
      "SET of 10 B values, pipeline 10", 2, None, 0),
    S("redis-benchmark-string-set-1000B-pipeline-100", "string", ["set"],
      "-c 50 -n 10000000 -P 100 -r 100000 -d 1000 -t set",
      "SET of 1000 B values, pipeline 100", 2, None, 0),
    S("redis-benchmark-string-incr", "string", ["incr"],
      "-c 50 -n 1000000 -r 100000 -t incr", "INCR of up to 100K counters", 2, None, 0),
    S("redis-benchmark-string-incr-pipeline-100", "string", ["incr"],
      "-c 50 -n 10000000 -P 100 -r 100000 -t incr", "INCR, pipeline 100", 3, None, 0),
    S("redis-benchmark-string-mset-10keys-100B", "string", ["mset"],
      "-c 50 -n 500000 -r 100000 -d 100 -t mset", "MSET of 10 keys with 100 B values", 2,
      None, 0),
    S("redis-benchmark-1Kkeys-string-append-100B", "string", ["append"],
      f"-c 50 -n 200000 -r 1000 APPEND key:__rand_int__ {V100}",
      "APPEND 100 B to 1K existing keys (values grow to ~20 KB)", 3, strings(1000, 100), 1000),
    S("redis-benchmark-1Kkeys-string-getrange-1000B", "string", ["getrange"],
      "-c 50 -n 1000000 -r 1000 GETRANGE key:__rand_int__ 0 99",
      "GETRANGE of the first 100 B of 1000 B values", 3, strings(1000, 1000), 1000),
    S("redis-benchmark-1Kkeys-string-mget-10keys-100B", "string", ["mget"],
      "-c 50 -n 500000 -r 1000 MGET " + " ".join(["key:__rand_int__"] * 10),
      "MGET of 10 random keys with 100 B values", 3, strings(1000, 100), 1000),
    # hashes
    S("redis-benchmark-hash-hset-100B", "hash", ["hset"],
      f"-c 50 -n 1000000 -r 100000 HSET hash:__rand_int__ field:__rand_int__ {V100}",
      "HSET of 100 B values into up to 100K hashes", 2, None, 0),
    S("redis-benchmark-100Kkeys-hash-hget-100B", "hash", ["hget"],
      "-c 50 -n 1000000 -r 100000 HGET hash:__rand_int__ f",
      "HGET of a 100 B field over 100K hashes", 1,
      lua(100000, "redis.call('HSET', string.format('hash:%012d', i), 'f', "
                  "string.rep('x', 100))"), 100000),
    S("redis-benchmark-10Kkeys-hash-hgetall-10fields-100B", "hash", ["hgetall"],
      "-c 50 -n 500000 -r 10000 HGETALL hash:__rand_int__",
      "HGETALL of 10 fields of 100 B over 10K hashes", 2,
      filled("hash", "HSET", 10000, 10,
             "t[#t+1] = 'f' .. j t[#t+1] = string.rep('x', 100)"), 10000),
    S("redis-benchmark-10Kkeys-hash-hincrby", "hash", ["hincrby"],
      "-c 50 -n 1000000 -r 10000 HINCRBY hash:__rand_int__ counter 1",
      "HINCRBY of one field over 10K hashes", 3,
      lua(10000, "redis.call('HSET', string.format('hash:%012d', i), 'counter', 0)"), 10000),
    S("redis-benchmark-1Kkeys-hash-hmget-5fields-pipeline-10", "hash", ["hmget"],
      "-c 50 -n 2000000 -P 10 -r 1000 HMGET hash:__rand_int__ f0 f1 f2 f3 f4",
      "HMGET of 5 fields of 10 B, pipeline 10", 3,
      filled("hash", "HSET", 1000, 10, "t[#t+1] = 'f' .. j t[#t+1] = string.rep('x', 10)"),
      1000),
    # lists
    S("redis-benchmark-list-lpush-100B", "list", ["lpush"],
      f"-c 50 -n 1000000 -r 1000 LPUSH list:__rand_int__ {V100}",
      "LPUSH of 100 B elements into up to 1K lists", 1, None, 0),
    S("redis-benchmark-list-rpush-10B-pipeline-10", "list", ["rpush"],
      "-c 50 -n 5000000 -P 10 -r 1000 RPUSH list:__rand_int__ xxxxxxxxxx",
      "RPUSH of 10 B elements, pipeline 10", 3, None, 0),
    S("redis-benchmark-100keys-list-lpop", "list", ["lpop"],
      "-c 50 -n 500000 -r 100 LPOP list:__rand_int__",
      "LPOP from 100 lists of 10K elements (never runs dry at -n 500000)", 3,
      "local t = {} for j=0,999 do t[#t+1] = 'e' .. j end for i=0,99 do for k=1,10 do "
      "redis.call('RPUSH', string.format('list:%012d', i), unpack(t)) end end return 1", 100),
    S("redis-benchmark-1Kkeys-list-lrange-100", "list", ["lrange"],
      "-c 50 -n 300000 -r 1000 LRANGE list:__rand_int__ 0 99",
      "LRANGE of 100 elements of 10 B", 2,
      filled("list", "RPUSH", 1000, 100, "t[#t+1] = string.rep('x', 10)"), 1000),
    S("redis-benchmark-1Kkeys-list-lindex", "list", ["lindex"],
      "-c 50 -n 1000000 -r 1000 LINDEX list:__rand_int__ 50",
      "LINDEX in the middle of 100-element lists", 3,
      filled("list", "RPUSH", 1000, 100, "t[#t+1] = string.rep('x', 10)"), 1000),
    S("redis-benchmark-1Kkeys-list-lrange-10-pipeline-100", "list", ["lrange"],
      "-c 50 -n 5000000 -P 100 -r 1000 LRANGE list:__rand_int__ 0 9",
      "LRANGE of 10 elements, pipeline 100", 3,
      filled("list", "RPUSH", 1000, 100, "t[#t+1] = string.rep('x', 10)"), 1000),
    # sets
    S("redis-benchmark-set-sadd", "set", ["sadd"],
      "-c 50 -n 1000000 -r 100000 SADD set:__rand_int__ m:__rand_int__",
      "SADD of random members into up to 100K sets", 2, None, 0),
    S("redis-benchmark-1Kkeys-set-sismember", "set", ["sismember"],
      "-c 50 -n 1000000 -r 1000 SISMEMBER set:__rand_int__ m:__rand_int__",
      "SISMEMBER over 1K sets of 100 members (10 % hits)", 2,
      filled("set", "SADD", 1000, 100, "t[#t+1] = string.format('m:%012d', j)"), 1000),
    S("redis-benchmark-1Kkeys-set-smembers-100", "set", ["smembers"],
      "-c 50 -n 300000 -r 1000 SMEMBERS set:__rand_int__",
      "SMEMBERS of 100-member sets", 3,
      filled("set", "SADD", 1000, 100, "t[#t+1] = string.format('m:%012d', j)"), 1000),
    S("redis-benchmark-1Kkeys-set-scard-pipeline-100", "set", ["scard"],
      "-c 50 -n 10000000 -P 100 -r 1000 SCARD set:__rand_int__",
      "SCARD, pipeline 100", 4,
      filled("set", "SADD", 1000, 100, "t[#t+1] = string.format('m:%012d', j)"), 1000),
    # sorted sets
    S("redis-benchmark-zset-zadd", "sorted-set", ["zadd"],
      "-c 50 -n 1000000 -r 100000 ZADD zset:__rand_int__ __rand_int__ m:__rand_int__",
      "ZADD of random members into up to 100K sorted sets", 2, None, 0),
    S("redis-benchmark-100Kkeys-zset-zrangebyscore", "sorted-set", ["zrangebyscore"],
      "-c 50 -n 1000000 -r 100000 ZRANGEBYSCORE zset:__rand_int__ 0 2",
      "ZRANGEBYSCORE returning 3 of 5 members over 100K sorted sets", 1,
      filled("zset", "ZADD", 100000, 5, "t[#t+1] = j t[#t+1] = 'm' .. j"), 100000),
    S("redis-benchmark-1Kkeys-zset-zrange-100", "sorted-set", ["zrange"],
      "-c 50 -n 300000 -r 1000 ZRANGE zset:__rand_int__ 0 99",
      "ZRANGE of 100 members", 2,
      filled("zset", "ZADD", 1000, 100, "t[#t+1] = j t[#t+1] = string.format('m:%012d', j)"),
      1000),
    S("redis-benchmark-1Kkeys-zset-zincrby", "sorted-set", ["zincrby"],
      "-c 50 -n 1000000 -r 1000 ZINCRBY zset:__rand_int__ 1 m:__rand_int__",
      "ZINCRBY of random members (new members are added)", 3,
      filled("zset", "ZADD", 1000, 100, "t[#t+1] = j t[#t+1] = string.format('m:%012d', j)"),
      1000),
    S("redis-benchmark-1Kkeys-zset-zscore-pipeline-10", "sorted-set", ["zscore"],
      "-c 50 -n 5000000 -P 10 -r 1000 ZSCORE zset:__rand_int__ m:__rand_int__",
      "ZSCORE, pipeline 10", 3,
      filled("zset", "ZADD", 1000, 100, "t[#t+1] = j t[#t+1] = string.format('m:%012d', j)"),
      1000),
    # streams
    S("redis-benchmark-stream-xadd-100B", "stream", ["xadd"],
      f"-c 50 -n 1000000 -r 100 XADD stream:__rand_int__ * field {V100}",
      "XADD of one 100 B field into up to 100 streams", 2, None, 0),
    S("redis-benchmark-1Kkeys-stream-xrange-10", "stream", ["xrange"],
      "-c 50 -n 500000 -r 1000 XRANGE stream:__rand_int__ - + COUNT 10",
      "XRANGE of 10 entries from 100-entry streams", 2,
      lua(1000, "for j=1,100 do redis.call('XADD', string.format('stream:%012d', i), '*', "
                "'field', string.rep('x', 100)) end"), 1000),
    # bitmaps
    S("redis-benchmark-bitmap-setbit", "bitmap", ["setbit"],
      "-c 50 -n 1000000 -r 10000 SETBIT bitmap:__rand_int__ 7777 1",
      "SETBIT of one bit in up to 10K bitmaps (offsets cannot be __rand_int__: Redis "
      "rejects the leading zeros)", 3, None, 0),
    S("redis-benchmark-1Kkeys-bitmap-getbit", "bitmap", ["getbit"],
      "-c 50 -n 1000000 -r 1000 GETBIT bitmap:__rand_int__ 500",
      "GETBIT in 1K bitmaps of 1000 bits", 3,
      lua(1000, "redis.call('SETBIT', string.format('bitmap:%012d', i), 999, 1)"), 1000),
    S("redis-benchmark-1Kkeys-bitmap-bitcount-1KB", "bitmap", ["bitcount"],
      "-c 50 -n 1000000 -r 1000 BITCOUNT bitmap:__rand_int__",
      "BITCOUNT of 1 KB bitmaps", 3,
      lua(1000, "redis.call('SET', string.format('bitmap:%012d', i), string.rep('U', 1024))"),
      1000),
    # HyperLogLog
    S("redis-benchmark-hll-pfadd", "hyperloglog", ["pfadd"],
      "-c 50 -n 1000000 -r 1000 PFADD hll:__rand_int__ e:__rand_int__",
      "PFADD of random elements into up to 1K HyperLogLogs", 3, None, 0),
    S("redis-benchmark-1Kkeys-hll-pfcount", "hyperloglog", ["pfcount"],
      "-c 50 -n 1000000 -r 1000 PFCOUNT hll:__rand_int__",
      "PFCOUNT of 1K HyperLogLogs of 100 elements", 3,
      filled("hll", "PFADD", 1000, 100, "t[#t+1] = 'e' .. j"), 1000),
    # geo
    S("redis-benchmark-geo-geoadd", "geo", ["geoadd"],
      "-c 50 -n 1000000 -r 1000 GEOADD geo:__rand_int__ 13.361389 38.115556 m:__rand_int__",
      "GEOADD of random members into up to 1K geo sets", 3, None, 0),
    S("redis-benchmark-1Kkeys-geo-geosearch", "geo", ["geosearch"],
      "-c 50 -n 300000 -r 1000 GEOSEARCH geo:__rand_int__ FROMLONLAT 15 37 BYRADIUS 200 km "
      "ASC COUNT 10",
      "GEOSEARCH by radius in 1K geo sets of 100 points", 3,
      filled("geo", "GEOADD", 1000, 100,
             "t[#t+1] = 13 + j / 100 t[#t+1] = 37 + j / 100 t[#t+1] = 'p' .. j"), 1000),
    S("redis-benchmark-1Kkeys-geo-geodist", "geo", ["geodist"],
      "-c 50 -n 1000000 -r 1000 GEODIST geo:__rand_int__ p1 p50 km",
      "GEODIST between two members", 4,
      filled("geo", "GEOADD", 1000, 100,
             "t[#t+1] = 13 + j / 100 t[#t+1] = 37 + j / 100 t[#t+1] = 'p' .. j"), 1000),
    # generic keyspace
    S("redis-benchmark-1Kkeys-generic-exists", "generic", ["exists"],
      "-c 50 -n 1000000 -r 2000 EXISTS key:__rand_int__",
      "EXISTS with 50 % hits", 2, strings(1000, 10), 1000),
    S("redis-benchmark-1Kkeys-generic-expire", "generic", ["expire"],
      "-c 50 -n 1000000 -r 1000 EXPIRE key:__rand_int__ 3600",
      "EXPIRE (one hour) of existing keys", 3, strings(1000, 10), 1000),
    S("redis-benchmark-1Kkeys-generic-ttl", "generic", ["ttl"],
      "-c 50 -n 1000000 -r 1000 TTL key:__rand_int__",
      "TTL of keys with an expiry", 4,
      lua(1000, "redis.call('SET', string.format('key:%012d', i), 'v', 'EX', 86400)"), 1000),
    S("redis-benchmark-100Kkeys-generic-del", "generic", ["del"],
      "-c 50 -n 1000000 -r 100000 DEL key:__rand_int__",
      "DEL over 100K keys (most deletes miss once the keyspace thins out)", 3,
      strings(100000, 10), 100000),
    # scripting
    S("redis-benchmark-1Kkeys-scripting-eval-get", "scripting", ["eval", "get"],
      f'-c 50 -n 500000 -r 1000 EVAL "{EVAL_GET}" 1 key:__rand_int__',
      "EVAL of a script doing one GET", 2, strings(1000, 100), 1000),
    S("redis-benchmark-1Kkeys-scripting-evalsha-get", "scripting", ["evalsha"],
      f"-c 50 -n 1000000 -r 1000 EVALSHA {EVAL_GET_SHA} 1 key:__rand_int__",
      "EVALSHA of a script doing one GET (loaded by init_commands)", 2, strings(1000, 100),
      1000, [f'SCRIPT LOAD "{EVAL_GET}"']),
    S("redis-benchmark-scripting-eval-incr-pipeline-10", "scripting", ["eval", "incr"],
      "-c 50 -n 2000000 -P 10 -r 1000 EVAL \"return redis.call('INCR', KEYS[1])\" 1 "
      "counter:__rand_int__",
      "EVAL of a script doing one INCR, pipeline 10", 3, None, 0),
    # connection
    S("redis-benchmark-ping-inline", "connection", ["ping"],
      "-c 50 -n 1000000 -t ping_inline", "PING in the inline protocol", 1),
    S("redis-benchmark-ping-mbulk-pipeline-100", "connection", ["ping"],
      "-c 50 -n 20000000 -P 100 -t ping_mbulk", "PING as a multibulk, pipeline 100", 2),
]


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def render(s: S) -> str:
    lines = ["version: 0.4", f"name: {s.name}", f"description: {quote(s.description)}",
             "dbconfig:", "  configuration-parameters:", "    save: '\"\"'"]
    if s.keys is not None:
        lines += ["  check:", f"    keyspacelen: {s.keys}"]
    if s.init:
        lines += ["  init_commands:"] + [f"    - {quote(c)}" for c in s.init]
    if s.preload:
        lines += ["  preload_tool:", "    run_image: redis:7.0.15", "    tool: redis-cli",
                  f"    arguments: {quote('EVAL ' + chr(34) + s.preload + chr(34) + ' 0')}"]
        lines += ["  dataset_name: " + s.name.split("-")[2] if s.name.split("-")[2][0].isdigit()
                  else "  dataset_name: empty"]
    lines += ["tested-groups:", f"  - {s.group}", "tested-commands:"]
    lines += [f"  - {c}" for c in s.commands]
    lines += ["redis-topologies:", "  - oss-standalone", "build-variants:"]
    lines += [f"  - {v}" for v in VARIANTS]
    lines += [f"priority: {s.priority}", "clientconfig:", "  run_image: redis:7.0.15",
              "  tool: redis-benchmark", f"  arguments: {quote(s.args)}", "  resources:",
              "    requests:", "      cpus: '1'", "      memory: 2g"]
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for s in SUITES:
        (OUT / f"{s.name}.yml").write_text(render(s))
    print(f"wrote {len(SUITES)} suites to {OUT}")


if __name__ == "__main__":
    main()
