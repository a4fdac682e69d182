"""Tokenizer: a model's vocabulary and chat template, with openvino_genai's
method names."""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Union

from . import _lib
from ._model import Model

_ADD_SPECIAL, _PARSE_SPECIAL = 1, 2
_REMOVE_SPECIAL, _UNPARSE_SPECIAL = 1, 2
_OUT_OF_RANGE = 8
# sprout_special values
_BOS, _EOS, _PAD = 0, 1, 6


@dataclass
class TokenizedInputs:
    """Token ids of one or more texts, one row each, padded on the right to
    the longest with the pad token (or EOS); attention_mask marks the real
    ones with 1."""

    input_ids: List[List[int]] = field(default_factory=list)
    attention_mask: List[List[int]] = field(default_factory=list)


class Tokenizer:
    """The tokenizer of a loaded model (``LLMPipeline.get_tokenizer()``).
    Any number of threads may use one at once."""

    def __init__(self, model: Model) -> None:
        self._model = model  # keeps the model, and so the tokenizer, alive
        self._handle = model.tokenizer()

    def _ids(self, text: str, flags: int) -> List[int]:
        L = _lib.lib()
        data = _lib.encode(text, "text")
        n = ctypes.c_size_t()
        cap = max(16, len(data) + 4)
        while True:
            buf = (ctypes.c_int32 * cap)()
            status = L.sprout_tokenize(self._handle, data, len(data), flags, buf, cap, ctypes.byref(n))
            if status == _OUT_OF_RANGE and n.value > cap:
                cap = n.value
                continue
            _lib.check(status)
            return list(buf[: n.value])

    def encode(self, prompts: Union[str, Sequence[str]], add_special_tokens: bool = True,
               parse_special: bool = True) -> TokenizedInputs:
        """Token ids of a text or of each text of a list. Control tokens
        written in the text ("<|im_start|>") are matched unless
        parse_special is false."""
        texts = [prompts] if isinstance(prompts, str) else list(prompts)
        flags = (_ADD_SPECIAL if add_special_tokens else 0) | (_PARSE_SPECIAL if parse_special else 0)
        rows = [self._ids(t, flags) for t in texts]
        width = max((len(r) for r in rows), default=0)
        pad = self.get_pad_token_id()
        if pad < 0:
            pad = self.get_eos_token_id()
        return TokenizedInputs([r + [pad] * (width - len(r)) for r in rows],
                               [[1] * len(r) + [0] * (width - len(r)) for r in rows])

    def _text(self, ids: Sequence[int], flags: int) -> str:
        L = _lib.lib()
        arr = (ctypes.c_int32 * len(ids))(*ids)
        n = ctypes.c_size_t()
        cap = 64 + 16 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(cap)
            status = L.sprout_detokenize(self._handle, arr, len(ids), flags, buf, cap, ctypes.byref(n))
            if status == _OUT_OF_RANGE and n.value > cap:
                cap = n.value
                continue
            _lib.check(status)
            return buf.raw[: n.value].decode("utf-8", "replace")

    def decode(self, tokens: Union[Sequence[int], Sequence[Sequence[int]], TokenizedInputs],
               skip_special_tokens: bool = True) -> Union[str, List[str]]:
        """The text of a list of ids, or a list of texts for a list of
        lists (or TokenizedInputs, whose padding is left out)."""
        flags = _REMOVE_SPECIAL if skip_special_tokens else _UNPARSE_SPECIAL
        if isinstance(tokens, TokenizedInputs):
            return [self._text([t for t, m in zip(row, mask) if m], flags)
                    for row, mask in zip(tokens.input_ids, tokens.attention_mask)]
        if tokens and not isinstance(tokens[0], int):
            return [self._text(list(row), flags) for row in tokens]  # type: ignore[arg-type]
        return self._text(list(tokens), flags)  # type: ignore[arg-type]

    def apply_chat_template(self, history: Sequence[Dict[str, str]], add_generation_prompt: bool,
                            chat_template: str = "") -> str:
        """A conversation ([{"role": ..., "content": ...}, ...]) rendered with
        the model's chat template, or `chat_template` (a built-in name such
        as "chatml", or Jinja source)."""
        text, _ = self._model.chat_prompt(json.dumps(list(history)), add_generation_prompt, chat_template)
        return text

    def _special(self, which: int) -> int:
        return int(_lib.lib().sprout_tokenizer_special(self._handle, which))

    def get_bos_token_id(self) -> int:
        return self._special(_BOS)

    def get_eos_token_id(self) -> int:
        return self._special(_EOS)

    def get_pad_token_id(self) -> int:
        return self._special(_PAD)

    def get_vocab_size(self) -> int:
        return int(_lib.lib().sprout_tokenizer_vocab_size(self._handle))
