"""The one place kerasrnn reads and writes LiteRT's flatbuffer schema.

The exporters edit what LiteRT's converter writes in the schema's object
API (`ModelT`, `SubGraphT`, `OperatorT`, ...), which `ai_edge_litert`, the
runtime the `litert` extra installs, ships as the generated module
`ai_edge_litert.schema_py_generated`; where that extra is not installed,
TensorFlow's private copy (`kerasrnn.tensorflow_internals.lite_schema`)
serves instead, so that exporting needs TensorFlow only.
`tests/kerasrnn/test_litert_internals.py` checks every name the exporters
use in both copies, naming it and the version when a release moves or
changes it.

- `schema`: the generated module;
- `parsed(content)`: a `.tflite` file's bytes as a `schema.ModelT`;
- `serialized(model)`: a `schema.ModelT` as a `.tflite` file's bytes, with
  the schema's file identifier `TFL3`, as LiteRT's own tools write it
  (with the public `flatbuffers` package).
"""

from typing import Any

import flatbuffers  # type: ignore[import-untyped]

try:
    from ai_edge_litert import schema_py_generated as schema
except ImportError:
    # The runtime is an extra; without it, the export still runs on the
    # copy of the same generated module that TensorFlow's converter uses.
    from kerasrnn.tensorflow_internals import lite_schema as schema

__all__ = ["FILE_IDENTIFIER", "parsed", "schema", "serialized"]

#: The identifier every `.tflite` file carries at bytes 4 to 8.
FILE_IDENTIFIER = b"TFL3"


def parsed(content: bytes) -> Any:
    """The object tree (`schema.ModelT`) of a `.tflite` file's bytes."""
    return schema.ModelT.InitFromPackedBuf(content, 0)


def serialized(model: Any) -> bytes:
    """The bytes of `model`, a `schema.ModelT`, as a `.tflite` file."""
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())
