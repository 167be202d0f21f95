"""trainwreck's triage: from a failing training run's log to ranked causes with evidence."""
