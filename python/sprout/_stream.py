"""A Python streamer as the C callback sprout calls."""

from __future__ import annotations

from typing import Any, Optional

from . import _lib
from .results import Streamer, StreamingStatus


def _status_of(answer: Any) -> int:
    if answer is None or answer is False:
        return StreamingStatus.RUNNING
    if answer is True:
        return StreamingStatus.STOP
    if isinstance(answer, int) and answer in (0, 1, 2):
        return int(answer)
    raise TypeError(f"a streamer returns a StreamingStatus, a bool or None, not {answer!r}")


class StreamCallback:
    """Wraps a streamer for one call. The C function object lives as long
    as this does: keep it until the call (or request) has ended. An
    exception raised by the streamer cancels the generation and is raised
    again by reraise() on the caller's thread."""

    def __init__(self, streamer: Optional[Streamer]) -> None:
        if streamer is not None and not callable(streamer):
            raise TypeError("streamer must be callable: it is called with each piece of text")
        self._streamer = streamer
        self.error: Optional[BaseException] = None
        self.c_function = _lib.STREAMER(self._on_piece) if streamer is not None else _lib.STREAMER(0)

    def _on_piece(self, piece: Any, length: int, _user: Any) -> int:
        if self.error is not None:
            return StreamingStatus.CANCEL
        try:
            return _status_of(self._streamer(_lib.take_text(piece, length)))  # type: ignore[misc]
        except BaseException as e:  # noqa: B902 - handed back to the caller's thread
            self.error = e
            return StreamingStatus.CANCEL

    def reraise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
