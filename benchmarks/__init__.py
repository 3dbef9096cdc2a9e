"""Cross-system benchmarks: shellrt side by side with a bare spawn, SWE-ReX and Inspect (`python -m benchmarks`)."""
