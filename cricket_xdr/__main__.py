"""``python -m cricket_xdr FILE.x -o OUT.py``: the cricket-xdrgen compiler."""

import sys

from cricket_xdr.compiler.cli import main

sys.exit(main())
