"""Musculotendon force models (the Hill model, Thelen 2003 curves)."""
