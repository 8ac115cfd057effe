"""Calibration from an app's own labels: the checker's decision points, refitted per app.

A checker and its conflict stage decide a label at a few points: the P(entailment) from which
a claim counts as supported, and which conflicts the stage's Contradiction may rest on.
`refcheck calibrate` fits those points on claims a person labelled (`bench.calibration_fit`)
and writes them, with the checker they were fitted for, to a file (`file.Calibration`); the
pipeline applies it after the conflict stage (`points.relabel`), and refuses a calibration
fitted for another checker. The checker's scores are never changed, only where they are cut.
"""
