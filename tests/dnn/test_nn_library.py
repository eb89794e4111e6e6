"""daphnec's DaphneDSL `nn` library (lib/nn): every layer's forward and backward and every optimizer's update, run by
the real `daphnec` from a script that imports them as a user does (`import "nn/layers/conv2d.daph" as "conv2d";`,
resolved from the installation), against JAX (forward, and backward as JAX's vector-Jacobian product with the same
output gradient) and against the optimizers' formulas in numpy. One daphnec process runs every layer (in f64, and
the convolution and the optimizers in f32 too, which must stay f32)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from daphnec.lib import LIBRARY_DIR
from daphnec.runtime.io import dbdf

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(3)
N, C, H, W, F, HF = 3, 2, 6, 6, 4, 3
INPUTS = {
    "X": RNG.standard_normal((N, C * H * W)),
    "Wc": RNG.standard_normal((F, C * HF * HF)),
    "bc": RNG.standard_normal((F, 1)),
    "Dc": RNG.standard_normal((N, F * H * W)),  # conv output gradient (stride 1, padding 1: H x W outputs)
    "Dp": RNG.standard_normal((N, C * 3 * 3)),  # pooling output gradient (2x2 windows, stride 2: 3 x 3)
    "A": RNG.standard_normal((N, 5)),
    "Wa": RNG.standard_normal((5, 4)),
    "ba": RNG.standard_normal((1, 4)),
    "Da": RNG.standard_normal((N, 4)),
    "S": RNG.standard_normal((N, 4)),
    "P": np.array([[0.2, 0.3, 0.1, 0.4], [0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]]),
    "Y": np.eye(4)[[3, 0, 2]],
    "Db": RNG.standard_normal((N, C * H * W)),
    "gamma": RNG.standard_normal((C, 1)),
    "beta": RNG.standard_normal((C, 1)),
    "G": RNG.standard_normal((F, C * HF * HF)),
}

SCRIPT = """
import "nn/layers/affine.daph" as "affine";
import "nn/layers/conv2d.daph" as "conv2d";
import "nn/layers/max_pool2d.daph" as "max_pool2d";
import "nn/layers/avg_pool2d.daph" as "avg_pool2d";
import "nn/layers/relu.daph" as "relu";
import "nn/layers/sigmoid.daph" as "sigmoid";
import "nn/layers/tanh.daph" as "tanh";
import "nn/layers/softmax.daph" as "softmax";
import "nn/layers/dropout.daph" as "dropout";
import "nn/layers/batch_norm2d.daph" as "batch_norm2d";
import "nn/layers/cross_entropy_loss.daph" as "cross_entropy_loss";
import "nn/layers/l2_loss.daph" as "l2_loss";
import "nn/layers/l2_reg.daph" as "l2_reg";
import "nn/optim/sgd.daph" as "sgd";
import "nn/optim/sgd_momentum.daph" as "sgd_momentum";
import "nn/optim/sgd_nesterov.daph" as "sgd_nesterov";
import "nn/optim/adam.daph" as "adam";

def out(name, M) {
    writeMatrix(M, $dir + "/out/" + name + ".dbdf");
}

X = readMatrix($dir + "/X.csv"); Wc = readMatrix($dir + "/Wc.csv"); bc = readMatrix($dir + "/bc.csv");
Dc = readMatrix($dir + "/Dc.csv"); Dp = readMatrix($dir + "/Dp.csv"); A = readMatrix($dir + "/A.csv");
Wa = readMatrix($dir + "/Wa.csv"); ba = readMatrix($dir + "/ba.csv"); Da = readMatrix($dir + "/Da.csv");
S = readMatrix($dir + "/S.csv"); P = readMatrix($dir + "/P.csv"); Y = readMatrix($dir + "/Y.csv");
Db = readMatrix($dir + "/Db.csv"); gamma = readMatrix($dir + "/gamma.csv"); beta = readMatrix($dir + "/beta.csv");
G = readMatrix($dir + "/G.csv");

