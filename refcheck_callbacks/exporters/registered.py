"""The exporters this package registers (pyproject.toml's `refcheck_callbacks.exporters` entry
points name these). An exporter kind is built with `capture_content=` the monitor's setting.
Only data: reading it imports no exporter."""

from __future__ import annotations

from refcheck_callbacks.contract.registry import Kind

OPENTELEMETRY = Kind(
    "refcheck_callbacks.exporters.opentelemetry:OpenTelemetryExporter",
    "spans, evaluation events and metrics on the global OpenTelemetry providers (default)",
)
