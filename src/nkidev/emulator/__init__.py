"""The NKI emulator: nki.language / nki.isa on NumPy, with hardware rules and an instruction trace."""
