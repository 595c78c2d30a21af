"""Batches, traces and steps; importers (one module per format); the read-only step-by-step viewer."""