o, Ho, Wo = conv2d.forward(X, Wc, bc, 2, 6, 6, 3, 3, 1, 1, 1, 1);
dX, dW, db = conv2d.backward(Dc, Ho, Wo, X, Wc, bc, 2, 6, 6, 3, 3, 1, 1, 1, 1);
out("conv_out", o); out("conv_dX", dX); out("conv_dW", dW); out("conv_db", db);
o32, Ho, Wo = conv2d.forward(as.matrix<f32>(X), as.matrix<f32>(Wc), as.matrix<f32>(bc), 2, 6, 6, 3, 3, 1, 1, 1, 1);
dX32, dW32, db32 = conv2d.backward(as.matrix<f32>(Dc), Ho, Wo, as.matrix<f32>(X), as.matrix<f32>(Wc),
                                   as.matrix<f32>(bc), 2, 6, 6, 3, 3, 1, 1, 1, 1);
print("conv f32: " + typeOf(o32) + " " + typeOf(dX32) + " " + typeOf(dW32) + " " + typeOf(db32));
out("conv32_out", o32); out("conv32_dW", dW32);

o, Ho, Wo = max_pool2d.forward(X, 2, 6, 6, 2, 2, 2, 2, 0, 0);
out("maxpool_out", o); out("maxpool_dX", max_pool2d.backward(Dp, Ho, Wo, X, 2, 6, 6, 2, 2, 2, 2, 0, 0));
o, Ho, Wo = avg_pool2d.forward(X, 2, 6, 6, 2, 2, 2, 2, 0, 0);
out("avgpool_out", o); out("avgpool_dX", avg_pool2d.backward(Dp, Ho, Wo, X, 2, 6, 6, 2, 2, 2, 2, 0, 0));

out("affine_out", affine.forward(A, Wa, ba));
dA, dWa, dba = affine.backward(Da, A, Wa, ba);
out("affine_dX", dA); out("affine_dW", dWa); out("affine_db", dba);

out("relu_out", relu.forward(S)); out("relu_dX", relu.backward(Da, S));
out("sigmoid_out", sigmoid.forward(S)); out("sigmoid_dX", sigmoid.backward(Da, S));
out("tanh_out", tanh.forward(S)); out("tanh_dX", tanh.backward(Da, S));
out("softmax_out", softmax.forward(S)); out("softmax_dX", softmax.backward(Da, S));

d, mask = dropout.forward(S, 0.5, 11);
out("dropout_out", d); out("dropout_mask", mask); out("dropout_dX", dropout.backward(Da, S, 0.5, mask));
d2, mask2 = dropout.forward(S, 0.5, 11);
print("dropout seeded: " + (sum(mask2 != mask) == 0));

mean0 = fill(0.0, 2, 1); var1 = fill(1.0, 2, 1);
o, em, ev, m, iv = batch_norm2d.forward(X, gamma, beta, 2, 6, 6, "train", mean0, var1, 0.9, 0.00001);
dXb, dg, dbeta = batch_norm2d.backward(Db, m, iv, X, gamma, 0.00001);
out("bn_out", o); out("bn_ema_mean", em); out("bn_ema_var", ev); out("bn_dX", dXb); out("bn_dgamma", dg);
out("bn_dbeta", dbeta);
ot, em2, ev2, m2, iv2 = batch_norm2d.forward(X, gamma, beta, 2, 6, 6, "test", em, ev, 0.9, 0.00001);
out("bn_test_out", ot);

out("ce_loss", as.matrix(cross_entropy_loss.forward(P, Y))); out("ce_dX", cross_entropy_loss.backward(P, Y));
out("l2_loss", as.matrix(l2_loss.forward(S, Da))); out("l2_dX", l2_loss.backward(S, Da));
out("l2reg_loss", as.matrix(l2_reg.forward(Wa, 0.1))); out("l2reg_dX", l2_reg.backward(Wa, 0.1));

out("sgd", sgd.update(Wc, G, 0.1));
v = sgd_momentum.init(Wc);
W1, v = sgd_momentum.update(Wc, G, 0.1, 0.9, v);
W1, v = sgd_momentum.update(W1, G, 0.1, 0.9, v);
out("momentum", W1);
v = sgd_nesterov.init(Wc);
W1, v = sgd_nesterov.update(Wc, G, 0.1, 0.9, v);
W1, v = sgd_nesterov.update(W1, G, 0.1, 0.9, v);
out("nesterov", W1);
m, v = adam.init(Wc);
W1, m, v = adam.update(Wc, G, 0.01, 0.9, 0.999, 0.00000001, 0, m, v);
W1, m, v = adam.update(W1, G, 0.01, 0.9, 0.999, 0.00000001, 1, m, v);
out("adam", W1);
W32, m32, v32 = adam.update(as.matrix<f32>(Wc), as.matrix<f32>(G), as.f32(0.01), as.f32(0.9), as.f32(0.999),
                            as.f32(0.00000001), 0, as.matrix<f32>(m * 0), as.matrix<f32>(v * 0));
