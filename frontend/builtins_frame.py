"""DaphneDSL builtins of the frame category (see frontend/builtins.py for `Builtin` and the helpers)."""

from __future__ import annotations

from frontend.builtins import Builtin

BUILTINS: dict[str, Builtin] = {}
