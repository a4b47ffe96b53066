"""The pure core of QueueFlow: domain types and decisions. No I/O, no clock: time is an argument."""
