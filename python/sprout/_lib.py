"""Finding libsprout.so and declaring the part of sprout.h the package calls.

The library is found, at first use, in this order: the file named by
``$SPROUT_LIBRARY``; a ``libsprout.so*`` next to this package (a copy
installed with it); the system's loader (``ctypes.util.find_library``, then
``libsprout.so.0`` by name, which honours ``LD_LIBRARY_PATH``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_size_t,
    c_uint,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, List, Optional

# sprout_status values (sprout.h)
OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_NOT_FOUND = 6
ERR_UNSUPPORTED = 4
ERR_CANCELLED = 10

# sprout_finish_reason values, by their sprout_finish_reason_str() words
FINISH_CANCELLED = 6


class SproutError(RuntimeError):
    """A failed sprout call: ``status`` is the sprout_status number,
    ``status_name`` its name ("format error") and the message says what
    failed and where (sprout_last_error())."""

    def __init__(self, message: str, status: int = ERR_INVALID_ARGUMENT, status_name: str = "") -> None:
        super().__init__(f"{status_name}: {message}" if status_name else message)
        self.message = message
        self.status = status
        self.status_name = status_name


sprout_token = c_int32
STREAMER = CFUNCTYPE(c_int, POINTER(c_char), c_size_t, c_void_p)
ON_DONE = CFUNCTYPE(None, c_void_p, c_void_p)


class GenerationConfigStruct(Structure):
    """sprout_generation_config, field for field. Public structs only grow at
    the end and carry their size, so this prefix stays valid against newer
    libraries."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("max_new_tokens", c_int32),
        ("min_new_tokens", c_int32),
        ("ignore_eos", c_bool),
        ("temperature", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repetition_penalty", c_float),
        ("repeat_last_n", c_int32),
        ("presence_penalty", c_float),
        ("frequency_penalty", c_float),
        ("stop_strings", POINTER(c_char_p)),
        ("n_stop_strings", c_size_t),
        ("include_stop_string", c_bool),
        ("stop_token_ids", POINTER(c_int32)),
        ("n_stop_token_ids", c_size_t),
        ("seed", c_uint64),
        ("echo", c_bool),
        ("logprobs", c_int32),
        ("json_object", c_bool),
        ("logit_bias", c_void_p),
        ("n_logit_bias", c_size_t),
        ("lora", c_void_p),
        ("n_lora", c_size_t),
        ("num_assistant_tokens", c_int32),
        ("assistant_confidence_threshold", c_float),
        ("min_assistant_tokens", c_int32),
        ("prompt_lookup", c_bool),
        ("max_ngram_size", c_int32),
        ("typical_p", c_float),
        ("mirostat", c_int32),
        ("mirostat_tau", c_float),
        ("mirostat_eta", c_float),
        ("dry_multiplier", c_float),
        ("dry_base", c_float),
        ("dry_allowed_length", c_int32),
        ("dry_penalty_last_n", c_int32),
        ("dry_sequence_breakers", POINTER(c_char_p)),
        ("n_dry_sequence_breakers", c_size_t),
        ("xtc_probability", c_float),
        ("xtc_threshold", c_float),
        ("top_n_sigma", c_float),
        ("samplers", c_char_p),
        ("grammar", c_char_p),
        ("json_schema", c_char_p),
        ("grammar_trigger", c_char_p),
        ("context_shift", c_bool),
        ("n_keep", c_int32),
    ]


class PerfMetricsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("load_ms", c_double),
        ("tokenize_ms", c_double),
        ("ttft_ms", c_double),
        ("tpot_mean_ms", c_double),
        ("tpot_std_ms", c_double),
        ("prefill_tokens_per_s", c_double),
        ("decode_tokens_per_s", c_double),
        ("n_prompt_tokens", c_int32),
        ("n_prefill_tokens", c_int32),
        ("n_generated_tokens", c_int32),
        ("total_ms", c_double),
        ("n_draft_tokens", c_int32),
        ("n_accepted_tokens", c_int32),
        ("n_decode_passes", c_int32),
        ("prefill_attention_ms", c_double),
        ("decode_attention_ms", c_double),
    ]


class ModelParamsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("n_threads", c_int32),
        ("n_ctx", c_int32),
        ("kv_type", c_int),
        ("kv_type_set", c_bool),
    ]


class PipelineParamsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("n_ctx", c_int32),
        ("n_batch", c_int32),
        ("n_threads", c_int32),
        ("kv_type", c_int),
        ("kv_type_set", c_bool),
    ]


class SchedulerParamsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("n_slots", c_int32),
        ("n_ctx", c_int32),
        ("n_batch", c_int32),
        ("prefill_chunk", c_int32),
        ("n_queue", c_int32),
        ("n_threads", c_int32),
        ("kv_type", c_int),
        ("kv_type_set", c_bool),
        ("draft_model", c_void_p),
    ]


class RequestParamsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("prompt", POINTER(c_int32)),
        ("n_prompt", c_size_t),
        ("config", POINTER(GenerationConfigStruct)),
        ("streamer", STREAMER),
        ("on_done", ON_DONE),
        ("user", c_void_p),
        ("on_token", c_void_p),
        ("embed", c_bool),
        ("pooling", c_int),
        ("normalize", c_bool),
    ]


class SchedulerStatsStruct(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("n_slots", c_int32),
        ("busy_slots", c_int32),
        ("queued", c_int32),
        ("requests_done", c_uint64),
        ("requests_rejected", c_uint64),
        ("prompt_tokens", c_uint64),
        ("cached_prompt_tokens", c_uint64),
        ("generated_tokens", c_uint64),
        ("steps", c_uint64),
        ("busy_ms", c_double),
    ]


_P = c_void_p  # every handle is opaque
_PP = POINTER(c_void_p)
_status = c_int

# name: (restype, argtypes)
_PROTOTYPES = {
    "sprout_version": (c_char_p, []),
    "sprout_status_str": (c_char_p, [c_int]),
    "sprout_last_error": (c_char_p, []),
    "sprout_finish_reason_str": (c_char_p, [c_int]),
    "sprout_free": (None, [c_void_p]),
    "sprout_model_load": (_status, [c_char_p, POINTER(ModelParamsStruct), _PP]),
    "sprout_model_free": (None, [_P]),
    "sprout_model_tokenizer": (_P, [_P]),
    "sprout_model_generates": (c_bool, [_P]),
    "sprout_model_load_ms": (c_double, [_P]),
    "sprout_model_n_ctx_train": (c_int32, [_P]),
    "sprout_model_chat_prompt": (
        _status,
        [_P, c_char_p, c_char_p, c_bool, POINTER(c_void_p), POINTER(c_size_t), POINTER(c_void_p), POINTER(c_size_t)],
    ),
    "sprout_model_tokenize_prompt": (
        _status,
        [_P, c_char_p, c_size_t, c_bool, POINTER(c_void_p), POINTER(c_size_t)],
    ),
    "sprout_pipeline_create": (_status, [_P, POINTER(PipelineParamsStruct), _PP]),
    "sprout_pipeline_free": (None, [_P]),
    "sprout_pipeline_n_ctx": (c_int32, [_P]),
    "sprout_pipeline_cached_tokens": (c_int32, [_P]),
    "sprout_generation_config_init": (None, [c_void_p]),
    "sprout_generate": (_status, [_P, c_char_p, POINTER(GenerationConfigStruct), STREAMER, c_void_p, _PP]),
    "sprout_generate_tokens": (
        _status,
        [_P, POINTER(c_int32), c_size_t, POINTER(GenerationConfigStruct), STREAMER, c_void_p, _PP],
    ),
    "sprout_chat_start": (_status, [_P, c_char_p]),
    "sprout_chat_set_template": (_status, [_P, c_char_p]),
    "sprout_chat_generate": (_status, [_P, c_char_p, POINTER(GenerationConfigStruct), STREAMER, c_void_p, _PP]),
    "sprout_chat_history_length": (c_size_t, [_P]),
    "sprout_chat_history_message": (_status, [_P, c_size_t, POINTER(c_char_p), POINTER(c_char_p)]),
    "sprout_chat_finish": (None, [_P]),
    "sprout_result_text": (c_void_p, [_P, POINTER(c_size_t)]),
    "sprout_result_tokens": (POINTER(c_int32), [_P, POINTER(c_size_t)]),
    "sprout_result_prompt_tokens": (POINTER(c_int32), [_P, POINTER(c_size_t)]),
    "sprout_result_finish_reason": (c_int, [_P]),
    "sprout_result_metrics": (_status, [_P, POINTER(PerfMetricsStruct)]),
    "sprout_result_free": (None, [_P]),
    "sprout_tokenize": (
        _status,
        [_P, c_char_p, c_size_t, c_uint, POINTER(c_int32), c_size_t, POINTER(c_size_t)],
    ),
    "sprout_detokenize": (
        _status,
        [_P, POINTER(c_int32), c_size_t, c_uint, c_void_p, c_size_t, POINTER(c_size_t)],
    ),
    "sprout_tokenizer_special": (c_int32, [_P, c_int]),
    "sprout_tokenizer_vocab_size": (c_int32, [_P]),
    "sprout_scheduler_create": (_status, [_P, POINTER(SchedulerParamsStruct), _PP]),
    "sprout_scheduler_free": (None, [_P]),
    "sprout_scheduler_n_slots": (c_int32, [_P]),
    "sprout_scheduler_submit": (_status, [_P, POINTER(RequestParamsStruct), _PP]),
    "sprout_scheduler_stats_get": (_status, [_P, POINTER(SchedulerStatsStruct)]),
    "sprout_request_cancel": (None, [_P]),
    "sprout_request_done": (c_bool, [_P]),
    "sprout_request_wait": (_status, [_P, _PP]),
    "sprout_request_free": (None, [_P]),
}

