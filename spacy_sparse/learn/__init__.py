"""Training procedures that work on a SparseLinearModel."""
