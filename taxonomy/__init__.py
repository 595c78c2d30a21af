"""Failure taxonomies: versions, categories, modes; built-in data files; YAML/JSON import and export."""
