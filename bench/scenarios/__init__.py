"""One module per scenario; each measures and returns plain numbers, `bench.run` turns them into figures."""
