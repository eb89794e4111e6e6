"""The communication options of `paramserv` from DaphneDSL through the real CLI: sharded and co-located servers,
the all-reduce family, hierarchy, GOSSIP, EASGD and the value bound; LOCAL threads and MPI ranks; bad options
as located errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_paramserv_dsl import LINREG, MLP, daphnec, driver, ok

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "distributed"))
from dist_helpers import run_mpi  # noqa: E402

DIFF = "print(sum(abs(M[0] - B[0])) + sum(abs(M[1] - B[1])) + sum(abs(M[2] - B[2])) + sum(abs(M[3] - B[3])));"
"""Prints exactly 0 when the models M and B (MLP: 4 matrices) are bit-identical."""


def test_deterministic_strategies_equal_bsp(tmp_path: Path) -> None:
    """Every deterministic strategy trains exactly BSP's model (the canonical summation order)."""
    common = f"{MLP.format(lr=0.02)}, epochs=2, batchsize=32"
    variants = ['utype="BSP", k=3, servers=2', 'utype="BSP", k=3, servers=4', 'utype="BSP", k=3, colocated=true',
                'utype="SSP", staleness=0, k=3, servers=3', 'utype="ALLREDUCE", k=3, allreduce="RING"',
                'utype="ALLREDUCE", k=3, allreduce="TREE"', 'utype="ALLREDUCE", k=3, allreduce="MASTER"',
                'utype="ALLREDUCE", k=3, allreduce="ALLGATHER"']  # fmt: skip
    lines = ["X, y = m.regression_data(900, 6);", "init = m.mlp_init(6, 8);",
             f'B = paramserv(model=init, features=X, labels=y, {common}, utype="BSP", k=3);']  # fmt: skip
    for v in variants:
        lines += [f"M = paramserv(model=init, features=X, labels=y, {common}, {v});", DIFF]
    # threads=2 runs k * 2 workers; with a power of two per rank that is BSP with 4 workers, bit for bit
    lines += [f'B = paramserv(model=init, features=X, labels=y, {common}, utype="BSP", k=4);',
              f'M = paramserv(model=init, features=X, labels=y, {common}, utype="ALLREDUCE", k=2, threads=2, '
              'allreduce="RING");', DIFF]  # fmt: skip
    out = ok(daphnec(driver(tmp_path, "det", "\n".join(lines))))
    assert out == ["0"] * (len(variants) + 1), out


def test_decentralised_and_asynchronous_strategies_learn(tmp_path: Path) -> None:
    """GOSSIP (both topologies), EASGD, LOCALSGD over a ring all-reduce, ASP with a value bound, sharded ASP and
    co-located SSP: each brings the loss well below the start (the ones that follow the summed gradient to near
    the noise floor, the averaging ones a third as fast); the seeded GOSSIP runs are reproducible."""
    common = f"{LINREG.format(lr=0.02)}, k=3, epochs=6, batchsize=32"
    gossip = 'utype="GOSSIP", topology="RANDOM", seed=7'
    runs = ['utype="GOSSIP"', gossip, gossip, 'utype="EASGD", period=2, alpha=0.3',
            'utype="LOCALSGD", period=2, allreduce="RING"', 'utype="ASP", delta_max=0.05', 'utype="ASP", servers=2',
            'utype="SSP", staleness=2, colocated=true']  # fmt: skip
    lines = ["X, y = m.regression_data(1500, 8);", "print(m.linreg_mse(m.linreg_init(8), X, y));"]
    for r in runs:
        lines += [f"M = paramserv(model=m.linreg_init(8), features=X, labels=y, {common}, {r});",
                  "print(m.linreg_mse(M, X, y));"]  # fmt: skip
    losses = [float(x) for x in ok(daphnec(driver(tmp_path, "dec", "\n".join(lines))))]
    initial, got = losses[0], dict(zip(runs, losses[1:]))
    assert losses[2] == losses[3]  # GOSSIP RANDOM with the same seed: the same model
    for r, loss in got.items():  # model averaging moves by the mean of the k gradients, BSP by their sum
        bound = 0.5 if "EASGD" in r else 0.15 if "GOSSIP" in r or "LOCALSGD" in r else 0.05
        assert loss < bound * initial, (r, loss, initial, got)


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [  # the other messages: test_comm_units.py (the same validation, without a process per case)
        ('utype="BSP", allreduce="RING"', 3, "allreduce=RING applies to utype ALLREDUCE or LOCALSGD, not BSP"),
        ('utype="BSP", colocated="yes"', 2, "argument 'colocated' must be true or false"),
        ('utype="EASGD", sfb=true', 3, "sfb (sufficient factors instead of gradients) applies to utype ALLREDUCE, "),
    ],
)
def test_bad_communication_options(tmp_path: Path, args: str, code: int, fragment: str) -> None:
    body = ("X, y = m.regression_data(100, 3);\n"
            f"M = paramserv(model=m.linreg_init(3), features=X, labels=y, {LINREG.format(lr=0.1)}, k=2, {args});\n"
            "print(M[0]);")  # fmt: skip
    res = daphnec(driver(tmp_path, "bad", body))
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr
    assert "bad.daph:3:5: error: " in res.stderr and ": error: " in res.stderr and fragment in res.stderr, res.stderr


