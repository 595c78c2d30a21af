"""The LLM rater's ORM side (annotator.llm holds the pure prompt, client and parsing).

config (a project's endpoint settings, prompt versions, the rater user) -> labeller (ask about one trace,
store valid labels) -> runs (a run over a batch: start, process, stop, resume, progress); agreement (the
model against the humans and gold) and opinion (what an annotator may see of the model's labels).
"""
