"""The user configuration (DAPHNE's `DaphneUserConfig`) and its JSON config file (`UserConfig.json`).

The cascade is DAPHNE's: hard-coded defaults (the dataclass defaults below), then the JSON file given by
`--config=FILE` (read only if the file exists), then the command-line flags, which the CLI (`tools/daphnec.py`)
applies on top. Field names are DAPHNE's C++ member names, so that a key of the JSON file and the field it sets
have the same spelling (`use_vectorized_exec`, `taskPartitioningScheme`, `numberOfThreads`, ...). A few
snake_case aliases (`grain_size`, `num_threads`, `queue_layout`, ...) are provided as properties, see `_ALIASES`.

The JSON parser follows DAPHNE's `ConfigParser::readUserConfig`:
- an unknown key is an error naming the key (`Unexpected key 'foo' in 'cfg.json' file`);
- a value of the wrong JSON type is an error (booleans must be `true`/`false`; integer keys take any JSON number,
  truncated toward zero, or a boolean, like nlohmann's `get<int>()`; strings must be strings);
- `taskPartitioningScheme` must be one of DAPHNE's JSON enum names; `"AUTO"` is **not** among them (it is accepted
  only by the CLI's `--partitioning`). `"ADAPTIVE"` is a daphnec extension and is accepted.

This module imports only the standard library and the scheduler's enum modules (runtime/ layer rule).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

from daphnec.runtime.scheduling.partitioning import SCHEMES
from daphnec.runtime.scheduling.queues import LAYOUTS
from daphnec.runtime.scheduling.victim_selection import STRATEGIES

__all__ = [
    "ConfigError",
    "DaphneConfig",
    "load_user_config",
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


# ---------------------------------------------------------------------------------------------------------------
# Enumerations (DAPHNE's spellings)
# ---------------------------------------------------------------------------------------------------------------

#: `--explain` values in pipeline order (src/compiler/execution/DaphneIrExecutor.cpp). The three
#: `mlir_codegen_*` values are accepted by DAPHNE but never read, so they print nothing.
EXPLAIN_VALUES: tuple[str, ...] = (
    "parsing",
    "parsing_simplified",
    "sql",
    "property_inference",
    "columnar",
    "select_matrix_repr",
    "transfer_data_props",
    "phy_op_selection",
    "type_adaptation",
    "vectorized",
    "obj_ref_mgnt",
    "codegen",
    "kernels",
    "llvm",
    "mlir_codegen_sparsity_exploiting_op_fusion",
    "mlir_codegen_daphneir_to_mlir",
    "mlir_codegen_mlir_specific",
)

#: Older DAPHNE spellings accepted as well and mapped to the canonical value.
EXPLAIN_ALIASES: dict[str, str] = {"mlir_codegen": "codegen"}

#: `--partitioning` values: DAPHNE's list (AUTO included) plus daphnec's ADAPTIVE extension.
PARTITIONING_SCHEMES: tuple[str, ...] = (*SCHEMES, "ADAPTIVE")
#: `taskPartitioningScheme` values of the JSON config: DAPHNE's JSON enum has no AUTO.
CONFIG_PARTITIONING_SCHEMES: tuple[str, ...] = tuple(s for s in PARTITIONING_SCHEMES if s != "AUTO")

QUEUE_LAYOUTS: tuple[str, ...] = LAYOUTS
VICTIM_SELECTIONS: tuple[str, ...] = STRATEGIES
DIST_BACKENDS: tuple[str, ...] = ("MPI", "sync-gRPC", "async-gRPC")

#: INT_MAX - 1024, DAPHNE's default for `--max-distr-chunk-size`.
DEFAULT_MAX_DISTR_CHUNK_SIZE = 2**31 - 1 - 1024

#: spdlog level names (`spdlog::level::from_str`; an unknown name means `off`).
_LOG_LEVELS = ("trace", "debug", "info", "warning", "warn", "error", "err", "critical", "off")


# ---------------------------------------------------------------------------------------------------------------
# The configuration
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class DaphneConfig:
    """Every user-configurable setting. Defaults are DAPHNE's, except where noted."""

    # --- compiler switches -------------------------------------------------------------------------------------
    use_cuda: bool = False
    use_vectorized_exec: bool = False  # --vec
    use_vectorized_restricted: bool = False  # --vec-restricted: only ops with `vec=true`
    use_distributed: bool = False  # --distributed
    use_obj_ref_mgnt: bool = True  # --no-obj-ref-mgnt
    use_optimistic_splitting: bool = False
    use_ipa_const_propa: bool = True  # --no-ipa-const-propa
    use_phy_op_selection: bool = True  # --no-phy-op-selection
    use_mlir_codegen: bool = False  # --codegen (never supported by daphnec)
    use_mlir_hybrid_codegen: bool = False  # --mlir-hybrid-codegen (never supported by daphnec)
    use_columnar: bool = False  # --columnar
    use_fpgaopencl: bool = False  # --fpgaopencl (never supported by daphnec)
    force_cuda: bool = False
    cuda_fuse_any: bool = False
    cuda_devices: list[int] = field(default_factory=list)
    select_matrix_repr: bool = False  # --select-matrix-repr (DAPHNE passes it to the executor, not the struct)
    sparsity_threshold: float = 0.25  # CSR when the estimated non-zero fraction is below this

    # --- MLIR codegen knobs (only meaningful with --codegen) -----------------------------------------------------
    matmul_vec_size_bits: int = 0
    matmul_tile: bool = False
    matmul_fixed_tile_sizes: list[int] = field(default_factory=lambda: [4, 4])
    matmul_use_fixed_tile_sizes: bool = False
    matmul_unroll_factor: int = 1
    matmul_unroll_jam_factor: int = 4
    matmul_num_vec_registers: int = 16
    matmul_invert_loops: bool = False

    # --- vectorized engine / scheduling ------------------------------------------------------------------------
    taskPartitioningScheme: str = "STATIC"  # --partitioning
    queueSetupScheme: str = "CENTRALIZED"  # --queue_layout
    victimSelection: str = "SEQ"  # --victim_selection (the CLI default SEQ always overrides the struct's SEQPRI)
    numberOfThreads: int = -1  # --num-threads; -1 (or 0) = number of physical cores
    minimumTaskSize: int = 1  # --grain-size; values <= 0 act as 1 (see `grain_size`)
    phyBatchSize: int = 98304  # --phy-batch-size, bytes per pipeline call
    pinWorkers: bool = False  # --pin-workers
    hyperthreadingEnabled: bool = False  # --hyperthreading
    prePartitionRows: bool = False  # --pre-partition
    debugMultiThreading: bool = False  # --debug-mt
    vectorized_single_queue: bool = False

    # --- distributed runtime -----------------------------------------------------------------------------------
    distributedBackEndSetup: str = "MPI"  # --dist_backend
    max_distr_chunk_size: int = DEFAULT_MAX_DISTR_CHUNK_SIZE  # --max-distr-chunk-size

    # --- HDFS (config file only) -------------------------------------------------------------------------------
    useHdfs: bool = False
    hdfsAddress: str = ""
    hdfsUsername: str = ""

    # --- output and debugging ----------------------------------------------------------------------------------
    explain: list[str] = field(default_factory=list)  # --explain, canonical names in pipeline order
    timing: bool = False  # --timing
    statistics: bool = False  # --statistics
    debug_llvm: bool = False
    enable_profiling: bool = False  # --enable-profiling
    enable_property_recording: bool = False
    enable_property_insert: bool = False
    properties_file_path: str = "properties.json"

    # --- paths and logging -------------------------------------------------------------------------------------
    libdir: str = "{exedir}/../lib"  # --libdir
    kernel_ext: str = ""  # --kernel-ext
    daphnedsl_import_paths: dict[str, list[str]] = field(default_factory=dict)
    logging: list[dict[str, str]] = field(default_factory=list)
    log_level_limit: str = "off"

    # --- script arguments (name -> DSL literal text), from `--args` and after the script ----------------------------
    args: dict[str, str] = field(default_factory=dict)

    # --- daphnec extras ----------------------------------------------------------------------------------------
    debug: bool = False  # --debug: print Python tracebacks for errors
    no_kernel_cache: bool = False  # --no-kernel-cache: do not reuse compiled kernels across runs

    # ---------------------------------------------------------------------------------------------------------
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
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: Snake-case / CLI-style names for DAPHNE's fields: `config.grain_size` reads and writes `minimumTaskSize`.
_ALIASES: dict[str, str] = {
    "vec": "use_vectorized_exec",
    "vec_restricted": "use_vectorized_restricted",
    "distributed": "use_distributed",
    "partitioning": "taskPartitioningScheme",
    "queue_layout": "queueSetupScheme",
    "victim_selection": "victimSelection",
    "num_threads": "numberOfThreads",
    "phy_batch_size": "phyBatchSize",
    "pin_workers": "pinWorkers",
    "hyperthreading": "hyperthreadingEnabled",
    "pre_partition": "prePartitionRows",
    "debug_mt": "debugMultiThreading",
    "dist_backend": "distributedBackEndSetup",
    "columnar": "use_columnar",
    "script_args": "args",
}


