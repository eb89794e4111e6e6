"""`daphne.operator.nodes`: Matrix, Frame and Scalar (doc/DaphneLib/Overview.md names these module paths)."""
