"""How well the cost model predicts published hardware measurements (`nkidev fidelity`)."""
