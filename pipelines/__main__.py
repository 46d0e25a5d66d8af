"""`python -m kerasrnn_pipelines TASK [options]`, the same as `kerasrnn-train`."""

import sys

from kerasrnn_pipelines.cli import main

sys.exit(main())
