"""The conflict stage: a Contradiction means a conflicting statement was found.

Every checker's verdicts pass through it, on the claims the checker did not find supported
(`stage.settle`): a finder looks for a reference statement that conflicts with the claim; found,
the claim is a Contradiction citing that statement and naming the kind of conflict
(`types.ConflictKind`); not found, it is Neutral, only unsupported. A 3-way model's or a judge's
own Contradiction stays one when it cites its evidence and is at least as sure as the stage's
bar. Finders: the stated-fact detector of the embedded checker (offline, the default) and a
3-way NLI model (`nli:MODEL`); `conflict_finder` builds one from a spec.
"""
