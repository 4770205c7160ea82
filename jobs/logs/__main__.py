"""`python -m jobs.logs`: the logs stage on its own (see jobs.logs.stage)."""

from jobs.logs.stage import main

raise SystemExit(main())
