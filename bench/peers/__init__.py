"""The peers QueueFlow is measured against: their programs (`*_run.py`, run by bench/.peers-venv's Python, never
imported by the bench), their pinned versions (requirements.txt), and `launch`, which installs and runs them."""
