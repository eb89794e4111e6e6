"""The bytes this process has really sent over TCP: what MPI puts on the wire, measured by the kernel.

The byte counts of the paramserv statistics are what the engine hands to MPI. Whether MPI sends that, more (its
own headers, an algorithm of its choice inside a collective) or the same data twice, only the network can tell.
When the ranks talk over TCP (nodes of a cluster; on one machine `mpiexec` with shared memory off, as
`netem` runs it: MPIR_CVAR_CH4_NETMOD=ofi, MPIR_CVAR_NOLOCAL=1, FI_PROVIDER=tcp), every byte goes through a
socket of the process, and Linux counts each socket's payload bytes (`tcp_info.tcpi_bytes_sent`, minus
retransmissions). `tcp_bytes_sent()` sums them over the process's TCP sockets; the difference across a call is
what the call sent (every message of the call: data, control messages, liveness pings, with MPI's headers).

Shared memory moves no socket bytes, so there the measurement is 0: `tcp_bytes_sent()` returns None when the
process has no TCP socket at all. Linux only (other systems: None).
"""

from __future__ import annotations

import os
import socket
import struct

_BYTES_SENT = 200
"""Offset of `tcpi_bytes_sent` (u64, Linux >= 4.19) in `struct tcp_info`; `tcpi_bytes_retrans` follows it."""
_INFO_LEN = 232


def tcp_bytes_sent() -> int | None:
    """The payload bytes sent so far on this process's open TCP sockets (retransmissions excluded), or None
    when it has none (shared memory, or not Linux)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    seen: set[str] = set()
    total, sockets = 0, 0
    for name in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if not target.startswith("socket:") or target in seen:
            continue
        seen.add(target)  # one socket may sit behind several descriptors
        sent = _sent(int(name))
        if sent is not None:
            total += sent
            sockets += 1
    return total if sockets else None


def _sent(fd: int) -> int | None:
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    try:
        if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
            return None
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _INFO_LEN)
        if len(info) < _BYTES_SENT + 16:
            return None
        sent, retrans = struct.unpack_from("QQ", info, _BYTES_SENT)
        return int(sent - retrans)
    except OSError:
        return None
    finally:
        s.close()
