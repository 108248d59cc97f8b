import sys

from parvec.cli import main

sys.exit(main())
