"""daphnec's own DaphneDSL library, shipped with the package: `nn/` (layers, optimizers and the LeNet network,
docs/deep-learning.md).

An `import` that finds its file neither beside the importing script nor in a default directory finds it here
(`import "nn/layers/conv2d.daph" as "conv2d";`, frontend/imports.py); `--statistics` charges the ops of these
files to the line that called into them (runtime/statistics.py). This module imports nothing of daphnec.
"""

from __future__ import annotations

import os

LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__))
"""The folder holding `nn/`."""
