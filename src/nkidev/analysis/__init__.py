"""nkidev.analysis: bounds, bottleneck engine and inefficiencies of a profile, traced to kernel lines.

    from nkidev.analysis.api import analyze, query
    result = analyze("profile_dir")          # AnalysisResult; result.to_dict() is `nkidev analyze --json`
    rows = query("profile_dir", "SELECT opcode, count(*) FROM Instruction GROUP BY 1")

DuckDB SQL over the profile's Parquet tables (neuron-explorer's names), so the same code reads nkidev's
own profiles and real ones. The JSON schema is documented in SCHEMA.md next to this file.
"""
