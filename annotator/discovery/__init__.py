"""Discovery of the failure modes a taxonomy lacks, and the codebook gate that proves them (issue 33)."""
