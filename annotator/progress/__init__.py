"""Progress at a glance: how far a project's labelling is, per annotator and per batch, and when it ends.

`estimate.py` is pure (numbers in, frozen dataclasses out); `service.py` aggregates the assignments in SQL
(a bounded number of grouped queries, whatever the project's size) and hands the rows to it.
"""
