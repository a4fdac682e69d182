"""sprout: GGUF language models on the CPU, from Python.

Pure ctypes over libsprout.so (found through $SPROUT_LIBRARY, next to this
package, or by the system's loader). The names follow openvino_genai's
Python API, so code written for it ports by changing the import::

    import sprout as ov_genai
    pipe = ov_genai.LLMPipeline("stories260K.gguf", "CPU")
    print(pipe.generate("Once upon a time", max_new_tokens=32))
"""

from ._lib import SproutError
from .config import GenerationConfig
from .pipeline import LLMPipeline, TextStream
from .results import DecodedResults, EncodedResults, MeanStdPair, PerfMetrics, StreamingStatus
from .scheduler import Request, Scheduler
from .tokenizer import TokenizedInputs, Tokenizer

__version__ = "0.1.0"

__all__ = [
    "DecodedResults",
    "EncodedResults",
    "GenerationConfig",
    "LLMPipeline",
    "MeanStdPair",
    "PerfMetrics",
    "Request",
    "Scheduler",
    "SproutError",
    "StreamingStatus",
    "TextStream",
    "TokenizedInputs",
    "Tokenizer",
    "library_version",
]


def library_version() -> str:
    """The version of the libsprout.so in use ("0.1.0")."""
    from . import _lib

    version: bytes = _lib.lib().sprout_version()
    return version.decode()
