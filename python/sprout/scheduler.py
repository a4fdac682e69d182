"""Scheduler: many concurrent requests over one model, batched together."""

from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _lib
from ._lib import RequestParamsStruct, SchedulerParamsStruct, SchedulerStatsStruct, SproutError
from ._model import Model, check_device, model_file, properties
from ._stream import StreamCallback
from .config import ConfigArg, GenerationConfig, resolve
from .pipeline import LLMPipeline
from .results import DecodedResults, Streamer, decode_result

#: A request's prompt: raw text, token ids (nothing added), or chat
#: messages ([{"role": ..., "content": ...}, ...]) rendered with the
#: model's chat template.
Prompt = Union[str, Sequence[int], Sequence[Mapping[str, Any]]]


class Request:
    """One submitted generation (Scheduler.submit()). result() waits for
    it; cancel() ends it early; it is freed with the object or close()."""

    def __init__(self, scheduler: "Scheduler", handle: ctypes.c_void_p, callback: StreamCallback) -> None:
        self._scheduler = scheduler  # the scheduler outlives its requests
        self._handle: Optional[ctypes.c_void_p] = handle
        self._callback = callback  # the C streamer must live as long as the request
        self._result: Optional[DecodedResults] = None
        self._lock = threading.Lock()
        self._free = _lib.lib().sprout_request_free

    def result(self) -> DecodedResults:
        """Waits for the end (other Python threads run meanwhile) and gives
        the result; raises SproutError if the request failed or was
        cancelled before it started, or what its streamer raised."""
        with self._lock:
            if self._result is None:
                L = _lib.lib()
                out = ctypes.c_void_p()
                status = L.sprout_request_wait(self._live(), ctypes.byref(out))
                failure = _lib.error(status) if status != _lib.OK else None
                try:
                    self._callback.reraise()
                    if failure is not None:
                        raise failure
                    self._result = decode_result(out)
                finally:
                    if out:
                        L.sprout_result_free(out)
            return self._result

    def cancel(self) -> None:
        """Ends the request as soon as possible (its finish reason is then
        "cancelled"); safe at any time, from any thread."""
        if self._handle is not None:
            _lib.lib().sprout_request_cancel(self._handle)

    def done(self) -> bool:
        return self._handle is None or bool(_lib.lib().sprout_request_done(self._handle))

    def _live(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise SproutError("the request was closed", _lib.ERR_INVALID_ARGUMENT)
        return self._handle

    def close(self) -> None:
        """Cancels the request if it still runs, waits for its end, frees it."""
        handle, self._handle = self._handle, None
        if handle is not None:
            self._free(handle)

    def __del__(self) -> None:
        self.close()


class Scheduler:
    """Continuous batching over one model: requests submitted from any
    thread run together, each step one batched forward pass (the same
    output as alone).

    ``model`` is a .gguf path, a directory holding one, or an LLMPipeline
    whose loaded model is shared. ``n_slots`` requests run at once (0: from
    the cores and the context), more wait in a queue of ``n_queue`` (0: 64);
    beyond it submit() raises SproutError ("busy"). Streamers run on the
    scheduler's engine thread: keep them short.
    """

    def __init__(self, model: Union[str, "os.PathLike[str]", LLMPipeline], device: str = "CPU", n_slots: int = 0,
                 n_ctx: int = 0, n_batch: int = 0, prefill_chunk: int = 0, n_queue: int = 0, n_threads: int = 0,
                 **props: Any) -> None:
        self._handle: Optional[ctypes.c_void_p] = None
        check_device(device)
        if isinstance(model, LLMPipeline):
            if props:
                raise TypeError("properties go to the LLMPipeline whose model is shared")
            self._model = model.model
        else:
            self._model = Model(model_file(model), properties(props))
        self._config = GenerationConfig()
        params = SchedulerParamsStruct(struct_size=ctypes.sizeof(SchedulerParamsStruct), n_slots=n_slots, n_ctx=n_ctx,
                                       n_batch=n_batch, prefill_chunk=prefill_chunk, n_queue=n_queue,
                                       n_threads=n_threads)
        handle = ctypes.c_void_p()
        L = _lib.lib()
        _lib.check(L.sprout_scheduler_create(self._model.handle, ctypes.byref(params), ctypes.byref(handle)))
        self._handle = handle
        self._free = L.sprout_scheduler_free

    def _prompt_ids(self, prompt: Prompt) -> List[int]:
        if isinstance(prompt, str):
            return self._model.prompt_tokens(prompt)
        items: List[Any] = list(prompt)
        if items and isinstance(items[0], Mapping):
            return self._model.chat_prompt(json.dumps([dict(m) for m in items]), True)[1]
        if not all(isinstance(t, int) for t in items):
            raise TypeError("a prompt is a str, a list of token ids or a list of chat messages")
        return [int(t) for t in items]

    def submit(self, prompt: Prompt, generation_config: ConfigArg = None,
               streamer: Optional[Streamer] = None, **kwargs: Any) -> Request:
        """Queues a generation and returns at once; keyword arguments set
        GenerationConfig fields as LLMPipeline.generate() takes them."""
        config = resolve(self._config, generation_config, kwargs)
        ids = self._prompt_ids(prompt)
        c, keep = config._to_c()
        callback = StreamCallback(streamer)
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        params = RequestParamsStruct(struct_size=ctypes.sizeof(RequestParamsStruct))
        params.prompt = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int32))
        params.n_prompt = len(ids)
        params.config = ctypes.pointer(c)
        params.streamer = callback.c_function
        handle = ctypes.c_void_p()
        status = _lib.lib().sprout_scheduler_submit(self.handle, ctypes.byref(params), ctypes.byref(handle))
        _lib.check(status)  # prompt and config are copied: `arr` and `keep` may go now
        del keep
        return Request(self, handle, callback)

    def generate(self, prompt: Prompt, generation_config: ConfigArg = None,
                 streamer: Optional[Streamer] = None, **kwargs: Any) -> DecodedResults:
        """submit() and wait for the result."""
        request = self.submit(prompt, generation_config, streamer, **kwargs)
        try:
            return request.result()
        finally:
            request.close()

    def set_generation_config(self, config: GenerationConfig) -> None:
        config.validate()
        self._config = config.copy()

    def get_generation_config(self) -> GenerationConfig:
        return self._config.copy()

    @property
    def n_slots(self) -> int:
        return int(_lib.lib().sprout_scheduler_n_slots(self.handle))

    def stats(self) -> Dict[str, Any]:
        """Counters since creation: slots, queue, requests, tokens, steps."""
        s = SchedulerStatsStruct(struct_size=ctypes.sizeof(SchedulerStatsStruct))
        _lib.check(_lib.lib().sprout_scheduler_stats_get(self.handle, ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in SchedulerStatsStruct._fields_ if name != "struct_size"}

    @property
    def handle(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise SproutError("the scheduler was closed", _lib.ERR_INVALID_ARGUMENT)
        return self._handle

    def close(self) -> None:
        """Ends running requests (cancelled) and queued ones (their
        result() raises), stops the engine thread, frees the scheduler."""
        handle, self._handle = self._handle, None
        if handle is not None:
            self._free(handle)

    def __enter__(self) -> "Scheduler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.close()
