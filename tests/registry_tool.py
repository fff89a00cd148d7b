"""A driver module as a new tool would be written: one class (here reused) and one entry.

Used by tests/test_driver_registry.py to show that registering a tool is one module.
"""

from __future__ import annotations

from redis_benchmarks_spec.loadgen.drivers import RedisBenchmarkDriver
from redis_benchmarks_spec.loadgen.registry import DriverEntry

DRIVER = DriverEntry("rb-copy", "redis-benchmark", "--rb-copy-bin", RedisBenchmarkDriver)
