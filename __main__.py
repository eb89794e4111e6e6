"""`python -m daphnec [options] script.daph [name=value ...]`: the `daphnec` command line (tools/daphnec.py)."""

import sys

from daphnec.tools.daphnec import main

sys.exit(main())
