"""Triage tests reuse the LLM tests' stand-in server, settings and clock."""

from tests.llm.conftest import batch, chat_server, clock, llm_config  # noqa: F401
