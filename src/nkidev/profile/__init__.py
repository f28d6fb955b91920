"""nkidev.profile"""
