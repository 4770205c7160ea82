"""`python -m jobs.cli ...`: the same as `cgh ...`."""

from jobs.cli.parser import main

raise SystemExit(main())