def test_mpi_strategies_match_local(tmp_path: Path) -> None:
    """4 real ranks: RING and TREE all-reduce, two dedicated server shards and co-located shards give LOCAL
    mode's model exactly (the script computes both and prints their difference)."""
    common = f"{MLP.format(lr=0.02)}, epochs=2, batchsize=32"
    pairs = [('utype="ALLREDUCE", allreduce="RING", k=3', 'utype="BSP", k=3'),
             ('utype="ALLREDUCE", allreduce="TREE", k=3', 'utype="BSP", k=3'),
             ('utype="BSP", servers=2, k=2', 'utype="BSP", k=2'),
             ('utype="BSP", colocated=true, k=3', 'utype="BSP", k=3')]  # fmt: skip
    lines = ["X, y = m.regression_data(600, 6);", "init = m.mlp_init(6, 8);"]
    for mpi, local in pairs:
        lines += [f'M = paramserv(model=init, features=X, labels=y, {common}, mode="MPI", {mpi});',
                  f"B = paramserv(model=init, features=X, labels=y, {common}, {local});", DIFF]  # fmt: skip
    script = driver(tmp_path, "mpi", "\n".join(lines))
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0"] * len(pairs), res.stdout + res.stderr


FC = 'upd=m.fc_gradients, agg=m.sgd, hyperparams=createList(as.matrix(0.05)), freq="BATCH", epochs=2, batchsize=8'
FC_DIFF = (
    "print(sum(abs(M[0] - B[0])) + sum(abs(M[1] - B[1])) + sum(abs(M[2] - B[2])) + sum(abs(M[3] - B[3])) + "
    "sum(abs(M[4] - B[4])) + sum(abs(M[5] - B[5])));"
)
FC_REL = "print((" + " + ".join(f"sum(abs(M[{j}] - B[{j}]))" for j in range(6)) + ") / (" + \
    " + ".join(f"sum(abs(B[{j}]))" for j in range(6)) + "));"  # fmt: skip
"""The relative difference of the models M and B (FC: 6 matrices): <= 1e-12 where the summation order differs."""


