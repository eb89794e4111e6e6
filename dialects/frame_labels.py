"""DAPHNE's rules for frame column labels, read by the dialect (label inference) and by the runtime (kernels).

Pure Python, like `value_types.py`, so the runtime can import it without xDSL. The rules are DAPHNE's
`LabelUtils::setPrefix` (src/runtime/local/datastructures/LabelUtils.h) and the star selectors of SQL (`t.*`,
`*`) that `ExtractCol` and `Group` expand (src/runtime/local/kernels/ExtractCol.h, Group.h).
"""

from __future__ import annotations

from collections.abc import Sequence


def with_prefix(prefix: str, label: str) -> str:
    """`setColLabelsPrefix`: `a` becomes `prefix.a`; in `x.b.c` everything before the first dot is replaced."""
    pos = label.find(".")
    return f"{prefix}.{label}" if pos < 0 else prefix + label[pos:]


def is_star(selector: str) -> bool:
    """A selector of several columns: `*` (all) or `t.*` (those whose prefix is `t`)."""
    return selector == "*" or selector.endswith(".*")


def star_positions(labels: Sequence[str], selector: str) -> list[int]:
    """The columns a star selector takes, in frame order: all for `*`; for `t.*` those whose label, up to its
    first dot, is `t`."""
    if selector == "*":
        return list(range(len(labels)))
    prefix = selector[:-2]
    return [i for i, lbl in enumerate(labels) if lbl.split(".", 1)[0] == prefix]


def group_key_labels(labels: Sequence[str], keys: Sequence[str], aggs: Sequence[str]) -> list[str]:
    """The key columns of DAPHNE's `group` (Group.h): a `*` key takes every column that is not aggregated, a
    `t.*` key the columns prefixed `t`; when a star matched columns, they replace the keys given."""
    starred: list[str] = []
    for k in keys:
        if k == "*":
            starred += [lbl for lbl in labels if lbl not in aggs]
        elif k.endswith(".*"):
            starred += [labels[i] for i in star_positions(labels, k)]
    return starred if starred else list(keys)
