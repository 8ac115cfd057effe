"""Framework integrations: they capture question, answer and references, and submit. Nothing else."""