print("adam f32: " + typeOf(W32));
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[dict[str, np.ndarray], str]:
    d = tmp_path_factory.mktemp("nn")
    for name, M in INPUTS.items():
        np.savetxt(d / f"{name}.csv", M, delimiter=",", fmt="%.17g")
        (d / f"{name}.csv.meta").write_text(
            json.dumps({"numRows": M.shape[0], "numCols": M.shape[1], "valueType": "f64"})
        )
    (d / "out").mkdir()
    script = d / "layers.daph"
    script.write_text(SCRIPT)
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(script), f'dir="{d}"'],
        capture_output=True,
        text=True,
        cwd=d,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    outs = {}
    for p in Path(d, "out").glob("*.dbdf"):
        _, rows, cols, vt = dbdf.read_header(str(p))
        outs[p.stem] = np.asarray(dbdf.read(str(p), rows, cols, vt, False))
    return outs, res.stdout


def vjp(f, dout, *args):
    """Forward value and the gradients of sum(f(args) * dout) w.r.t. every argument."""
    y, back = jax.vjp(f, *args)
    return np.asarray(y), [np.asarray(g) for g in back(jnp.asarray(dout))]


def jax_conv(x, w, b):
    y = jax.lax.conv_general_dilated(
        x.reshape(N, C, H, W),
        w.reshape(F, C, HF, HF),
        (1, 1),
        ((1, 1), (1, 1)),
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
    )
    return (y + b.reshape(1, F, 1, 1)).reshape(N, -1)


def jax_pool(x, kind: str):
    x4 = x.reshape(N, C, H, W)
    if kind == "max":  # DAPHNE's max folds from 0
        y = jnp.maximum(jax.lax.reduce_window(x4, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"), 0.0)
    else:
        y = jax.lax.reduce_window(x4, 0.0, jax.lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4
    return y.reshape(N, -1)


def jax_batch_norm(x, gamma, beta):
    x3 = x.reshape(N, C, -1)
    mean = x3.mean(axis=(0, 2))
    var = ((x3 - mean[None, :, None]) ** 2).mean(axis=(0, 2))
    y = (x3 - mean[None, :, None]) / jnp.sqrt(var + 1e-5)[None, :, None] * gamma.reshape(1, C, 1)
    return (y + beta.reshape(1, C, 1)).reshape(N, -1)


def close(got: np.ndarray, want: np.ndarray, tol: float = 1e-10) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got, want, rtol=tol, atol=tol), np.max(np.abs(got - want))


def test_conv2d(run) -> None:
    outs, stdout = run
    inp = INPUTS
    y, (dX, dW, db) = vjp(jax_conv, inp["Dc"], inp["X"], inp["Wc"], inp["bc"])
    close(outs["conv_out"], y)
    close(outs["conv_dX"], dX)
    close(outs["conv_dW"], dW)
    close(outs["conv_db"], db)
    assert (
        "conv f32: DenseMatrix(3x144, float) DenseMatrix(3x72, float) DenseMatrix(4x18, float) DenseMatrix(4x1, float)"
        in stdout
    )
    close(outs["conv32_out"], y, 1e-4)
    close(outs["conv32_dW"], dW, 1e-3)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling(run, kind) -> None:
    outs, _ = run
    y, (dX,) = vjp(lambda x: jax_pool(x, kind), INPUTS["Dp"], INPUTS["X"])
    close(outs[f"{kind}pool_out"], y)
    close(outs[f"{kind}pool_dX"], dX)


def test_affine(run) -> None:
    outs, _ = run
    inp = INPUTS
    y, (dX, dW, db) = vjp(lambda a, w, b: a @ w + b, inp["Da"], inp["A"], inp["Wa"], inp["ba"])
    close(outs["affine_out"], y)
    close(outs["affine_dX"], dX)
    close(outs["affine_dW"], dW)
    close(outs["affine_db"], db)


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("relu", jax.nn.relu),
        ("sigmoid", jax.nn.sigmoid),
        ("tanh", jnp.tanh),
        ("softmax", lambda s: jax.nn.softmax(s, axis=1)),
    ],
)
def test_activations(run, name, fn) -> None:
    outs, _ = run
    y, (dX,) = vjp(fn, INPUTS["Da"], INPUTS["S"])
    close(outs[f"{name}_out"], y)
    close(outs[f"{name}_dX"], dX)


