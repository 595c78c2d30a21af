"""Find traces in a project: the filter language (`filters`, pure), its ORM bridge (`service`), snippets."""
