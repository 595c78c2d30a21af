#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import atexit
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
    # A command that returned has finished its work (its threads joined, its transaction committed). Tearing
    # down the interpreter -- a thousand modules' objects -- would add a fifth of a second to every command
    # (issue 14: start-up and exit of `import_traces`); exit handlers still run (logging flushes), then the
    # process ends. Errors and commands that exit early (SystemExit) leave the normal way.
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
