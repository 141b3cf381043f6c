"""The min-hash family, the LSH S-curve planner and the single-link cluster tree."""
