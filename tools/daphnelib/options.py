"""Command-line options as keyword arguments: `DaphneContext(vec=True, num_threads=2, explain=["kernels"])`.

There is one option table, the CLI's (`runtime/options.py`): a keyword is a command-line option's name with `-` as
`_`, or one of its aliases (`num_threads`, `partitioning`, `select_matrix_repr`, `config="UserConfig.json"`, ...).
The values are checked against the option's kind and choices as the CLI checks them, and reach the user config
through the CLI's cascade (`runtime/config.py`: defaults, then the JSON file of `config=`, then the options, each
by its option's rule), so a keyword means exactly what the command-line option means. `explain` takes a string or
a list of strings; flags take booleans; integers are Python ints.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from daphnec.tools.daphnelib.errors import DaphneUsageError

_NOT_KEYWORDS = {"help", "version", "args"}
"""CLI options that make no sense for a generated program."""

_INT_RANGES = {"int": (-(2**31), 2**31), "uint": (0, 2**64)}
"""C++ `int` and `size_t`, as the CLI's parser checks them."""


def _table() -> dict[str, Any]:
    """Keyword -> the CLI's option record."""
    from daphnec.runtime.options import OPTIONS

    table: dict[str, Any] = {}
    for o in OPTIONS:
        if o.cli is None or o.kind in _NOT_KEYWORDS:
            continue
        for name in (o.cli, *o.aliases):
            if len(name) > 1:
                table[name.replace("-", "_")] = o
    return table


def _bad(o: Any, what: str) -> DaphneUsageError:
    return DaphneUsageError(f"bad option: for the --{o.cli} option: {what}")


def _checked(o: Any, value: object) -> object:
    """`value` as the CLI's parser would have stored it for option `o` (raises DaphneUsageError otherwise)."""
    if o.kind == "flag":
        if not isinstance(value, bool):
            raise DaphneUsageError(f"option '{o.dest}' takes True or False, got {value!r}")
        return value
    if o.kind == "explain":
        from daphnec.runtime.options import EXPLAIN_ALIASES, EXPLAIN_VALUES

        names = [EXPLAIN_ALIASES.get(v, v) for v in ([value] if isinstance(value, str) else list(value))]  # type: ignore[call-overload]
        for v in names:
            if v not in EXPLAIN_VALUES:
                raise _bad(o, f"Cannot find option named '{v}'! (valid values: {', '.join(EXPLAIN_VALUES)})")
        return names
    if o.kind in _INT_RANGES or o.kind == "uintlist":
        lo, hi = _INT_RANGES.get(o.kind, _INT_RANGES["uint"])
        items = list(value) if o.kind == "uintlist" else [value]  # type: ignore[call-overload]
        if not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi for v in items):
            raise _bad(o, f"{value!r} is not a valid {'uint' if o.kind != 'int' else 'integer'} value")
        return items if o.kind == "uintlist" else value
    if not isinstance(value, str):
        raise _bad(o, f"takes a string, got {value!r}")
    if o.kind == "enum" and value not in o.choices:
        raise _bad(o, f"Cannot find option named '{value}'! (valid values: {', '.join(o.choices)})")
    return value


def parsed(options: Mapping[str, object]) -> tuple[dict[str, object], set[str]]:
    """The keyword options as the CLI's parser returns them: values by option `dest`, and the dests given."""
    table = _table()
    values: dict[str, object] = {"explain": []}
    given: set[str] = set()
    for key, value in options.items():
        o = table.get(key)
        if o is None:
            close = difflib.get_close_matches(key, list(table), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise DaphneUsageError(f"unknown option '{key}'{hint}; the options are daphnec's command-line options")
        values[o.dest] = _checked(o, value)
        given.add(o.dest)
    return values, given


def build_config(options: Mapping[str, object]) -> Any:
    """A `DaphneConfig` from keyword options: defaults, the JSON file of `config=` (if it exists), the options."""
    import os

    from daphnec.runtime.config import ConfigError, DaphneConfig, apply_command_line, load_user_config

    values, given = parsed(options)
    config = DaphneConfig()
    path = values.get("config")
    try:
        if isinstance(path, str) and os.path.exists(path):
            config = load_user_config(path, config)
    except ConfigError as e:
        raise DaphneUsageError(f"while reading user config: {e.message}") from None
    apply_command_line(config, values, given)
    return config
