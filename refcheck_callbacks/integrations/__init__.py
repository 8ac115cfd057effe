"""Framework integrations: capture question, answer and references, then submit. Nothing else.

Each framework is one folder (`langchain/`, `llamaindex/`) that depends only on the contract
(`AnswerSink`, `AnswerFields`, `Pairing`, the reasons), `types` and `support`, plus `shared/`
for what several integrations use; none knows a model or the engine. Each offers the same
shape: `instrument_<framework>(sink, **options)` attaches to every run of the framework and
returns its capture, idempotently (the same sink and options give the same capture; others
replace it); `uninstrument_<framework>()` detaches and counts what was open.
"""
