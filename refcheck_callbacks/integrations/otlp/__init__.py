"""The OTLP trace receiver behind `refcheck collect`: any app's traces, checked.

The data flow, module by module: `connections` and `http_request` (a client's connection and
its request, read), `intake` (room for requests in flight, reserved before anything is held),
`decode` (an export request into the spans pairing reads: gunzipped, then `wire` with
`small_spans` for protobuf, `otlp_json` for JSON, into `received.ReceivedSpan`s), `traces`
(spans gathered into traces in bounded memory until each is complete), `conventions` (what a
span says, in OpenInference, OpenLLMetry or the GenAI conventions), `pairing` (a trace's
question, answer and references: the callbacks' rules), `collector` (complete traces into the
`AnswerSink`, everything else counted), `http_receiver` and `forward` (the OTLP/HTTP front and
`--forward`), `launch` (all of it started and stopped together).

Needs the `collect` extra (opentelemetry-proto); this package's `__init__` imports nothing.
"""
