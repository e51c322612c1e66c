"""The exit status of a command-line tool that argparse (or a check of ours) stopped with
`SystemExit`: a message is printed as one line on stderr and is status 1. Imports nothing
heavy, so that dycl-run and dycl-serve stay free of torch and xDSL."""

from __future__ import annotations

import sys


def exit_status(exit_: SystemExit) -> int:
    if isinstance(exit_.code, str):
        print(exit_.code, file=sys.stderr)
        return 1
    return 0 if exit_.code in (0, None) else 1
