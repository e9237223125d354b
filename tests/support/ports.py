"""Free loopback ports for servers a test starts and must name before they listen.

A port from `bind(("127.0.0.1", 0))` comes from the kernel's ephemeral range, the same range
every outgoing connection on the machine draws from: between the probe closing and the server
binding, any process's connection (with four workers, there are many) may take it, and the
server fails with "Address already in use". So a port is drawn at random below that range
(Linux: 32768-60999; read from /proc where it is), where no outgoing connection lands, and
checked by binding it once. A server that can take port 0 and say which port it got needs
none of this.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DRAWS = 50


def _ephemeral_start() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing listens on, outside the ephemeral range where possible."""
    top = _ephemeral_start()
    for _ in range(_DRAWS if top > LOWEST + 1000 else 0):
        port = random.randrange(LOWEST, top)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # a machine with another range: the kernel's choice
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
