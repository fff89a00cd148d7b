"""redis-benchmarks-spec: continuous benchmarking for Redis."""

__version__ = "0.1.0"
