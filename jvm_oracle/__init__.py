"""Dev-only plumbing that runs Kafka's own Java classes, the project's oracle, from Python.

`harness` compiles the small Java harnesses under jvm/<name>/src/main/java against a jar set fetched from Maven
Central (`scripts/bootstrap --kafka`) and runs them; `assignors` feeds assignor cases to Kafka's assignor
classes. Both the tests (tests/oracle, tests/integration, tests/spark) and the benchmarks
(benchmarks/assignor_sticky.py) use it, so it lives at the top level: benchmarks import nothing from tests/,
and coordinator_core, the pure decoder, knows no JVM. Not part of the installed distribution (pyproject.toml
ships coordinator_core, jobs and schemas only).
"""
