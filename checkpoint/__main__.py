"""`python -m checkpoint ARGS` is `cricket-checkpoint ARGS`; `python -m checkpoint restart ARGS`
is `cricket-restart ARGS`."""

import sys

from checkpoint.cli import checkpoint_main, restart_main

if sys.argv[1:2] == ["restart"]:
    restart_main(sys.argv[2:])
else:
    checkpoint_main()
