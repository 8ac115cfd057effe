"""The learned reader: a MiniLM cross-encoder trained here (see docs/reader.md)."""