def test_dropout_keeps_the_expectation_and_is_seeded(run) -> None:
    outs, stdout = run
    mask = outs["dropout_mask"]
    assert set(np.unique(mask)) <= {0.0, 1.0}
    close(outs["dropout_out"], INPUTS["S"] * mask / 0.5)
    close(outs["dropout_dX"], INPUTS["Da"] * mask / 0.5)
    assert "dropout seeded: true" in stdout.lower() or "dropout seeded: 1" in stdout


def test_batch_norm2d(run) -> None:
    outs, _ = run
    inp = INPUTS
    y, (dX, dg, db) = vjp(jax_batch_norm, inp["Db"], inp["X"], inp["gamma"], inp["beta"])
    close(outs["bn_out"], y, 1e-9)
    close(outs["bn_dX"], dX, 1e-9)
    close(outs["bn_dgamma"], dg, 1e-9)
    close(outs["bn_dbeta"], db, 1e-9)
    x3 = inp["X"].reshape(N, C, -1)
    mean, var = x3.mean(axis=(0, 2)), x3.var(axis=(0, 2))
    close(outs["bn_ema_mean"], (0.1 * mean)[:, None])
    close(outs["bn_ema_var"], (0.9 + 0.1 * var)[:, None])
    ema_m, ema_v = outs["bn_ema_mean"].ravel(), outs["bn_ema_var"].ravel()
    test = (x3 - ema_m[None, :, None]) / np.sqrt(ema_v + 1e-5)[None, :, None] * inp["gamma"].reshape(1, C, 1)
    close(outs["bn_test_out"], (test + inp["beta"].reshape(1, C, 1)).reshape(N, -1))


def test_losses(run) -> None:
    outs, _ = run
    inp = INPUTS
    loss, (dP,) = vjp(lambda p: -jnp.sum(inp["Y"] * jnp.log(p + 1e-10)) / N, 1.0, inp["P"])
    close(outs["ce_loss"], np.atleast_2d(loss))
    close(outs["ce_dX"], dP)
    loss, (dS,) = vjp(lambda s: jnp.sum((s - inp["Da"]) ** 2) / (2 * N), 1.0, inp["S"])
    close(outs["l2_loss"], np.atleast_2d(loss))
    close(outs["l2_dX"], dS)
    loss, (dW,) = vjp(lambda w: 0.1 * jnp.sum(w * w) / 2, 1.0, inp["Wa"])
    close(outs["l2reg_loss"], np.atleast_2d(loss))
    close(outs["l2reg_dX"], dW)


def test_optimizers(run) -> None:
    outs, stdout = run
    W, G = INPUTS["Wc"], INPUTS["G"]
    close(outs["sgd"], W - 0.1 * G)
    v = np.zeros_like(W)
    X = W
    for _ in range(2):
        v = 0.9 * v - 0.1 * G
        X = X + v
    close(outs["momentum"], X)
    v = np.zeros_like(W)
    X = W
    for _ in range(2):
        v_new = 0.9 * v - 0.1 * G
        X = X - 0.9 * v + 1.9 * v_new
        v = v_new
    close(outs["nesterov"], X)
    m, v, X = np.zeros_like(W), np.zeros_like(W), W
    for t in range(2):
        m = 0.9 * m + 0.1 * G
        v = 0.999 * v + 0.001 * G * G
        X = X - 0.01 * (m / (1 - 0.9 ** (t + 1))) / (np.sqrt(v / (1 - 0.999 ** (t + 1))) + 1e-8)
    close(outs["adam"], X)
    assert "adam f32: DenseMatrix(4x18, float)" in stdout


