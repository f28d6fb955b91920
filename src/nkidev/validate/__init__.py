"""nkidev.validate"""