def test_sufficient_factors_and_overlap_equal_bsp(tmp_path: Path) -> None:
    """sfb=true on the FC classifier (64-128-128-4, batches of 8 rows): the compiler finds the three weight
    gradients t(H) @ dZ, the cost model sends the factors of the two wide ones at k=3, and the model equals BSP's
    (LOCAL threads bit for bit; 3 MPI worker ranks, which rebuild the sum as one product of the stacked factors,
    within 1e-12 relative; the statistics show the smaller pushes). overlap=true (buckets of 40 kB: the biases
    share one, W1 and W2 are split into chunks) gives BSP's model too, and so does overlap=true with sfb=true (the
    biases and W3 in buckets as upd's factors variant finalises them, each factor by its own all-gather as soon
    as the variant marks it final: the A factors during the forward pass, the B factors during the backward pass)."""
    lines = ["X, y = m.classes_data(480, 64, 4);", "init = m.fc_init(64, 128, 128, 4);",
             f'B = paramserv(model=init, features=X, labels=y, {FC}, utype="BSP", k=3);',
             f'M = paramserv(model=init, features=X, labels=y, {FC}, utype="ALLREDUCE", allreduce="RING", k=3, '
             'sfb=true);', FC_DIFF,
             f'M = paramserv(model=init, features=X, labels=y, {FC}, utype="ALLREDUCE", allreduce="RING", k=3, '
             'sfb=true, mode="MPI");', FC_REL,
             f'M = paramserv(model=init, features=X, labels=y, {FC}, utype="ALLREDUCE", k=3, overlap=true, '
             'bucket=40000, mode="MPI");', FC_DIFF,
             f'M = paramserv(model=init, features=X, labels=y, {FC}, utype="ALLREDUCE", k=3, overlap=true, '
             'sfb=true, bucket=40000, mode="MPI");', FC_REL]  # fmt: skip
    script = driver(tmp_path, "sfb", "\n".join(lines))
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split()
    assert out[0] == out[2] == "0" and float(out[1]) <= 1e-12 and float(out[3]) <= 1e-12, res.stdout + res.stderr
    # push sent: BSP's workers the full gradients; sfb's the factors of W1 and W2 plus the rest (in MPI mode what
    # each rank hands to the all-gather, (k-1) times its factors, and to the ring)
    totals = [line.split() for line in res.stderr.splitlines() if line.strip().startswith("total")]
    bsp, local, mpi = (float(t[7]) for t in totals[:3])
    assert local < 0.25 * bsp and mpi < 0.4 * bsp, (bsp, local, mpi)  # measured 0.17 and 0.32


LENET = ROOT / "examples" / "paramserv" / "lenet.daph"
LENET_PS = 'upd=m.lenet_gradients, agg=m.lenet_sgd, hyperparams=createList(as.matrix(0.02)), freq="BATCH", epochs=1'
LENET_DIFF = "print(" + " + ".join(f"sum(abs(M[{j}] - B[{j}]))" for j in range(8)) + ");"
LENET_REL = "print((" + " + ".join(f"sum(abs(M[{j}] - B[{j}]))" for j in range(8)) + ") / (" + \
    " + ".join(f"sum(abs(B[{j}]))" for j in range(8)) + "));"  # fmt: skip


def test_sufficient_factors_with_servers_equal_bsp(tmp_path: Path) -> None:
    """sfb=true with parameter servers: the workers push the factors of W1 and W2 (K (M + N) < M N) and the
    server (shard) rebuilds each worker's product before the canonical sum, so the model is BSP's bit for bit:
    LOCAL threads, 4 real MPI ranks with one server, two dedicated shards, co-located shards, and together with
    overlap=true (the factors variant of upd waits for its parameters too). The pushes are smaller.
    freq=NBATCHES (2 batches per push): the push's factors are the batches' stacked (t(A_1) @ B_1 + t(A_2) @ B_2 =
    t([A_1; A_2]) @ [B_1; B_2]), so the sum rounds differently: within 1e-12 relative of BSP, with servers and
    with the all-reduce."""
    lines = ["X, y = m.classes_data(480, 64, 4);", "init = m.fc_init(64, 128, 128, 4);",
             f'B = paramserv(model=init, features=X, labels=y, {FC}, utype="BSP", k=3);']  # fmt: skip
    for v in ('k=3', 'k=3, mode="MPI"', 'k=3, colocated=true, mode="MPI"', 'k=3, overlap=true, mode="MPI"',
              'k=3, colocated=true, overlap=true, mode="MPI"', 'k=2, servers=2, mode="MPI"'):  # fmt: skip
        if v.startswith("k=2"):
            lines += [f'B = paramserv(model=init, features=X, labels=y, {FC}, utype="BSP", k=2);']
        lines += [f'M = paramserv(model=init, features=X, labels=y, {FC}, utype="BSP", sfb=true, {v});', FC_DIFF]
    nb = FC.replace('freq="BATCH"', 'freq="NBATCHES", nbatches=2')
    lines += [f'B = paramserv(model=init, features=X, labels=y, {nb}, utype="BSP", k=3);']
    for v in ('utype="BSP", k=3, mode="MPI"', 'utype="ALLREDUCE", allreduce="RING", k=3, mode="MPI"',
              'utype="ALLREDUCE", k=3'):  # fmt: skip
        lines += [f"M = paramserv(model=init, features=X, labels=y, {nb}, sfb=true, {v});", FC_REL]
    script = driver(tmp_path, "sfb_ps", "\n".join(lines))
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split()
    assert out[:6] == ["0"] * 6 and all(float(x) <= 1e-12 for x in out[6:]) and len(out) == 9, res.stdout
    totals = [float(line.split()[7]) for line in res.stderr.splitlines() if line.strip().startswith("total")]
    sfb = totals[1:6] + totals[7:8]
    assert all(t < 0.25 * totals[0] for t in sfb), totals


