"""Alerting: the Prometheus rules on refcheck's metrics, written from tunables, and a traffic
simulator that measures what they give.

`rules` writes the rule file (`refcheck alert-rules`, `deploy/prometheus/refcheck-alerts.yml`),
`tunables` holds every threshold, window and `for` duration with its default, `share_rules` the
share alerts (a service against its own baseline, and a new service against an absolute level),
and `simulator` (numpy and promtool, loaded only by `refcheck alert-rules --simulate`) replays
clean and shifted traffic through them. Nothing here runs in the app: `exporters/` is what
leaves the process, this package only reads its metric names.
"""
