"""Benchmarks: datasets, a bare ceiling app and the wrk runner behind `make bench`."""
