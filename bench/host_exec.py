"""Host-execution budgets of the foundation issue, measured end to end (whole `daphnec` process):

- `s = 0; for (i in 1:500000) { s = s + i; } print(s);`  must take <= 1.5 s;
- 500,000 iterations each printing one line               must take <= 3 s;

and, for scale, the same loops in plain CPython (`python -c`) measured in the same run, plus the process start-up
of `daphnec` on a one-line script. Usage: `.venv/bin/python bench/host_exec.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPTS = {
    "sum_loop": ("s = 0;\nfor (i in 1:500000) { s = s + i; }\nprint(s);\n", 1.5),
    "print_loop": ("for (i in 1:500000) { print(i); }\n", 3.0),
    "startup": ('print("hi");\n', None),
}
PYTHON_EQUIVALENT = {
    "sum_loop": "s = 0\nfor i in range(1, 500001):\n    s = s + i\nprint(s)\n",
    "print_loop": "for i in range(1, 500001):\n    print(i)\n",
    "startup": "print('hi')\n",
}


def _time(cmd: list[str], repeat: int) -> float:
    """Median wall time of a command, stdout discarded."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    daphnec = [sys.executable, "-m", "daphnec.tools.daphnec"]
    print(f"{'workload':<12} {'daphnec s':>10} {'budget s':>9} {'python s':>9} {'ratio':>7}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (src, budget) in SCRIPTS.items():
            path = os.path.join(tmp, f"{name}.daph")
            Path(path).write_text(src)
            ours = _time([*daphnec, path], args.repeat)
            py = _time([sys.executable, "-c", PYTHON_EQUIVALENT[name]], args.repeat)
            verdict = "-" if budget is None else ("OK" if ours <= budget else "OVER BUDGET")
            budget_s = "-" if budget is None else f"{budget:.1f}"
            print(f"{name:<12} {ours:>10.3f} {budget_s:>9} {py:>9.3f} {ours / py:>7.1f}x  {verdict}")


if __name__ == "__main__":
    main()
