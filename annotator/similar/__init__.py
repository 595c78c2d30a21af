"""Traces like this one: a vector per trace (TF-IDF + SVD, or the endpoint's embeddings), nearest neighbours in
numpy, the viewer's "similar traces" panel and the trace list's `like=` filter. See docs/search.md."""
