"""The user configuration (DAPHNE's `DaphneUserConfig`) and its JSON config file (`UserConfig.json`).

Both are derived from the one table of settings, `runtime.options.OPTIONS`: `DaphneConfig` has one field per
setting (DAPHNE's C++ member names, so a key of the JSON file and the field it sets have the same spelling:
`use_vectorized_exec`, `taskPartitioningScheme`, `numberOfThreads`, ...), and the JSON reader accepts exactly the
settings the table marks as config-file keys. The command-line name of a setting is also an alias of its field
(`config.num_threads` reads and writes `numberOfThreads`).

The cascade: the defaults, then the JSON file given by `--config=FILE` (a missing file is warned about and
skipped), then the options given on the command line (`apply_command_line`, each option's `apply` rule).

The JSON parser follows DAPHNE's `ConfigParser::readUserConfig`:
- an unknown key is an error naming the key (`Unexpected key 'foo' in 'cfg.json' file`);
- a value of the wrong JSON type is an error (booleans must be `true`/`false`; integer keys take any JSON number,
  truncated toward zero, or a boolean, like nlohmann's `get<int>()`; strings must be strings);
- `taskPartitioningScheme` must be one of DAPHNE's JSON enum names; `"AUTO"` is **not** among them (it is accepted
  only by the CLI's `--partitioning`). `"ADAPTIVE"` is a daphnec extension and is accepted.

This module imports only the standard library and runtime.options (runtime/ layer rule; `daphnec --help` is cheap).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import field, fields, make_dataclass
from typing import Any

from daphnec.runtime.options import (
    CONFIG_PARTITIONING_SCHEMES,
    DEFAULT_MAX_DISTR_CHUNK_SIZE,
    DIST_BACKENDS,
    EXPLAIN_ALIASES,
    EXPLAIN_VALUES,
    IF_SET,
    NEVER,
    OPTIONS,
    PARTITIONING_SCHEMES,
    QUEUE_LAYOUTS,
    VICTIM_SELECTIONS,
    Option,
)

__all__ = [
    "ConfigError",
    "DaphneConfig",
    "apply_command_line",
    "load_user_config",
    "parse_user_config",
    "EXPLAIN_VALUES",
    "EXPLAIN_ALIASES",
    "PARTITIONING_SCHEMES",
    "CONFIG_PARTITIONING_SCHEMES",
    "QUEUE_LAYOUTS",
    "VICTIM_SELECTIONS",
    "DIST_BACKENDS",
    "CONFIG_KEYS",
    "DEFAULT_MAX_DISTR_CHUNK_SIZE",
]


class ConfigError(Exception):
    """A bad user configuration (unreadable JSON, unknown key, wrong type, bad enum value): DAPHNE exits with 1."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


#: spdlog level names (`spdlog::level::from_str`; an unknown name means `off`).
_LOG_LEVELS = ("trace", "debug", "info", "warning", "warn", "error", "err", "critical", "off")


# ---------------------------------------------------------------------------------------------------------------
# The configuration
# ---------------------------------------------------------------------------------------------------------------

_FIELD_TYPES: dict[str, object] = {
    "flag": bool,
    "int": int,
    "uint": int,
    "float": float,
    "str": str,
    "enum": str,
    "explain": list[str],
    "uintlist": list[int],
    "intlist": list[int],
    "paths": dict[str, list[str]],
    "logging": list[dict[str, str]],
    "dict": dict[str, str],
}


class _ConfigMethods:
    """The methods of `DaphneConfig` (its fields come from `runtime.options.OPTIONS`)."""

    explain: list[str]
    minimumTaskSize: int

    def explains(self, value: str) -> bool:
        """True if `--explain=value` (or the config key `explain_<value>`) was requested."""
        return EXPLAIN_ALIASES.get(value, value) in self.explain

    def set_explain(self, value: str, on: bool = True) -> None:
        """Turn one explain value on or off, keeping `explain` in pipeline order without duplicates."""
        value = EXPLAIN_ALIASES.get(value, value)
        if value not in EXPLAIN_VALUES:
            raise ConfigError(f"unknown explain value '{value}' (valid values: {', '.join(EXPLAIN_VALUES)})")
        chosen = set(self.explain)
        if on:
            chosen.add(value)
        else:
            chosen.discard(value)
        self.explain = [v for v in EXPLAIN_VALUES if v in chosen]

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (for debugging and for shipping the config to MPI workers)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @property
    def grain_size(self) -> int:
        """The effective minimum chunk size: `minimumTaskSize`, at least 1."""
        return max(1, int(self.minimumTaskSize))

    @grain_size.setter
    def grain_size(self, value: int) -> None:
        self.minimumTaskSize = value


