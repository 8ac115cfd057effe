"""What refcheck's OpenTelemetry instrumentors share: the monitor they feed, and the library
check done at install time rather than by the caller.

`opentelemetry-instrument` installs every registered instrumentor with `skip_dep_check=True`
after checking the *distribution's* `instruments` extra, which one package holding two
instrumentors cannot use (an app with LangChain alone would lose both). So each instrumentor
checks its own `instrumentation_dependencies()` in `_instrument`: a library that is absent, or
of a version outside the range, leaves it installed and inert, said at debug level, as
OpenTelemetry says it for an instrumentor whose library is missing. A `REFCHECK_*` variable
whose value cannot be used leaves it inert too, said as an error naming the variable.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.errors import ConfigurationError
from refcheck_callbacks.instrumentation.environment_monitor import shared_environment_monitor
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.support.logs import logger

require("opentelemetry.instrumentation.instrumentor", "instrument")

from opentelemetry.instrumentation.dependencies import get_dependency_conflicts  # noqa: E402
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # noqa: E402


class RefCheckInstrumentor(BaseInstrumentor):
    """A `BaseInstrumentor` that attaches one integration to a monitor (see the module)."""

    def _instrument(self, **kwargs: Any) -> None:
        conflict = get_dependency_conflicts(self.instrumentation_dependencies())
        if conflict is not None:
            logger.debug("refcheck: %s not installed: %s", type(self).__name__, conflict)
            return
        monitor: AnswerSink | None = kwargs.pop("monitor", None)
        if monitor is None:
            try:
                monitor = shared_environment_monitor()
            except ConfigurationError as exc:
                # Raised, it would stop `opentelemetry-instrument` installing the instrumentors
                # after ours: the app's own tracing would go with our bad variable.
                logger.error("refcheck: %s not installed: %s", type(self).__name__, exc)
                return
        self._attach(monitor, kwargs)

    @abstractmethod
    def _attach(self, sink: AnswerSink, options: dict[str, Any]) -> None:
        """Install the integration, feeding `sink`, with its own keyword `options`."""
