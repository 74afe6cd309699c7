"""``python -m benchmarks``: run the suite and print the table."""

from benchmarks.run import main

if __name__ == "__main__":
    main()