def test_lenet_overlap_and_sufficient_factors_equal_bsp(tmp_path: Path) -> None:
    """The shipped LeNet (the distributed-training bench's second model: convolutions, pooling, 1.66 M
    parameters) over 3 real MPI worker ranks, two batches of 8 images each: the ring all-reduce with overlap=true
    (buckets of 1 MB: the 6.4 MB affine weight travels in chunks while the backward pass runs) and with sfb=true
    (the compiler finds the two affine weight gradients behind the convolutions; the stacked rebuild sums in
    another order) train BSP's model: bit for bit, and within 1e-12 relative; BSP with ordered pulls (the filters
    first, the convolutions running while the affine weights arrive), streamed by a per-matrix agg, bit for bit."""
    lines = ["X, y = m.lenet_data(48);", "init = m.lenet_init();",
             f'B = paramserv(model=init, features=X, labels=y, {LENET_PS}, batchsize=8, utype="BSP", mode="MPI");',
             f'M = paramserv(model=init, features=X, labels=y, {LENET_PS}, batchsize=8, utype="ALLREDUCE", '
             'allreduce="RING", overlap=true, bucket=1000000, mode="MPI");', LENET_DIFF,
             f'M = paramserv(model=init, features=X, labels=y, {LENET_PS}, batchsize=8, utype="ALLREDUCE", '
             'allreduce="RING", sfb=true, mode="MPI");', LENET_REL,
             f'M = paramserv(model=init, features=X, labels=y, {LENET_PS}, batchsize=8, utype="BSP", overlap=true, '
             'mode="MPI");', LENET_DIFF]  # fmt: skip
    script = tmp_path / "lenet.daph"
    script.write_text(f'import "{LENET}" as "m";\n' + "\n".join(lines) + "\n")
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split()
    assert out[0] == out[2] == "0" and float(out[1]) <= 1e-12, res.stdout + res.stderr
    assert "overlap (ordered pulls, streamed)" in res.stderr, res.stderr  # lenet_sgd is per-matrix


OUTPUT_FIRST = """
def out_first_gradients(model, hyperparams, features, labels) {
    A1 = features @ model[2] + model[3];
    H1 = max(A1, 0.0);
    dout = 2.0 / nrow(features) * (H1 @ model[0] + model[1] - labels);
    dA1 = (dout @ t(model[0])) * (A1 > 0.0);
    if (as.scalar(hyperparams[1]) > 0.0 && sum(abs(model[0])) > as.scalar(hyperparams[1])) {
        stop("the output layer grew");
    }
    return createList(t(H1) @ dout, sum(dout, 1), t(features) @ dA1, sum(dA1, 1));
}
X, y = m.regression_data(600, 6);
I = m.mlp_init(6, 8);
init = createList(I[2], I[3], I[0], I[1]);
"""
"""The MLP with its model stored output layer first: the forward pass reads model[2], model[3], model[0],
model[1] in this order (TicTac's pull order); with hyperparams[1] > 0 it fails once the output layer has grown."""
FAILING_AGG = """
def failing_sgd(model, hyperparams, gradients) {
    if (sum(abs(gradients[0])) > 0.0) { stop("the server's update failed"); }
    return m.sgd(model, hyperparams, gradients);
}"""
"""An `agg` that fails at its first update (on the server shard that applies it)."""


