"""`python -m checkpoint ARGS` is `cricket-checkpoint ARGS`."""

from checkpoint.cli import checkpoint_main

checkpoint_main()
