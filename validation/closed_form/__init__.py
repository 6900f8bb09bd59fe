"""Independent closed-form references for planar chains.

Reference implementations of published closed-form dynamics, used to validate mbkron's own
dynamics.  They deliberately import nothing from :mod:`mbkron` (numpy only):

* :mod:`.planar_chain` — planar n-link musculoskeletal chain with generic link geometry, contact
  forces and single-/multi-joint muscles: joint torques (Eqs. 13, 20–24) and joint reaction forces
  (Eqs. 4–12) of seed 000, and the two-/three-link reductions of its Appendix A;
* :mod:`.cesari_three_link` — three-link arm of Cesari et al. (2001), Eqs. 1–44 of seed 001;
* :mod:`.duarte_two_link` — one- and two-link models and Dempster parameters of seed 003.

Printed equations found to be wrong are implemented in corrected form; the corrections and their
proofs, and the map from equation numbers to functions, are in
``docs/seed-notes/closed-form-seeds.md``.
"""

from . import cesari_three_link, duarte_two_link, planar_chain
from .cesari_three_link import CesariArm
from .duarte_two_link import TwoLinkParameters, dempster_parameters
from .planar_chain import (
    ContactForce,
    Muscle,
    PlanarChain,
    joint_reaction_forces,
    joint_torque_breakdown,
    joint_torques,
    muscle_joint_torques,
)

__all__ = [
    "CesariArm",
    "ContactForce",
    "Muscle",
    "PlanarChain",
    "TwoLinkParameters",
    "cesari_three_link",
    "dempster_parameters",
    "duarte_two_link",
    "joint_reaction_forces",
    "joint_torque_breakdown",
    "joint_torques",
    "muscle_joint_torques",
    "planar_chain",
]
