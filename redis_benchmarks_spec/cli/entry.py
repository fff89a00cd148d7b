"""The ``rbs`` console script. Before anything else is imported (the command modules take
most of a second), any command given a credential on its command line (a URL with a
password or a credential query parameter, ``--password``) is refused
(``common/credentials.py``): the password is in ``/proc/<pid>/cmdline`` for as long as the
process lives, so the process ends at once, before anything connects."""

from __future__ import annotations

import faulthandler
import signal
import sys

from redis_benchmarks_spec.common.credentials import argv_secret

EXIT_USAGE = 2  # as cli.errors.EXIT_USAGE, without importing it here


def main() -> int:
    """Refuse a credential in argv, else run ``rbs``."""
    refusal = argv_secret(sys.argv[1:])
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return EXIT_USAGE
    # `kill -USR1 <pid>` prints where every thread of a stuck rbs is, on its stderr
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    from redis_benchmarks_spec.cli.main import main as rbs_main
    return rbs_main()


if __name__ == "__main__":
    sys.exit(main())
