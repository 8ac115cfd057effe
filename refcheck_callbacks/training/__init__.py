"""Training the learned reader: its data, its CPU training loop, export and fold scoring.

Not imported by the package at run time: `scripts/train_reader.py` drives it (docs/reader.md).
"""
