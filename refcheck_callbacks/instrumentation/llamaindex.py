"""`RefCheckLlamaIndexInstrumentor`: `instrument_llamaindex` as an OpenTelemetry instrumentor.

    from refcheck_callbacks.instrumentation.llamaindex import RefCheckLlamaIndexInstrumentor
    RefCheckLlamaIndexInstrumentor().instrument()            # monitor from the environment

`opentelemetry-instrument` finds it as `refcheck_llama_index`. It imports LlamaIndex only when
installed, and only if LlamaIndex is there.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TypedDict

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.instrumentation.instrumentor import RefCheckInstrumentor

if TYPE_CHECKING:
    from typing_extensions import Unpack


class LlamaIndexOptions(TypedDict, total=False):
    """`instrument_llamaindex`'s keyword arguments (its docstring says what each does)."""

    stream_ttl: float
    max_open_queries: int


class RefCheckLlamaIndexInstrumentor(RefCheckInstrumentor):
    """Checks the answers of every LlamaIndex query and chat engine (see
    `instrument_llamaindex`)."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("llama-index-core >= 0.12, < 1",)

    def instrument(
        self,
        *,
        monitor: AnswerSink | None = None,
        skip_dep_check: bool = False,
        **options: Unpack[LlamaIndexOptions],
    ) -> None:
        """Attach to LlamaIndex's root dispatcher, feeding `monitor` (default: one built from
        the environment on the first answer). A second call without `uninstrument()` between
        does nothing (OpenTelemetry's rule)."""
        super().instrument(monitor=monitor, skip_dep_check=skip_dep_check, **options)

    def uninstrument(self) -> None:
        """Take our handlers off the dispatcher (`uninstrument_llamaindex`)."""
        super().uninstrument()

    def _attach(self, sink: AnswerSink, options: dict[str, Any]) -> None:
        from refcheck_callbacks.integrations.llamaindex.instrument import instrument_llamaindex

        instrument_llamaindex(sink, **options)

    def _uninstrument(self, **kwargs: Any) -> None:
        from refcheck_callbacks.integrations.llamaindex.instrument import uninstrument_llamaindex

        uninstrument_llamaindex()
