"""A loaded model shared by pipelines, tokenizers and schedulers."""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple, Union

from . import _lib
from ._lib import ModelParamsStruct, SproutError

_KV_TYPES = {"f32": 0, "f16": 1}
# openvino_genai's property names, then sprout's
_PROPERTY_NAMES = {
    "INFERENCE_NUM_THREADS": "n_threads",
    "KV_CACHE_PRECISION": "kv_cache_precision",
    "n_threads": "n_threads",
    "n_ctx": "n_ctx",
    "n_batch": "n_batch",
    "kv_cache_precision": "kv_cache_precision",
}


def model_file(models_path: Union[str, "os.PathLike[str]"]) -> str:
    """A .gguf file, or the one .gguf in a directory (the first part of a
    split model counts as the model)."""
    path = Path(models_path)
    if not path.is_dir():
        return str(path)
    ggufs = sorted(p for p in path.glob("*.gguf") if not re.search(r"-000(0[2-9]|[1-9]\d)-of-\d+\.gguf$", p.name))
    if len(ggufs) != 1:
        found = ", ".join(p.name for p in ggufs) or "none"
        raise SproutError(f"{path}: a directory must hold exactly one .gguf model (found {found})",
                          _lib.ERR_NOT_FOUND if not ggufs else _lib.ERR_INVALID_ARGUMENT)
    return str(ggufs[0])


def check_device(device: str) -> None:
    if not isinstance(device, str) or device.upper() != "CPU":
        raise SproutError(f"device {device!r}: sprout runs on the CPU only (\"CPU\")", _lib.ERR_UNSUPPORTED)


# openvino's compiled-model cache: sprout compiles nothing, so there is
# nothing to cache and the setting has no meaning here
_MEANINGLESS = {"CACHE_DIR"}


def properties(props: Dict[str, Any]) -> Dict[str, Any]:
    """Properties by sprout's names; an unknown one raises TypeError. A
    ``config`` dict (openvino_genai's older spelling) is read as more
    properties."""
    props = dict(props)
    nested = props.pop("config", None)
    if nested is not None:
        if not isinstance(nested, dict):
            raise TypeError("config must be a dict of properties")
        props.update(nested)
    out: Dict[str, Any] = {}
    for key, value in props.items():
        if key in _MEANINGLESS:
            continue
        name = _PROPERTY_NAMES.get(key)
        if name is None:
            raise TypeError(f"unknown property '{key}' (known: {', '.join(sorted(_PROPERTY_NAMES))})")
        if name == "kv_cache_precision":
            kv = str(value).lower()
            if kv not in _KV_TYPES:
                raise SproutError(f"kv_cache_precision {value!r}: f16 or f32", _lib.ERR_INVALID_ARGUMENT)
            value = kv
        out[name] = value
    return out


class Model:
    """A sprout_model*: freed when the last pipeline, tokenizer or
    scheduler holding it is gone."""

    def __init__(self, path: str, props: Dict[str, Any]) -> None:
        self._handle = None
        L = _lib.lib()
        params = ModelParamsStruct(struct_size=ctypes.sizeof(ModelParamsStruct))
        params.n_threads = int(props.get("n_threads", 0))
        params.n_ctx = int(props.get("n_ctx", 0))
        if "kv_cache_precision" in props:
            params.kv_type = _KV_TYPES[props["kv_cache_precision"]]
            params.kv_type_set = True
        handle = ctypes.c_void_p()
        _lib.check(L.sprout_model_load(_lib.encode(path, "models_path"), ctypes.byref(params), ctypes.byref(handle)))
        self._handle = handle
        self.path = path
        self._free = L.sprout_model_free

    @property
    def handle(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise SproutError("the model was freed", _lib.ERR_INVALID_ARGUMENT)
        return self._handle

    def tokenizer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(_lib.lib().sprout_model_tokenizer(self.handle))

    def prompt_tokens(self, text: str) -> List[int]:
        """A raw-text prompt's ids as sprout_generate makes them."""
        L = _lib.lib()
        data = _lib.encode(text, "prompt")
        ids, n = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(L.sprout_model_tokenize_prompt(self.handle, data, len(data), False, ctypes.byref(ids), ctypes.byref(n)))
        try:
            return list(ctypes.cast(ids, ctypes.POINTER(ctypes.c_int32))[: n.value])
        finally:
            L.sprout_free(ids)

    def chat_prompt(self, messages_json: str, add_generation_prompt: bool, template: str = "") -> Tuple[str, List[int]]:
        """A conversation through the model's chat template (or
        `template`), as text and as ids."""
        L = _lib.lib()
        text, text_len = ctypes.c_void_p(), ctypes.c_size_t()
        ids, n = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(L.sprout_model_chat_prompt(
            self.handle, _lib.encode(template, "chat_template") if template else None,
            _lib.encode(messages_json, "messages"), add_generation_prompt,
            ctypes.byref(text), ctypes.byref(text_len), ctypes.byref(ids), ctypes.byref(n)))
        try:
            return (_lib.take_text(text, text_len.value),
                    list(ctypes.cast(ids, ctypes.POINTER(ctypes.c_int32))[: n.value]))
        finally:
            L.sprout_free(text)
            L.sprout_free(ids)

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self._free(self._handle)
            self._handle = None
