"""The verbs of the annotation workflow: each validates, changes state in one transaction, enqueues follow-ups."""
