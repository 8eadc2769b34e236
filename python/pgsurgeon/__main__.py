import sys

from pgsurgeon.cli import run

sys.exit(run())