def _config_field(o: Option) -> tuple[str, object, Any]:
    """The dataclass field of a setting; list and dict defaults are copied for every configuration."""
    assert o.field is not None
    default = o.default
    if isinstance(default, (list, tuple, dict)):
        make = dict if isinstance(default, dict) else list
        return o.field, _FIELD_TYPES[o.kind], field(default_factory=lambda: make(copy.deepcopy(default)))
    return o.field, _FIELD_TYPES[o.kind], field(default=default)


DaphneConfig = make_dataclass(
    "DaphneConfig",
    [_config_field(o) for o in OPTIONS if o.field is not None],
    bases=(_ConfigMethods,),
    namespace={"__module__": __name__, "__doc__": "Every user-configurable setting (runtime.options.OPTIONS)."},
)


def _make_alias(target: str) -> property:
    def get(self: Any) -> Any:
        return getattr(self, target)

    def set_(self: Any, value: Any) -> None:
        setattr(self, target, value)

    return property(get, set_, doc=f"Alias of `{target}`.")


#: Command-line names of the fields (`config.num_threads` is `numberOfThreads`); `grain_size` has its own property.
_ALIASES: dict[str, str] = {
    o.dest: o.field
    for o in OPTIONS
    if o.field is not None and o.cli is not None and not o.invert and o.dest not in (o.field, "grain_size")
}
for _alias, _target in _ALIASES.items():
    setattr(DaphneConfig, _alias, _make_alias(_target))


def apply_command_line(cfg: Any, values: Mapping[str, object], given: Collection[str]) -> None:
    """Apply parsed command-line values (`values`, keyed by option `dest`; `given`: the dests given) to `cfg`,
    each by its option's `apply` rule (runtime/options.py): what the command line gives wins over the config
    file, which wins over the default."""
    for o in OPTIONS:
        if o.field is None or o.cli is None or o.apply == NEVER:
            continue
        if o.kind == "explain":
            for e in values.get(o.dest, ()):  # type: ignore[attr-defined]
                cfg.set_explain(e, True)
        elif o.dest in given:
            value = values[o.dest]
            if o.apply == IF_SET and not value:
                continue
            setattr(cfg, o.field, (not value) if o.invert else copy.copy(value))
            for name, implied in o.implies:
                setattr(cfg, name, implied)


# ---------------------------------------------------------------------------------------------------------------
# JSON config file
# ---------------------------------------------------------------------------------------------------------------


def _json_type_name(v: Any) -> str:
    # nlohmann::json's type_name()
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_error(key: str, want: str, v: Any) -> ConfigError:
    return ConfigError(f"config key '{key}': type must be {want}, but is {_json_type_name(v)}")