def test_ordered_pulls_equal_bsp_in_tictac_order(tmp_path: Path) -> None:
    """overlap=true with parameter servers over 4 real ranks (one server; two dedicated shards; co-located
    shards; SSP with staleness 0; ASP, which converges): the servers send the matrices one by one in the order
    the forward pass reads them, `upd` starts on the first to arrive, and the model equals LOCAL BSP's bit for
    bit. The trace hook shows every pull arriving and being read in TicTac's order 2 3 0 1 (the pull-order pass
    found it in the IR; lit test pull_order.daph)."""
    ps = 'upd=out_first_gradients, agg=m.sgd, hyperparams=createList(as.matrix(0.02), as.matrix(0.0)), ' \
         'freq="BATCH", epochs=2, batchsize=32'  # fmt: skip
    lines = [OUTPUT_FIRST]
    for k, variant in ((3, ""), (2, ", servers=2"), (3, ", colocated=true"), (3, ', utype="SSP", staleness=0'),
                       (3, ', utype="ASP"')):  # fmt: skip
        utype = "" if "utype" in variant else ', utype="BSP"'
        lines += [f'B = paramserv(model=init, features=X, labels=y, {ps}, k={k}, utype="BSP");',
                  f'M = paramserv(model=init, features=X, labels=y, {ps}, k={k}{utype}{variant}, overlap=true, '
                  'mode="MPI");', DIFF if "ASP" not in variant else "print(m.mlp_mse(createList(M[2], M[3], "
                  "M[0], M[1]), X, y) < m.mlp_mse(I, X, y));"]  # fmt: skip
    script = driver(tmp_path, "tictac", "\n".join(lines))
    trace = tmp_path / "pulls.txt"
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240,
                  DAPHNEC_PS_PULL_TRACE=str(trace))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0", "0", "0", "0", "1"], res.stdout + res.stderr
    assert "overlap (ordered pulls)" in res.stderr, res.stderr
    lines = trace.read_text().splitlines()
    pulls = [p.split(" ", 2)[2] for p in lines if not p.endswith("stopped")]
    # BSP: every worker pulls after each of its pushes but the last (600 rows, k workers, batches of 32); ASP's
    # workers each end with one pull the server answers with STOP
    assert len(pulls) >= 2 * (3 * 7 - 3) + 2 * (2 * 10 - 2) + 4 * (3 * 7 - 3), len(pulls)
    assert len(lines) - len(pulls) == 3, lines
    assert set(pulls) == {"arrived 2 3 0 1 read 2 3 0 1"}, set(pulls)
    # one server with the per-matrix m.sgd streams its pulls (the pull-order pass's check; lit test per_matrix_agg.daph)
    assert "overlap (ordered pulls, streamed)" in res.stderr, res.stderr


CLIPPED_AGG = """
def clipped_sgd(model, hyperparams, gradients) {
    norm = 0.0;
    i = 0;
    while (i < length(gradients)) {
        norm = norm + sum(gradients[i] ^ 2);
        i = i + 1;
    }
    scale = as.scalar(hyperparams[0]) / max(sqrt(norm), 1.0);
    out = createList(model[0] - scale * gradients[0]);
    i = 1;
    while (i < length(model)) {
        out = append(out, model[i] - scale * gradients[i]);
        i = i + 1;
    }
    return out;
}"""
"""SGD with global gradient-norm clipping: every update depends on every gradient (not per-matrix)."""


