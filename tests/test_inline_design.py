"""The design matrix of a linear model built in a library function (scaled, shifted, `cbind` of the intercept
column) and multiplied in the caller's CG loop: once `inline` puts the function's ops in the caller, `fuse-x-once`
computes `t(Xd) @ (Xd @ p)` from the scaled matrix without the `cbind` copy (compiler/passes/fuse_x_once.py,
`intercept_gram`). The result must equal the program as written (`--no-reassociate`: every call and copy kept)
within the README's 1e-12 relative promise, also for columns whose mean is far larger than their spread, and on
matrices large enough for the native one-pass loop."""

from __future__ import annotations

import numpy as np
import pytest
from test_rewrites import receive, run  # the sibling module: compile with or without re-associating rewrites

LIBRARY = """
def design(X:matrix<f64>, icpt:si64) -> matrix<f64>, matrix<f64>, matrix<f64> {
    m = ncol(X);
    scale = fill(1.0, 1, m);
    shift = fill(0.0, 1, m);
    if (icpt == 2) {
        scale = 1.0 / max(stddev(X, 1), 1e-12);
        shift = -mean(X, 1) * scale;
        X = X * scale + shift;
    }
    if (icpt > 0) {
        X = cbind(X, fill(1.0, nrow(X), 1));
    }
    return X, scale, shift;
}
"""


@pytest.mark.parametrize("icpt", [1, 2])
@pytest.mark.parametrize("n, m, offset", [(40, 3, 0.0), (3000, 12, 1000.0)])
def test_gram_of_design_without_cbind(icpt: int, n: int, m: int, offset: float) -> None:
    rng = np.random.default_rng(n + icpt)
    x = rng.uniform(-1.0, 1.0, (n, m)) * 5.0 + offset
    p = rng.uniform(-1.0, 1.0, (m + 1, 1))
    body = f"""Xd, scale, shift = design(M0, {icpt});
R = M1;
for (i in 1:3) {{
    q = t(Xd) @ (Xd @ R) + 0.001 * R;
    R = q / sum(q ^ 2) ^ 0.5;
}}
saveDaphneLibResult(R);
"""
    src = LIBRARY + receive([x, p]) + body
    want, plain_ir = run(src, [x, p], reassociate=False)
    got, ir = run(src, [x, p], reassociate=True)
    assert "func.call" in plain_ir or '"daphne.colBind"' in plain_ir
    assert '"daphne.colBind"' not in ir and "func.call" not in ir, ir
    assert '"daphne.gramVectorResidual"' in ir, ir
    assert np.allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-13), (got, want)