def test_the_library_resolves_from_the_installation_and_a_file_of_the_same_path_wins(tmp_path: Path) -> None:
    script = tmp_path / "s.daph"
    script.write_text('import "nn/layers/relu.daph" as "relu";\nprint(relu.forward([-1.0, 2.0](1, 2)));\n')
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", str(script)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and res.stdout == "DenseMatrix(1x2, double)\n0 2\n", res.stderr
    own = tmp_path / "nn" / "layers"
    own.mkdir(parents=True)
    (own / "relu.daph").write_text("def forward(X) { return X * 0 + 7; }\n")
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and res.stdout == "DenseMatrix(1x2, double)\n7 7\n", res.stderr


STATISTICS_SCRIPT = """\
import "nn/layers/conv2d.daph" as "conv2d";
import "nn/layers/max_pool2d.daph" as "max_pool2d";
X = rand(8, 64, -1.0, 1.0, 1.0, 3);
W, b = conv2d.init(4, 1, 3, 3, 1);
out, Hout, Wout = conv2d.forward(X, W, b, 1, 8, 8, 3, 3, 1, 1, 1, 1);
pooled, Hp, Wp = max_pool2d.forward(out, 4, Hout, Wout, 2, 2, 2, 2, 0, 0);
dX = max_pool2d.backward(pooled, Hp, Wp, out, 4, Hout, Wout, 2, 2, 2, 2, 0, 0);
dXc, dW, db = conv2d.backward(dX, Hout, Wout, X, W, b, 1, 8, 8, 3, 3, 1, 1, 1, 1);
print(nrow(dW));
"""


def test_statistics_charge_each_layer_op_to_the_users_line(tmp_path: Path) -> None:
    """`--statistics` shows the time per layer op: an op inside the library is a row of the user's line that called
    the layer, with the library line after it."""
    (tmp_path / "train.daph").write_text(STATISTICS_SCRIPT)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", "--statistics", "train.daph"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and res.stdout == "4\n", res.stderr
    rows = {tuple(line.split()[i] for i in (1, -2, -1)) for line in res.stderr.splitlines()[2:]}
    names = {name: (user, lib) for name, user, lib in rows}
    assert names["conv2d"] == ("train.daph:5:19", "(nn/layers/conv2d.daph:14:23)")
    assert names["max_pool2d"] == ("train.daph:6:18", "(nn/layers/max_pool2d.daph:7:23)")
    assert names["max_pool2d_backward"] == ("train.daph:7:6", "(nn/layers/max_pool2d.daph:13:12)")
    assert names["conv2d_backward_data"] == ("train.daph:8:15", "(nn/layers/conv2d.daph:22:10)")
    assert names["conv2d_backward_filter"] == ("train.daph:8:15", "(nn/layers/conv2d.daph:23:10)")


LENET_SCRIPT = """\
import "nn/networks/lenet.daph" as "lenet";
X = rand(64, 64, 0.0, 1.0, 1.0, 3);
model = lenet.init(1, 8, 8, 10, 3, 8, 16, 16, 1);
s = 0.0;
for (i in 1:20) {
    s = s + sum(lenet.predict(model, X, 1, 8, 8, 3));
}
print(round(s));
"""


def test_the_shipped_lenet_imports_from_anywhere_and_its_layers_are_rows_of_their_own(tmp_path: Path) -> None:
    """Any script imports the LeNet network (nn/networks/lenet.daph) from the installation; `--statistics` charges
    a layer's ops to the network's line that called the layer, so its two convolutions are rows of their own (the
    ten costliest rows are printed: the loop's convolutions are among them)."""
    (tmp_path / "s.daph").write_text(LENET_SCRIPT)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", "--statistics", "s.daph"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 0 and res.stdout == "1280\n", res.stderr
    lenet = (Path(LIBRARY_DIR) / "nn" / "networks" / "lenet.daph").read_text().splitlines()
    convs = {
        f"nn/networks/lenet.daph:{i}:{text.index('conv2d.forward') + 1}"
        for i, text in enumerate(lenet, 1)
        if "= conv2d.forward(" in text and "model[" in text  # the two convolutions of `predict`
    }
    assert len(convs) == 2
    rows = [r.split() for r in res.stderr.splitlines()[2:]]
    charged = [r[-2:] for r in rows if r[1] == "conv2d"]
    assert charged and all(w in convs and lib == "(nn/layers/conv2d.daph:14:23)" for w, lib in charged), res.stderr
