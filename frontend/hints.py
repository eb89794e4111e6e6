"""Hints for near misses in a script: an unknown function name gets the closest names it may have meant, the
name of a DAPHNE builtin daphnec does not have says so (instead of "unknown function"), and a script argument
that is not a literal because a string lost its quotes on the shell says how to quote it.

`NOT_SUPPORTED` is the one list of DAPHNE's built-in functions (src/parser/daphnedsl/DaphneDSLBuiltins.cpp) that
daphnec does not offer, each with the reason; docs/language.md lists the same names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

NOT_SUPPORTED: dict[str, str] = {
    "count": "grouped aggregation (the three-argument form of sum/aggMin/aggMax/mean/... and count) is not "
    "supported yet",
    "fullOuterJoin": "DAPHNE has no kernel for it either (the op exists only in its IR)",
    "leftOuterJoin": "DAPHNE has no kernel for it either (the op exists only in its IR)",
    "antiJoin": "DAPHNE has no kernel for it either (the op exists only in its IR)",
    "receiveFromNumpy": "it is internal to DAPHNE's Python API (DaphneLib) and takes a raw memory address",
    "saveDaphneLibResult": "it is internal to DAPHNE's Python API (DaphneLib)",
    "openFile": "DAPHNE's low-level file/device descriptors are not supported (use readMatrix/readFrame)",
    "openDevice": "DAPHNE's low-level file/device descriptors are not supported (use readMatrix/readFrame)",
    "openFileOnTarget": "DAPHNE's low-level file/device descriptors are not supported (use readMatrix/readFrame)",
    "close": "DAPHNE's low-level file/device descriptors are not supported (use readMatrix/readFrame)",
    "readCsv": "DAPHNE's low-level file/device descriptors are not supported (use readMatrix/readFrame)",
}


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to `n` of `candidates` that look most like `name` (difflib's ratio; case-insensitive)."""
    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)]


def did_you_mean(names: list[str]) -> str:
    """`; did you mean 'a', 'b' or 'c'?` (empty without names)."""
    if not names:
        return ""
    quoted = [f"'{n}'" for n in names]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"; did you mean {listed}?"


def unknown_function_message(name: str, known: Iterable[str]) -> str:
    """The error for a call of `name`, which is neither a builtin nor a user-defined function visible here
    (`known`: the names that are)."""
    if name in NOT_SUPPORTED:
        return f"built-in function '{name}' is not supported by daphnec yet: {NOT_SUPPORTED[name]}"
    return f"unknown function '{name}'" + did_you_mean(closest(name, known))


def script_arg_message(name: str, text: str) -> str:
    """The error for script argument `name=text` whose value is not one DaphneDSL literal (DAPHNE's wording),
    with the quoting to use when it looks like a string whose quotes the shell removed."""
    message = f"invalid literal value for argument '{name}': {text}"
    if '"' not in text and text.strip() and not text.lstrip("+-")[:1].isdigit():
        message += f'; a string needs its quotes: write {name}=\\"{text}\\" on the command line'
    return message
