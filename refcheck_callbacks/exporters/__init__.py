"""Exporters: where verdicts leave the process (OpenTelemetry spans, log events, metrics)."""

from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.exporters.events import EventMode
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

__all__ = ["EventMode", "Exporter", "OpenTelemetryExporter"]
