"""Thin spark-submit-able entry points (`main(argv)`) and their shared plumbing in `jobs.common`."""
