"""Zero-code instrumentation: OpenTelemetry instrumentors that `opentelemetry-instrument` finds.

    OTEL_TRACES_EXPORTER=otlp OTEL_LOGS_EXPORTER=otlp opentelemetry-instrument python app.py

`RefCheckLangChainInstrumentor` and `RefCheckLlamaIndexInstrumentor` are registered under the
`opentelemetry_instrumentor` entry point (`refcheck_langchain`, `refcheck_llama_index`; either
is turned off by naming it in `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`). Given no monitor, they
share one `EnvironmentMonitor`: a `RefCheckMonitor` configured from the environment
(`environment_variables`) and built on the first captured answer, so an app that never answers
never starts a checking process. They need the `instrument` extra
(`opentelemetry-instrumentation`), which `opentelemetry-instrument` itself comes with.
"""
