"""The benchmark suite: a load-generating requestor and the receivers it measures.

Run everything and print the table with ``.venv/bin/python -m benchmarks``
(``--smoke`` for the small configuration CI runs). See docs/performance.md.
"""
