"""GenerationConfig: what steers one generation, with openvino_genai's names."""

from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from . import _lib
from ._lib import GenerationConfigStruct, SproutError

# The bytes sprout_generation_config_init() may write: a newer library's
# struct can be larger than the fields declared here.
_INIT_ROOM = 4096


@dataclass
class GenerationConfig:
    """Generation parameters, named as ``openvino_genai.GenerationConfig``
    names them, plus sprout's own samplers and structured output.

    As in openvino_genai, decoding is greedy unless ``do_sample`` is true;
    then ``temperature``, ``top_k`` (0: off), ``top_p`` and the other
    samplers apply. ``max_new_tokens`` None means the library's default
    (256). Beam search (``num_beams`` > 1) and several sequences per prompt
    (``num_return_sequences`` > 1) are not supported: they raise SproutError.
    """

    max_new_tokens: Optional[int] = None
    min_new_tokens: int = 0
    ignore_eos: bool = False
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    stop_strings: Set[str] = field(default_factory=set)
    include_stop_str_in_output: bool = False
    stop_token_ids: Set[int] = field(default_factory=set)
    rng_seed: int = 42
    echo: bool = False
    logprobs: int = 0
    num_beams: int = 1
    num_return_sequences: int = 1
    # assisted generation (speculative decoding / prompt lookup)
    num_assistant_tokens: int = 0
    assistant_confidence_threshold: float = 0.0
    max_ngram_size: int = 0
    prompt_lookup: bool = False
    # llama.cpp's other samplers (sprout's names)
    typical_p: float = 1.0
    mirostat: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    top_n_sigma: float = -1.0
    samplers: Optional[str] = None
    # structured output
    json_object: bool = False
    grammar: Optional[str] = None
    json_schema: Optional[str] = None
    grammar_trigger: Optional[str] = None
    # a full context drops half of what follows the prompt's first n_keep
    # tokens (-1: the whole prompt) instead of ending the generation
    context_shift: bool = False
    n_keep: int = 0

    def update_generation_config(self, **kwargs: Any) -> None:
        """Sets the named fields; an unknown name raises TypeError."""
        names = {f.name for f in dataclasses.fields(self)}
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"unknown generation parameter '{key}'")
            setattr(self, key, value)

    def is_greedy_decoding(self) -> bool:
        return not self.do_sample or self.temperature <= 0

    def validate(self) -> None:
        """Raises SproutError for what sprout cannot do; the library checks
        the rest when generating."""
        if self.num_beams != 1:
            raise SproutError(f"num_beams {self.num_beams}: beam search is not supported", _lib.ERR_UNSUPPORTED)
        if self.num_return_sequences != 1:
            raise SproutError(
                f"num_return_sequences {self.num_return_sequences}: one sequence per prompt", _lib.ERR_UNSUPPORTED
            )
        if self.max_new_tokens is not None and self.max_new_tokens < 0:
            raise SproutError(f"max_new_tokens {self.max_new_tokens} is negative", _lib.ERR_INVALID_ARGUMENT)

    def copy(self, **changes: Any) -> "GenerationConfig":
        """A copy with the named fields changed."""
        c = dataclasses.replace(self, stop_strings=set(self.stop_strings), stop_token_ids=set(self.stop_token_ids))
        c.update_generation_config(**changes)
        return c

    def _to_c(self) -> Tuple[GenerationConfigStruct, List[Any]]:
        """The C struct, starting from the library's defaults, and the
        objects its pointers point into (keep them while it is used)."""
        self.validate()
        room = ctypes.create_string_buffer(max(_INIT_ROOM, ctypes.sizeof(GenerationConfigStruct)))
        _lib.lib().sprout_generation_config_init(room)
        c = GenerationConfigStruct.from_buffer_copy(room.raw[: ctypes.sizeof(GenerationConfigStruct)])
        # the library reads the fields this struct has, its defaults the rest
        c.struct_size = ctypes.sizeof(GenerationConfigStruct)
        keep: List[Any] = []
        if self.max_new_tokens is not None:
            c.max_new_tokens = int(self.max_new_tokens)
        c.min_new_tokens = int(self.min_new_tokens)
        c.ignore_eos = bool(self.ignore_eos)
        c.temperature = float(self.temperature) if self.do_sample else 0.0
        c.top_k = int(self.top_k)
        c.top_p = float(self.top_p)
        c.min_p = float(self.min_p)
        c.repetition_penalty = float(self.repetition_penalty)
        c.repeat_last_n = int(self.repeat_last_n)
        c.presence_penalty = float(self.presence_penalty)
        c.frequency_penalty = float(self.frequency_penalty)
        if self.stop_strings:
            strings = (ctypes.c_char_p * len(self.stop_strings))(
                *[_lib.encode(s, "a stop string") for s in sorted(self.stop_strings)]
            )
            keep.append(strings)
            c.stop_strings = ctypes.cast(strings, ctypes.POINTER(ctypes.c_char_p))
            c.n_stop_strings = len(self.stop_strings)
        c.include_stop_string = bool(self.include_stop_str_in_output)
        if self.stop_token_ids:
            ids = (ctypes.c_int32 * len(self.stop_token_ids))(*sorted(int(i) for i in self.stop_token_ids))
            keep.append(ids)
            c.stop_token_ids = ctypes.cast(ids, ctypes.POINTER(ctypes.c_int32))
            c.n_stop_token_ids = len(self.stop_token_ids)
        c.seed = int(self.rng_seed) & 0xFFFFFFFFFFFFFFFF
        c.echo = bool(self.echo)
        c.logprobs = int(self.logprobs)
        c.num_assistant_tokens = int(self.num_assistant_tokens)
        c.assistant_confidence_threshold = float(self.assistant_confidence_threshold)
        c.max_ngram_size = int(self.max_ngram_size)
        c.prompt_lookup = bool(self.prompt_lookup)
        for name in ("typical_p", "mirostat_tau", "mirostat_eta", "dry_multiplier", "dry_base", "xtc_probability",
                     "xtc_threshold", "top_n_sigma"):
            setattr(c, name, float(getattr(self, name)))
        for name in ("mirostat", "dry_allowed_length", "dry_penalty_last_n"):
            setattr(c, name, int(getattr(self, name)))
        c.json_object = bool(self.json_object)
        c.context_shift = bool(self.context_shift)
        c.n_keep = int(self.n_keep)
        for name in ("samplers", "grammar", "json_schema", "grammar_trigger"):
            value = getattr(self, name)
            setattr(c, name, _lib.encode(value, name) if value else None)
        return c, keep


#: What a call's generation_config may be: a GenerationConfig, a dict of its
#: fields, or None (the pipeline's or scheduler's own).
ConfigArg = Union[GenerationConfig, Dict[str, Any], None]


def resolve(base: GenerationConfig, generation_config: ConfigArg, kwargs: Dict[str, Any]) -> GenerationConfig:
    """The config a call uses: the one passed (else the pipeline's), with
    the call's keyword arguments over it."""
    if isinstance(generation_config, dict):  # openvino_genai takes a dict of fields too
        return base.copy(**{**generation_config, **kwargs})
    if generation_config is not None and not isinstance(generation_config, GenerationConfig):
        raise TypeError("generation_config must be a sprout.GenerationConfig or a dict of its fields")
    chosen = generation_config if generation_config is not None else base
    return chosen.copy(**kwargs) if kwargs else chosen
