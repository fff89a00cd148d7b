"""The ``rbs`` console script. Before anything else is imported (the command modules take
most of a second), a daemon started with a password in a URL on its command line is refused
(``common/credentials.py``): the password is in ``/proc/<pid>/cmdline`` for as long as the
process lives, so the process ends at once."""

from __future__ import annotations

import sys

from redis_benchmarks_spec.common.credentials import daemon_argv_secret

EXIT_USAGE = 2  # as cli.errors.EXIT_USAGE, without importing it here


def main() -> int:
    """Refuse a daemon's password in argv, else run ``rbs``."""
    refusal = daemon_argv_secret(sys.argv[1:])
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return EXIT_USAGE
    from redis_benchmarks_spec.cli.main import main as rbs_main
    return rbs_main()


if __name__ == "__main__":
    sys.exit(main())
