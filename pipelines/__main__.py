"""`python -m pipelines TASK [options]`, the same as `kerasrnn-train`."""

import sys

from pipelines.cli import main

sys.exit(main())
