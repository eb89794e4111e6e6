"""examples/frames.daph runs through the real CLI; its output (frames_example.txt, checked by hand against
DAPHNE's documented semantics: join order, grouped sums in key order, set semantics, print format) must match
byte for byte, and its aggregates are recomputed here from the example's data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_frames_example_output() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(ROOT / "examples" / "frames.daph")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert res.stdout == (Path(__file__).parent / "frames_example.txt").read_text()


def test_frames_example_key_results() -> None:
    """The aggregates of the example, recomputed independently from its data."""
    amounts = {100: (1, 25.5), 101: (3, 10.0), 102: (1, 4.5), 103: (2, 60.0), 104: (3, 5.0), 105: (9, 1.0)}
    region = {1: "north", 2: "south", 3: "north", 4: "east"}
    per_region: dict[str, float] = {}
    for cust, amount in amounts.values():
        if cust in region:
            per_region[region[cust]] = per_region.get(region[cust], 0.0) + amount
    text = (Path(__file__).parent / "frames_example.txt").read_text()
    block = "Frame(2x2, [region:std::string, SUM(amount):double])\n" + "".join(
        f"{r} {per_region[r]:g}\n" for r in sorted(per_region)
    )
    assert block in text
    assert f"\n{sum(per_region.values()):g}\n" in text
