"""Hold every packet of one netfilter queue for a fixed delay, then let it go, in order.

The stand-in for ``tc qdisc add ... netem delay`` on kernels built without netem (this VM's:
``CONFIG_NET_SCH_NETEM is not set``, and no modules): the test sends the server's egress on
the veth to a queue (``iptables -j NFQUEUE`` in the server's namespace) and this process,
started in that namespace, accepts each packet ``--delay-ms`` after the kernel queued it.
The kernel's netfilter queue does the packet handling; NetfilterQueue (PyPI) binds it.

    python -m tests.netdelay --queue 7 --delay-ms 10
"""

from __future__ import annotations

import argparse
import collections
import select
import signal
import sys
import time
from types import FrameType

from netfilterqueue import NetfilterQueue, Packet


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queue", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    args = parser.parse_args(argv)
    delay = args.delay_ms / 1000.0
    held: collections.deque[tuple[float, Packet]] = collections.deque()
    queue = NetfilterQueue()
    queue.bind(args.queue, lambda pkt: held.append((time.monotonic() + delay, pkt)),
               max_len=65536)
    signal.signal(signal.SIGTERM, _stop)
    print("ready", flush=True)
    try:
        fd = queue.get_fd()
        while True:
            wait = max(0.0, held[0][0] - time.monotonic()) if held else 1.0
            if select.select([fd], [], [], wait)[0]:
                queue.run(block=False)
            now = time.monotonic()
            while held and held[0][0] <= now:
                held.popleft()[1].accept()
    finally:
        for _, pkt in held:
            pkt.accept()
        queue.unbind()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
