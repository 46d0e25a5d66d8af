"""Each task's configuration: what `kerasrnn-train TASK` accepts, checked at parse time.

One module per task, `<task>_config`, plus `seq2seq_config` for the options g2p and translate
share. They import `kerasrnn_pipelines.options` and nothing that loads TensorFlow,
so the command line checks every value before a task's module is imported.
"""
