"""LLMPipeline: one conversation's generations over a model, as
``openvino_genai.LLMPipeline``."""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union, overload

from . import _lib
from ._lib import PipelineParamsStruct, SproutError
from ._model import Model, check_device, model_file, properties
from ._stream import StreamCallback
from .config import ConfigArg, GenerationConfig, resolve
from .results import DecodedResults, EncodedResults, Streamer, StreamingStatus, decode_result, encoded, merge
from .tokenizer import TokenizedInputs, Tokenizer


class LLMPipeline:
    """A model and one KV cache: generations run one at a time (calls from
    several threads wait for each other; use a Scheduler to run them
    together).

    ``models_path`` is a .gguf file or a directory holding one; ``device``
    must be "CPU". Properties: ``n_threads`` (or openvino's
    ``INFERENCE_NUM_THREADS``), ``n_ctx``, ``n_batch``,
    ``kv_cache_precision`` ("f16" or "f32"; openvino's
    ``KV_CACHE_PRECISION``).

    >>> pipe = LLMPipeline("stories260K.gguf")
    >>> print(pipe.generate("Once upon a time", max_new_tokens=32))
    """

    def __init__(self, models_path: Union[str, "os.PathLike[str]"], device: str = "CPU", **props: Any) -> None:
        self._handle: Optional[ctypes.c_void_p] = None
        check_device(device)
        known = properties(props)
        self._model = Model(model_file(models_path), known)
        params = PipelineParamsStruct(struct_size=ctypes.sizeof(PipelineParamsStruct))
        params.n_ctx = int(known.get("n_ctx", 0))
        params.n_batch = int(known.get("n_batch", 0))
        params.n_threads = int(known.get("n_threads", 0))
        handle = ctypes.c_void_p()
        _lib.check(_lib.lib().sprout_pipeline_create(self._model.handle, ctypes.byref(params), ctypes.byref(handle)))
        self._handle = handle
        self._free = _lib.lib().sprout_pipeline_free
        self._config = GenerationConfig()
        self._lock = threading.RLock()
        self._in_chat = False

    # --- generation ---------------------------------------------------------

    @overload
    def generate(self, inputs: Union[str, Sequence[str]], generation_config: ConfigArg = None,
                 streamer: Optional[Streamer] = None, **kwargs: Any) -> DecodedResults: ...

    @overload
    def generate(self, inputs: TokenizedInputs, generation_config: ConfigArg = None,
                 streamer: Optional[Streamer] = None, **kwargs: Any) -> EncodedResults: ...

    def generate(self, inputs: Union[str, Sequence[str], TokenizedInputs],
                 generation_config: ConfigArg = None, streamer: Optional[Streamer] = None,
                 **kwargs: Any) -> Union[DecodedResults, EncodedResults]:
        """Completes a prompt (or each prompt of a list, one after another),
        or, between start_chat() and finish_chat(), answers a user message.

        Keyword arguments set GenerationConfig fields for this call
        (max_new_tokens, do_sample, temperature, top_k, top_p,
        repetition_penalty, stop_strings, ...). The streamer gets each new
        piece of text and returns StreamingStatus.RUNNING, STOP or CANCEL
        (or a bool: True stops). Raises SproutError on failure; an
        exception raised by the streamer ends the generation and is raised
        here.

        TokenizedInputs (Tokenizer.encode()) are generated from as they are
        (nothing added) and give EncodedResults, token ids only."""
        config = resolve(self._config, generation_config, kwargs)
        if isinstance(inputs, TokenizedInputs):
            if self._in_chat:
                raise SproutError("a chat takes messages as text, not token ids", _lib.ERR_INVALID_ARGUMENT)
            rows = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inputs.input_ids, inputs.attention_mask)]
            return encoded(merge([self._generate_one(r, config, streamer) for r in rows]))
        prompts = [inputs] if isinstance(inputs, str) else list(inputs)
        if not prompts:
            raise SproutError("no prompt", _lib.ERR_INVALID_ARGUMENT)
        return merge([self._generate_one(p, config, streamer) for p in prompts])

    __call__ = generate

    def _generate_one(self, prompt: Union[str, List[int]], config: GenerationConfig,
                      streamer: Optional[Streamer]) -> DecodedResults:
        L = _lib.lib()
        c, keep = config._to_c()
        callback = StreamCallback(streamer)
        out = ctypes.c_void_p()
        with self._lock:
            if isinstance(prompt, str):
                fn = L.sprout_chat_generate if self._in_chat else L.sprout_generate
                status = fn(self.handle, _lib.encode(prompt, "prompt"), ctypes.byref(c), callback.c_function, None,
                            ctypes.byref(out))
            else:
                ids = (ctypes.c_int32 * max(len(prompt), 1))(*prompt)
                status = L.sprout_generate_tokens(self.handle, ids, len(prompt), ctypes.byref(c), callback.c_function,
                                                  None, ctypes.byref(out))
            failure = _lib.error(status) if status != _lib.OK else None
        del keep
        try:
            callback.reraise()
            if failure is not None:
                raise failure
            return decode_result(out)
        finally:
            if out:
                L.sprout_result_free(out)

    def stream(self, inputs: str, generation_config: ConfigArg = None,
               **kwargs: Any) -> "TextStream":
        """The generation as an iterator of text pieces; after the last one,
        the iterator's ``result`` holds the DecodedResults. Leaving the loop
        early stops the generation."""
        config = resolve(self._config, generation_config, kwargs)
        return TextStream(self, inputs, config)

    def create_completion(self, prompt: str, max_tokens: Optional[int] = 16, temperature: float = 0.8,
                          top_p: float = 0.95, top_k: int = 40, min_p: float = 0.05,
                          stop: Union[str, List[str], None] = None, stream: bool = False, seed: Optional[int] = None,
                          repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                          echo: bool = False) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """llama-cpp-python's ``Llama.create_completion``: an OpenAI-style
        completion dict, or with stream=True an iterator of chunk dicts."""
        config = self._config.copy(
            max_new_tokens=max_tokens if max_tokens is not None and max_tokens > 0 else None,
            do_sample=temperature > 0, temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p,
            stop_strings={stop} if isinstance(stop, str) else set(stop or []),
            repetition_penalty=repeat_penalty, presence_penalty=presence_penalty,
            frequency_penalty=frequency_penalty, echo=echo)
        if seed is not None:
            config.rng_seed = seed
        ident = f"cmpl-{os.getpid()}-{time.monotonic_ns()}"
        created = int(time.time())
        model = os.path.basename(self._model.path)

        def chunk(text: str, finish: Optional[str]) -> Dict[str, Any]:
            return {"id": ident, "object": "text_completion", "created": created, "model": model,
                    "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}

        if stream:
            def chunks() -> Iterator[Dict[str, Any]]:
                s = TextStream(self, prompt, config)
                for piece in s:
                    yield chunk(piece, None)
                assert s.result is not None  # set once the pieces are exhausted
                yield chunk("", _openai_finish(s.result.finish_reasons[0]))
            return chunks()
        r = self._generate_one(prompt, config, None)
        m = r.perf_metrics
        done = chunk(r.texts[0], _openai_finish(r.finish_reasons[0]))
        done["usage"] = {"prompt_tokens": m.get_num_input_tokens(), "completion_tokens": m.get_num_generated_tokens(),
                         "total_tokens": m.get_num_input_tokens() + m.get_num_generated_tokens()}
        return done

    # --- chat ---------------------------------------------------------------

    def start_chat(self, system_message: str = "") -> None:
        """Starts a conversation: from now on generate() takes user
        messages, renders the whole history with the model's chat template
        and computes only what the KV cache does not already hold."""
        with self._lock:
            system = _lib.encode(system_message, "system_message") if system_message else None
            _lib.check(_lib.lib().sprout_chat_start(self.handle, system))
            self._in_chat = True

    def finish_chat(self) -> None:
        """Ends the conversation: generate() completes raw prompts again."""
        with self._lock:
            _lib.lib().sprout_chat_finish(self.handle)
            self._in_chat = False

    def get_chat_history(self) -> List[Dict[str, str]]:
        """The conversation so far, system message included."""
        L = _lib.lib()
        with self._lock:
            history = []
            for i in range(L.sprout_chat_history_length(self.handle)):
                role, content = ctypes.c_char_p(), ctypes.c_char_p()
                _lib.check(L.sprout_chat_history_message(self.handle, i, ctypes.byref(role), ctypes.byref(content)))
                history.append({"role": (role.value or b"").decode("utf-8", "replace"),
                                "content": (content.value or b"").decode("utf-8", "replace")})
            return history

    # --- the rest -------------------------------------------------------------

    def get_tokenizer(self) -> Tokenizer:
        return Tokenizer(self._model)

    def get_generation_config(self) -> GenerationConfig:
        """A copy of the defaults generate() uses."""
        return self._config.copy()

    def set_generation_config(self, config: GenerationConfig) -> None:
        config.validate()
        self._config = config.copy()

    def cached_tokens(self) -> int:
        """Tokens the KV cache holds from earlier calls."""
        return int(_lib.lib().sprout_pipeline_cached_tokens(self.handle))

    @property
    def handle(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise SproutError("the pipeline was closed", _lib.ERR_INVALID_ARGUMENT)
        return self._handle

    @property
    def model(self) -> Model:
        return self._model

    def close(self) -> None:
        """Frees the pipeline now (the model goes with its last user)."""
        with self._lock:
            if self._handle is not None:
                self._free(self._handle)
                self._handle = None

    def __enter__(self) -> "LLMPipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self._free(self._handle)
            self._handle = None


def _openai_finish(reason: str) -> str:
    return "length" if reason == "length" else "stop"


class _End:
    def __init__(self, result: Optional[DecodedResults], error: Optional[BaseException]) -> None:
        self.result, self.error = result, error


class _StreamState:
    """What the generating thread shares with the iterator; the thread
    holds only this, so dropping the TextStream can stop it."""

    def __init__(self) -> None:
        self.queue: "queue.Queue[Union[str, _End]]" = queue.Queue()
        self.stop = threading.Event()

    def on_piece(self, piece: str) -> StreamingStatus:
        if self.stop.is_set():
            return StreamingStatus.STOP
        self.queue.put(piece)
        return StreamingStatus.RUNNING

    def run(self, pipe: LLMPipeline, prompt: str, config: GenerationConfig) -> None:
        try:
            self.queue.put(_End(pipe._generate_one(prompt, config, self.on_piece), None))
        except BaseException as e:  # noqa: B902 - raised on the iterating thread
            self.queue.put(_End(None, e))


class TextStream:
    """Pieces of one generation as they come (LLMPipeline.stream()). The
    generation runs on a thread of its own; ``result`` holds its
    DecodedResults once the iterator is exhausted. close(), or dropping the
    stream (as leaving a ``for piece in pipe.stream(...)`` loop early does),
    stops the generation."""

    def __init__(self, pipe: LLMPipeline, prompt: str, config: GenerationConfig) -> None:
        self.result: Optional[DecodedResults] = None
        self._state = _StreamState()
        self._finished = False
        self._thread = threading.Thread(target=self._state.run, args=(pipe, prompt, config), daemon=True)
        self._thread.start()

    def __iter__(self) -> "TextStream":
        return self

    def __next__(self) -> str:
        if self._finished:
            raise StopIteration
        item = self._state.queue.get()
        if isinstance(item, _End):
            self._finished = True
            self._thread.join()
            if item.error is not None:
                raise item.error
            self.result = item.result
            raise StopIteration
        return item

    def close(self) -> None:
        """Stops the generation and waits for its end (``result`` then
        holds what was generated)."""
        self._state.stop.set()
        for _ in self:
            pass

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is not None:
            state.stop.set()
