"""Exporters: where verdicts leave the process (OpenTelemetry spans, events and metrics)."""

from refcheck_callbacks.exporters.base import Exporter

__all__ = ["Exporter"]
