"""`RefCheckLangChainInstrumentor`: `instrument_langchain` as an OpenTelemetry instrumentor.

    from refcheck_callbacks.instrumentation.langchain import RefCheckLangChainInstrumentor
    RefCheckLangChainInstrumentor().instrument()             # monitor from the environment
    RefCheckLangChainInstrumentor().instrument(monitor=monitor, answer_from="llm")

`opentelemetry-instrument` finds it as `refcheck_langchain`. It imports LangChain only when
installed, and only if LangChain is there.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.instrumentation.instrumentor import RefCheckInstrumentor

if TYPE_CHECKING:
    from typing_extensions import Unpack


class LangChainOptions(TypedDict, total=False):
    """`RefCheckCallbackHandler`'s keyword arguments (its docstring says what each does)."""

    question_key: str | None
    answer_from: Literal["output", "llm"]
    output_key: str | None
    answer_node: str | None
    run_ttl: float
    max_runs: int
    park_ttl: float


class RefCheckLangChainInstrumentor(RefCheckInstrumentor):
    """Checks the answers of every LangChain chain (see `instrument_langchain`)."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("langchain-core >= 0.3, < 2",)

    def instrument(
        self,
        *,
        monitor: AnswerSink | None = None,
        skip_dep_check: bool = False,
        **options: Unpack[LangChainOptions],
    ) -> None:
        """Attach to every chain from now on, feeding `monitor` (default: one built from the
        environment on the first answer) with a handler given `options`. A second call
        without `uninstrument()` between does nothing (OpenTelemetry's rule)."""
        super().instrument(monitor=monitor, skip_dep_check=skip_dep_check, **options)

    def uninstrument(self) -> None:
        """Stop attaching to new chains (`uninstrument_langchain`)."""
        super().uninstrument()

    def _attach(self, sink: AnswerSink, options: dict[str, Any]) -> None:
        from refcheck_callbacks.integrations.langchain.instrument import instrument_langchain

        instrument_langchain(sink, **options)

    def _uninstrument(self, **kwargs: Any) -> None:
        from refcheck_callbacks.integrations.langchain.instrument import uninstrument_langchain

        uninstrument_langchain()