def _make_alias(target: str) -> property:
    def get(self: DaphneConfig) -> Any:
        return getattr(self, target)

    def set_(self: DaphneConfig, value: Any) -> None:
        setattr(self, target, value)

    return property(get, set_, doc=f"Alias of `{target}`.")


for _alias, _target in _ALIASES.items():
    setattr(DaphneConfig, _alias, _make_alias(_target))


def _get_grain_size(self: DaphneConfig) -> int:
    return max(1, int(self.minimumTaskSize))


def _set_grain_size(self: DaphneConfig, value: int) -> None:
    self.minimumTaskSize = value


DaphneConfig.grain_size = property(  # type: ignore[attr-defined]
    _get_grain_size, _set_grain_size, doc="The effective minimum chunk size: `minimumTaskSize`, at least 1."
)


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


def _as_partitioning(key: str, v: Any) -> str:
    if not isinstance(v, str) or v not in CONFIG_PARTITIONING_SCHEMES:
        shown = json.dumps(v)
        raise ConfigError(
            f"Invalid value for enum \"SelfSchedulingScheme\": {shown} in config key '{key}' "
            f"(valid values: {', '.join(CONFIG_PARTITIONING_SCHEMES)})"
        )
    return v


def _apply_logging(cfg: DaphneConfig, key: str, v: Any) -> None:
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


