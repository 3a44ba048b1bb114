"""Benchmarks (`make bench`): every number is reported next to a baseline measured in the same run."""
