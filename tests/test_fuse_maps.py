"""`fuse-maps` (the default path): a chain of element-wise ops computing one matrix runs as one native loop,
and every result is bit-identical to the unfused ops' (NaN signs, infinities and signed zeros included). The same
script runs with the native passes on and with `DAPHNEC_NO_NATIVE=1` (every op its own numpy kernel); the
results are written in DAPHNE's binary format and compared byte for byte. Row and column vectors an op broadcasts
are inputs of a chain, in maps and in fused sums alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = """
a = rand(300, 250, -2.0, 2.0, 1, 1);
b = rand(300, 250, -2.0, 2.0, 0.5, 2);
c = rand(300, 250, 0.0, 1.0, 0.3, 3);
writeMatrix((a - b) * 3.0 + a * b, "{d}/m1.dbdf");
writeMatrix(a / b - c / (b * 0.0), "{d}/m2.dbdf");
writeMatrix(sqrt(abs(a)) + abs(b) * sign(a - c), "{d}/m3.dbdf");
writeMatrix(max(a / c, b) - min(c, a * 1e308 * 10.0), "{d}/m4.dbdf");
writeMatrix(round(a * 10.0) + floor(b * 3.5) - ceil(-c) + (a > b) * 2.0, "{d}/m5.dbdf");
writeMatrix(-(a - a) + (b == c) - isNan(b / c) + (b - a) ^ 2.0, "{d}/m6.dbdf");
t = a * c;
writeMatrix((t + 1.0) * (t - 1.0), "{d}/m7.dbdf");
print(as.scalar(t[1, 1]));
r = rand(1, 250, -1.0, 1.0, 0.5, 4);
k = rand(300, 1, 0.0, 1.0, 0.5, 5);
writeMatrix((b * r + 1.0) / k - r, "{d}/m8.dbdf");
writeMatrix(max(c - k, r) * 2.0, "{d}/m9.dbdf");
writeMatrix(fill(sum((a - r) * k + c), 1, 1), "{d}/s1.dbdf");
writeMatrix(fill(sum(abs(c * r) - k), 1, 1), "{d}/s2.dbdf");
"""
RESULTS = [*(f"m{i}.dbdf" for i in range(1, 10)), "s1.dbdf", "s2.dbdf"]


def _run(tmp: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    script = tmp / "maps.daph"
    script.write_text(SCRIPT.replace("{d}", str(tmp)))
    return subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", *flags, str(script)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})  # fmt: skip


def test_fused_maps_are_bit_identical_to_the_unfused_ops(tmp_path: Path) -> None:
    fused, plain = tmp_path / "fused", tmp_path / "plain"
    fused.mkdir()
    plain.mkdir()
    r1 = _run(fused, {})
    r2 = _run(plain, {"DAPHNEC_NO_NATIVE": "1"})
    assert (r1.returncode, r1.stderr) == (0, "") and (r2.returncode, r2.stderr) == (0, "")
    assert r1.stdout == r2.stdout
    for name in RESULTS:
        assert (fused / name).read_bytes() == (plain / name).read_bytes(), name


def test_every_chain_becomes_one_ordered_pipeline(tmp_path: Path) -> None:
    res = _run(tmp_path, {}, "--explain=vectorized")
    assert res.returncode == 0, res.stderr
    ir = res.stderr  # DAPHNE prints the IR to stderr
    assert ir.count("daphne.vectorizedPipeline") == 11, ir  # nine maps, two sums (fuse-sums)
    assert ir.count("{daphne.ordered}") == 11
    outside = re.findall(r'^    %\d+ = "daphne\.(ew\w+)"', ir, re.M)  # the function body, not a pipeline's
    assert outside == ["ewMul"]  # t = a * c: used twice, computed and kept by its own op


def test_with_vec_the_chains_keep_daphnes_vectorization(tmp_path: Path) -> None:
    res = _run(tmp_path, {}, "--vec", "--vec-min-cells=0", "--explain=vectorized")
    assert res.returncode == 0, res.stderr
    assert "daphne.vectorizedPipeline" in res.stderr and "{daphne.ordered}" not in res.stderr
