"""TensorFlow, imported only by the features that need it.

The cells, parameter accounting, BPTT, gradient diagnostics and
conversion run on any Keras backend; sequence-to-sequence models, their
decoders and serving are written with TensorFlow. Those import it through
`import_tensorflow`, so that a process without TensorFlow (a JAX-only
install, or one that forbids it) can use the rest of kerasrnn and is told
in one line what needs it.
"""

import importlib
import types

#: What works without TensorFlow, for the refusal's message.
WITHOUT_TENSORFLOW = (
    "the cells, param_count, explain_params, bptt, gradient_flow, "
    "jacobian_bound and from_keras/to_keras work without it"
)


def import_tensorflow(feature: str) -> types.ModuleType:
    """Import and return the `tensorflow` module for `feature`.

    Args:
        feature: What needs TensorFlow, as the user spells it
            (`"kerasrnn.seq2seq"`), for the message.

    Returns:
        The `tensorflow` module.

    Raises:
        ImportError: TensorFlow cannot be imported; see `missing_tensorflow`.
    """
    try:
        return importlib.import_module("tensorflow")
    except ImportError as error:
        raise missing_tensorflow(feature, error) from None


def missing_tensorflow(feature: str, error: ImportError) -> ImportError:
    """The `ImportError` to raise when `feature` cannot import TensorFlow.

    Args:
        feature: What needs TensorFlow, as the user spells it.
        error: The `ImportError` importing TensorFlow raised.

    Returns:
        An `ImportError` whose one-line message names `feature`, the reason
        and what works without TensorFlow.
    """
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return ImportError(
        f"{feature} needs TensorFlow, which cannot be imported here "
        f"({reason}); install it with `pip install tensorflow` "
        f"({WITHOUT_TENSORFLOW}).",
        name="tensorflow",
    )
