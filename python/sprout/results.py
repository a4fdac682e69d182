"""What a generation gives back: DecodedResults and PerfMetrics, as
openvino_genai names them, and the streamer's StreamingStatus."""

from __future__ import annotations

import ctypes
import enum
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional, Sequence, Union

from . import _lib
from ._lib import PerfMetricsStruct


class StreamingStatus(enum.IntEnum):
    """What a streamer returns: go on, stop (the turn is kept in the chat
    history and cache), or cancel (the turn is dropped)."""

    RUNNING = 0
    STOP = 1
    CANCEL = 2


#: A streamer: called with each new piece of text (whole characters); returns
#: a StreamingStatus, or a bool as older openvino_genai streamers do (True:
#: stop), or None (go on).
Streamer = Callable[[str], Union[StreamingStatus, bool, None]]


@dataclass(frozen=True)
class MeanStdPair:
    mean: float
    std: float

    def __iter__(self) -> Iterator[float]:  # unpacks as (mean, std)
        return iter((self.mean, self.std))


def _pooled(means: Sequence[float], stds: Sequence[float], weights: Sequence[float]) -> MeanStdPair:
    """Mean and standard deviation of the union of groups given by their
    own mean, std and size."""
    total = sum(weights)
    if total <= 0:
        return MeanStdPair(0.0, 0.0)
    mean = sum(m * w for m, w in zip(means, weights)) / total
    second = sum((s * s + m * m) * w for m, s, w in zip(means, stds, weights)) / total
    return MeanStdPair(mean, math.sqrt(max(second - mean * mean, 0.0)))


class PerfMetrics:
    """Timings of one or more generations (durations in milliseconds),
    with openvino_genai's getters. Metrics of several calls combine with
    ``+``: each getter then gives the mean and standard deviation over them."""

    def __init__(self, samples: Optional[List[PerfMetricsStruct]] = None) -> None:
        self._samples: List[PerfMetricsStruct] = list(samples or [])

    @classmethod
    def _of(cls, result: Any) -> "PerfMetrics":
        m = PerfMetricsStruct(struct_size=ctypes.sizeof(PerfMetricsStruct))
        _lib.check(_lib.lib().sprout_result_metrics(result, ctypes.byref(m)))
        return cls([m])

    def __add__(self, other: "PerfMetrics") -> "PerfMetrics":
        return PerfMetrics(self._samples + other._samples)

    def _over_calls(self, attr: str) -> MeanStdPair:
        values = [float(getattr(s, attr)) for s in self._samples]
        return _pooled(values, [0.0] * len(values), [1.0] * len(values))

    def _sum(self, attr: str) -> int:
        return int(sum(getattr(s, attr) for s in self._samples))

    def get_load_time(self) -> float:
        """Milliseconds the model took to load."""
        return float(self._samples[0].load_ms) if self._samples else 0.0

    def get_ttft(self) -> MeanStdPair:
        """Time to the first generated token, from the call's start."""
        return self._over_calls("ttft_ms")

    def get_tpot(self) -> MeanStdPair:
        """Time per output token after the first."""
        s = self._samples
        return _pooled([x.tpot_mean_ms for x in s], [x.tpot_std_ms for x in s],
                       [max(x.n_generated_tokens - 1, 0) for x in s])

    def get_ipot(self) -> MeanStdPair:
        """Time per forward pass after the first token (the same as TPOT
        unless assisted generation kept several tokens per pass)."""
        means, stds, weights = [], [], []
        for x in self._samples:
            after_first = max(x.n_generated_tokens - 1, 0)
            passes = x.n_decode_passes if x.n_decode_passes > 0 else after_first
            if passes <= 0:
                continue
            means.append(x.tpot_mean_ms * after_first / passes)
            stds.append(x.tpot_std_ms if passes == after_first else 0.0)
            weights.append(passes)
        return _pooled(means, stds, weights)

    def get_throughput(self) -> MeanStdPair:
        """Generated tokens per second."""
        return self._over_calls("decode_tokens_per_s")

    def get_prefill_throughput(self) -> MeanStdPair:
        """Prompt tokens computed per second."""
        return self._over_calls("prefill_tokens_per_s")

    def get_generate_duration(self) -> MeanStdPair:
        """The whole call."""
        return self._over_calls("total_ms")

    def get_tokenization_duration(self) -> MeanStdPair:
        return self._over_calls("tokenize_ms")

    def get_detokenization_duration(self) -> MeanStdPair:
        """0: sprout turns each token into text as it is generated (for the
        streamer), so that time is part of each token's, not measured apart."""
        return _pooled([0.0] * len(self._samples), [0.0] * len(self._samples), [1.0] * len(self._samples))

    def get_inference_duration(self) -> MeanStdPair:
        """The call less the prompt's tokenization: the model's forward
        passes and sampling."""
        values = [float(s.total_ms - s.tokenize_ms) for s in self._samples]
        return _pooled(values, [0.0] * len(values), [1.0] * len(values))

    def get_num_generated_tokens(self) -> int:
        return self._sum("n_generated_tokens")

    def get_num_input_tokens(self) -> int:
        """Prompt tokens, cached ones included."""
        return self._sum("n_prompt_tokens")

    def get_num_cached_tokens(self) -> int:
        """Prompt tokens taken from the KV cache instead of computed."""
        return self._sum("n_prompt_tokens") - self._sum("n_prefill_tokens")

    def get_num_draft_tokens(self) -> int:
        return self._sum("n_draft_tokens")

    def get_num_accepted_tokens(self) -> int:
        return self._sum("n_accepted_tokens")

    def __repr__(self) -> str:
        return (f"PerfMetrics(ttft={self.get_ttft().mean:.2f} ms, tpot={self.get_tpot().mean:.2f} ms, "
                f"throughput={self.get_throughput().mean:.1f} t/s, generated={self.get_num_generated_tokens()})")


@dataclass
class DecodedResults:
    """Texts generated for the prompts of one call; ``str()`` gives the
    text (the texts joined by newlines when there were several prompts)."""

    texts: List[str] = field(default_factory=list)
    finish_reasons: List[str] = field(default_factory=list)
    tokens: List[List[int]] = field(default_factory=list)
    perf_metrics: PerfMetrics = field(default_factory=PerfMetrics)

    def __str__(self) -> str:
        return "\n".join(self.texts)


@dataclass
class EncodedResults:
    """Token ids generated for tokenized inputs (one list per input)."""

    tokens: List[List[int]] = field(default_factory=list)
    perf_metrics: PerfMetrics = field(default_factory=PerfMetrics)


def encoded(results: DecodedResults) -> EncodedResults:
    return EncodedResults(results.tokens, results.perf_metrics)


def decode_result(result: Any) -> DecodedResults:
    """A sprout_result* as DecodedResults (the result stays the caller's)."""
    L = _lib.lib()
    n = ctypes.c_size_t()
    text = _lib.take_text(L.sprout_result_text(result, ctypes.byref(n)), n.value)
    ids = L.sprout_result_tokens(result, ctypes.byref(n))
    tokens = [ids[i] for i in range(n.value)]
    reason = (L.sprout_finish_reason_str(L.sprout_result_finish_reason(result)) or b"").decode()
    return DecodedResults([text], [reason], [tokens], PerfMetrics._of(result))


def merge(parts: Sequence[DecodedResults]) -> DecodedResults:
    out = DecodedResults()
    for p in parts:
        out.texts += p.texts
        out.finish_reasons += p.finish_reasons
        out.tokens += p.tokens
        out.perf_metrics = out.perf_metrics + p.perf_metrics
    return out
