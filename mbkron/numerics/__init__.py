"""Numerical methods that know nothing of a multibody model, each with its compiled kernels."""
