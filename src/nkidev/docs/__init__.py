"""nkidev.docs"""
