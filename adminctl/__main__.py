import sys

from adminctl.cli import main

sys.exit(main())
