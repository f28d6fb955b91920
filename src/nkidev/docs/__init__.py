"""nkidev.docs: offline docs generated from the op table, nki.language, the error catalogue and the hardware
specs, plus hand-written guides; an in-memory SQLite FTS5 index; `nkidev docs` and `nkidev explain`."""
