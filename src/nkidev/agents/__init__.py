"""nkidev.agents"""
