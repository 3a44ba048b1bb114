"""`python -m cricket_server ARGS` is `cricket-server ARGS`; `python -m cricket_server restart
ARGS` is `cricket-restart ARGS`."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["restart"]:
        from cricket_server.restart import main as restart

        restart(sys.argv[2:])
    else:
        from cricket_server.cli import main

        main(prog_name="cricket-server")
