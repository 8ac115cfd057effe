"""Exporters: where verdicts leave the process (OpenTelemetry spans, events and metrics)."""

from refcheck_callbacks.exporters.base import Exporter
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

__all__ = ["Exporter", "OpenTelemetryExporter"]
