"""Training pipelines for kerasrnn: tf.data in, trained recurrent models out.

`kerasrnn-train TASK [options]` (or `python -m pipelines TASK`) runs one task
from `pipelines.tasks`; `pipelines.training` holds what every task shares and
`pipelines.data` one loader per data source.
"""
