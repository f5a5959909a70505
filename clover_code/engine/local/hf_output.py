"""One response of the hf engine: its events, and the job the batch scheduler runs for it.

``ResponseOutput`` turns a decoder's ``Step`` and ``Block`` results into engine
events (drafts, committed blocks, parsed text and tool calls, the closing
usage with the experts counted). ``BatchedResponse`` is a ``batching.Job``:
it renders the prompt in the decoding thread and hands every result to its
output, which reaches the consumer through the job's channel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clover_code.engine.base import ChatRequest
from clover_code.engine.events import BlockDraft, EngineEvent, Usage

__all__ = ["BatchedResponse", "ResponseOutput"]


class ResponseOutput:
    """One response's output: drafts, committed blocks, and its closing events.

    ``backend`` is the ``HFBackend`` (its tokenizer, options and token pieces).
    """

    def __init__(
        self,
        backend: Any,
        request: ChatRequest,
        prompt_tokens: int,
        emit: Callable[[list[EngineEvent]], None],
    ) -> None:
        from clover_code.engine.local.diffusion.chat import OutputAssembler

        self.backend = backend
        self.emit = emit
        stops = (*backend.options.stop_strings, *request.stop)
        self.assembler = OutputAssembler(backend.tokenizer, request, prompt_tokens, stops)
        self.reason: Any = "stop"

    def handle(self, item: Any) -> None:
        """Events for one denoising step (a draft) or one finished block."""
        from clover_code.engine.local.diffusion import Block
        from clover_code.engine.local.diffusion.chat import draft_texts

        if isinstance(item, Block):
            self.emit(self.assembler.block(item.ids, item.steps, item.confidences, item.fill_steps))
            if item.finish == "length":
                self.reason = "length"
        elif self.backend.options.drafts and not self.assembler.stopped:
            tokenizer = self.backend.tokenizer
            tokens = draft_texts(item.ids, item.masked, self.backend.piece, tokenizer.decode)
            self.emit([BlockDraft(item.block, item.step, tokens, item.masked, item.confidences)])

    def finish(self, stats: Any, finish: str | None) -> None:
        """The closing events: held-back text, usage (with the experts counted), Finished."""
        if finish == "length":
            self.reason = "length"
        if self.assembler.stopped:
            self.reason = "stop"
        events = self.assembler.finish(self.reason)
        for event in events:
            if isinstance(event, Usage):
                event.experts_per_layer = stats.experts_per_layer
        self.emit(events)


class BatchedResponse:
    """A ``batching.Job``: one request decoded by the batch scheduler."""

    def __init__(self, backend: Any, request: ChatRequest) -> None:
        from clover_code.engine.local.worker import Channel

        self.backend = backend
        self.request = request
        self.channel = Channel()
        self.output: ResponseOutput | None = None

    def prepare(self) -> tuple[list[int], Any]:
        """The prompt's ids and the decoding options (in the decoding thread)."""
        prompt = self.backend.prompt(self.request)
        self.output = ResponseOutput(self.backend, self.request, len(prompt), self.channel.emit)
        return prompt, self.backend.decode_options(self.request)

    def handle(self, item: Any) -> None:
        """A step or a finished block, to the output."""
        assert self.output is not None
        self.output.handle(item)

    def stopped(self) -> bool:
        """Whether the consumer left or a stop string ended the answer."""
        return self.channel.cancelled() or (
            self.output is not None and self.output.assembler.stopped
        )

    def finish(self, sequence: Any) -> None:
        """The sequence is over: its statistics kept, its closing events sent."""
        self.backend.last_stats = sequence.stats
        if self.output is not None and not self.channel.cancelled():
            self.output.finish(sequence.stats, sequence.finish)
