"""What more than one integration uses, with no framework in it.

- `run_state`: per-run capture state, bounded and swept by age (LangChain runs, LlamaIndex
  spans);
- `user_input`: the user's text among a run's named input fields, the answer's among its
  output's (every integration);
- `overlap`: documents that lie inside another reference, by the share of their text found
  there (every integration: one rule for documents that overlap);
- `prompt_match`: which documents reached a model's prompt, found by their content however
  the app printed them (`Prompt(text).shows(document_text)`). LangChain's pairing uses it
  today; it is kept here, framework-free, because an answer assembled from another
  framework's traces (the OTLP trace receiver of issue 31) is paired the same way: the
  references are the documents its answering prompt shows.
"""