def _bool_setter(attr: str):
    def apply(cfg: DaphneConfig, key: str, v: Any) -> None:
        setattr(cfg, attr, _as_bool(key, v))

    return apply


def _int_setter(attr: str, *, unsigned: bool = False):
    def apply(cfg: DaphneConfig, key: str, v: Any) -> None:
        setattr(cfg, attr, _as_int(key, v, unsigned=unsigned))

    return apply


def _str_setter(attr: str):
    def apply(cfg: DaphneConfig, key: str, v: Any) -> None:
        setattr(cfg, attr, _as_str(key, v))

    return apply


def _explain_setter(value: str):
    def apply(cfg: DaphneConfig, key: str, v: Any) -> None:
        cfg.set_explain(value, _as_bool(key, v))

    return apply


def _build_key_table() -> dict[str, Any]:
    t: dict[str, Any] = {}
    for name in (
        "use_cuda",
        "use_vectorized_exec",
        "use_vectorized_restricted",
        "use_obj_ref_mgnt",
        "use_optimistic_splitting",
        "use_ipa_const_propa",
        "use_phy_op_selection",
        "use_mlir_codegen",
        "use_columnar",
        "matmul_tile",
        "matmul_use_fixed_tile_sizes",
        "matmul_invert_loops",
        "cuda_fuse_any",
        "vectorized_single_queue",
        "debug_llvm",
        "enable_property_recording",
        "enable_property_insert",
        "useHdfs",
        "force_cuda",
    ):
        t[name] = _bool_setter(name)
    for name in (
        "matmul_vec_size_bits",
        "matmul_unroll_factor",
        "matmul_unroll_jam_factor",
        "matmul_num_vec_registers",
        "numberOfThreads",
        "minimumTaskSize",
    ):
        t[name] = _int_setter(name)
    t["phyBatchSize"] = _int_setter("phyBatchSize", unsigned=True)
    for name in ("properties_file_path", "hdfsAddress", "hdfsUsername", "libdir"):
        t[name] = _str_setter(name)
    t["matmul_fixed_tile_sizes"] = lambda c, k, v: setattr(c, "matmul_fixed_tile_sizes", _as_int_list(k, v))
    t["cuda_devices"] = lambda c, k, v: setattr(c, "cuda_devices", _as_int_list(k, v))
    t["sparsity_threshold"] = lambda c, k, v: setattr(c, "sparsity_threshold", _as_float(k, v))
    t["taskPartitioningScheme"] = lambda c, k, v: setattr(c, "taskPartitioningScheme", _as_partitioning(k, v))
    t["daphnedsl_import_paths"] = lambda c, k, v: setattr(c, "daphnedsl_import_paths", _as_import_paths(k, v))
    t["logging"] = _apply_logging
    for value in EXPLAIN_VALUES:
        t[f"explain_{value}"] = _explain_setter(value)
    for old, new in EXPLAIN_ALIASES.items():
        t[f"explain_{old}"] = _explain_setter(new)
    return t


_KEY_TABLE = _build_key_table()

#: Every key the JSON user config may contain.
CONFIG_KEYS: tuple[str, ...] = tuple(_KEY_TABLE)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid literal '{name}'")


def parse_user_config(text: str, filename: str = "<config>", base: DaphneConfig | None = None) -> DaphneConfig:
    """Parse the text of a JSON user config onto `base` (default: a fresh `DaphneConfig`) and return it."""
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


def load_user_config(path: str, base: DaphneConfig | None = None) -> DaphneConfig:
    """Read the JSON user config file `path` onto `base` (default: the defaults). Raises `ConfigError`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"could not open file '{path}' for reading user config: {reason}") from None
    return parse_user_config(text, path, base)
