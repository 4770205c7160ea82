"""Logs stage: broker and client log files -> raw_log_lines + log_file_reads -> coordinator_events.

    python -m jobs.logs [--conf conf/local.toml]

In the order of the data: `listing` (driver: which files, known by which identity, read from which line),
`scan` (executors, one task per file: coordinator_core.logs reads the file's new entries, keeps the
coordinator-looking ones and classifies them), `rows` (the scan output -> the rows of raw_log_lines,
coordinator_events and log_file_reads), `stage` (`run_logs`: list, scan once, write, summarise; `main`).
The Spark-free reading itself (blocks, the keep rule, damaged lines, file identities) is
coordinator_core.logs.
"""
