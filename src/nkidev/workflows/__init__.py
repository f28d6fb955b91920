"""Workflows: commands that chain the stages (emulate, validate, profile, analyze) for a user goal."""
