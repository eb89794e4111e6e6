"""LeNet training step (forward + backward + SGD with Nesterov momentum, L2 regularisation, dropout): daphnec against
JAX (`jax.jit` on the CPU) and Apache SystemDS running its own LeNet, measured in one run (issue 21's goals).

    .venv/bin/python bench/dl_bench.py [--batches 20] [--warmup 5] [--dtypes f32,f64] [--no-jax] [--no-systemds]
                                        [--systemds-dir DIR] [--systemds-reuse DIR] [--threads N]

The network is SystemDS's `nn/examples/mnist_lenet.dml` (and daphnec's lib/nn/networks/lenet.daph): 28x28x1 images,
conv 5x5 (32 filters, padding 2) -> relu -> max pool 2x2 -> conv 5x5 (64) -> relu -> max pool 2x2 -> affine
3136x512 -> relu -> dropout (keep 0.5) -> affine 512x10 -> softmax, cross-entropy loss, L2 regularisation 5e-4 of
the weights, SGD with Nesterov momentum (lr 0.01, mu 0.9), batches of 64 synthetic images (uniform pixels, random
labels). Time per batch = the mean over `--batches` timed batches after `--warmup` untimed ones:

- daphnec: a DaphneDSL script (written to a temp folder) that imports nn/networks/lenet.daph (shipped with daphnec)
  and times every step with `now()`; f32 runs keep the model, the data and every scalar in f32. Peak memory: the
  peak RSS of a process that trains, minus that of the same process with 0 batches (same data, same compile),
  against model + one batch's activations + the im2col buffers of the two convolutions (`memory_estimate`); goal <= 2x.
- JAX: the same network and update as one `jax.jit` function (dropout from `jax.random`), in this process.
- SystemDS 3.4.0: its own `mnist_lenet::train` (the peer folder `../shared/peers/systemds`, read-only: copied to the
  temp folder and set up there unless `--systemds-reuse` names a copy whose setup.sh ran) called from a small DML
  driver: once on `--warmup` batches (the JVM's JIT), then timed with `time()` on `--batches` batches. SystemDS
  computes in f64 only.

Goals (issue 21): daphnec <= 1.5x JAX's time per batch (f32 and f64); SystemDS >= 5x daphnec's (f64).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT.parent / "shared" / "peers" / "systemds"
sys.path.insert(0, str(Path(__file__).resolve().parent))

BATCH, C, H, W, K, HF, F1, F2, N3 = 64, 1, 28, 28, 10, 5, 32, 64, 512
LR, MU, LAMBDA, KEEP = 0.01, 0.9, 5e-4, 0.5

# -- daphnec ---------------------------------------------------------------------------------------------------------

DAPHNE_SCRIPT = """\
import "nn/networks/lenet.daph" as "lenet";
N = {batch} * {data_batches};
X = as.matrix<{vt}>(rand(N, {c} * {h} * {w}, 0.0, 1.0, 1.0, 7));
Y = as.matrix<{vt}>(lenet.one_hot(floor(rand(N, 1, 0.0, {k} - 0.001, 1.0, 8)), {k}));
init = lenet.init({c}, {h}, {w}, {k}, {hf}, {f1}, {f2}, {n3}, 42);
model = createList(as.matrix<{vt}>(init[0]));
for (j in 1:7) {{
    model = append(model, as.matrix<{vt}>(init[j]));
}}
velocity = lenet.velocities(model);
lr = as.{vt}({lr}); mu = as.{vt}({mu}); lambda = as.{vt}({lam}); keep = as.{vt}({keep});
i = 0;
while (i < {warmup} + {batches}) {{
    t0 = now();
    grads, loss = lenet.gradients(model, X[(i * {batch}):((i + 1) * {batch}), ], Y[(i * {batch}):((i + 1) * {batch}), ],
                                  {c}, {h}, {w}, {hf}, keep, lambda, i);
    model, velocity = lenet.update(model, velocity, grads, lr, mu);
    t1 = now();
    if (i >= {warmup}) {{
        print("step_ns " + (t1 - t0));
    }}
    i = i + 1;
}}
print("check " + sum(model[6]));
"""


BLAS_THREADS: str | None = None
"""`--blas-threads`: OPENBLAS_NUM_THREADS of the daphnec processes (None: BLAS's default, one per core)."""


def daphnec_steps(tmp: Path, vt: str, warmup: int, batches: int, threads: int | None) -> tuple[list[float], float]:
    """(seconds of every timed step, peak RSS in MiB) of one daphnec process training `batches` batches."""
    from algorithms_bench import measured  # a sibling script: the launcher that measures a process's peak RSS

    script = tmp / f"lenet_{vt}_{batches}.daph"
    script.write_text(
        DAPHNE_SCRIPT.format(
            vt=vt,
            batch=BATCH,
            warmup=warmup,
            batches=batches,
            data_batches=max(1, warmup + batches),
            c=C,
            h=H,
            w=W,
            k=K,
            hf=HF,
            f1=F1,
            f2=F2,
            n3=N3,
            lr=LR,
            mu=MU,
            lam=LAMBDA,
            keep=KEEP,
        )  # fmt: skip
    )
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec"]
    if threads:
        cmd.append(f"--num-threads={threads}")
    if BLAS_THREADS is not None:
        cmd = [shutil.which("env") or "/usr/bin/env", f"OPENBLAS_NUM_THREADS={BLAS_THREADS}", *cmd]
    code, stdout, stderr, _, rss = measured([*cmd, str(script)])
    if code != 0:
        raise RuntimeError(f"daphnec failed ({code}):\n{stderr[-2000:]}")
    steps = [int(m) / 1e9 for m in re.findall(r"^step_ns (\d+)", stdout, re.M)]
    return steps, rss


def memory_estimate(itemsize: int) -> dict[str, float]:
    """MiB of the model, one batch's activations (every layer's output) and the two convolutions' im2col buffers
    (the C*Hf*Wf x N*P*Q matrix of each, and its F x N*P*Q product)."""
    h2, w2, h4, w4 = H // 2, W // 2, H // 4, W // 4
    params = F1 * C * HF * HF + F1 + F2 * F1 * HF * HF + F2 + F2 * h4 * w4 * N3 + N3 + N3 * K + K
    acts = BATCH * (3 * F1 * H * W + F1 * h2 * w2 + 3 * F2 * h2 * w2 + F2 * h4 * w4 + 4 * N3 + 3 * K)
    im2col = BATCH * (C * HF * HF * H * W + F1 * H * W + F1 * HF * HF * h2 * w2 + F2 * h2 * w2)
    mib = itemsize / 2**20
    return {"model": params * mib, "activations": acts * mib, "im2col": im2col * mib}


# -- JAX -------------------------------------------------------------------------------------------------------------


def jax_steps(vt: str, warmup: int, batches: int) -> list[float]:
    """Seconds of every timed step of the jitted LeNet step (after `warmup` untimed ones, the first compiles)."""
    import jax

    if vt == "f64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    dt = jnp.float32 if vt == "f32" else jnp.float64
    rng = np.random.default_rng(0)

    def init(shape, fan_in):
        return jnp.asarray(rng.uniform(-1, 1, shape) * np.sqrt(6.0 / fan_in), dtype=dt)

    params = {
        "W1": init((F1, C, HF, HF), C * HF * HF), "b1": jnp.zeros(F1, dt),
        "W2": init((F2, F1, HF, HF), F1 * HF * HF), "b2": jnp.zeros(F2, dt),
        "W3": init((F2 * (H // 4) * (W // 4), N3), F2 * (H // 4) * (W // 4)), "b3": jnp.zeros(N3, dt),
        "W4": init((N3, K), N3) / np.sqrt(2.0), "b4": jnp.zeros(K, dt),
    }  # fmt: skip
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    pad, dn = (HF - 1) // 2, ("NCHW", "OIHW", "NCHW")

    def conv(x, w, b):
        return lax.conv_general_dilated(x, w, (1, 1), ((pad, pad), (pad, pad)), dimension_numbers=dn) + b[:, None, None]

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss(p, x, y, key):
        h = pool(jax.nn.relu(conv(x.reshape(-1, C, H, W), p["W1"], p["b1"])))
        h = pool(jax.nn.relu(conv(h, p["W2"], p["b2"]))).reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ p["W3"] + p["b3"])
        h = jnp.where(jax.random.uniform(key, h.shape, dt) < KEEP, h / KEEP, 0)
        probs = jax.nn.softmax(h @ p["W4"] + p["b4"])
        data = -jnp.sum(y * jnp.log(probs + 1e-10)) / x.shape[0]
        return data + LAMBDA / 2 * sum(jnp.sum(p[w] * p[w]) for w in ("W1", "W2", "W3", "W4"))

    @jax.jit
    def step(p, v, x, y, key):
        g = jax.grad(loss)(p, x, y, key)
        v_new = jax.tree_util.tree_map(lambda vi, gi: MU * vi - LR * gi, v, g)
        p_new = jax.tree_util.tree_map(lambda pi, vi, vn: pi - MU * vi + (1 + MU) * vn, p, v, v_new)
        return p_new, v_new

    n = BATCH * (warmup + batches)
    X = jnp.asarray(rng.random((n, C * H * W)), dtype=dt)
    Y = jnp.asarray(np.eye(K)[rng.integers(0, K, n)], dtype=dt)
    key = jax.random.PRNGKey(0)
    out = []
    for i in range(warmup + batches):
        xb, yb = X[i * BATCH : (i + 1) * BATCH], Y[i * BATCH : (i + 1) * BATCH]
        jax.block_until_ready((xb, yb))
        t0 = time.perf_counter()
        params, velocity = step(params, velocity, xb, yb, jax.random.fold_in(key, i))
        jax.block_until_ready(params)
        if i >= warmup:
            out.append(time.perf_counter() - t0)
    return out


# -- SystemDS --------------------------------------------------------------------------------------------------------

SYSTEMDS_DRIVER = """\
source("nn/examples/mnist_lenet.dml") as mnist_lenet
N = $N
warm = $warm
X = rand(rows=N, cols=784, seed=7)
y = round(rand(rows=N, cols=1, min=0.5, max=10.49, seed=8))
Y = table(seq(1, N), y, N, 10)
X_val = X[1:64,]
Y_val = Y[1:64,]
[W1, b1, W2, b2, W3, b3, W4, b4] = mnist_lenet::train(X[1:(64 * warm),], Y[1:(64 * warm),], X_val, Y_val, 1, 28, 28, 1)
print("warm " + sum(W4))
while(FALSE){}
t0 = time()
[W1, b1, W2, b2, W3, b3, W4, b4] = mnist_lenet::train(X, Y, X_val, Y_val, 1, 28, 28, 1)
print("check " + sum(W4))
while(FALSE){}
t1 = time()
print("KERNEL_MS " + (t1 - t0) / 1e6)
"""


def systemds_step(tmp: Path, sysds: Path, warmup: int, batches: int, threads: int | None) -> float:
    """Mean seconds per batch of SystemDS's `mnist_lenet::train` on `batches` batches (one warm JVM)."""
    driver = tmp / "lenet_driver.dml"
    driver.write_text(SYSTEMDS_DRIVER)
    sp_dir = next((sysds / "venv" / "lib").glob("python3*/site-packages/systemds"))
    cmd = ["java", "--add-modules=jdk.incubator.vector", "-Xmx8g", "-Xms8g"]
    cmd.append(f"-Dlog4j.configuration=file:{sp_dir}/conf/log4j.properties")
    if threads:
        cmd.append(f"-XX:ActiveProcessorCount={threads}")
    cmd += ["-cp", f"{sp_dir}/SystemDS.jar:{sp_dir}/lib/*", "org.apache.sysds.api.DMLScript", "-f", str(driver)]
    cmd += ["-exec", "singlenode", "-config", str(sysds / "sysds-config.xml")]
    cmd += ["-nvargs", f"N={BATCH * batches}", f"warm={max(warmup, 1)}"]
    res = subprocess.run(cmd, cwd=sysds, capture_output=True, text=True, check=False)
    ms = re.findall(r"^KERNEL_MS ([\d.eE+-]+)", res.stdout, re.M)
    if res.returncode != 0 or not ms:
        raise RuntimeError(f"SystemDS LeNet failed: {res.stdout.strip()[-500:]} {res.stderr.strip()[-500:]}")
    return float(ms[0]) / 1e3 / batches


# -- main ------------------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=20, help="timed batches (SystemDS: < 100, default %(default)s)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed batches first (default %(default)s)")
    ap.add_argument("--dtypes", default="f32,f64", help="value types to run (default %(default)s)")
    ap.add_argument("--threads", type=int, default=None, help="daphnec --num-threads, SystemDS's processors")
    ap.add_argument("--blas-threads", default=None, help="OPENBLAS_NUM_THREADS for daphnec (default: BLAS's own)")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--no-systemds", action="store_true")
    ap.add_argument("--systemds-dir", type=Path, default=PEER, help="the read-only peer folder")
    ap.add_argument(
        "--systemds-reuse", type=Path, default=None, help="a writable copy of the peer folder whose setup.sh ran"
    )
    args = ap.parse_args()
    if not 0 < args.batches < 100:
        ap.error("--batches must be between 1 and 99 (SystemDS's LeNet validates every 100 batches)")
    global BLAS_THREADS
    BLAS_THREADS = args.blas_threads
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if not dtypes or any(d not in ("f32", "f64") for d in dtypes):
        ap.error("--dtypes takes f32 and/or f64")
    load = os.getloadavg()[0]
    print(f"LeNet step, batch {BATCH}, 28x28x1; {args.batches} timed batches after {args.warmup}; load {load:.1f}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="dl_bench_") as tmp_name:
        tmp = Path(tmp_name)
        sysds_step = None
        if not args.no_systemds:
            from cc_bench import systemds_setup  # a sibling script: a writable copy of the peer folder, set up

            sysds = systemds_setup(tmp, args.systemds_dir, args.systemds_reuse)
            sysds_step = systemds_step(tmp, sysds, args.warmup, args.batches, args.threads)
        for vt in dtypes:
            steps, rss = daphnec_steps(tmp, vt, args.warmup, args.batches, args.threads)
            _, rss0 = daphnec_steps(tmp, vt, 0, 0, args.threads)
            ours = statistics.mean(steps)
            est = memory_estimate(4 if vt == "f32" else 8)
            jax_mean = None if args.no_jax else statistics.mean(jax_steps(vt, args.warmup, args.batches))
            rows.append((vt, ours, jax_mean, sysds_step, rss - rss0, sum(est.values()), est))
    print(f"{'':4} {'daphnec ms':>11} {'JAX ms':>8} {'daphnec/JAX':>12} {'SystemDS ms':>12} {'SystemDS/daphnec':>17}")
    for vt, ours, jx, sd, _, _, _ in rows:
        jax_ms = f"{jx * 1e3:8.1f}" if jx else f"{'-':>8}"
        ratio = f"{ours / jx:12.2f}" if jx else f"{'-':>12}"
        sd_ms = f"{sd * 1e3:12.1f}" if sd else f"{'-':>12}"
        speedup = f"{sd / ours:17.2f}" if sd else f"{'-':>17}"
        print(f"{vt:4} {ours * 1e3:11.1f} {jax_ms} {ratio} {sd_ms} {speedup}")
    print("goals: daphnec/JAX <= 1.5; SystemDS/daphnec >= 5 (SystemDS computes in f64)")
    print(f"{'':4} {'peak MiB':>9} {'estimate MiB':>13} {'ratio':>6}  (estimate = model + batch activations + im2col)")
    for vt, _, _, _, peak, total, est in rows:
        parts = ", ".join(f"{k} {v:.1f}" for k, v in est.items())
        print(f"{vt:4} {peak:9.1f} {total:13.1f} {peak / total:6.2f}  ({parts}); goal <= 2")


if __name__ == "__main__":
    main()
