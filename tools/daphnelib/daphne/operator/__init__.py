"""`daphne.operator`: the lazy DAG's value classes (DaphneLib's module layout)."""
