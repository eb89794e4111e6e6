"""Kernel-extension catalogs (`--kernel-ext catalog.json[:priority]`, DAPHNE's doc/Extensions.md).

A catalog is a JSON array of kernels, each `{"opMnemonic", "kernelFuncName", "resTypes", "argTypes", "backend",
"libPath"}`; types are C++ type names (`float`, `DenseMatrix<float>`), `libPath` is relative to the catalog's
folder. The priority (an int, default 0 like the built-in kernels) applies to every kernel of the catalog: a kernel
with a priority above 0 replaces the built-in one wherever its types match, and a kernel hint (`sum::name(X)`) picks
one by name at any priority.

Backends: `CPP` is a C function in a shared library, called through ctypes with the signature the catalog gives
(see runtime/kernels/extensions.py); `Python` (daphnec's) is a function in a Python source file. Kernels of other
backends (`CUDA`, ...) are read but never run. A bad catalog or priority is a parse error (exit 1), as in DAPHNE.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from daphnec.runtime.config import ConfigError

BACKENDS_RUN = ("CPP", "Python")
"""The backends daphnec runs; other backends' kernels are listed but never selected."""

_FIELDS = ("opMnemonic", "kernelFuncName", "resTypes", "argTypes", "backend", "libPath")
_INT32 = (-(1 << 31), (1 << 31) - 1)


class KernelCatalogError(ConfigError):
    """A bad `--kernel-ext` argument or catalog file: a parse error (exit 1)."""


@dataclass(frozen=True)
class KernelInfo:
    """One extension kernel of a catalog."""

    op: str
    """The DaphneIR op mnemonic it implements (`sumAll`)."""
    name: str
    """The kernel function's name (a C symbol, or a Python function)."""
    res_types: tuple[str, ...]
    arg_types: tuple[str, ...]
    backend: str
    lib: str
    """The absolute path of the shared library or Python file."""
    priority: int = 0


def split_kernel_ext(spec: str) -> tuple[str, int]:
    """`catalog.json[:priority]` -> (path, priority); the priority must be an integer that fits a C++ int."""
    path, sep, prio = spec.rpartition(":")
    if not sep:
        return spec, 0
    if not re.fullmatch(r"[+-]?[0-9]+", prio.strip()):
        raise KernelCatalogError(f"--kernel-ext: the priority '{prio}' of '{spec}' is not an integer")
    value = int(prio)
    if not _INT32[0] <= value <= _INT32[1]:
        raise KernelCatalogError(f"--kernel-ext: the priority {prio} of '{spec}' is out of range")
    return path, value


def load_kernel_ext(spec: str) -> tuple[KernelInfo, ...]:
    """The kernels of the catalog `spec` (`catalog.json[:priority]`) names."""
    import json  # only with --kernel-ext: not on every run's start-up

    path, priority = split_kernel_ext(spec)
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except OSError as e:
        raise KernelCatalogError(f"kernel catalog '{path}': {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise KernelCatalogError(f"kernel catalog '{path}' is not valid JSON: {e}") from None
    if not isinstance(entries, list):
        raise KernelCatalogError(f"kernel catalog '{path}': expected a JSON array of kernels")
    folder = os.path.dirname(os.path.abspath(path))
    return tuple(_kernel(path, i, e, folder, priority) for i, e in enumerate(entries))


def _kernel(path: str, i: int, entry: object, folder: str, priority: int) -> KernelInfo:
    where = f"kernel catalog '{path}', kernel {i}"
    if not isinstance(entry, dict):
        raise KernelCatalogError(f"{where}: expected a JSON object")
    missing = [k for k in _FIELDS if k not in entry]
    if missing:
        raise KernelCatalogError(f"{where}: missing {', '.join(repr(k) for k in missing)}")
    for key in ("opMnemonic", "kernelFuncName", "backend", "libPath"):
        if not isinstance(entry[key], str) or not entry[key]:
            raise KernelCatalogError(f"{where}: '{key}' must be a non-empty string")
    for key in ("resTypes", "argTypes"):
        if not isinstance(entry[key], list) or not all(isinstance(t, str) for t in entry[key]):
            raise KernelCatalogError(f"{where}: '{key}' must be an array of type names")
    lib = os.path.normpath(os.path.join(folder, entry["libPath"]))
    if entry["backend"] in BACKENDS_RUN and not os.path.isfile(lib):
        raise KernelCatalogError(f"{where} ({entry['kernelFuncName']}): library '{entry['libPath']}' not found")
    return KernelInfo(
        entry["opMnemonic"],
        entry["kernelFuncName"],
        tuple(_spaced(t) for t in entry["resTypes"]),
        tuple(_spaced(t) for t in entry["argTypes"]),
        entry["backend"],
        lib,
        priority,
    )


def _spaced(t: str) -> str:
    """A type name without blanks (`DenseMatrix< float >` is `DenseMatrix<float>`)."""
    return re.sub(r"\s+", "", t)
