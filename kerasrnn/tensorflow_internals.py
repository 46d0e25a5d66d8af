"""The one place kerasrnn reaches into TensorFlow's private names.

Each name below is TensorFlow's own, without a public equivalent; the
`tensorflow` pin in pyproject.toml covers them, and
`tests/kerasrnn/test_tensorflow_internals.py` checks every one, naming it
and the TensorFlow version when a release moves or changes it.

- `convert_variables_to_constants_v2`
  (`tensorflow.python.framework.convert_to_constants`) freezes a traced
  function's variables into constants. A LiteRT export needs it: converted
  as it is, a function keeps its variables as resources read inside a
  `WHILE` body, and LiteRT fails at `invoke()`.
- `dynamic_update_slice` (`tensorflow.compiler.tf2xla.python.xla`) writes
  a slice into a tensor at a position known only when the graph runs.
  TensorFlow runs it only under XLA, LiteRT has it as the builtin
  `DYNAMIC_UPDATE_SLICE`; the LiteRT loops write each step's output into
  their history with it. `tf.raw_ops` does not list XLA's ops.
- `lite_schema` (`tensorflow.lite.python.schema_py_generated`): LiteRT's
  flatbuffer schema as TensorFlow's converter writes it. kerasrnn reads the
  schema from `ai_edge_litert` where the `litert` extra installs it, and
  from this copy otherwise, so that a LiteRT export needs TensorFlow only
  (`kerasrnn/litert_internals.py`).
"""

from tensorflow.compiler.tf2xla.python.xla import dynamic_update_slice
from tensorflow.lite.python import schema_py_generated as lite_schema
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

__all__ = ["convert_variables_to_constants_v2", "dynamic_update_slice", "lite_schema"]
