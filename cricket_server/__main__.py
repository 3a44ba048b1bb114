"""`python -m cricket_server`: the same as the `cricket-server` command."""

from cricket_server.cli import main

if __name__ == "__main__":
    main(prog_name="cricket-server")