_lib: Optional[ctypes.CDLL] = None
_load_lock = threading.Lock()


def _candidates() -> List[str]:
    """Where the library may be, best first (see the module's docstring)."""
    found: List[str] = []
    env = os.environ.get("SPROUT_LIBRARY")
    if env:
        found.append(env)
    here = Path(__file__).resolve().parent
    found += [str(p) for p in sorted(here.glob("libsprout.so*"))]
    system = ctypes.util.find_library("sprout")
    if system:
        found.append(system)
    found.append("libsprout.so.0")
    return found


def _load() -> ctypes.CDLL:
    tried: List[str] = []
    env = os.environ.get("SPROUT_LIBRARY")
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            if env and path == env:
                # a library named explicitly and unusable is an error, not a
                # reason to pick another one silently
                raise SproutError(f"$SPROUT_LIBRARY={env} cannot be loaded: {e}", ERR_NOT_FOUND) from None
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise SproutError(
        "libsprout.so was not found: set SPROUT_LIBRARY to its path, or install sprout "
        "(make install) where the loader looks; tried " + "; ".join(tried),
        ERR_NOT_FOUND,
    )


def lib() -> ctypes.CDLL:
    """The loaded library, loaded at first use."""
    global _lib
    if _lib is None:
        with _load_lock:
            if _lib is None:
                _lib = _load()
    return _lib


def error(status: int) -> SproutError:
    """The exception for a status a call just returned on this thread."""
    L = lib()
    message = (L.sprout_last_error() or b"").decode("utf-8", "replace")
    name = (L.sprout_status_str(status) or b"").decode("utf-8", "replace")
    return SproutError(message or name, status, name)


def check(status: int) -> None:
    if status != OK:
        raise error(status)


def take_text(ptr: Any, length: int) -> str:
    """Bytes the library handed over, as text (invalid UTF-8 replaced)."""
    return ctypes.string_at(ptr, length).decode("utf-8", "replace") if length else ""


def encode(text: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    return text.encode("utf-8")