def _as_bool(key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise _type_error(key, "boolean", v)
    return v


def _as_int(key: str, v: Any, *, unsigned: bool = False) -> int:
    # nlohmann's get<int>() converts any number (float truncated toward zero) and booleans.
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        r = v
    elif isinstance(v, float):
        r = int(v)
    else:
        raise _type_error(key, "number", v)
    if unsigned and r < 0:
        raise ConfigError(f"config key '{key}': value must not be negative, but is {r}")
    return r


def _as_float(key: str, v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    raise _type_error(key, "number", v)


def _as_str(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise _type_error(key, "string", v)
    return v


def _as_int_list(key: str, v: Any) -> list[int]:
    if not isinstance(v, list):
        raise _type_error(key, "array", v)
    return [_as_int(key, x) for x in v]


def _as_import_paths(key: str, v: Any) -> dict[str, list[str]]:
    if not isinstance(v, dict):
        raise _type_error(key, "object", v)
    out: dict[str, list[str]] = {}
    for name, dirs in v.items():
        if not isinstance(dirs, list):
            raise _type_error(f"{key}.{name}", "array", dirs)
        out[name] = [_as_str(f"{key}.{name}", d) for d in dirs]
    return out


def _apply_logging(cfg: Any, key: str, v: Any) -> None:
    entries = list(v.values()) if isinstance(v, dict) else v
    if not isinstance(entries, list):
        raise _type_error(key, "array", v)
    for i, entry in enumerate(entries):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict):
            raise _type_error(where, "object", entry)
        if "log-level-limit" in entry:
            level = _as_str(f"{where}.log-level-limit", entry["log-level-limit"]).lower()
            # spdlog::level::from_str maps unknown names to `off`
            cfg.log_level_limit = level if level in _LOG_LEVELS else "off"
        elif "name" in entry:
            logger = {}
            for k in ("name", "filename", "level", "format"):
                if k not in entry:
                    raise ConfigError(f"config key '{where}': key '{k}' not found")
                logger[k] = _as_str(f"{where}.{k}", entry[k])
            cfg.logging.append(logger)
        # DAPHNE logs and skips any other entry


def _as_enum(o: Option) -> Callable[[str, Any], str]:
    def parse(key: str, v: Any) -> str:
        if not isinstance(v, str) or v not in o.json_choices:
            import json

            raise ConfigError(
                f"Invalid value for enum \"{o.enum_name}\": {json.dumps(v)} in config key '{key}' "
                f"(valid values: {', '.join(o.json_choices)})"
            )
        return v

    return parse


_READERS: dict[str, Callable[[str, Any], Any]] = {
    "flag": _as_bool,
    "int": _as_int,
    "uint": lambda key, v: _as_int(key, v, unsigned=True),
    "float": _as_float,
    "str": _as_str,
    "intlist": _as_int_list,
    "uintlist": _as_int_list,
    "paths": _as_import_paths,
}


def _setter(o: Option) -> Callable[[Any, str, Any], None]:
    """What the JSON key of `o` does with its value."""
    if o.kind == "logging":
        return _apply_logging
    read = _as_enum(o) if o.kind == "enum" else _READERS[o.kind]
    name = o.field

    def apply(cfg: Any, key: str, v: Any) -> None:
        value = read(key, v)  # type: ignore[arg-type]
        problem = o.check(value) if o.check is not None else None
        if problem is not None:
            raise ConfigError(f"config key '{key}': value {problem}")
        setattr(cfg, name, value)

    return apply


def _explain_setter(value: str) -> Callable[[Any, str, Any], None]:
    def apply(cfg: Any, key: str, v: Any) -> None:
        cfg.set_explain(value, _as_bool(key, v))

    return apply


def _build_key_table() -> dict[str, Callable[[Any, str, Any], None]]:
    t: dict[str, Callable[[Any, str, Any], None]] = {}
    for o in OPTIONS:
        if not o.json:
            continue
        if o.kind == "explain":
            for value in EXPLAIN_VALUES:
                t[f"explain_{value}"] = _explain_setter(value)
            for old, new in EXPLAIN_ALIASES.items():
                t[f"explain_{old}"] = _explain_setter(new)
        else:
            t[o.field] = _setter(o)  # type: ignore[index]
    return t


_KEY_TABLE = _build_key_table()

#: Every key the JSON user config may contain.
CONFIG_KEYS: tuple[str, ...] = tuple(_KEY_TABLE)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid literal '{name}'")


def parse_user_config(text: str, filename: str = "<config>", base: Any = None) -> Any:
    """Parse the text of a JSON user config onto `base` (default: a fresh `DaphneConfig`) and return it."""
    import json  # only with a config file: not on every run's start-up

    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ConfigError(f"parse error at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise ConfigError(f"parse error: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the user config in '{filename}' must be a JSON object, but is {_json_type_name(data)}")
    # DAPHNE checks all keys before applying any of them.
    for key in data:
        if key not in _KEY_TABLE:
            raise ConfigError(f"Unexpected key '{key}' in '{filename}' file")
    cfg = base if base is not None else DaphneConfig()
    for key, value in data.items():
        _KEY_TABLE[key](cfg, key, value)
    if not math.isfinite(cfg.sparsity_threshold):
        raise ConfigError("config key 'sparsity_threshold': value must be finite")
    return cfg


def load_user_config(path: str, base: Any = None) -> Any:
    """Read the JSON user config file `path` onto `base` (default: the defaults). Raises `ConfigError`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"could not open file '{path}' for reading user config: {reason}") from None
    return parse_user_config(text, path, base)
