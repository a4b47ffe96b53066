"""Worker programs the bench drains jobs with: no-op tasks, default settings, one process each."""
