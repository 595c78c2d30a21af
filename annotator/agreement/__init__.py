"""Inter-annotator agreement statistics (pure numpy; no Django import)."""
