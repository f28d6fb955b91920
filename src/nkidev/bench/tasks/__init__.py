"""The benchmark's task files (one per task; `nkidev bench list`). Each is an ordinary nkidev task file."""
