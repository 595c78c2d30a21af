"""The LLM rater's machinery: prompt building and answer parsing (pure), the HTTP client, key encryption.

The ORM bridge is annotator.services.llm.runs; nothing in this package imports models.
"""
