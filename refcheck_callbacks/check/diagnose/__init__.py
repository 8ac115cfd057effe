"""Retrieval diagnostics (docs/diagnostics.md): what each reference is worth to the question,
what the answer used, and why each unsupported claim is unsupported."""
