"""nkidev.analysis"""
