"""Framework integrations: capture question, answer and references, then submit. Nothing else."""
