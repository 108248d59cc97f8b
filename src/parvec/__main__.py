"""``python -m parvec ...``: the same as the ``parvec`` command."""

import sys

from parvec.cli import main

sys.exit(main())
