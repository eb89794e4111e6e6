"""Kernel selectors for the frame builtins whose kernel depends on operand types (see compiler/kernel_select.py)."""

from __future__ import annotations

from compiler.kernel_select import KernelSpec, selects  # noqa: F401 - used by the selectors defined here
