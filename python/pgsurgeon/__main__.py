import sys

from pgsurgeon.cli import main

sys.exit(main())
