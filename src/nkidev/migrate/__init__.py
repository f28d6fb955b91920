"""`nkidev migrate FILE`: rewrite a kernel from the legacy Beta-1 API (`neuronxcc.nki`) to the current API,
or from NKI 0.6 to NKI 0.7, with LibCST (comments and formatting are kept), list what it cannot rewrite
with the line and the manual step, and validate the old kernels against the new ones on the file's cases.

    from nkidev.migrate import migrate_file
    result = migrate_file("kernel.py")          # MigrationResult: .diff, .source, .manual, .validation
    result = migrate_file("kernel.py", write=True)   # after a backup (kernel.py.bak)

LibCST is an optional extra (`pip install 'nkidev[migrate]'`), imported only when a migration runs.
"""

from __future__ import annotations

from nkidev.migrate.api import MigrationResult, migrate_file, migrate_source

__all__ = ["MigrationResult", "migrate_file", "migrate_source"]
