"""A mutation fuzzer for the `daphnec` CLI: it mutates the example and test scripts and checks the error contract.

Every mutant runs in a fresh `daphnec` process under a time limit and must end with an exit code in {0, 1, 2, 3},
print no Python traceback and, when it fails, say so in DAPHNE's format: one stderr line `file:line:col: error:
...` (or `error: ...` for errors without a place in the script, counted separately as unlocated). The suite runs
a short fixed-seed budget (`tests/test_fuzz.py`); longer runs report their figures:

    python tests/fuzz_scripts.py --seed 1 --count 500 --jobs 2
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = sorted(
    [*ROOT.glob("examples/*.daph"), *ROOT.glob("tests/scripts/**/*.daph"), *ROOT.glob("tests/fuzz_corpus/*.daph")]
)
"""The scripts mutants start from: the examples, the end-to-end scripts, and `tests/fuzz_corpus/` (reproducers of
errors that once reached the user as Python exceptions: their neighbourhood is where more of them hide)."""
INTERNAL = re.compile(r"internal error|\b[A-Z][A-Za-z]*(?:Error|Exception)\b|Traceback")
"""A message that leaks the implementation: daphnec's own "internal error" marker or a Python exception name
(`ValueError`, `LinAlgError`, `MemoryError`, ...); DaphneDSL messages never contain one."""
TOKENS = [
    "(", ")", "{", "}", "[", "]", ";", ",", ":", "\"", "'", "/*", "*/", "//", "+", "-", "*", "/", "^", "%", "@",
    "==", "!=", "<=", "&&", "||", "!", "?", "=", ".", "$x", "$", "as.f32(", "as.matrix(", "as.frame(", "t(", "sum(",
    "rand(2, 2, 0.0, 1.0, 1, 1)", "if (1) ", "else ", "while (0) ", "for (i in 1:3) ", "def f(x) { return x; }",
    "return ", "import \"nonexistent.daph\";", "9223372036854775808", "1e999", "-0.0", "nan", "inf", "0x", "1.5f",
    "\"\\u\"", "\t", "\n", "\r", "\u00e9", "\u200b", "\x00", "matrix<f64>", "frame", "createFrame(", "print(",
    "readMatrix(\"nonexistent.csv\")", "seq(1, 100000000, 1)", "fill(1, -1, 2)", "[1, 2, 3]", "x[", "x[,", ":]",
]  # fmt: skip
BAD_BYTES = [b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\x80\x80", b"\xed\xa0\x80"]


def mutate(text: str, rng: random.Random) -> bytes:
    """One to four random edits of a script: token insertions, deletions, duplications, swaps, truncation,
    number replacement, and (rarely) bytes that are not UTF-8."""
    s = text
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        at = rng.randint(0, len(s))
        if kind == 0:
            s = s[:at] + rng.choice(TOKENS) + s[at:]
        elif kind == 1:
            s = s[:at] + s[at + rng.randint(1, 12) :]
        elif kind == 2:
            lines = s.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
            s = "\n".join(lines)
        elif kind == 3:
            lines = s.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            s = "\n".join(lines)
        elif kind == 4:
            s = s[:at]
        elif kind == 5:
            s = re.sub(r"\d+", lambda m: rng.choice(["0", "-1", "99999999999", "1e308", "0.5", m.group()]), s, count=3)
        else:
            raw = s.encode()
            cut = rng.randint(0, len(raw))
            return raw[:cut] + rng.choice(BAD_BYTES) + raw[cut:]
    return s.encode("utf-8", "surrogatepass")


@dataclass
class Figures:
    tried: int = 0
    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    bad_codes: list[str] = field(default_factory=list)
    off_format: list[str] = field(default_factory=list)
    unlocated: list[str] = field(default_factory=list)
    internal: list[str] = field(default_factory=list)
    codes: Counter[int] = field(default_factory=Counter)

    def summary(self) -> str:
        return (
            f"mutants tried {self.tried}, tracebacks {len(self.tracebacks)}, hangs {len(self.hangs)}, "
            f"bad exit codes {len(self.bad_codes)}, off-format messages {len(self.off_format)}, "
            f"unlocated errors {len(self.unlocated)}, internal errors {len(self.internal)}, "
            f"exit codes {dict(sorted(self.codes.items()))}"
        )


def check(script: Path, timeout: float, figures: Figures) -> None:
    """Run one mutant and file what went wrong (its path names it in the report)."""
    name = str(script)
    try:
        res = subprocess.run(
            [sys.executable, "-m", "daphnec.tools.daphnec", str(script)],
            capture_output=True,
            timeout=timeout,
            cwd=script.parent,
        )
    except subprocess.TimeoutExpired:
        figures.hangs.append(name)
        return
    figures.tried += 1
    figures.codes[res.returncode] += 1
    err = res.stderr.decode("utf-8", "replace")
    if "Traceback" in err:
        figures.tracebacks.append(name)
    if res.returncode not in (0, 1, 2, 3):
        figures.bad_codes.append(f"{name}: exit {res.returncode}")
    if res.returncode == 0:
        return
    last = err.rstrip("\n").split("\n")[-1] if err.strip() else ""
    if INTERNAL.search(err):
        figures.internal.append(f"{name}: {last}")
    if re.match(re.escape(name) + r":\d+:\d+: error: \S", last):
        return
    if re.match(r"(error|[\w.-]+: error): \S", last):
        figures.unlocated.append(f"{name}: {last}")
    else:
        figures.off_format.append(f"{name}: {last!r}")


def fuzz(seed: int, count: int, folder: Path, jobs: int = 1, timeout: float = 60.0) -> Figures:
    """Write `count` mutants of randomly chosen seed scripts into `folder` and check each."""
    rng = random.Random(seed)
    scripts = []
    for i in range(count):
        source = rng.choice(SEEDS)
        mutant = folder / f"m{i:05d}_{source.stem}.daph"
        mutant.write_bytes(mutate(source.read_text(), rng))
        scripts.append(mutant)
    figures = Figures()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda s: check(s, timeout, figures), scripts))
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--show", type=int, default=20, help="list at most this many findings of each kind")
    ap.add_argument("--keep", type=Path, help="write the mutants into this folder and keep them (to re-run findings)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        f = fuzz(args.seed, args.count, folder, args.jobs, args.timeout)
        print(f.summary())
        for kind in ("tracebacks", "hangs", "bad_codes", "off_format", "unlocated", "internal"):
            for item in getattr(f, kind)[: args.show]:
                print(f"{kind}: {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
