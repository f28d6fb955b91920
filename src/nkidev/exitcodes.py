"""Process exit codes of the CLI (documented in the README)."""

OK = 0  # everything passed
FAILED = 1  # the check ran and failed: a case mismatched, a cheat was detected, a rule was broken
USAGE = 2  # bad input to nkidev: unknown flag or target, missing file, malformed task file
KERNEL_ERROR = 3  # the kernel raised (its own exception, or a named hardware-rule error)
REFERENCE_ERROR = 4  # the reference raised or produced NaN/Inf
INTERNAL = 5  # a bug in nkidev; please report it
STOPPED = 6  # the run was stopped: time or memory limit, or the isolated process ended without a result

# Named errors whose exit code is not the default for their class (usage -> USAGE, other NkiError -> KERNEL_ERROR).
BY_ERROR = {
    "err_reference_failed": REFERENCE_ERROR,
    "err_internal": INTERNAL,
    "err_timeout": STOPPED,
    "err_memory_limit": STOPPED,
    "err_child_exited": STOPPED,
}
