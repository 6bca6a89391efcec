"""`python -m app.cli …` (how `trellis dev` starts its children)."""

import sys

from app.cli.main import main

sys.exit(main())
