"""The shared process recursion limit (runtime/recursion_limit.py): two threads raising it at once (two Python-API
compilations) never lower it under each other, whatever order they leave in."""

from __future__ import annotations

import sys
import threading

from daphnec.runtime import recursion_limit


def test_the_limit_is_the_largest_registered_until_the_last_leaves() -> None:
    base = sys.getrecursionlimit()
    recursion_limit.raise_to(base + 5000)
    recursion_limit.raise_to(base + 300)
    recursion_limit.release(base + 5000)  # the first one leaves first: the second still needs its limit
    assert sys.getrecursionlimit() == base + 300
    recursion_limit.release(base + 300)
    assert sys.getrecursionlimit() == base


def test_two_deep_compilations_on_two_threads_at_once() -> None:
    """Two compilations of a deeply nested program overlap on two threads (each on its own deep-stack thread);
    both succeed, and the limit is the original one afterwards."""
    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools.driver import compile_source

    base = sys.getrecursionlimit()
    text = "x = " + "abs(" * 600 + "1" + ")" * 600 + ";\nprint(x);\n"
    errors: list[BaseException] = []

    def compile_one() -> None:
        try:
            compile_source(text, "deep.daph", DaphneConfig(), {})
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=compile_one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sys.getrecursionlimit() == base
