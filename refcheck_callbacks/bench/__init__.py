"""Benchmarking checkers on the public labelled sets in `../shared/data`."""
