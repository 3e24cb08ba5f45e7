"""Jobs that run on the clock."""
