"""Whether a process (or a child in its group) holds the listening socket on a port.

A port found free can be taken by another test's server before ours binds it; ours then
exits, and a readiness poll on the port passes against the other one. Asking the kernel
who listens there tells them apart (Linux: /proc/net/tcp and the process's descriptors).
"""

from __future__ import annotations

import os
from pathlib import Path

LISTEN = "0A"  # the TCP state column of /proc/net/tcp


def listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on `port` (IPv4 and IPv6)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def group_listens_on(pgid: int, port: int) -> bool:
    """Whether a process of group `pgid` holds a socket listening on `port`."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            fds = Path(f"/proc/{pid}/fd")
            if any(os.readlink(fd) in inodes for fd in fds.iterdir()):
                return True
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return False