def test_streamed_pulls_only_for_a_per_matrix_agg(tmp_path: Path) -> None:
    """overlap=true with one BSP server over 4 real ranks: with the per-matrix m.sgd the server updates each
    matrix once its sum is complete and streams it (the statistics say "streamed"); with global gradient-norm
    clipping, whose updates depend on every gradient, the pull-order pass's check says "whole-model" and the server
    keeps updating the whole model at once. Both train LOCAL BSP's model bit for bit."""
    ps = 'upd=out_first_gradients, hyperparams=createList(as.matrix(0.02), as.matrix(0.0)), freq="BATCH", ' \
         'epochs=2, batchsize=32, k=3, utype="BSP"'  # fmt: skip
    lines = [OUTPUT_FIRST + CLIPPED_AGG]
    for agg in ("m.sgd", "clipped_sgd"):
        lines += [f"B = paramserv(model=init, features=X, labels=y, {ps}, agg={agg});",
                  f'M = paramserv(model=init, features=X, labels=y, {ps}, agg={agg}, overlap=true, mode="MPI");',
                  DIFF]  # fmt: skip
    script = driver(tmp_path, "streamed", "\n".join(lines))
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0", "0"], res.stdout + res.stderr
    assert res.stderr.count("overlap (ordered pulls, streamed)") == 1, res.stderr
    assert res.stderr.count("overlap (ordered pulls)") == 1, res.stderr


@pytest.mark.parametrize("where", ["upd", "agg"])
def test_ordered_pull_failure_ends_the_job(tmp_path: Path, where: str) -> None:
    """`upd` failing while its pull is in flight (stop() once the output layer has grown), or a server shard's
    `agg` failing while the workers' next `upd` waits for its pull (the shard answers STOP), ends the MPI job
    with exit code 3 and the error (upd's with its DaphneDSL location), no traceback, well within the timeout."""
    if where == "agg":
        body = OUTPUT_FIRST + FAILING_AGG
        lines = [body, 'M = paramserv(model=init, features=X, labels=y, upd=out_first_gradients, agg=failing_sgd, '
                 'hyperparams=createList(as.matrix(0.02), as.matrix(0.0)), freq="BATCH", epochs=2, batchsize=32, '
                 'k=2, utype="BSP", servers=2, overlap=true, mode="MPI");', "print(M[0]);"]  # fmt: skip
        script = driver(tmp_path, "tictac_fail", "\n".join(lines))
        res = run_mpi(4, "--distributed", "--dist_backend=MPI", str(script), timeout=60)
        assert res.returncode == 3, res.stdout + res.stderr
        assert "Traceback" not in res.stderr
        # stop() on rank 0's shard ends the script as DAPHNE's stop does ("system stopped: ..." on stdout, exit 3)
        assert "the server's update failed" in res.stdout + res.stderr, res.stdout + res.stderr
        return
    ps = 'upd=out_first_gradients, agg=m.sgd, hyperparams=createList(as.matrix(0.02), as.matrix(sum(abs(I[2])))), ' \
         'freq="BATCH", epochs=2, batchsize=32'  # fmt: skip
    lines = [OUTPUT_FIRST, f'M = paramserv(model=init, features=X, labels=y, {ps}, k=3, utype="BSP", '
             'overlap=true, mode="MPI");', "print(M[0]);"]  # fmt: skip
    script = driver(tmp_path, "tictac_fail", "\n".join(lines))
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", str(script), timeout=60)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert "tictac_fail.daph:9:9: error: " in res.stderr and "the output layer grew" in res.stderr, res.stderr


def test_one_server_pushes_each_gradient_when_final(tmp_path: Path) -> None:
    """overlap=true with one server over 4 real ranks: each gradient leaves on its own as soon as the backward pass
    has finalised it (the wait-free-backprop marks:
    the output layer's two gradients before the hidden layer's), the server sums each on arrival, and the model
    equals LOCAL BSP's bit for bit. The timeline hook (DAPHNEC_PS_TIMELINE) shows it: per worker and step, one
    push per matrix, the output layer's posted first; and the in-flight intervals and compute steps it records."""
    ps = 'upd=out_first_gradients, agg=m.sgd, hyperparams=createList(as.matrix(0.02), as.matrix(0.0)), ' \
         'freq="BATCH", epochs=2, batchsize=32'  # fmt: skip
    lines = [OUTPUT_FIRST, f'B = paramserv(model=init, features=X, labels=y, {ps}, k=3, utype="BSP");',
             f'M = paramserv(model=init, features=X, labels=y, {ps}, k=3, utype="BSP", overlap=true, mode="MPI");',
             DIFF]  # fmt: skip
    script = driver(tmp_path, "early", "\n".join(lines))
    timeline = tmp_path / "timeline.txt"
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", "--statistics", str(script), timeout=240,
                  DAPHNEC_PS_TIMELINE=str(timeline))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0"], res.stdout + res.stderr
    rows = [ln.split() for ln in timeline.read_text().splitlines()]
    assert {r[0] for r in rows} == {"worker"} and {r[2] for r in rows} == {"compute", "push", "pull"}, rows[:5]
    assert all(float(r[4]) <= float(r[5]) for r in rows)
    for w in ("0", "1", "2"):
        pushes = [(int(r[3]), float(r[4])) for r in rows if r[1] == w and r[2] == "push"]
        # 600 rows, 3 workers, batches of 32, 2 epochs: 7 steps per epoch, each pushed matrix by matrix (the call's
        # first push, without a pull in flight, and its last, without a next model, too)
        assert len(pushes) == 4 * 2 * 7, (w, pushes)
        steps = [pushes[i : i + 4] for i in range(0, 4 * 2 * 7, 4)]
        for step in steps:
            order = [j for j, _ in step]
            assert sorted(order) == [0, 1, 2, 3] and set(order[:2]) == {0, 1}, (w, step)
        assert sum(1 for r in rows if r[1] == w and r[2] == "compute") == 2 * 7


