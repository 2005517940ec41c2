"""`python -m smith` is the same as the `smith` command."""

import sys

from smith.cli import main

sys.exit(main())
