"""Musculotendon paths: lengths, moment arms R = -dL/dq (Eq. 149-195), wrapping."""