def test_allreduce_timeline_and_last_sum_to_worker_0(tmp_path: Path) -> None:
    """ALLREDUCE RING over 3 real worker ranks, with and without overlap: the model equals LOCAL BSP's bit for bit,
    and the timeline hook (DAPHNEC_PS_TIMELINE) records each worker's steps: `upd` (compute), the reduction, its
    reduce-scatter levels and all-gather steps (overlap: per bucket), `agg`. At the call's last clock the sum goes
    to worker 0 alone (only its replica is the result): one gather step instead of the ring's k - 1 = 2, and
    workers 1 and 2 apply no `agg` then."""
    common = f"{FC}, k=3"
    lines = ["X, y = m.classes_data(480, 64, 4);", "init = m.fc_init(64, 128, 128, 4);",
             f'B = paramserv(model=init, features=X, labels=y, {common}, utype="BSP");',
             f'M = paramserv(model=init, features=X, labels=y, {common}, utype="ALLREDUCE", allreduce="RING", '
             'mode="MPI");', FC_DIFF,
             f'M = paramserv(model=init, features=X, labels=y, {common}, utype="ALLREDUCE", allreduce="RING", '
             'overlap=true, bucket=40000, mode="MPI");', FC_DIFF]  # fmt: skip
    script = driver(tmp_path, "ring_timeline", "\n".join(lines))
    timeline = tmp_path / "timeline.txt"
    res = run_mpi(4, "--distributed", "--dist_backend=MPI", str(script), timeout=240,
                  DAPHNEC_PS_TIMELINE=str(timeline))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0", "0"], res.stdout + res.stderr
    rows = [ln.split() for ln in timeline.read_text().splitlines()]
    assert all(float(r[4]) <= float(r[5]) for r in rows)
    steps = 2 * 20  # 480 rows, 3 workers, batches of 8: 20 steps per epoch, 2 epochs
    for w in ("0", "1", "2"):
        mine = [r for r in rows if r[1] == w]
        starts = [float(r[4]) for r in mine if r[2] == "compute"][::steps]  # each call's first step
        assert len(starts) == 2, (w, len(starts))
        for lo, hi, kinds in ((starts[0], starts[1], {"rs", "add", "ag"}),
                              (starts[1], float("inf"), {"rs", "add", "ag", "bucket"})):  # fmt: skip
            call = [r for r in mine if lo <= float(r[4]) < hi]
            count = {kind: sum(1 for r in call if r[2] == kind) for kind in ("compute", "reduce", "agg")}
            assert count == {"compute": steps, "reduce": steps, "agg": steps - (w != "0")}, (w, count)
            assert {r[2] for r in call} - {"compute", "reduce", "agg"} <= kinds, {r[2] for r in call}
            if "bucket" not in kinds:  # the ring: 2 all-gather steps per clock, the last clock's one gather
                assert sum(1 for r in call if r[2] == "ag") == 2 * (steps - 1) + 1, w
