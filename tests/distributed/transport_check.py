"""Run under `mpiexec -n 3`: rank 0 ships every kind of value to the workers through `serialization` — one Isend
per worker, an Ibcast, and row blocks — with a tiny chunk size (many messages per buffer, like a small
--max-distr-chunk-size); each worker checks the bytes it built against its own copy. Rank 0 prints "ok"."""

from __future__ import annotations

import sys

import scipy.sparse as sp
from mpi4py import MPI
from test_units import VALUES

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import make_comms, wait_requests

CHUNK = 7


def same(x: object, y: object) -> bool:
    if sp.issparse(x):
        return (
            x.shape == y.shape
            and x.indptr.tobytes() == y.indptr.tobytes()
            and x.indices.tobytes() == y.indices.tobytes()
            and x.data.tobytes() == y.data.tobytes()
        )
    if x.dtype == object:
        return x.tolist() == y.tolist()
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def main() -> int:
    comms = make_comms(MPI.COMM_WORLD)
    rank, workers = comms.rank, comms.workers
    failures = []
    for i, x in enumerate(VALUES):
        desc = ser.describe(x)
        blocks = [ser.row_block(x, 0, x.shape[0] // 2), ser.row_block(x, x.shape[0] // 2, x.shape[0])]
        if rank == 0:
            reqs = []
            for w in workers:
                reqs += ser.isend(comms.data, ser.buffers(x), w, 1, CHUNK)
                reqs += ser.isend(comms.data, ser.buffers(blocks[w % 2]), w, 2, CHUNK)
            reqs += ser.ibcast(comms.data, ser.buffers(x), 0, CHUNK)
            wait_requests(reqs, lambda: None)
            continue
        bufs1, build1 = ser.allocate(desc)
        bufs2, build2 = ser.allocate(ser.describe(blocks[rank % 2]))
        bufs3, build3 = ser.allocate(desc)
        reqs = ser.irecv(comms.data, bufs1, 0, 1, CHUNK) + ser.irecv(comms.data, bufs2, 0, 2, CHUNK)
        reqs += ser.ibcast(comms.data, bufs3, 0, CHUNK)
        wait_requests(reqs, lambda: None)
        for how, got, want in (("isend", build1(), x), ("block", build2(), blocks[rank % 2]), ("ibcast", build3(), x)):
            if not same(want, got):
                failures.append(f"value {i} by {how} on rank {rank}")
    everything = comms.world.gather(failures, root=0)
    if rank == 0:
        flat = [f for fs in everything for f in fs]
        print("ok" if not flat else "\n".join(flat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
