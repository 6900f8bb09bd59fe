"""Ready-made models, as Python factories (the model files in ``models/`` describe the same systems)."""

from mbkron.models.planar import ChainContact, ChainMuscle, dempster_two_link, planar_chain, three_link_arm, two_link_arm

__all__ = ["ChainContact", "ChainMuscle", "dempster_two_link", "planar_chain", "three_link_arm", "two_link_arm"]
