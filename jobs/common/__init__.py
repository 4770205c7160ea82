"""Plumbing shared by the Spark jobs: configuration, the one SparkSession builder, Delta IO, the Arrow
boundary, run claims and progress."""
