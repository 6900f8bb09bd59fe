"""Ready-made models, as Python factories (the model files in ``models/`` describe the same systems)."""

from mbkron.examples.andrews import andrews_squeezer
from mbkron.examples.linkages import five_bar, five_bar_trajectory, four_bar, four_bar_trajectory
from mbkron.examples.planar import ChainContact, ChainMuscle, dempster_two_link, planar_chain, three_link_arm, two_link_arm

__all__ = [
    "ChainContact",
    "ChainMuscle",
    "andrews_squeezer",
    "dempster_two_link",
    "five_bar",
    "five_bar_trajectory",
    "four_bar",
    "four_bar_trajectory",
    "planar_chain",
    "three_link_arm",
    "two_link_arm",
]
