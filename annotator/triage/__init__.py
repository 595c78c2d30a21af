"""LLM-assisted triage: which traces people should label first given what the model said.

Pure (no Django): `signals` (the three orderings' scores) and `curve` (how the model's kappa against gold
grows with the gold). Django: `service` (ranks stored for the claim, a calibration round from the order),
`views` (the owner's triage page) and `api`. Importing this package loads none of them.
"""
