"""DaphneLib's import path, `daphne`, served by daphnec (installed from daphnec's `tools/daphnelib/daphne`).

DaphneLib programs run unchanged: `from daphne.context.daphne_context import DaphneContext`. Every name here is the
same object as in `daphnec.tools.daphnelib`. (PyPI's unrelated `daphne`, Django's ASGI server, uses the same
top-level name: see the README.)
"""
