"""Benchmarks: measured figures on the public sets, written to files."""
