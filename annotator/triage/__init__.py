"""LLM-assisted triage, pure: which traces people should label first given what the model said
(`signals`), and how the model's kappa against gold grows with the gold (`curve`). No Django here; the ORM
bridge is annotator.services.triage."""
