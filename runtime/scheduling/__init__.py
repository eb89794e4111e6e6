"""DAPHNE's task scheduler: partitioning schemes, task queues, work stealing, workers, CPU topology."""
