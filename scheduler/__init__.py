"""When jobs run: the clock, never what the jobs do (that is the core's)."""
