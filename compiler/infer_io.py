"""Compile-time type inference for file I/O ops: the `.meta` file of a constant file name gives type and shape."""

from __future__ import annotations

from compiler.inference import infers  # noqa: F401 - used by the hooks defined here
