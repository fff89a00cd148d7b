"""The broker flags every pipeline command shares, and the checked client they give."""

from __future__ import annotations

import argparse
import os

import redis

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.events import names as names_mod

ENV_BROKER = "RBS_BROKER"
ENV_BROKER_PASSWORD = "RBS_BROKER_PASSWORD"  # or RBS_BROKER_PASSWORD_FILE
DEFAULT_BROKER = "redis://127.0.0.1:6379"


def add_broker(p: argparse.ArgumentParser) -> None:
    """``--broker`` (and the stream namespace flags) on a command that talks to the broker."""
    p.add_argument("--broker", default=os.environ.get(ENV_BROKER, DEFAULT_BROKER),
                   help=f"Redis URL of the broker (default: ${ENV_BROKER} or {DEFAULT_BROKER})")
    names_mod.add_arguments(p)


def broker_client(args: argparse.Namespace) -> redis.Redis:
    """The broker, checked: a bad URL or a broker that is down is a one-line usage error."""
    return checks.broker("--broker", credentials.with_password(args.broker,
                                                               ENV_BROKER_PASSWORD))
