"""Codebook evolution, pure parts: grouping annotators' proposals for new modes (no Django here)."""
