"""Training pipelines for kerasrnn: tf.data in, trained recurrent models out.

`kerasrnn-train TASK [options]` (or `python -m kerasrnn_pipelines TASK`) runs one task
from `kerasrnn_pipelines.tasks`; `kerasrnn_pipelines.training` holds what every task shares and
`kerasrnn_pipelines.data` one loader per data source.
"""
