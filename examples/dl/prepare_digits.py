"""Write scikit-learn's handwritten digits (1,797 labelled 8x8 grey images, shipped inside the scikit-learn package:
nothing is downloaded) as DAPHNE matrices for the training scripts of examples/dl/.

    python examples/dl/prepare_digits.py [FOLDER] [--format csv|parquet] [--test-fraction 0.2] [--seed 0]

FOLDER (default: examples/dl/data beside this script) receives, each with its DAPHNE `.meta` file:
  X_train.<ext>, X_test.<ext>   one image per row: 64 pixels (8 rows of 8), scaled from 0..16 to [0, 1], f64
  y_train.<ext>, y_test.<ext>   the digit of each row (0..9) as one f64 column
The test split is held back (stratified by digit, seeded); the training scripts never see it until they report
their accuracy. Needs scikit-learn: `pip install 'daphnec[examples]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def split(test_fraction: float, seed: int) -> dict[str, np.ndarray]:
    """The digits as a stratified, seeded train/test split (pixels scaled to [0, 1])."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("prepare_digits.py needs scikit-learn: pip install 'daphnec[examples]'")
    digits = load_digits()
    X = digits.data.astype(np.float64) / 16.0
    y = digits.target.astype(np.float64).reshape(-1, 1)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_fraction, random_state=seed, stratify=digits.target
    )
    return {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test}


def write(folder: Path, name: str, M: np.ndarray, fmt: str) -> Path:
    """One matrix and its `.meta`, each written to a temporary file and renamed into place."""
    path = folder / f"{name}.{fmt}"
    tmp = path.with_name(path.name + ".tmp")
    if fmt == "csv":
        np.savetxt(tmp, M, delimiter=",", fmt="%.17g")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({f"col_{j}": M[:, j] for j in range(M.shape[1])}), tmp)
    os.replace(tmp, path)
    meta = {"numRows": M.shape[0], "numCols": M.shape[1], "valueType": "f64"}
    tmp_meta = path.with_name(path.name + ".meta.tmp")
    tmp_meta.write_text(json.dumps(meta))
    os.replace(tmp_meta, path.with_name(path.name + ".meta"))
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(HERE / "data"), help="output folder (default: %(default)s)")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv")
    parser.add_argument("--test-fraction", type=float, default=0.2, help="held-back share (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split (default: %(default)s)")
    args = parser.parse_args(argv)
    if not 0.0 < args.test_fraction < 1.0:
        parser.error("--test-fraction must be between 0 and 1")
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, M in split(args.test_fraction, args.seed).items():
        path = write(folder, name, M, args.format)
        print(f"{path}: {M.shape[0]} x {M.shape[1]}")


if __name__ == "__main__":
    main()
