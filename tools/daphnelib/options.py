"""Command-line options as keyword arguments: `DaphneContext(vec=True, num_threads=2, explain=["kernels"])`.

There is one option table, the CLI's (`tools/daphnec.py`): a keyword is an option's destination or its name with
`-` as `_` (`num_threads`, `partitioning`, `select_matrix_repr`, `config="UserConfig.json"`, ...). The keywords
are turned into the very command line `daphnec` would get and go through its parser and its config cascade
(defaults, then the JSON file of `config=`, then the flags), so every option, value check and error message is the
CLI's. `explain` takes a string or a list of strings; flags take booleans.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from daphnec.tools.daphnelib.errors import DaphneUsageError

_NOT_KEYWORDS = {"help", "version", "args"}
"""CLI options that make no sense for a generated program."""


def _table() -> dict[str, Any]:
    """Keyword -> the CLI's option record."""
    from daphnec.tools.daphnec import OPTIONS

    table: dict[str, Any] = {}
    for o in OPTIONS:
        if o.kind in _NOT_KEYWORDS:
            continue
        for name in (o.dest, o.name, *o.aliases):
            if len(name) > 1:
                table[name.replace("-", "_")] = o
    return table


def _argv_item(o: Any, value: object) -> str | None:
    if o.kind == "flag":
        if not isinstance(value, bool):
            raise DaphneUsageError(f"option '{o.dest}' takes True or False, got {value!r}")
        return f"--{o.name}={'true' if value else 'false'}"
    if o.kind == "explain":
        values = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
        return f"--{o.name}={','.join(values)}" if values else None
    if o.kind == "uintlist":
        return f"--{o.name}={','.join(str(v) for v in value)}"  # type: ignore[attr-defined]
    if isinstance(value, bool) or value is None:
        raise DaphneUsageError(f"option '{o.dest}' takes a value, got {value!r}")
    return f"--{o.name}={value}"


def command_line(options: Mapping[str, object]) -> list[str]:
    """The `daphnec` options equivalent to the keyword arguments (raises DaphneUsageError for unknown ones)."""
    table = _table()
    argv: list[str] = []
    for key, value in options.items():
        o = table.get(key)
        if o is None:
            close = difflib.get_close_matches(key, list(table), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise DaphneUsageError(f"unknown option '{key}'{hint}; the options are daphnec's command-line options")
        item = _argv_item(o, value)
        if item is not None:
            argv.append(item)
    return argv


def build_config(options: Mapping[str, object]) -> Any:
    """A `DaphneConfig` from keyword options, through the CLI's parser and config cascade."""
    from daphnec.runtime.config import ConfigError
    from daphnec.tools.daphnec import UsageError, build_config, parse_command_line

    argv = command_line(options)
    try:
        parsed = parse_command_line([*argv, "<daphnelib>"])
        return build_config(parsed)
    except UsageError as e:
        raise DaphneUsageError(f"bad option: {e}") from None
    except ConfigError as e:
        raise DaphneUsageError(f"while reading user config: {e.message}") from None
